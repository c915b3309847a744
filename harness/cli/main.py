"""``hailo-harness``: one subcommand per module in ``harness.cli.commands``.

Each command module provides ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hailo-harness", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"hailo-harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except HarnessError as error:
        print(f"hailo-harness {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
