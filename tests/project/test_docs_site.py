"""The documentation site as a reader gets it: ``mkdocs build --strict`` (no warning), every link and image
of every built page leads to a file (and an anchor) that exists, and the landing page and two others, laid out
by headless Chromium at 1280 and 390 px, are no wider than the window and show every image. Skipped without
mkdocs (the ``dev`` extra) or Chromium, unless HARNESS_REQUIRE_CHROMIUM is set (CI sets it). The images
README.md and the pages show are files of the project, each a few hundred KB at most."""

from __future__ import annotations

import functools
import html.parser
import http.server
import importlib.util
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from support import browser

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("index.html", "getting-started.html", "reference/cli.html")  # the landing page, a guide, the widest table
HAS_MKDOCS = importlib.util.find_spec("mkdocs") is not None and importlib.util.find_spec("material") is not None
needs_mkdocs = pytest.mark.skipif(
    not HAS_MKDOCS and not browser.REQUIRED, reason="mkdocs-material not installed (pip install -e '.[dev]')"
)
needs_chromium = pytest.mark.skipif(browser.CHROMIUM is None and not browser.REQUIRED, reason=browser.SKIP_REASON)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if value and ((name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script"))):
                self.links.append(value)


@functools.cache
def _parsed(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def broken_links(site: Path) -> list[str]:
    """Each link or image of a built page whose file, or whose anchor in it, does not exist."""
    broken = []
    for page in sorted(site.rglob("*.html")):
        for link in _parsed(page).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("data:", "mailto:", "javascript:")):
                continue
            base = site if parts.path.startswith("/") else page.parent  # 404.html links from the site's root
            target = page if not parts.path else (base / unquote(parts.path).lstrip("/")).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {link}")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _parsed(target).ids:
                broken.append(f"{page.relative_to(site)}: {link} (no such anchor)")
    return broken


# ------------------------------------------------------------------------------------- images of the pages

_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)")
IMAGE_LIMIT = 400_000  # bytes: what a README can afford to load


def image_faults(pages: list[Path]) -> list[str]:
    """Each image a Markdown page shows whose file is missing, or larger than :data:`IMAGE_LIMIT`."""
    faults = []
    for page in pages:
        for source in _IMAGE.findall(page.read_text(encoding="utf-8")):
            if urlsplit(source).scheme:
                faults.append(f"{page.name}: {source} (an image from elsewhere: keep it in docs/images/)")
                continue
            target = page.parent / unquote(source)
            if not target.is_file():
                faults.append(f"{page.name}: {source} (no such file)")
            elif target.stat().st_size > IMAGE_LIMIT:
                faults.append(f"{page.name}: {source} ({target.stat().st_size} bytes, over {IMAGE_LIMIT})")
    return faults


def test_every_image_of_the_readme_and_the_pages_exists_and_is_small():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert image_faults(pages) == []
    readme = _IMAGE.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    landing = _IMAGE.findall((ROOT / "docs" / "index.md").read_text(encoding="utf-8"))
    assert "docs/images/report.png" in readme and "images/report.png" in landing  # the picture of a report


def test_the_image_check_finds_a_missing_a_remote_and_a_heavy_image(tmp_path):
    (tmp_path / "big.png").write_bytes(b"x" * (IMAGE_LIMIT + 1))
    (tmp_path / "ok.png").write_bytes(b"x")
    page = tmp_path / "p.md"
    page.write_text("![a](ok.png) ![b](gone.png) ![c](https://example.org/c.png) ![d](big.png)\n")
    assert image_faults([page]) == [
        "p.md: gone.png (no such file)",
        "p.md: https://example.org/c.png (an image from elsewhere: keep it in docs/images/)",
        f"p.md: big.png ({IMAGE_LIMIT + 1} bytes, over {IMAGE_LIMIT})",
    ]


@needs_mkdocs
def test_the_site_builds_strictly_and_every_link_and_image_leads_somewhere(site):
    assert (site / "index.html").is_file() and (site / "reference" / "cli.html").is_file()
    assert broken_links(site) == []


@needs_mkdocs
def test_the_built_pages_show_the_benchmarks_figures_never_a_placeholder(site):
    from tools.docs_figures import read_figures

    assert [p.name for p in site.rglob("*.html") if "{{ figure" in p.read_text(encoding="utf-8")] == []
    off_domain = read_figures("calibration_check")["demo_off_domain"]
    page = (site / "calibration-check.html").read_text(encoding="utf-8")
    assert f"<td>{off_domain['map50']:.3f} ({off_domain['map50_95']:.3f})</td>" in page


@needs_mkdocs
def test_the_api_page_shows_a_docstring_s_cross_references_as_code_never_as_raw_roles(site):
    page = (site / "reference" / "api.html").read_text(encoding="utf-8")
    assert "<code>PathKind</code>" in page
    assert re.search(r":(class|func|data|mod|meth|attr|exc|obj):<code>", page) is None


@needs_mkdocs
def test_the_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "a.html").write_text('<a href="b.html#there">b</a><a href="gone.html">gone</a><img src="x.png">')
    (tmp_path / "b.html").write_text('<h1 id="here">b</h1>')
    assert broken_links(tmp_path) == ["a.html: b.html#there (no such anchor)", "a.html: gone.html", "a.html: x.png"]


_PROBE = r"""
const frames = [...document.querySelectorAll('iframe')];
function measure(frame) {
  const d = frame.contentDocument;
  const images = [...d.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute('src'));
  return {page: frame.dataset.page, width: d.documentElement.clientWidth, scroll_width: d.documentElement.scrollWidth,
          title: d.title, missing_images: images, images: d.images.length, text: d.body.innerText.length};
}
window.addEventListener('load', () => {
  document.body.dataset.probe = JSON.stringify(frames.map(measure));
});
"""


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on localhost (a page in an iframe of the same origin can be measured)."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def laid_out(served: str, site: Path, shown: list[tuple[str, int]], folder: Path) -> list[dict[str, object]]:
    """Each (page, width) of the site laid out in an iframe that wide by one headless Chromium, measured
    once every page has loaded."""
    frames = "".join(
        f'<iframe data-page="{page}" style="display:block;width:{width}px;height:900px;border:0" '
        f'src="/{page}"></iframe>'
        for page, width in shown
    )
    probe = site / "probe-test.html"
    probe.write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">{frames}'
        f"<script>{_PROBE}</script></body></html>",
        encoding="utf-8",
    )
    try:
        run = browser.chromium(
            folder / "profile",
            "--window-size=1400,1000",
            "--virtual-time-budget=10000",
            "--dump-dom",
            f"{served}/{probe.name}",
        )
    finally:
        probe.unlink()
    found = re.search(r'data-probe="([^"]*)"', run.stdout)
    assert found, f"no measurement (exit {run.returncode}): {run.stderr[-2000:]}"
    return list(json.loads(html.unescape(found.group(1))))


WIDTHS = (1280, 390)


@pytest.fixture(scope="module")
def measured(site: Path, served: str, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], dict]:
    shown = [(page, width) for page in PAGES for width in WIDTHS]
    found = laid_out(served, site, shown, tmp_path_factory.mktemp("browser"))
    return dict(zip(shown, found, strict=True))


@needs_mkdocs
@needs_chromium
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES)
def test_the_page_fits_the_window_and_shows_its_images_in_a_real_browser(measured, page, width):
    seen = measured[(page, width)]
    assert seen["title"] and seen["text"] > 200, seen  # the page, not an error
    assert seen["width"] <= width and seen["missing_images"] == [], seen
    assert seen["scroll_width"] <= seen["width"], f"{page} is wider than {width} px: {seen}"
    if page == "index.html":
        assert seen["images"] >= 1, seen  # the report's picture, loaded (missing_images is empty)


@needs_mkdocs
@needs_chromium
def test_the_browser_check_finds_a_page_wider_than_the_window_and_a_missing_image(site, served, tmp_path):
    wide = site / "wide-test.html"
    wide.write_text(
        '<!DOCTYPE html><html><head><title>w</title></head><body><div style="width:2000px">'
        + "x " * 200
        + '</div><img src="missing.png"></body></html>'
    )
    try:
        (seen,) = laid_out(served, site, [("wide-test.html", 390)], tmp_path)
    finally:
        wide.unlink()
    assert seen["scroll_width"] > seen["width"] == 390
    assert seen["missing_images"] == ["missing.png"]


@needs_chromium
def test_the_report_picture_tool_lays_a_report_out_in_chromium_and_writes_a_small_palette_png(tmp_path):
    from PIL import Image

    from tools import report_picture

    report = tmp_path / "report.html"
    report.write_text('<!DOCTYPE html><html><body><h1 style="color:#b00">FAILED (3 of 9 gates)</h1></body></html>')
    out = tmp_path / "images" / "report.png"
    assert report_picture.main(["--report", str(report), "--out", str(out), "--width", "600", "--height", "300"]) == 0
    with Image.open(out) as picture:
        assert picture.size == (600, 300) and picture.mode == "P"
        assert (187, 0, 0) in {colour for _, colour in picture.convert("RGB").getcolors(256) or []}  # the heading
    assert out.stat().st_size < IMAGE_LIMIT
    with pytest.raises(SystemExit, match=r"--report .*gone\.html: no such file"):
        report_picture.main(["--report", str(tmp_path / "gone.html"), "--out", str(out)])
