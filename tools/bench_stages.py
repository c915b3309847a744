"""One ``hailo-harness`` command, timed stage by stage: the harness side of ``python -m tools.bench_eval``.

    python -m tools.bench_stages OUT.json [--threads N] -- eval --onnx M.onnx --dataset D --json ...

Pins every onnxruntime session to ``--threads`` intra-op threads (one inter-op), as the Ultralytics
side does (tools/ultralytics_val.py). Runs the command through the CLI's entry point
(:func:`harness.cli.main.main`) while the pipeline's stage clock listens
(:mod:`harness.core.stage_clock`: dataset, export facts, evaluate, decode image, preprocess, inference,
decode + NMS, metrics, cache, reports) and writes to ``OUT.json`` the seconds and calls per stage, the
command's wall time, exit status and what it printed. Image decoding runs on the evaluation's read-ahead threads, so its
seconds overlap the others'. Imports the harness only in :func:`main` (tools/ultralytics_val.py
imports :func:`pin_threads` in Ultralytics' venv).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path
from typing import Any


def pin_threads(threads: int) -> None:
    """Every onnxruntime session created from now on runs ``threads`` intra-op threads, one inter-op."""
    import onnxruntime

    base = onnxruntime.InferenceSession

    class Pinned(base):  # type: ignore[misc, valid-type]
        def __init__(self, model: Any, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
            sess_options = sess_options or onnxruntime.SessionOptions()
            sess_options.intra_op_num_threads = threads
            sess_options.inter_op_num_threads = 1
            super().__init__(model, sess_options, *args, **kwargs)

    onnxruntime.InferenceSession = Pinned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--threads", type=int, help="onnxruntime intra-op threads (default: its own choice)")
    argv = sys.argv[1:]
    if "--" not in argv:
        parser.error("expected -- and the hailo-harness arguments")
    split = argv.index("--")
    args, command = parser.parse_args(argv[:split]), argv[split + 1 :]
    if args.threads is not None:
        pin_threads(args.threads)
    from harness.cli.main import main as cli
    from harness.core.stage_clock import listening

    printed = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(printed), listening() as clock:
        status = cli(command)
    wall = time.perf_counter() - start
    result = {
        "status": status,
        "wall_s": wall,
        "seconds": clock.seconds,
        "calls": clock.calls,
        "stdout": printed.getvalue(),
    }
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
