"""``report.pdf``: the HTML report printed by headless Chromium, with its folded sections open.

Chromium lays out and prints the very page a reviewer sees (the inline SVG charts, the embedded
images, the tables as they wrap), so the PDF is that page on paper; a pure-Python renderer would
lay out a second, different page. Without Chromium ``--pdf`` is refused before any work, in one line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.files import write_atomic

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIMEOUT = 180  # seconds Chromium may take to print a report (about 2 s for the demo's)
MISSING = (
    "--pdf: no PDF renderer: headless Chromium is not installed (looked for {names}); install it "
    "(Debian: apt-get install chromium) or leave out --pdf"
)


def browser() -> str | None:
    """The headless Chromium that prints the PDF (``HARNESS_CHROMIUM``, else the first found on PATH)."""
    named = os.environ.get("HARNESS_CHROMIUM")
    if named:
        return shutil.which(named)
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


def require_browser() -> str:
    """The browser :func:`write_pdf` uses, or the one-line refusal (a :class:`HarnessError`)."""
    found = browser()
    if found is None:
        named = os.environ.get("HARNESS_CHROMIUM")
        raise HarnessError(MISSING.format(names=", ".join((named,) if named else BROWSERS)))
    return found


def headless(chromium: str, profile: Path, *args: str) -> list[str]:
    """The command that runs ``chromium`` headless with its own ``profile`` folder, fetching nothing of its own
    (no component updates, sync or QUIC), then ``args``."""
    return [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]


def write_pdf(html: str, target: Path) -> Path:
    """``html`` (a whole page, nothing fetched) printed to ``target``, written whole or not at all."""
    chromium = require_browser()
    with tempfile.TemporaryDirectory(prefix="harness-pdf-") as folder:
        page, printed = Path(folder) / "report.html", Path(folder) / "report.pdf"
        page.write_text(html, encoding="utf-8")
        command = headless(
            chromium, Path(folder) / "profile", "--no-pdf-header-footer", f"--print-to-pdf={printed}", page.as_uri()
        )
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise HarnessError(f"--pdf: {chromium} could not print the report: {error}") from None
        if not printed.is_file() or not printed.read_bytes().startswith(b"%PDF"):
            said = run.stderr.strip().splitlines()[-1:] or [f"exit {run.returncode}"]
            raise HarnessError(f"--pdf: {chromium} printed no PDF ({said[0]})")
        write_atomic(target, printed.read_bytes())
    return target
