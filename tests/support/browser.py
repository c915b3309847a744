"""The HTML report laid out by headless Chromium at a given width, measured in the browser: every text
box on the page (HTML and inline SVG text, folded sections left out), the pairs that overlap, those
cut by a container that hides its overflow (an SVG's box, a clipped block) or by the page's edge, the
page's height, and where the verdict and the gates table stand (each gate's row with the gate's name as
shown).

Chromium's headless window is at least 500 px wide, so the page is laid out in an iframe of the width
asked for (``srcdoc``: same origin, so the probe reads its layout); the report itself holds no script.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from harness.report.pdf import headless

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Set where the browser tests must run (CI): without Chromium they fail instead of skipping.
REQUIRED = bool(os.environ.get("HARNESS_REQUIRE_CHROMIUM"))
SKIP_REASON = "chromium not installed (Debian: apt-get install -y chromium; HARNESS_REQUIRE_CHROMIUM=1 requires it)"

_PROBE = r"""
const frame = document.getElementById('page');
function probe() {
  const d = frame.contentDocument, width = d.documentElement.clientWidth;
  const boxes = [], range = d.createRange();
  const walker = d.createTreeWalker(d.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement, text = n.textContent.trim();
    if (!text || el.closest('title, style, script')) continue;
    const folded = el.closest('details:not([open])');
    if (folded && !el.closest('summary')) continue;
    range.selectNodeContents(n);
    for (const r of range.getClientRects()) {
      if (r.width < 0.5 || r.height < 0.5) continue;
      boxes.push({el, node: n, text: text.slice(0, 50), l: r.left, t: r.top, r: r.right, b: r.bottom});
    }
  }
  const scroller = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  const cut = [];
  for (const box of boxes) {
    let held = false;
    for (let a = box.el; a && a !== d.body; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (['auto', 'scroll'].includes(s.overflowX) || ['auto', 'scroll'].includes(s.overflowY)) { held = true; break; }
      if (['hidden', 'clip'].includes(s.overflowX) || ['hidden', 'clip'].includes(s.overflowY)) {
        const c = a.getBoundingClientRect();
        if (box.l < c.left - 1 || box.r > c.right + 1 || box.t < c.top - 1 || box.b > c.bottom + 1) {
          cut.push(`${box.text} (cut by <${a.tagName.toLowerCase()}>)`); held = true; break;
        }
      }
    }
    if (!held && (box.r > width + 1 || box.l < -1)) cut.push(`${box.text} (cut by the page's edge)`);
  }
  const overlaps = [];
  const sorted = boxes.slice().sort((a, b) => a.t - b.t);
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i];
    for (let j = i + 1; j < sorted.length && sorted[j].t < a.b - 1; j++) {
      const b = sorted[j];
      if (a.node === b.node) continue;
      if (Math.min(a.r, b.r) - Math.max(a.l, b.l) > 1 && Math.min(a.b, b.b) - Math.max(a.t, b.t) > 1)
        overlaps.push(`${a.text} | ${b.text}`);
    }
  }
  const rect = e => {
    if (!e) return null;
    const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom};
  };
  const gates = [...d.querySelectorAll('h2')].find(h => h.textContent.trim() === 'Gates');
  const table = gates ? gates.nextElementSibling : null;
  const rows = table ? [...table.querySelectorAll('tbody tr')].map(
    row => ({...rect(row), gate: row.cells[0].innerText.trim()})) : [];
  document.body.dataset.probe = JSON.stringify({
    width, height: d.documentElement.scrollHeight, boxes: boxes.length, overlaps, cut,
    verdict: rect(d.querySelector('.verdict')), verdict_text: (d.querySelector('.verdict') || {}).textContent,
    verdict_class: (d.querySelector('.verdict') || {className: ''}).className,
    gates: rect(gates), rows,
    first_screen: d.body.innerText.slice(0, 1500),
  });
}
if (frame.contentDocument && frame.contentDocument.readyState === 'complete' && frame.contentDocument.body
    && frame.contentDocument.body.childElementCount) probe(); else frame.addEventListener('load', probe);
"""


def chromium(profile: Path, *args: str, timeout: int = 180) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = headless(CHROMIUM, profile, *args)
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def layout(page: str, width: int, folder: Path, height: int = 800) -> dict[str, Any]:
    """``page`` (a whole HTML document) laid out ``width`` px wide with a first screen ``height`` px
    tall, measured (see the module)."""
    wrapper = folder / f"probe-{width}.html"
    wrapper.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">'
        f'<iframe id="page" style="width:{width}px;height:{height}px;border:0" srcdoc="{html.escape(page)}"></iframe>'
        f"<script>{_PROBE}</script></body></html>",
        encoding="utf-8",
    )
    run = chromium(folder / "profile", "--window-size=1400,1000", "--dump-dom", wrapper.as_uri())
    found = re.search(r'data-probe="([^"]*)"', run.stdout)
    assert found, f"no measurement (exit {run.returncode}): {run.stderr[-2000:]}"
    return dict(json.loads(html.unescape(found.group(1))))


def screenshot(page: Path, width: int, height: int, target: Path, folder: Path) -> Path:
    """A screenshot of ``page`` (a file) ``width`` x ``height`` px (at least 500 px wide: Chromium's
    headless window)."""
    run = chromium(folder / "profile", f"--screenshot={target}", f"--window-size={width},{height}", page.as_uri())
    assert target.is_file(), f"no screenshot (exit {run.returncode}): {run.stderr[-2000:]}"
    return target
