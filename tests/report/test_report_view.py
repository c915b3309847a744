from dataclasses import replace
from html import escape

from harness.inputs.dataset import Unreadable
from harness.inputs.demo import SHIPPED_GOLDEN
from harness.report.blocks import Code, Figures, Mark, Table, Text
from harness.report.html import render_html
from harness.report.json_report import report_document
from harness.report.markdown import escape as md_escape
from harness.report.markdown import render_markdown
from harness.report.view import report_view

from support import synthetic_results as sr


def test_both_renderers_render_every_section_of_one_view_in_its_order(tmp_path):
    case = sr.report_case(tmp_path / "dataset")
    document = report_document([case.onnx, case.hailo], case.gates, case.dataset)
    view = report_view(document)
    markdown, html = render_markdown(document), render_html(document, (), ())
    named = [s for s in view.sections if isinstance(s.title[0], Text)]
    in_html = [html.index(f"<h{s.level}>{escape(s.title[0].text)}</h{s.level}>") for s in named]
    text = [s for s in named if not (s.blocks and all(isinstance(b, Figures) for b in s.blocks))]
    in_markdown = [markdown.index(f"\n{'#' * s.level} {md_escape(s.title[0].text)}\n") for s in text]
    assert in_html == sorted(in_html) and in_markdown == sorted(in_markdown)
    assert len(text) == len(named) - 2  # the pictures are the HTML report's
    assert markdown.startswith(f"# Accuracy report: {view.verdict}\n") and view.verdict.startswith("FAILED (")


def test_the_gate_table_holds_each_gate_by_its_name_as_code_and_its_result(tmp_path):
    case = sr.report_case(tmp_path / "dataset")
    view = report_view(report_document([case.onnx, case.hailo], case.gates, case.dataset))
    (table,) = (b for s in view.sections if s.title == (Text("Gates"),) for b in s.blocks)
    assert isinstance(table, Table)
    assert [(row[0], row[1]) for row in table.rows] == [
        (Code(g.name, short=f"{g.id.kind} {g.id.path}"), Mark(g.passed)) for g in case.gates
    ]
    assert [table.header[i] for i in table.narrow] == ["gate", "result", "observed"]  # no history: no trend


def test_unreadable_images_and_classes_left_out_are_said_in_both_reports_with_a_bounded_list(tmp_path):
    case = sr.report_case(tmp_path / "dataset")
    unreadable = tuple(Unreadable(f"images/val/bad{i:02d}.jpg", "empty (0 bytes): no image in it") for i in range(12))
    dataset = replace(case.dataset, names=(*case.dataset.names, "steam"), unreadable=unreadable)
    left = [replace(r, settings=replace(r.settings, class_map=(0, 1, -1))) for r in (case.onnx, case.hailo)]
    document = report_document(left, case.gates, dataset)
    markdown, html = render_markdown(document), render_html(document, (), ())
    said = "Left out: 12 unreadable images, within --max-unreadable: images/val/bad00.jpg (empty (0 bytes)"
    for report in (markdown, html):
        assert (
            "bad09.jpg" in report
            and "bad10.jpg" not in report
            and "; and 2 more (report.json names them all)." in report
        )
        assert "the labels of dataset class steam." in report
    assert said.replace("_", "\\_") in markdown and escape(said) in html
    clean = render_markdown(report_document([case.onnx, case.hailo], case.gates, case.dataset))
    assert "Left out" not in clean


def test_baseline_files_are_shown_by_their_place_in_the_package_or_the_project_not_in_site_packages(
    tmp_path, monkeypatch
):
    case = sr.report_case(tmp_path / "dataset")
    shipped = SHIPPED_GOLDEN / "fire_smoke_yolo11n_256" / "synthetic_fire_smoke_seed0--onnx.json"
    blessed, elsewhere = tmp_path / "golden" / "m" / "d--hailo.json", tmp_path.parent / "other" / "d--hailo.json"
    monkeypatch.chdir(tmp_path)  # the project
    for hailo, shown in ((blessed, "golden/m/d--hailo.json"), (elsewhere, str(elsewhere))):
        baselines = {"onnx": (shipped, None), "hailo": (hailo, None)}
        document = report_document([case.onnx, case.hailo], case.gates, case.dataset, baselines=baselines)
        assert [b["file"] for b in document["baselines"]] == [str(shipped), str(hailo)]  # report.json: as is
        markdown, html = render_markdown(document), render_html(document, (), ())
        for report in (markdown, html):
            assert "harness/data/golden/fire_smoke_yolo11n_256/synthetic" in report
            assert str(SHIPPED_GOLDEN) not in report
        assert f"Baseline of hailo: `{shown}`" in markdown and f"<code>{escape(shown)}</code>" in html


def test_a_baseline_not_as_blessed_and_its_edited_history_are_said_in_the_report_not_a_flag():
    from harness.report.view import blessed_note

    baseline = {
        "blessed_sha256": "a" * 64,
        "blessed": "2025-01-01T00:00:00Z",
        "run_sha256": "a" * 64,
        "accepted_weak": [],
        "seal": {"state": "unsigned edit", "detail": "changed after it was written (its sha256 no longer holds)"},
        "history_problems": ["entry 2 (v1.2, blessed 2025-01-01T00:00:00Z): a duplicate of entry 1"],
    }
    said = blessed_note(baseline)
    assert "; UNSIGNED EDIT: changed after it was written" in said and "accepted_weak is void" in said
    assert "; history edited by hand: entry 2 (v1.2, " in said and "--accept-weak-baseline" not in said
    signed = {**baseline, "seal": {"state": "signed", "detail": "signed with key 0123456789ab"}, "history_problems": []}
    assert blessed_note(signed).endswith("; signed (signed with key 0123456789ab)")
    old = {k: v for k, v in baseline.items() if k not in ("seal", "history_problems")}  # a report of schema 9
    assert "EDIT" not in blessed_note(old) and "history" not in blessed_note(old)
