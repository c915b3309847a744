"""``hailo-harness calibration-check``: is a calibration set fit to compile with? Predicted from the float export
and its emulated quantization on that set, before any compile (harness.doctor.calibration_check)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.core.errors import HarnessError
from harness.pipeline.argparse_options import add_options
from harness.pipeline.options import CALIBRATION_CHECK_OPTIONS, onnx_of, settings_spec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, CALIBRATION_CHECK_OPTIONS)
    parser.add_argument("--json", action="store_true", help="print the finding as JSON")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.calibration is None:
        raise HarnessError("--calibration DIR: expected the calibration images to check (a folder or a list file)")
    if args.pool is not None and not Path(args.pool).is_dir():
        raise HarnessError(f"--pool {args.pool}: not a folder; expected a folder of images to recommend from")
    from harness.doctor.calibration_check import check_calibration  # the evaluation, once the options hold
    from harness.doctor.calibration_words import check_dict, check_lines
    from harness.pipeline.factory import load_dataset, prepare_run

    values = vars(args)
    dataset = load_dataset(args.dataset, args.split, args.cache, args.images, _stderr)
    run_context = prepare_run(
        onnx_of(values),
        dataset,
        settings_spec(values),
        args.cache,
        progress=False,
        log=_stderr,
        max_unreadable=args.max_unreadable,
    )
    found = check_calibration(
        run_context,
        args.calibration,
        args.calibration_count,
        pool=args.pool,
        out=args.report,
        copy_to=args.copy_to,
        log=_stderr,
    )
    print(json.dumps(check_dict(found), indent=2) if args.json else "\n".join(check_lines(found)))
    return 0 if found.fit else 1
