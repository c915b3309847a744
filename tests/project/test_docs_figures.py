"""Figures the documentation quotes come from the benchmarks' files (``docs/figures/``, ``tools/docs_figures.py``):
every placeholder of a page names a file and a key that exist, each file names the benchmark that writes it,
and no measured figure is typed by hand where a placeholder belongs.

The rule for a hand-typed figure, in the prose of README.md and the hand-written pages (code blocks, HTML
comments and placeholders left out): a number with three decimals or more (0.866, a mAP or a score), or a
number with a unit of time or rate (2.1 s, 35 ms, 120 images/s). A setting that reads so (Ultralytics'
conf 0.001) is allowed by :data:`SETTINGS`, each with why."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from harness.core.files import write_atomic
from tools import docs_figures
from tools.docs_figures import FigureError, placeholders, render

from support.docs_examples import ROOT, pages

# Numbers that read as measured and are settings: page -> the phrases that hold them, each with why.
SETTINGS = {
    "settings.md": ("score 0.001", "val at 0.001"),  # Ultralytics' conf for `yolo val`, a setting of the protocol
    "performance.md": ("1 and 10 ms a frame",),  # the fake device's pace, a setting of bench_pipeline
}

_MEASURED = re.compile(
    r"(?<![\w.@])(?:[-+]?\d+\.\d{3,}"  # three decimals or more
    r"|\d+(?:\.\d+)?\s?(?:s|ms|µs|min|minutes|seconds|images/s|frames/s|fps)(?![\w/]))"  # a time or a rate
)


def prose(text: str) -> str:
    """``text`` without its code blocks, inline code, HTML comments and figure placeholders."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = docs_figures.PLACEHOLDER.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def hand_typed(text: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """The measured-looking figures of a page's prose, outside the phrases ``allowed``."""
    body = prose(text)
    for phrase in allowed:
        body = body.replace(phrase, "")
    return [m.group(0) for m in _MEASURED.finditer(body)]


def written_pages() -> list[Path]:
    """README.md and the hand-written pages (the generated reference quotes no measurement)."""
    return pages()


# --------------------------------------------------------------------------------------------- the rule


def test_the_rule_finds_a_mean_average_precision_and_a_timing_typed_by_hand():
    text = "the emulated mAP@0.5 is 0.866, checked in 2.1 s at 120 images/s (35 ms a frame); a threshold of 0.25\n"
    assert hand_typed(text) == ["0.866", "2.1 s", "120 images/s", "35 ms"]


def test_the_rule_leaves_out_code_comments_placeholders_settings_and_two_decimals():
    text = (
        '{{ figure("b", "k") }} at 0.2 and IoU 0.7; `0.8660` in code\n<!-- 0.866 -->\n```text\n2.1 s\n```\n'
        "a score 0.001\n"
    )
    assert hand_typed(text, ("score 0.001",)) == []
    assert hand_typed(text) == ["0.001"]


def test_no_page_types_a_measured_figure_by_hand():
    found = {
        p.name: hand_typed(p.read_text(encoding="utf-8"), SETTINGS.get(p.name, ()))
        for p in written_pages()
        if hand_typed(p.read_text(encoding="utf-8"), SETTINGS.get(p.name, ()))
    }
    assert found == {}, 'quote these from a benchmark\'s file: {{ figure("bench", "key") }} (tools/docs_figures.py)'


def test_each_allowed_setting_is_still_on_its_page():
    for name, phrases in SETTINGS.items():
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        assert all(phrase in prose(text) for phrase in phrases), name


# ------------------------------------------------------------------------------------------ the placeholders


def test_every_placeholder_of_every_page_names_a_figure_a_benchmark_wrote():
    quoted = 0
    for page in written_pages():
        text = page.read_text(encoding="utf-8")
        found = placeholders(text, page.name)
        rendered = render(text, page.name)  # raises, naming the page, the file and the key, when one is missing
        assert placeholders(rendered) == [] and rendered.count("{{") == text.count("{{") - len(found)
        quoted += len(found)
    assert quoted >= 20  # the calibration check's tables, the protocol's figures


def test_the_readme_quotes_no_placeholder_since_nothing_renders_it():
    assert placeholders((ROOT / "README.md").read_text(encoding="utf-8")) == []


def test_each_figures_file_names_the_benchmark_that_writes_it_and_a_page_quotes_it():
    files = sorted((ROOT / docs_figures.FIGURES).glob("*.json"))
    assert files, "no figures file"
    quoted = {p.bench for page in written_pages() for p in placeholders(page.read_text(encoding="utf-8"))}
    for path in files:
        document = json.loads(path.read_text(encoding="utf-8"))
        module = document["command"].split()[2]  # python -m tools.bench_x ...
        source = ROOT / (module.replace(".", "/") + ".py")
        assert source.is_file() and "--write-figures" in source.read_text(encoding="utf-8"), path.name
        assert document["benchmark"] == path.stem and document["size"] and document["measured"]["date"], path.name
        assert path.stem in quoted, f"{path.name}: no page quotes it"
        assert path.stat().st_size < 20_000, f"{path.name}: figures a page quotes, not a benchmark's raw output"


def _figures_root(tmp_path: Path, figures: dict) -> Path:
    docs_figures.write_figures("bench_x", figures, "python -m tools.bench_x --write-figures", "16 images", tmp_path)
    return tmp_path


def test_a_placeholder_is_filled_from_its_file_with_its_format(tmp_path):
    figures = {"case": {"map50": 0.86604, "low": -0.0251, "n": 27, "v": "fit", "w": None, "same": True}}
    root = _figures_root(tmp_path, figures)
    text = (
        '{{ figure("bench_x", "case.map50") }} [{{ figure("bench_x", "case.low", "+.3f") }}] '
        '{{ figure("bench_x", "case.n") }} {{figure("bench_x","case.v")}} {{ figure("bench_x", "case.w") }} '
        '{{ figure("bench_x", "case.same") }} {{ figure("bench_x", "measured.cpus") }}'
    )
    assert render(text, "docs/p.md", root) == f"0.866 [-0.025] 27 fit - yes {os.cpu_count()}"


def test_a_placeholder_whose_file_or_key_is_missing_is_refused_naming_page_file_and_key(tmp_path):
    root = _figures_root(tmp_path, {"case": {"map50": 0.866}})
    with pytest.raises(FigureError, match=r"docs/p\.md: .*docs/figures/gone\.json: no such figures file"):
        render('{{ figure("gone", "case.map50") }}', "docs/p.md", root)
    with pytest.raises(FigureError, match=r"docs/p\.md: .*bench_x\.json: no figure 'case\.map5' \(case holds map50\)"):
        render('{{ figure("bench_x", "case.map5") }}', "docs/p.md", root)
    with pytest.raises(FigureError, match=r"no figure 'other\.map50' \(the file holds case, measured, size\)"):
        render('{{ figure("bench_x", "other.map50") }}', "docs/p.md", root)
    with pytest.raises(FigureError, match="'case' is not a number or a word"):
        render('{{ figure("bench_x", "case") }}', "docs/p.md", root)


def test_a_malformed_placeholder_or_a_bad_format_is_refused(tmp_path):
    root = _figures_root(tmp_path, {"case": {"map50": 0.866, "v": "fit"}})
    with pytest.raises(FigureError, match=re.escape("docs/p.md: malformed figure placeholder")):
        render("{{ figure(bench_x, case.map50) }}", "docs/p.md", root)
    with pytest.raises(FigureError, match=re.escape("format '.3f' given for 'fit'")):
        render('{{ figure("bench_x", "case.v", ".3f") }}', "docs/p.md", root)


def test_a_figures_file_of_another_format_or_without_figures_is_refused(tmp_path):
    path = tmp_path / docs_figures.FIGURES / "bench_x.json"
    path.parent.mkdir(parents=True)
    write_atomic(path, json.dumps({"format": 1, "figures": [1]}))
    with pytest.raises(FigureError, match=re.escape("bench_x.json: figures: expected an object")):
        render('{{ figure("bench_x", "a") }}', "docs/p.md", tmp_path)
    write_atomic(path, json.dumps({"format": 9, "figures": {"a": 1}}))
    with pytest.raises(FigureError, match=re.escape("bench_x.json: format: expected 1, found 9")):
        render('{{ figure("bench_x", "a") }}', "docs/p.md", tmp_path)
