"""The reports' blessed history: per gate, its metric at each blessing of its baseline beside this
run's, as a table (report.md, report.html), a chart (report.html) and data (report.json)."""

import itertools
import json
import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from harness.report import write_reports
from harness.report.blocks import Trend
from harness.report.trend import trend_svg
from harness.verdict.golden import golden_path
from harness.verdict.golden_blessing import golden_from_result, write_golden
from harness.verdict.golden_reading import load_golden

from support import synthetic_results as sr

OLD_SHA = "ab" * 32


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The report case's run, its Hailo path's baseline blessed twice: v1.2 from an older export on
    other images, then v1.3 from this run's export."""
    tmp = tmp_path_factory.mktemp("history")
    case = sr.report_case(tmp / "dataset")
    hailo = case.hailo
    older = replace(
        hailo,
        provenance=replace(
            hailo.provenance, created="2025-01-02T03:04:05Z", model_sha256=OLD_SHA, dataset_manifest="c" * 64
        ),
        metrics=replace(hailo.metrics, map50=hailo.metrics.map50 - 0.05),
    )
    file = golden_path(tmp / "golden", hailo.provenance.model_path, hailo.path, hailo.provenance.dataset)
    write_golden(file, golden_from_result(older, release="v1.2"))
    write_golden(file, golden_from_result(hailo, release="v1.3"))
    baselines = {"onnx": (tmp / "golden" / "none.json", None), "hailo": (file, load_golden(file))}
    files = write_reports(tmp / "out", [case.onnx, hailo], case.gates, case.dataset, baselines=baselines)
    return case, {kind: path.read_text() for kind, path in files.items()}


def _gate(case, kind):
    return next(g for g in case.gates if g.id.kind == kind)


def test_report_json_keeps_each_blessing_in_order_ending_with_the_baseline_the_gates_held(reports):
    case, texts = reports
    document = json.loads(texts["json"])
    onnx, hailo = document["baselines"]
    assert "history" not in onnx  # no baseline, no history
    assert hailo["release"] == "v1.3"
    assert [(b["release"], b["model_sha256"]) for b in hailo["history"]] == [
        ("v1.2", OLD_SHA),
        ("v1.3", case.hailo.provenance.model_sha256),
    ]
    assert hailo["history"][1]["values"]["map"] == round(case.hailo.metrics.map50, 6)
    assert hailo["history"][0]["values"]["map"] == round(case.hailo.metrics.map50 - 0.05, 6)
    gate = next(g for g in document["gates"] if g["kind"] == "map")
    assert (gate["kind"], gate["path"]) == ("map", "hailo")


def test_report_md_has_a_table_per_gate_with_both_releases_in_order_then_this_run(reports):
    case, texts = reports
    markdown = texts["markdown"]
    assert "## Blessed history" in markdown and "never gated on" in markdown
    section = markdown.split("## Blessed history")[1]
    table = section.split(f"### `{_gate(case, 'map').name}`")[1].split("###")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| release")]
    assert [row.split(" | ")[0] for row in rows] == ["| v1.2", "| v1.3", "| this run"]
    observed = f"{_gate(case, 'map').observed:.4f}"
    assert f"{case.hailo.metrics.map50 - 0.05:.4f}" in rows[0] and observed in rows[2]
    assert "other images than this run's" in rows[0] and "other images" not in rows[1]
    assert "the baseline this run is held to" in rows[1] and OLD_SHA[:12] in rows[0]
    assert "signed off now: " in rows[2]
    assert _gate(case, "path_agreement").name.replace("_", "\\_") not in section  # no blessing held it


class _Svgs(HTMLParser):
    """Each <svg> of the page, with its title and points, by the <h3> before it."""

    def __init__(self) -> None:
        super().__init__()
        self.heading, self.charts, self._where = "", {}, None

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3"):
            self._where, self.heading = "heading", ""
        elif tag == "svg":
            self.charts[self.heading] = {"circles": 0, "title": ""}
        elif tag == "circle":
            self.charts[self.heading]["circles"] += 1
        elif tag == "title" and self.heading in self.charts:
            self._where = "title"

    def handle_endtag(self, tag):
        if tag in ("h2", "h3", "title"):
            self._where = None

    def handle_data(self, data):
        if self._where == "heading":
            self.heading += data
        elif self._where == "title":
            self.charts[self.heading]["title"] += data


def test_report_html_draws_each_gates_trend_as_an_inline_svg_beside_its_table(reports):
    case, texts = reports
    page = _Svgs()
    page.feed(texts["html"])
    for kind in ("map", "map50_95", "score_saturation", "box_count"):
        name = _gate(case, kind).name
        chart = page.charts[name]
        assert chart == {"circles": 3, "title": f"{name}: blessed values and this run's"}  # 2 blessings + this run
    assert _gate(case, "path_agreement").name not in page.charts
    assert "<h2>Blessed history</h2>" in texts["html"] and "v1.2" in texts["html"]


def _points(svg):
    return [(float(x), float(y)) for x, y in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)]


def test_the_trend_places_higher_values_higher_and_this_run_last_in_its_gates_colour():
    svg = trend_svg(Trend("t", (("v1", 0.5), ("v2", 0.7), ("v3", None)), ("this run", 0.6), False))
    (x1, y1), (x2, y2), (x3, y3) = _points(svg)
    assert x1 < x2 < x3 and y2 < y3 < y1  # SVG's y grows downwards
    assert svg.count("<circle") == 3 and 'fill="#c62828"' in svg  # a failed gate's run is red
    assert ">v1<" in svg and ">v2<" in svg and "v3" not in svg  # a blessing without the value is left out
    passed = trend_svg(Trend("t", (("v1", 0.5),), ("this run", 0.5), True))
    assert 'fill="#2e7d32"' in passed and len(_points(passed)) == 2


def test_the_trend_escapes_its_words_and_draws_nothing_without_a_value():
    svg = trend_svg(Trend("a <b> & c", (("<script>", 0.1),), None, True))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "a &lt;b&gt; &amp; c" in svg
    assert trend_svg(Trend("t", (("v1", None),), ("this run", None), True)) == ""


def test_the_trends_labels_never_overlap_and_this_run_is_always_named():
    blessed = tuple((f"v1.{i}-rc.build{i}", 0.5 + i / 1000) for i in range(30))
    svg = trend_svg(Trend("t", blessed, ("this run", 0.52), True))
    labels = [(float(x), text) for x, text in re.findall(r'<text x="([\d.]+)" y="1\d\d" [^>]*>([^<]*)</text>', svg)]
    assert labels[0][1] == "v1.0-rc.bui\u2026" and labels[-1][1] == "this run" and len(_points(svg)) == 31
    assert all(b[0] - a[0] >= 60 for a, b in itertools.pairwise(labels)), labels
