"""``hailo-harness inspect``: describe a HEF without HailoRT."""

from __future__ import annotations

import argparse
import json

from harness.inputs.hef.inspect import render_text, summary
from harness.inputs.hef.reader import read_hef


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("hef", help="path of the .hef file")
    parser.add_argument("--json", action="store_true", help="print the description as JSON")
    parser.add_argument(
        "--tolerant",
        action="store_true",
        help="describe what can be read from a truncated or corrupted file instead of refusing it",
    )


def run(args: argparse.Namespace) -> int:
    info = read_hef(args.hef, tolerant=args.tolerant)
    print(json.dumps(summary(info), indent=2) if args.json else render_text(info))
    return 0
