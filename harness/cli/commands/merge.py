"""``hailo-harness merge STORE...``: the stores of every shard of one job (``run --shard K/N``)
joined, gated and reported once, as one run over every image would be."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.pipeline.argparse_options import add_options
from harness.pipeline.options import MERGE_OPTIONS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "stores",
        nargs="+",
        type=Path,
        metavar="STORE",
        help="the --report folder of each shard run (run --shard K/N), one per shard, in any order",
    )
    add_options(parser, MERGE_OPTIONS)


def run(args: argparse.Namespace) -> int:
    from harness.cli.commands.run import said
    from harness.pipeline.shard import merge_job  # the evaluation, once the options hold

    start = time.monotonic()
    job = merge_job(
        args.stores,
        vars(args),
        invocation=("hailo-harness", "merge", *sys.argv[2:]),
        log=lambda line: print(line, file=sys.stderr),
    )
    return said(job, start)
