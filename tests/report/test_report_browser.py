"""The HTML report in the real browser: laid out by headless Chromium at 1280 px and at 390 px (a
phone), no text box overlaps another or is cut by its container, and the first screen holds the
verdict and every gate's row (a phone's: compact rows, the gates before what changed); ``--pdf``
prints it. Skipped only where Chromium is absent and
HARNESS_REQUIRE_CHROMIUM is not set (CI sets it)."""

import json
import re

import pytest

from harness.report import write_reports
from harness.verdict.gates import run_gates
from harness.verdict.golden_blessing import golden_from_result

from support import browser
from support import synthetic_results as sr

needs_chromium = pytest.mark.skipif(browser.CHROMIUM is None and not browser.REQUIRED, reason=browser.SKIP_REASON)
FIRST_SCREEN = 800  # px: a laptop's first screen, and a phone's


@pytest.fixture(scope="module")
def signed_off(tmp_path_factory):
    """The signed-off report case (two blessings and this run, a calibration change), written with
    its pictures, and the PDF."""
    tmp = tmp_path_factory.mktemp("browser")
    case, baselines = sr.signed_off_case(tmp, now=sr.IN_DOMAIN)
    # nine gates, as a job has them: the reference's four against its baseline, then the Hailo path's five
    gates = (*run_gates(case.onnx, golden_from_result(case.onnx)), *case.gates)
    assert len(gates) == 9
    return write_reports(tmp / "out", [case.onnx, case.hailo], gates, case.dataset, baselines=baselines, pdf=True)


@needs_chromium
@pytest.mark.parametrize("width", [1280, 390])
def test_no_text_overlaps_or_is_cut_and_the_first_screen_holds_the_verdict_and_the_gates(signed_off, tmp_path, width):
    page = signed_off["html"].read_text()
    measured = browser.layout(page, width, tmp_path, height=FIRST_SCREEN)
    assert width - 20 <= measured["width"] <= width and measured["boxes"] > 100, measured  # less a scrollbar
    assert measured["overlaps"] == [], measured["overlaps"][:10]
    assert measured["cut"] == [], measured["cut"][:10]
    assert measured["verdict"]["bottom"] <= FIRST_SCREEN and measured["verdict_text"].startswith("FAILED")
    document = json.loads(signed_off["json"].read_text())
    # every gate's row on the first screen, a phone's too: its full name, or on a phone its kind and path
    named = [g["name"] if width >= 1000 else f"{g['kind']} {g['path']}" for g in document["gates"]]
    assert [row["gate"] for row in measured["rows"]] == named and len(named) == 9
    assert all(row["bottom"] <= FIRST_SCREEN for row in measured["rows"]), (measured["gates"], measured["rows"])
    assert "What changed: hailo: this run against r2" in measured["first_screen"]


@needs_chromium
def test_the_probe_finds_overlapping_and_clipped_text(tmp_path):
    """The measurement itself: a page with two captions drawn over each other and a clipped one fails."""
    page = (
        '<!DOCTYPE html><html><body><div style="position:relative;height:40px">'
        '<span style="position:absolute;left:0;top:0">first caption</span>'
        '<span style="position:absolute;left:20px;top:2px">second caption</span></div>'
        '<div style="width:60px;overflow:hidden;white-space:nowrap">13 labelled (no clear place)</div>'
        '<svg width="50" height="20"><text x="10" y="15">this run is cut</text></svg></body></html>'
    )
    measured = browser.layout(page, 390, tmp_path)
    assert measured["overlaps"] == ["first caption | second caption"]
    assert [c.split(" (cut by")[0] for c in measured["cut"]] == ["13 labelled (no clear place)", "this run is cut"]


@needs_chromium
def test_pdf_is_the_report_printed_with_its_sections_open(signed_off):
    pdf = signed_off["pdf"].read_bytes()
    assert signed_off["pdf"].name == "report.pdf" and signed_off["pdf"].parent == signed_off["html"].parent
    assert pdf.startswith(b"%PDF-") and b"%%EOF" in pdf[-1024:]
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", pdf))
    assert 2 <= pages <= 30, pages
