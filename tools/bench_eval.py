"""Benchmark: the evaluation pipeline's own cost per image and its peak memory, inference left out.

    python -m tools.bench_eval [--data DIR] [--sizes 500 2000] [--seed S]

A synthetic fire/smoke val set (:mod:`harness.inputs.synthetic`, generated into ``--data`` if that
folder has none) runs through :class:`harness.pipeline.detect.RawHeadsPath` on a fake runner that hands back
one precomputed 640x640 frame of six UINT8 heads with the sigmoid compiled in (as a HEF delivers
them; :func:`tools.bench_decode.make_frame`, typical scene), so inference costs nothing and
everything measured is the harness: image loading, letterbox, decode, cells, unletterbox, the
prediction cache (written and fsynced a batch at a time), then COCO metrics and distributions.

Each set size runs in a fresh process, twice: once timed (with ``ru_maxrss``, the process's peak
resident memory), once under tracemalloc (peak of Python and numpy allocations during the run).
Memory must not grow with the set beyond the predictions themselves, so the 500- and 2,000-image
runs are set side by side. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

import harness.pipeline.detect as detect_module
import harness.pipeline.evaluate as evaluate_module
from harness.backends.base import InputSpec
from harness.core.settings import EvalSettings
from harness.core.specs import FormatOrder, FormatType
from harness.inputs.dataset import load_yolo
from harness.inputs.synthetic import CLASS_NAMES, Recipe, write_dataset
from harness.pipeline.cache import CacheFile, PredictionCache
from harness.pipeline.detect import RawHeadsPath
from tools.bench_decode import INPUT, make_frame


class FrameRunner:
    """One precomputed frame of raw heads for every input: a runner whose inference costs nothing."""

    label = "precomputed raw heads"

    def __init__(self, seed: int) -> None:
        self._outputs, self.output_specs, _ = make_frame(len(CLASS_NAMES), "typical", FormatType.UINT8, seed)
        self.input_specs = {"images": InputSpec("images", (INPUT, INPUT, 3), FormatOrder.NHWC, FormatType.UINT8)}
        self.seconds = 0.0

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        start = time.perf_counter()
        outputs = dict(self._outputs)
        self.seconds += time.perf_counter() - start
        return outputs

    def __enter__(self) -> FrameRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _timed(seconds: dict[str, float], key: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - start

    return wrapper


def measure(data: Path, size: int, seed: int, trace: bool) -> dict[str, Any]:
    """One run over the first ``size`` images, cache in a fresh folder, then a rerun from the cache."""
    full = load_yolo(data / "data.yaml")
    if len(full.samples) < size:
        raise SystemExit(f"{data}: {len(full.samples)} images, fewer than {size}")
    dataset = dataclasses.replace(full, samples=full.samples[:size])
    runner = FrameRunner(seed)
    model = data / "data.yaml"  # any file: the fake runner has no model of its own
    settings = EvalSettings(input_hw=(INPUT, INPUT))
    path = RawHeadsPath(runner, settings, model, model_names=tuple(CLASS_NAMES[k] for k in sorted(CLASS_NAMES)))
    seconds: dict[str, float] = {}
    before_metrics: dict[str, float] = {}
    metrics = evaluate_module.evaluate

    def measured_metrics(*args: Any, **kwargs: Any) -> Any:
        """Memory at the end of the image loop, before the metrics build their own structures."""
        if not before_metrics:  # the first run, not the rerun from the cache
            before_metrics["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            before_metrics["traced"] = tracemalloc.get_traced_memory()[1] if tracemalloc.is_tracing() else 0
        return metrics(*args, **kwargs)

    evaluate_module.load_image = _timed(seconds, "load_image", evaluate_module.load_image)
    evaluate_module.evaluate = _timed(seconds, "metrics", measured_metrics)
    detect_module.prepare = _timed(seconds, "prepare", detect_module.prepare)
    path.detect = _timed(seconds, "detect", path.detect)  # type: ignore[method-assign]
    CacheFile.put = _timed(seconds, "cache_put", CacheFile.put)  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as folder:
        cache = PredictionCache(folder)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if trace:
            tracemalloc.start()
        start = time.perf_counter()
        result = evaluate_module.evaluate_path(path, dataset, cache, progress=False)
        total = time.perf_counter() - start
        traced_peak = tracemalloc.get_traced_memory()[1] if trace else 0
        if trace:
            tracemalloc.stop()
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        evaluate_module.evaluate_path(path, dataset, cache, progress=False)
        cached_total = time.perf_counter() - start
        cache_bytes = sum(f.stat().st_size for f in Path(folder).glob("*.bin"))
    per_image = {k: 1000 * v / size for k, v in seconds.items()}
    return {
        "images": size,
        "boxes": result.box_counts.total,
        "total_ms_per_image": 1000 * total / size,
        "inference_ms_per_image": 1000 * runner.seconds / size,
        "harness_ms_per_image": 1000 * (total - runner.seconds) / size,
        "load_image_ms": per_image.get("load_image", 0.0),
        "letterbox_ms": per_image.get("prepare", 0.0),
        "decode_cells_ms": per_image.get("detect", 0.0) - per_image.get("prepare", 0.0) - 1000 * runner.seconds / size,
        "cache_put_ms": per_image.get("cache_put", 0.0),
        "metrics_ms": per_image.get("metrics", 0.0),
        "rerun_from_cache_ms_per_image": 1000 * cached_total / size,
        "cache_bytes_per_image": cache_bytes / size,
        "loop_peak_rss_mib": before_metrics["rss"] / 1024,
        "peak_rss_mib": rss_after / 1024,
        "rss_before_run_mib": rss_before / 1024,
        "loop_tracemalloc_peak_mib": before_metrics["traced"] / 2**20,
        "tracemalloc_peak_mib": traced_peak / 2**20,
    }


def _child(data: Path, size: int, seed: int, trace: bool) -> dict[str, Any]:
    command = [sys.executable, "-m", "tools.bench_eval", "--data", str(data), "--one", str(size), "--seed", str(seed)]
    done = subprocess.run([*command, *(["--trace"] if trace else [])], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "bench-eval-data")
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.data, args.one, args.seed, args.trace)))
        return
    if not (args.data / "data.yaml").is_file():
        if args.data.exists() and any(args.data.iterdir()):  # never write into someone's dataset
            sys.exit(f"bench_eval: --data {args.data} holds files but no data.yaml: give an empty or new folder")
        start = time.perf_counter()
        write_dataset(args.data, Recipe(seed=args.seed, train=0, val=max(args.sizes), calib=0))
        print(f"generated {max(args.sizes)} synthetic images in {args.data} ({time.perf_counter() - start:.0f} s)")
    rows = []
    for size in args.sizes:
        timed = _child(args.data, size, args.seed, trace=False)
        traced = _child(args.data, size, args.seed, trace=True)
        timed.update({k: traced[k] for k in ("loop_tracemalloc_peak_mib", "tracemalloc_peak_mib")})
        rows.append(timed)
    print(f"fake runner: 640x640, six UINT8 heads, 2 classes; cpu count {os.cpu_count()}")
    fields = [k for k in rows[0] if k not in ("images", "rss_before_run_mib")]
    print(f"{'':32}" + "".join(f"{r['images']:>12} img" for r in rows))
    for field in fields:
        print(f"{field:32}" + "".join(f"{r[field]:>16.3f}" for r in rows))
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        extra = large["images"] - small["images"]
        for field in ("loop_peak_rss_mib", "peak_rss_mib", "loop_tracemalloc_peak_mib", "tracemalloc_peak_mib"):
            growth = (large[field] - small[field]) * 2**20 / extra
            print(f"{field} growth: {growth:.0f} bytes per extra image")


if __name__ == "__main__":
    main()
