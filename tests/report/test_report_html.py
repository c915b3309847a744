import base64
import html as markup
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from harness.report import write_reports
from harness.report.pdf import headless

from support import synthetic_results as sr

MAGIC = {"image/svg+xml": b"<svg ", "image/jpeg": b"\xff\xd8\xff"}
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def case_and_html(tmp_path_factory):
    case = sr.report_case(tmp_path_factory.mktemp("dataset"))
    files = write_reports(tmp_path_factory.mktemp("report"), [case.onnx, case.hailo], case.gates, case.dataset)
    return case, files["html"]


def test_html_is_one_self_contained_file_with_embedded_svg_charts_and_jpeg_images(case_and_html):
    _, html = case_and_html
    text = html.read_text()
    links = re.findall(r'(?:src|href)="([^"]*)"', text)
    kinds = [re.fullmatch(r"data:(image/svg\+xml|image/jpeg);base64,.+", link) for link in links]
    assert links and all(kinds)
    assert {k.group(1) for k in kinds if k} == set(MAGIC)
    assert "<script" not in text and "https://" not in text
    assert "http://" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )  # the SVG namespace names, never fetches
    for link, kind in zip(links, kinds, strict=True):
        assert base64.b64decode(link.split(",", 1)[1]).startswith(MAGIC[kind.group(1)])


def test_html_shows_charts_the_disagreeing_images_and_labels_emulated_paths(case_and_html):
    case, html = case_and_html
    text = html.read_text()
    for title in ("Precision-recall per class", "Score histogram", "Boxes per image"):
        assert f'alt="{title}"' in text
    shown = set(re.findall(r'<img alt="(images/val/[^"]+)"', text))
    assert shown == case.worst  # only the images some path gets wrong
    assert 'hailo <span class="badge emulated">emulated</span>' in text
    assert 'onnx <span class="badge host">host</span>' in text
    assert text.count('<span class="fail">FAIL</span>') == sum(not g.passed for g in case.gates)
    assert "hailort 4.23.0" in text


def _chromium(tmp_path, *args):
    command = headless(CHROMIUM, tmp_path / "profile", *args)
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian: apt-get install -y chromium)")
def test_html_renders_in_headless_chromium_to_a_page_that_is_not_blank(case_and_html, tmp_path):
    _, html = case_and_html
    shot = tmp_path / "report.png"
    run = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", html.resolve().as_uri())
    assert shot.is_file(), f"no screenshot (exit {run.returncode}): {run.stderr[-2000:]}"
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    assert pixels.shape == (2000, 1280)
    assert pixels.var() > 200, "the rendered page is blank"
    top = pixels[:120]
    assert (top < 128).mean() > 0.005, "no heading rendered at the top of the page"


# Measures the laid-out page in the browser (the report itself holds no script): the page's width, and
# each element reaching past the window's right edge that no scrolling container around it holds.
WIDTH_PROBE = """<script>
const width = document.documentElement.clientWidth;
const held = e => { for (let a = e.parentElement; a; a = a.parentElement) {
  if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return true; } return false; };
const over = [...document.body.querySelectorAll('*')]
  .filter(e => e.getBoundingClientRect().right > width + 0.5 && !held(e))
  .map(e => e.tagName + ': ' + e.textContent.slice(0, 60));
document.body.dataset.probe = JSON.stringify({width, page: document.documentElement.scrollWidth, over});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian: apt-get install -y chromium)")
def test_at_800_px_the_page_does_not_scroll_sideways_and_every_table_stays_in_its_section(tmp_path):
    """Long tokens (a sha256, a deep path, a gate's name) wrap; a table wider than the page scrolls
    inside itself."""
    case = sr.report_case(tmp_path / "dataset_with_a_long_folder_name_" / ("deep_" * 12 + "images"))
    files = write_reports(tmp_path / "report", [case.onnx, case.hailo], case.gates, case.dataset)
    probed = tmp_path / "probed.html"
    probed.write_text(files["html"].read_text().replace("</body>", f"{WIDTH_PROBE}</body>"))
    run = _chromium(tmp_path, "--window-size=800,2000", "--dump-dom", probed.as_uri())
    found = re.search(r'data-probe="([^"]*)"', run.stdout)
    assert found, f"no measurement (exit {run.returncode}): {run.stderr[-2000:]}"
    probe = json.loads(markup.unescape(found.group(1)))
    assert 700 < probe["width"] <= 800
    assert probe["over"] == [] and probe["page"] == probe["width"], probe
