"""``hailo-harness run``: the main job (ONNX path + emulated Hailo path, gates, reports)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from harness.pipeline.argparse_options import add_options
from harness.pipeline.options import JOB_OPTIONS, job_config

if TYPE_CHECKING:
    from harness.pipeline.job import JobResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, JOB_OPTIONS)


def run(args: argparse.Namespace) -> int:
    from harness.pipeline.job import run_job  # the evaluation, once the options hold

    start = time.monotonic()
    config = job_config(vars(args), invocation=("hailo-harness", "run", *sys.argv[2:]))
    if args.shard is not None:  # a share of the images into a store; hailo-harness merge gates the union
        from harness.pipeline.shard import run_shard

        stored = run_shard(config, args.shard, vars(args), log=lambda line: print(line, file=sys.stderr))
        for line in stored.lines():
            print(line)
        print(f"wall time {time.monotonic() - start:.1f} s")
        return 0
    return said(run_job(config, log=lambda line: print(line, file=sys.stderr)), start)


def said(job: JobResult, start: float) -> int:
    """``job``'s baseline changes, its summary and the wall time since ``start`` on stdout; its exit status."""
    from harness.pipeline.job import summary_lines

    for line in job.golden_changes:
        print(line)
    for line in summary_lines(job):
        print(line)
    print(f"wall time {time.monotonic() - start:.1f} s")
    return 0 if job.passed else 1
