"""``verify-decode``: check the decoder against an ONNX export's own decoded head output."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.conformance.verify_decode import format_report, report_as_dict, verify_decode
from harness.core.errors import HarnessError
from harness.core.settings import DecodeConfig
from harness.inputs.onnx_graph import load_model, model_input
from harness.pipeline.argparse_options import add_options

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--onnx", required=True, type=Path, metavar="M.onnx", help="full Ultralytics detect export")
    parser.add_argument("--images", required=True, type=Path, metavar="DIR", help="folder of images to run")
    parser.add_argument(
        "--end-nodes",
        nargs="+",
        metavar="N",
        help="head node (or tensor) names to cut at, as given to the Hailo parser; default: found by structure",
    )
    add_options(parser, ("ssd_config",))
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def image_files(folder: Path) -> list[Path]:
    """The images directly in ``folder``, by name."""
    if not folder.is_dir():
        raise HarnessError(f"--images {str(folder)!r}: not a folder")
    found = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not found:
        raise HarnessError(f"--images {str(folder)!r}: no image files ({', '.join(sorted(IMAGE_SUFFIXES))})")
    return found


def run(args: argparse.Namespace) -> int:
    config = None
    if args.ssd_config is not None:  # the export's input size, with the anchors and box coding no graph holds
        config = DecodeConfig(input_hw=model_input(load_model(args.onnx))[1], ssd=args.ssd_config)
    report = verify_decode(args.onnx, image_files(args.images), end_nodes=args.end_nodes, config=config)
    print(json.dumps(report_as_dict(report), indent=2) if args.json else format_report(report))
    return 0 if report.ok else 1
