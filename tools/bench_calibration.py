"""``hailo-harness calibration-check`` on the demo: each calibration set's verdict, predicted accuracy and cost.

    python -m tools.bench_calibration [--work DIR] [--cases ...] [--write-figures]

Cases (the demo's fire/smoke YOLO11n 256 on its 100 synthetic validation images): the demo's 64 in-domain
and 64 off-domain calibration frames at threshold 0.2, and the 16 COCO images of the fixtures
(``HARNESS_FIXTURES``) at 0.2 and 0.5. They run in one project folder, in that order, through the command
line (so the float model's predictions and the in-domain reference are cached after the first); the first
case is then checked again with everything cached. Printed per case: the verdict, the emulated mAPs against
the in-domain calibration (their paired bootstrap intervals), the class outputs' score ceiling, the images
the check adds and the accuracy with them, and the wall time. ``--write-figures`` writes them to
``docs/figures/calibration_check.json``, where the documentation reads them (``tools/docs_figures.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.bench_paths import writable_folder
from tools.docs_figures import rounded, write_figures

FIXTURES = Path(os.environ.get("HARNESS_FIXTURES", Path(__file__).resolve().parents[2] / "shared" / "fixtures"))
COCO_IMAGES = FIXTURES / "datasets" / "coco128_val16" / "images" / "val2017"
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    name: str
    calibration: str
    threshold: float
    label: str


CASES = (
    Case("demo_off_domain", "off-domain", 0.2, "the demo's off-domain frames"),
    Case("demo_in_domain", "in-domain", 0.2, "the demo's in-domain frames"),
    Case("coco16_at_0_2", str(COCO_IMAGES), 0.2, "16 COCO images"),
    Case("coco16_at_0_5", str(COCO_IMAGES), 0.5, "16 COCO images"),
)


def check(case: Case, work: Path) -> tuple[dict[str, Any], float]:
    """The check's JSON (``calibration-check --json``) and the command's wall time."""
    command = [sys.executable, "-m", "harness.cli.main", "calibration-check", "--calibration", case.calibration]
    command += ["--score-threshold", str(case.threshold), "--report", f"reports/{case.name}", "--json"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench_calibration: {case.name}: exit {done.returncode}\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result, seconds


def figures_of(case: Case, result: dict[str, Any], seconds: float) -> dict[str, Any]:
    """What the documentation quotes of one case."""
    versus, added = result["versus_in_domain"], result["with_additions"]
    return {
        "calibration": case.label,
        "images": result["images"],
        "threshold": case.threshold,
        "verdict": result["verdict"],
        "float_map50": result["float_model"]["map50"],
        "map50": result["calibrated"]["map50"],
        "map50_95": result["calibrated"]["map50_95"],
        "in_domain_map50": result["in_domain"]["map50"],
        "in_domain_map50_95": result["in_domain"]["map50_95"],
        "versus_map50": versus["map50"],
        "versus_map50_95": versus["map50_95"],
        "score_ceiling": result["score_ceiling"],
        "float_boxes": result["float_boxes"],
        "capped": result["capped"],
        "additions": len(result["additions"]),
        "with_additions_map50": added["map50"] if added else None,
        "with_additions_map50_95": added["map50_95"] if added else None,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=None, help="an existing folder for the project folder")
    parser.add_argument("--cases", nargs="*", choices=[c.name for c in CASES], default=[c.name for c in CASES])
    parser.add_argument("--write-figures", action="store_true", help="write docs/figures/calibration_check.json")
    args = parser.parse_args(argv)
    if args.work is not None:
        writable_folder("bench_calibration", "--work", args.work)
    if not COCO_IMAGES.is_dir() and any(c.startswith("coco") for c in args.cases):
        raise SystemExit(f"bench_calibration: {COCO_IMAGES}: no such folder (set HARNESS_FIXTURES)")
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=args.work, prefix="bench-calibration-") as folder:
        work = Path(folder)
        chosen = [c for c in CASES if c.name in args.cases]
        for case in chosen:
            result, seconds = check(case, work)
            figures[case.name] = figures_of(case, result, seconds)
            print(_line(figures[case.name]), flush=True)
        _, cached = check(chosen[0], work)
    figures["cached_rerun_seconds"] = cached
    print(f"{chosen[0].name} again, everything cached: {cached:.1f} s; load {os.getloadavg()[0]:.1f}")
    if args.write_figures:
        size = "the demo's 100 synthetic validation images; the 16 COCO images of the fixtures"
        path = write_figures("calibration_check", rounded(figures), "python -m tools.bench_calibration", size)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


def _line(f: dict[str, Any]) -> str:
    v = f["versus_map50"]
    added = f"{f['additions']} added: {f['with_additions_map50']:.3f}" if f["additions"] else "none added"
    ceiling = "-" if f["score_ceiling"] is None else f"{f['score_ceiling']:.3f}"
    return (
        f"{f['calibration']:<30} at {f['threshold']:<4} {f['verdict']:<18} mAP@0.5 {f['map50']:.3f} "
        f"(vs in-domain {v['point']:+.3f} [{v['low']:+.3f}, {v['high']:+.3f}]) ceiling {ceiling} "
        f"({f['capped']} of {f['float_boxes']} boxes above)  {added}  {f['seconds']:.1f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
