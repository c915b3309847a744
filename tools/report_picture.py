"""The picture of a sign-off report that README.md and the documentation's landing page show.

    python -m tools.report_picture [--report reports/latest/report.html] [--out docs/images/report.png]

Without ``--report`` it runs ``hailo-harness run --calibration off-domain`` on the demo in a temporary project
folder (the field report's calibration set: a gate fails and the diagnosis names the cause), then lays the
HTML report out in headless Chromium (``chromium`` on the PATH) ``--width`` px wide and keeps its first
``--height`` px, reduced to a 256-colour palette (a few hundred KB at most) and written whole.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

from harness.report.pdf import browser, headless

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images" / "report.png"
LIMIT = 400_000  # bytes: a picture a README can afford


def demo_report(work: Path) -> Path:
    """The HTML report of the demo run on the off-domain calibration, written under ``work``."""
    command = [sys.executable, "-m", "harness.cli.main", "run", "--calibration", "off-domain"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
    report = work / "reports" / "latest" / "report.html"
    if done.returncode not in (0, 1) or not report.is_file():
        raise SystemExit(f"report_picture: the demo run exited {done.returncode}:\n{done.stderr[-2000:]}")
    return report


def screenshot(report: Path, width: int, height: int, work: Path) -> bytes:
    """``report`` laid out ``width`` px wide by headless Chromium: the first ``height`` px, as PNG bytes."""
    chromium = browser()
    if chromium is None:
        raise SystemExit("report_picture: chromium not found on the PATH (Debian: apt-get install -y chromium)")
    shot = work / "shot.png"
    size, target = f"--window-size={width},{height}", f"--screenshot={shot}"
    command = headless(chromium, work / "profile", "--hide-scrollbars", size, target, report.resolve().as_uri())
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if not shot.is_file():
        raise SystemExit(f"report_picture: chromium wrote no picture (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return shot.read_bytes()


def reduced(png: bytes) -> bytes:
    """The picture with a 256-colour palette, optimised (a report's flat colours keep their look)."""
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=Path, default=None, help="an HTML report (default: run the demo for one)")
    parser.add_argument("--out", type=Path, default=OUT, help="the picture to write (default: %(default)s)")
    parser.add_argument("--width", type=int, default=1100)
    parser.add_argument("--height", type=int, default=1300)
    args = parser.parse_args(argv)
    if args.report is not None and not args.report.is_file():
        raise SystemExit(f"report_picture: --report {args.report}: no such file (expected a report.html)")
    from harness.core.files import write_atomic

    with tempfile.TemporaryDirectory(prefix="report-picture-") as folder:
        work = Path(folder)
        report = args.report or demo_report(work)
        picture = reduced(screenshot(report, args.width, args.height, work))
    if len(picture) > LIMIT:
        raise SystemExit(f"report_picture: {len(picture)} bytes, over {LIMIT}: ask for a smaller --height or --width")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out, picture)
    print(f"wrote {args.out} ({len(picture) // 1000} KB, {args.width}x{args.height})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
