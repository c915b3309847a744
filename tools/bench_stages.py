"""One ``hailo-harness`` command, timed stage by stage: the harness side of ``python -m tools.bench_eval``.

    python -m tools.bench_stages OUT.json [--threads N] -- eval --onnx M.onnx --dataset D --json ...

Pins every onnxruntime session to ``--threads`` intra-op threads (one inter-op), as the Ultralytics
side does (tools/ultralytics_val.py). Wraps the functions each stage of a detection path runs in
(:data:`HOOKS`), runs the command through the CLI's entry point (:func:`harness.cli.main.main`) and
writes to ``OUT.json`` the seconds and calls per stage, the command's wall time, exit status and
what it printed. A stage's inner calls of the same stage (a recording runner around the emulator)
count once; image decoding runs on the evaluation's read-ahead threads, so its seconds overlap the
others'.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# (stage, module, attribute): where each stage's work is done. ``detect`` is a path's whole
# detect(): its decode and NMS are what is left after its preprocess and inference.
HOOKS: tuple[tuple[str, str, str], ...] = (
    ("dataset scan", "harness.pipeline.factory", "load_dataset"),
    ("evaluate", "harness.pipeline.factory", "evaluate_path"),
    ("decode image", "harness.pipeline.evaluate", "load_image"),
    ("preprocess", "harness.pipeline.detect", "prepare"),
    ("preprocess", "harness.pipeline.detect", "to_nchw_float"),
    ("detect", "harness.pipeline.detect", "OnnxPath.detect"),
    ("detect", "harness.pipeline.detect", "RawHeadsPath.detect"),
    ("detect", "harness.pipeline.detect", "NmsBufferPath.detect"),
    ("detect", "harness.pipeline.detect", "OnnxPath.detect_batch"),
    ("detect", "harness.pipeline.detect", "RawHeadsPath.detect_batch"),
    ("detect", "harness.pipeline.detect", "NmsBufferPath.detect_batch"),
    ("inference", "harness.backends.onnx.runner", "FullHeadRunner.infer"),
    ("inference", "harness.backends.onnx.runner", "FullHeadRunner.infer_batch"),
    ("inference", "harness.backends.emulator", "EmulatorRunner.infer"),
    ("inference", "harness.backends.emulator", "EmulatorRunner.infer_batch"),
    ("inference", "harness.backends.replay", "ReplayRunner.infer"),
    ("inference", "harness.backends.replay", "RecordingRunner.infer"),
    ("inference", "harness.backends.replay", "RecordingRunner.infer_batch"),
    ("metrics", "harness.pipeline.evaluate", "evaluate"),
    ("metrics", "harness.pipeline.evaluate", "box_counts"),
    ("metrics", "harness.pipeline.evaluate", "score_distribution"),
    ("cache", "harness.pipeline.cache", "PredictionCache.open"),
    ("cache", "harness.pipeline.cache", "CacheFile.get"),
    ("cache", "harness.pipeline.cache", "CacheFile.put"),
    ("cache", "harness.pipeline.cache", "CacheFile.close"),
)


class StageClock:
    """Seconds and calls per stage, from any thread; a call inside a call of its own stage is not counted."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    def wrap(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            active: set[str] = self._local.__dict__.setdefault("active", set())
            if stage in active:
                return function(*args, **kwargs)
            active.add(stage)
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                active.discard(stage)
                with self._lock:
                    self.seconds[stage] = self.seconds.get(stage, 0.0) + elapsed
                    self.calls[stage] = self.calls.get(stage, 0) + 1

        return wrapper

    def install(self, hooks: tuple[tuple[str, str, str], ...] = HOOKS) -> None:
        """Wrap every hook in place; one the harness no longer has stops the benchmark, naming it."""
        for stage, module_name, attribute in hooks:
            owner: Any = importlib.import_module(module_name)
            *parents, name = attribute.split(".")
            for parent in parents:
                owner = getattr(owner, parent, None)
            if owner is None or not callable(getattr(owner, name, None)):
                raise SystemExit(f"bench_stages: {module_name}.{attribute} is gone: update HOOKS ({stage!r})")
            setattr(owner, name, self.wrap(stage, getattr(owner, name)))


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
    clock = StageClock()
    clock.install()
    from harness.cli.main import main as cli

    printed = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(printed):
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
