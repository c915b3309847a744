"""The report's first screen: the verdict (a pass held to weak baselines is not green), what changed
between this run, its baseline and the blessing before it, the first cause, the gates each with its
trend; the long sections folded; the summary for a pull request; ``--pdf`` refused without a browser."""

import json
import re

import pytest

from harness.cli import main as cli
from harness.core.errors import HarnessError
from harness.report import write_reports
from harness.report.blocks import Spark, Trend
from harness.report.html import render_html
from harness.report.json_report import report_document
from harness.report.markdown import render_markdown
from harness.report.summary import render_summary
from harness.report.trend import spark_svg, trend_svg
from harness.report.view import cap_notes, report_view

from support import synthetic_results as sr

CALIBRATION_CHANGE = (
    "r2: HEF changed from bbbbbbbbbbbb to eeeeeeeeeeee; calibration changed from the demo's in-domain "
    "frames (64) to the demo's off-domain frames (64); model unchanged"
)


@pytest.fixture(scope="module")
def signed_off(tmp_path_factory):
    """r1 blessed from the in-domain calibration, r2 from the off-domain one; this run off-domain."""
    case, baselines = sr.signed_off_case(tmp_path_factory.mktemp("signed"))
    document = report_document([case.onnx, case.hailo], case.gates, case.dataset, baselines=baselines)
    return case, baselines, document


def test_the_first_screen_says_what_changed_in_words_before_the_gates(signed_off):
    _, _, document = signed_off
    view = report_view(document)
    (changed, cause) = [b.parts[0].text for b in view.intro]
    assert changed == f"What changed: hailo: {CALIBRATION_CHANGE}."  # this run is made from what r2 was
    assert cause.startswith("First cause: ") and "(fix: " in cause
    assert view.sections[0].title[0].text == "Gates"
    markdown = render_markdown(document)
    assert markdown.index("What changed: hailo: r2: HEF changed") < markdown.index("## Gates")


def test_this_run_against_its_baseline_is_said_when_it_was_made_from_something_else(tmp_path):
    case, baselines = sr.signed_off_case(tmp_path, now=sr.IN_DOMAIN)
    document = report_document([case.onnx, case.hailo], case.gates, case.dataset, baselines=baselines)
    (changed, *_) = [b.parts[0].text for b in report_view(document).intro]
    assert changed.startswith(
        "What changed: hailo: this run against r2: HEF changed from eeeeeeeeeeee to bbbbbbbbbbbb; calibration "
        "changed from the demo's off-domain frames (64) to the demo's in-domain frames (64); model unchanged. "
        f"hailo: {CALIBRATION_CHANGE}."
    )


def test_the_history_table_says_what_changed_at_each_blessing(signed_off):
    _, _, document = signed_off
    history = render_markdown(document).split("## Blessed history")[1].split("### ")[0].split("\nhailo:\n")[1]
    rows = [line for line in history.splitlines() if line.startswith(("| r1", "| r2", "| this run"))]
    assert [row.split(" | ")[0] for row in rows] == ["| r1", "| r2", "| this run"]
    assert "| first blessing |" in rows[0]
    assert CALIBRATION_CHANGE.partition(": ")[2] in rows[1]
    assert "| nothing recorded changed (model unchanged) |" in rows[2]


def test_each_gate_held_to_a_history_carries_its_trend_in_its_row(signed_off):
    case, _, document = signed_off
    html = render_html(document, (), ())
    gates = html.split("<h2>Gates</h2>")[1].split("</table>")[0]
    assert gates.count("<svg") == sum(g.id.kind != "path_agreement" for g in case.gates)  # no blessing held it
    assert "trend (blessed, then this run)" in gates
    gate = next(g for g in case.gates if g.id.kind == "map")
    markdown = render_markdown(document)
    row = next(line for line in markdown.splitlines() if line.startswith(f"| `{gate.name}` |"))
    value = f"{round(case.hailo.metrics.map50, 6):.4f}"
    assert row.endswith(f"| {value} → {value} → now {gate.observed:.4f} |")


def test_a_sparkline_places_higher_values_higher_and_this_run_last_in_its_gates_colour():
    svg = spark_svg(Spark((0.5, None, 0.7), 0.6, False))
    points = [(float(x), float(y)) for x, y in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)]
    (x1, y1), (x2, y2), (x3, y3) = points
    assert x1 < x2 < x3 and y2 < y3 < y1 and 'fill="#c62828"' in svg
    assert "<title>blessed 0.5, -, 0.7; this run 0.6</title>" in svg
    assert spark_svg(Spark((None,), None, True)) == ""


def test_the_trends_value_axis_is_labelled_at_round_values_never_a_bare_float():
    svg = trend_svg(Trend("t", (("r1", 0.0), ("r2", 0.0)), ("this run", 0.0207), True))
    labels = re.findall(r'text-anchor="end">([^<]*)<', svg)
    assert labels and all(re.fullmatch(r"-?\d+(\.\d{1,2})?", label) for label in labels), labels
    assert "-0.002" not in svg
    close = trend_svg(Trend("t", (("r1", 0.5812),), ("this run", 0.5871), True))
    assert re.findall(r'text-anchor="end">([^<]*)<', close) == ["0.58", "0.59"]


def test_long_sections_are_folded_in_the_page_and_open_in_print(signed_off):
    _, _, document = signed_off
    page, printed = render_html(document, (), ()), render_html(document, (), (), unfolded=True)
    for title in ("Per class", "Provenance and environment", "Images where the paths disagree most"):
        assert f"<details><summary><h2>{title}</h2></summary>" in page
        assert f"<details open><summary><h2>{title}</h2></summary>" in printed
    assert "<h2>Gates</h2>" in page and "<details><summary><h2>Gates" not in page
    assert page.count("<details><summary><h3>") == 4  # each gate's history chart and table


def test_a_pass_held_to_weak_baselines_is_not_green_and_says_so(signed_off):
    _, _, document = signed_off
    passing = [dict(g, passed=True) for g in document["gates"]]
    weak = {**document, "passed": True, "gates": [dict(passing[0], weak=True), *passing[1:]]}
    view = report_view(weak)
    assert view.state == "weak" and view.verdict.startswith("WEAK PASS (1 of 5 gates held to weak baselines")
    assert '<span class="verdict weak">WEAK PASS' in render_html(weak, (), ())
    assert render_summary(weak).startswith("**⚠ Accuracy report: WEAK PASS (1 of 5 gates")
    clean = {**document, "passed": True, "gates": passing}
    assert report_view(clean).state == "pass" and '<span class="verdict pass">PASSED' in render_html(clean, (), ())


def test_the_cap_note_is_said_only_of_a_quantized_path_whose_scores_stop_below_the_float_models(signed_off):
    _, _, document = signed_off
    float_path, hailo = document["paths"]
    notes = cap_notes([dict(float_path, highest_score=0.97), dict(hailo, highest_score=0.355)])
    assert len(notes) == 1
    assert notes[0].startswith("hailo (emulated): no score above 0.355, where the float model reaches 0.970")
    assert cap_notes([dict(float_path, highest_score=0.355), dict(hailo, highest_score=0.355)]) == []
    # a model whose own scores stop at 0.8 has no cap at 0.795, though both lie under the default 0.9
    assert cap_notes([dict(float_path, highest_score=0.8), dict(hailo, highest_score=0.795)]) == []
    alone = cap_notes([dict(hailo, highest_score=0.355)])
    assert len(alone) == 1 and "no float path here to compare with" in alone[0]


def test_the_summary_names_the_verdict_what_changed_the_first_cause_and_the_gates_that_moved(signed_off):
    case, _, document = signed_off
    summary = render_summary(document)
    lines = summary.splitlines()
    assert lines[0] == "**❌ Accuracy report: FAILED (3 of 5 gates)**"
    assert f"- hailo: {CALIBRATION_CHANGE}" in lines
    assert any(line.startswith("First cause: ") for line in lines)
    moved = [line for line in lines if line.startswith("- `")]
    gate = next(g for g in case.gates if g.id.kind == "map")
    assert f"- `{gate.name}`: {gate.baseline:.4f} -> {gate.observed:.4f}, **FAIL**" in moved
    assert not any("score\\_saturation" in line or "score_saturation" in line for line in moved)  # 0 -> 0
    assert lines[-1] == "Full report: `report.html`" and len(summary) < 2000


def test_report_json_keeps_what_each_path_and_blessing_was_made_from(signed_off):
    _, _, document = signed_off
    data = json.loads(json.dumps(document))
    assert data["schema_version"] == 11
    hailo = next(p for p in data["paths"] if p["path"] == "hailo")
    assert hailo["provenance"]["made_from"]["calibration"] == "the demo's off-domain frames (64)"
    history = next(b for b in data["baselines"] if b["path"] == "hailo")["history"]
    assert [h["made_from"]["calibration"] for h in history] == [
        "the demo's in-domain frames (64)",
        "the demo's off-domain frames (64)",
    ]


def test_write_reports_writes_the_summary_beside_the_report(tmp_path, signed_off):
    case, baselines, _ = signed_off
    files = write_reports(tmp_path, [case.onnx, case.hailo], case.gates, case.dataset, baselines=baselines)
    assert files["summary"] == tmp_path / "report-summary.md" and "pdf" not in files
    assert files["summary"].read_text().startswith("**❌ Accuracy report: FAILED")


def test_pdf_without_a_browser_is_refused_in_one_line_before_any_report_is_written(tmp_path, monkeypatch, signed_off):
    case, _, _ = signed_off
    monkeypatch.setenv("HARNESS_CHROMIUM", "no-such-browser")
    with pytest.raises(HarnessError) as raised:
        write_reports(tmp_path / "out", [case.onnx, case.hailo], case.gates, case.dataset, pdf=True)
    assert str(raised.value).startswith("--pdf: no PDF renderer: headless Chromium is not installed")
    assert "\n" not in str(raised.value) and not list((tmp_path / "out").glob("report*"))


def test_run_with_pdf_and_no_browser_exits_2_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_CHROMIUM", "no-such-browser")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "--pdf", "--report", str(tmp_path / "r"), "--cache", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--pdf: no PDF renderer" in err[0], err
    assert not (tmp_path / "c").exists()  # refused before the demo set or any model was read


def test_a_drawn_panels_title_is_shortened_to_fit_never_clipped():
    from PIL import ImageFont

    from harness.report.plots import fitted_title

    font = ImageFont.load_default(size=14)
    title = fitted_title("emulated-hailo (emulated)", 20, 13, font, 360)
    assert (font.getlength(title) <= 360 and "13" not in title) or "unlabelled" in title
    assert title in ("emulated-hailo (emulated): 20 boxes, 7 unlabelled", "20 boxes, 7 unlabelled")
    assert fitted_title("onnx", 2, 2, font, 360) == "onnx: 2 boxes"
