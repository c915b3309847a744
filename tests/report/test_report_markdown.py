import re

import pytest

from harness.report import write_reports
from harness.report.json_report import report_document
from harness.report.markdown import render_markdown
from harness.verdict.gates import causes_lines

from support import synthetic_results as sr


@pytest.fixture(scope="module")
def case_and_files(tmp_path_factory):
    case = sr.report_case(tmp_path_factory.mktemp("dataset"))
    files = write_reports(tmp_path_factory.mktemp("report"), [case.onnx, case.hailo], case.gates, case.dataset)
    return case, files


def test_reports_are_written_in_every_format(case_and_files):
    _, files = case_and_files
    assert sorted(files) == ["html", "json", "markdown", "summary"]  # report.pdf only where asked (--pdf)
    names = [files[k].name for k in ("markdown", "json", "html", "summary")]
    assert names == ["report.md", "report.json", "report.html", "report-summary.md"]
    assert all(f.stat().st_size > 0 for f in files.values())


def test_markdown_summary_has_pass_or_fail_per_gate_with_numbers_and_interval(case_and_files):
    case, files = case_and_files
    text = files["markdown"].read_text()
    failed = [g for g in case.gates if not g.passed]
    assert text.startswith(f"# Accuracy report: FAILED ({len(failed)} of {len(case.gates)} gates)")
    for gate in case.gates:
        verdict = "pass" if gate.passed else "**FAIL**"
        assert f"| `{gate.name}` | {verdict} |" in text
    map_gate = next(g for g in case.gates if g.name.startswith("test_map["))
    iv = map_gate.interval
    numbers = f"| {map_gate.baseline:.4f} | {map_gate.observed:.4f} | drop <= 0.0200 |"
    assert f"{numbers} {iv.point:+.4f} [{iv.low:+.4f}, {iv.high:+.4f}] |" in text
    for gate in failed:  # every failure's own text, and its causes once for the gates that share them
        assert gate.text in text
    diagnosed = [g for g in failed if g.diagnosed]
    assert len(diagnosed) >= 2 and len({g.causes for g in diagnosed}) == 1, "the case's failures share their causes"
    block = "\n".join(causes_lines(diagnosed[0].causes))
    assert text.count(block) == 1
    assert text.count("likely causes, most specific first:") == 1


def test_markdown_labels_emulated_paths_and_records_provenance_and_environment(case_and_files):
    case, files = case_and_files
    text = files["markdown"].read_text()
    assert "| hailo (emulated) | emulated |" in text and "| onnx | host |" in text
    assert f"model sha256: `{case.hailo.provenance.model_sha256}`" in text
    assert "environment: hailort 4.23.0, onnxruntime 1.20.1" in text
    assert f"manifest `{case.dataset.manifest}`" in text
    assert "| hailo (emulated) | smoke |" in text  # per-class rows of every path


def test_a_path_whose_scores_stop_far_below_one_is_called_a_cap_not_shown_as_zero_saturation(tmp_path):
    from harness.core.detections import Detections

    case = sr.report_case(tmp_path / "data")
    capped = sr.result(
        [Detections(p.boxes, p.scores * 0 + 0.355, p.class_ids) for p in case.hailo.predictions],
        case.dataset.ground_truths,
        path="hailo",
        emulated=True,
        image_ids=case.hailo.image_ids,
        manifest=case.dataset.manifest,
    )
    files = write_reports(tmp_path / "report", [case.onnx, capped], case.gates, case.dataset)
    for text in (files["markdown"].read_text(), files["html"].read_text()):
        assert "no score above 0.355, where the float model reaches" in text and "That is a cap" in text
        assert text.count("the opposite of saturation") == 1  # the reference path reaches 0.97: no note


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells, split where GitHub splits them (at a ``|`` not escaped)."""
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


def test_class_file_and_dataset_names_show_as_text_and_cannot_break_a_table_cell(case_and_files):
    case, _ = case_and_files
    document = report_document([case.onnx, case.hailo], case.gates, case.dataset)
    hostile = "<script>alert(1)</script> a|b\nc *d* [e](f) `g`"
    document["dataset"]["root"] = f"/data/{hostile}"
    document["dataset"]["names"] = [hostile, "smoke"]
    document["paths"][0]["metrics"]["per_class"][0]["name"] = hostile
    document["paths"][0]["provenance"]["model_path"] = f"models/{hostile}.onnx"
    text = render_markdown(document)
    assert "<script>" not in text and "&lt;script>alert(1)&lt;/script>" in text, "shown as text, not run as HTML"
    assert "a\\|b c \\*d\\* \\[e\\](f) \\`g\\`" in text  # one line, no emphasis, link or code made of it
    row = next(line for line in text.splitlines() if line.startswith("| onnx | &lt;script>"))
    assert len(_cells(row)) == 8, "the class name stays in its own cell"
    assert "Dataset /data/&lt;script>alert(1)&lt;/script> a|b c \\*d\\*" in text  # outside a table "|" is text
    assert "model: models/&lt;script>" in text


def test_a_gate_message_with_backticks_cannot_close_its_code_block(case_and_files):
    case, _ = case_and_files
    document = report_document([case.onnx, case.hailo], case.gates, case.dataset)
    failed = next(g for g in document["gates"] if not g["passed"])
    failed["text"] = "class ```\n# not a heading\n<img src=x onerror=alert(1)>"
    text = render_markdown(document)
    assert "````\nclass ```\n# not a heading\n<img src=x onerror=alert(1)>\n````" in text
