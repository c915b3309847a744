"""``hailo-harness doctor``: every failure mode of the catalogue injected into one model's run; is
each caught by a gate and named by the diagnosis, and do clean runs pass?"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.catalogue import MODES, MODES_BY_NAME, run_doctor, table_dict, table_lines
from harness.errors import HarnessError
from harness.job import DEMO_ONNX, IN_DOMAIN, OFF_DOMAIN, JobConfig

HELP = "inject each known failure mode into a run and check that a gate catches it and the diagnosis names it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--onnx", type=Path, default=DEMO_ONNX, help="float Ultralytics export (default: the demo)")
    parser.add_argument("--dataset", type=Path, help="YOLO dataset folder or yaml (default: the demo validation set)")
    parser.add_argument("--images", type=int, help="use only the first N images of the dataset")
    parser.add_argument(
        "--calibration",
        help=f"calibration images folder, or {IN_DOMAIN!r} / {OFF_DOMAIN!r} (the demo set's); "
        "default: the demo's in-domain split on the demo set, else the dataset's own images",
    )
    parser.add_argument(
        "--mode", action="append", choices=[m.name for m in MODES], help="run only this mode (repeatable)"
    )
    parser.add_argument("--golden", type=Path, default=JobConfig.golden_root, help="golden baselines folder")
    parser.add_argument("--cache", type=Path, default=JobConfig.cache_dir, help="cache folder")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")


def run(args: argparse.Namespace) -> int:
    if args.images is not None and args.images < 1:
        raise HarnessError(f"--images {args.images}: expected a positive number of images")
    modes = [MODES_BY_NAME[name] for name in args.mode] if args.mode else MODES
    table = run_doctor(
        args.onnx,
        args.dataset,
        images=args.images,
        modes=modes,
        calibration=args.calibration,
        cache_dir=args.cache,
        golden_root=args.golden,
    )
    if args.json:
        print(json.dumps(table_dict(table), indent=2))
    else:
        print("\n".join(table_lines(table)))
    return 0 if not table.problems else 1
