"""``hailo-harness run``: the main job (ONNX path + emulated Hailo path, gates, reports)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.backends.hailort import OUTPUT_FORMATS
from harness.errors import HarnessError
from harness.job import DEMO_ONNX, IN_DOMAIN, OFF_DOMAIN, JobConfig, run_job, summary_lines

HELP = (
    "run the full gate: the ONNX and the Hailo path (emulated, or a HEF on a device) vs golden baselines, "
    "optionally the Dataflow Compiler's emulation stages of a HAR; reports written"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--onnx", type=Path, default=DEMO_ONNX, help="float Ultralytics export (default: the demo)")
    parser.add_argument("--dataset", type=Path, help="YOLO dataset folder or yaml (default: the demo validation set)")
    parser.add_argument(
        "--calibration",
        default=IN_DOMAIN,
        help=f"calibration images folder, or {IN_DOMAIN!r} / {OFF_DOMAIN!r} (the demo set's; default {IN_DOMAIN})",
    )
    parser.add_argument("--calibration-count", type=int, default=64)
    parser.add_argument("--score-threshold", type=float, default=0.2)
    parser.add_argument("--iou-threshold", type=float, default=0.7)
    parser.add_argument("--golden", type=Path, default=JobConfig.golden_root, help="golden baselines folder")
    parser.add_argument("--report", type=Path, default=JobConfig.report_dir, help="where the reports go")
    parser.add_argument("--cache", type=Path, default=JobConfig.cache_dir, help="cache folder")
    parser.add_argument("--update-golden", action="store_true", help="bless this run as the new baseline")
    parser.add_argument(
        "--backend",
        choices=("emulator", "hailort"),
        help="the Hailo path: the ONNX as an emulated HEF (default), or --hef on a Hailo device (default with --hef)",
    )
    parser.add_argument("--hef", type=Path, metavar="M.hef", help="compiled HEF for --backend hailort")
    parser.add_argument(
        "--hailo-device", action="append", default=[], metavar="ID", help="HailoRT device id (repeatable)"
    )
    parser.add_argument(
        "--hailo-format",
        choices=OUTPUT_FORMATS,
        default="float32",
        help="output type asked of HailoRT: float32 (HailoRT dequantizes) or uint8 (dequantized by the harness)",
    )
    parser.add_argument(
        "--har",
        type=Path,
        metavar="M.har",
        help="optimized HAR (hailo-harness compile): its fp-optimized and quantized emulations run and the stage "
        "gate names the first stage that loses accuracy (needs the Dataflow Compiler)",
    )


def run(args: argparse.Namespace) -> int:
    start = time.monotonic()
    backend = args.backend or ("hailort" if args.hef is not None else "emulator")
    if args.hailo_device and backend != "hailort":
        raise HarnessError(f"--hailo-device belongs to --backend hailort, not --backend {backend}")
    config = JobConfig(
        onnx=args.onnx,
        dataset=args.dataset,
        calibration=args.calibration,
        calibration_count=args.calibration_count,
        golden_root=args.golden,
        report_dir=args.report,
        cache_dir=args.cache,
        score_threshold=args.score_threshold,
        iou_threshold=args.iou_threshold,
        update_golden=args.update_golden,
        invocation=("hailo-harness", "run", *sys.argv[2:]),
        backend=backend,
        hef=args.hef,
        hailo_devices=tuple(args.hailo_device),
        hailo_format=OUTPUT_FORMATS[args.hailo_format],
        har=args.har,
    )
    job = run_job(config, log=lambda line: print(line, file=sys.stderr))
    for line in job.golden_changes:
        print(line)
    for line in summary_lines(job):
        print(line)
    print(f"wall time {time.monotonic() - start:.1f} s")
    return 0 if job.passed else 1
