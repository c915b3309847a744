"""``hailo-harness``: one subcommand per module in ``harness.cli.commands``.

Each command module provides ``add_arguments(parser)`` and ``run(args) -> int``; :data:`HELP` says
what each does.
Harness errors are printed as one clear line and exit with status 2; no bare traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from harness import __version__
from harness.core.errors import HarnessError

COMMANDS = {
    "compile": "harness.cli.commands.compile",
    "doctor": "harness.cli.commands.doctor",
    "eval": "harness.cli.commands.eval",
    "inspect": "harness.cli.commands.inspect",
    "run": "harness.cli.commands.run",
    "verify-decode": "harness.cli.commands.verify_decode",
}
# What each command does, for the top-level help: listing them imports none of them.
HELP = {
    "compile": "write and check the DFC model script (.alls) and NMS config for an ONNX, then compile a HEF "
    "with the DFC",
    "doctor": "inject each known failure mode into a run and check that a gate catches it and the diagnosis names it",
    "eval": "run a model through one backend over a labelled dataset and report COCO mAP, box counts and score "
    "distribution (predictions cached per image, so an interrupted run resumes)",
    "inspect": "describe a HEF (architecture, streams, quantization, NMS op) and how its outputs reach the host",
    "run": "run the full gate: the ONNX and the Hailo path (emulated, or a HEF on a device) vs golden baselines, "
    "optionally the Dataflow Compiler's emulation stages of a HAR; reports written",
    "verify-decode": "cut an Ultralytics ONNX export at its six head outputs, decode them, and compare boxes, scores "
    "and detections after NMS with the model's own decoded output",
}


DESCRIPTION = """\
Accuracy-regression tests for YOLO detectors compiled for Hailo accelerators: the ONNX
export and the Hailo path (a HEF on a device, or emulated without one, and labelled so)
on the same labelled images, held against golden baselines, with reports that say why a
run regressed."""
EPILOG = """first steps:
  hailo-harness run                     the main job on the shipped demo (no Hailo hardware needed)
  hailo-harness run --onnx M.onnx --dataset data.yaml --update-golden
                                        bless your model's first baselines into ./golden
  hailo-harness inspect M.hef           what a HEF holds, read without HailoRT
  pytest --onnx=M.onnx --dataset=data.yaml   the same gates as test items in your pytest run

'hailo-harness COMMAND --help' shows a command's options and their defaults."""


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command listed, and the options of ``chosen`` (None: of every command),
    whose module alone is imported."""
    parser = argparse.ArgumentParser(
        prog="hailo-harness",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hailo-harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module_name in COMMANDS.items():
        command = sub.add_parser(name, help=HELP[name], description=HELP[name])
        if chosen is None or name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(command)
            command.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(chosen if chosen in COMMANDS else "").parse_args(argv)  # "": no command's options
    try:
        return int(args.run(args))
    except HarnessError as error:
        print(f"hailo-harness {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
