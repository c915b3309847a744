"""Benchmark: milliseconds per image to write, load and look up the prediction cache of one path, for
synthetic frames with about 20 detections each (a Poisson count) and cells above threshold.

    python -m tools.bench_cache [--images N] [--detections D] [--repeat R] [--dir DIR]

- put: :meth:`CacheFile.put` for every frame, then :meth:`CacheFile.close` (everything on disk);
- load: opening the full file again (reading, checking and decoding every frame);
- get: :meth:`CacheFile.get` of every frame from the loaded file.

The file lives in a temporary folder under ``--dir`` (default: the working directory, so that fsync
meets the disk the cache uses). Medians over ``--repeat`` runs. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.core.detections import Detections
from harness.pipeline.cache import CacheFile
from harness.pipeline.detect import FrameResult
from harness.verdict.metrics.distribution import CellsAboveThreshold
from tools.bench_paths import writable_folder

THRESHOLD = 0.25
KEY = {"path": "bench", "model_sha256": "0" * 64, "settings": {"score_threshold": THRESHOLD}}


def frames(count: int, detections: float, seed: int) -> list[tuple[str, str, FrameResult]]:
    """``count`` (image sha256, image id, frame) with Poisson(``detections``) boxes each."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.poisson(detections))
        corner = rng.random((n, 2), dtype=np.float32) * 600
        boxes = np.concatenate([corner, corner + 1 + rng.random((n, 2), dtype=np.float32) * 40], axis=1)
        dets = Detections(boxes, rng.random(n, dtype=np.float32), rng.integers(0, 80, n))
        cells = CellsAboveThreshold(THRESHOLD, 8400, n + 3, n + 5)
        sha = hashlib.sha256(f"{seed}-{i}".encode()).hexdigest()
        out.append((sha, f"images/val/{i:06d}.jpg", FrameResult(dets, cells)))
    return out


def run_once(folder: Path, data: list[tuple[str, str, FrameResult]]) -> tuple[float, float, float, int]:
    """Seconds to put all, to load all, to get all; and the file's size in bytes."""
    file = folder / "bench.cache"
    start = time.perf_counter()
    with CacheFile(file, KEY, THRESHOLD) as cache:
        for sha, image_id, frame in data:
            cache.put(sha, image_id, frame)
    put = time.perf_counter() - start
    start = time.perf_counter()
    with CacheFile(file, KEY, THRESHOLD) as loaded:
        load = time.perf_counter() - start
        start = time.perf_counter()
        got = [loaded.get(sha) for sha, _, _ in data]
        get = time.perf_counter() - start
    if any(
        g is None or g.detections.scores.tobytes() != f.detections.scores.tobytes()
        for g, (_, _, f) in zip(got, data, strict=True)
    ):
        raise SystemExit("bench_cache: a loaded frame differs from the one put")
    size = file.stat().st_size
    file.unlink()
    return put, load, get, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--detections", type=float, default=20.0, help="mean detections per image")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    writable_folder("bench_cache", "--dir", args.dir)
    data = frames(args.images, args.detections, args.seed)
    total = sum(len(f.detections) for _, _, f in data)
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-cache-", dir=args.dir) as folder:
        for _ in range(args.repeat):
            runs.append(run_once(Path(folder), data))
    put, load, get = (statistics.median(r[i] for r in runs) * 1000 / args.images for i in range(3))
    print(f"{args.images} images, {total / args.images:.1f} detections each on average, median of {args.repeat} runs")
    print(f"put  {put:.4f} ms/image (put every frame, then close)")
    print(f"load {load:.4f} ms/image (open the full file)")
    print(f"get  {get:.4f} ms/image")
    print(f"file {runs[0][3] / args.images:.0f} bytes/image")


if __name__ == "__main__":
    main()
