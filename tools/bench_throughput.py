"""Images per second of each way the harness can produce one path's predictions, through ``eval``:
the ONNX path, the emulated Hailo path, the emulated path recording its outputs (``--record``), the
Hailo path replayed from that store (``--replay``), and a rerun served wholly by the prediction cache.

Each is a child process (:mod:`tools.bench_stages`) on the same images and settings (Ultralytics'
val protocol, :data:`tools.bench_compare.HARNESS_PROTOCOL`); images per second count the evaluation
(the image loop and the metrics), the process's wall time is given beside it. A first emulated run
builds the emulated HEF into the bench's cache folder (or finds it there) before the timed runs;
its wall time is returned too.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any

from tools.bench_compare import HARNESS_PROTOCOL, Case, Lab, dataset_of, run_harness


@dataclass(frozen=True)
class Throughput:
    """One way: its images, the evaluation's images per second, predictions from the cache, and
    the whole process's wall time."""

    label: str
    images: int
    images_per_s: float
    from_cache: int
    process_s: float


def _row(label: str, run: dict[str, Any]) -> Throughput:
    result = run["result"]
    images = int(result["n_images"])
    return Throughput(
        label, images, images / run["seconds"]["evaluate"], int(result["provenance"]["from_cache"]), run["process_s"]
    )


def measure(bench: Lab, case: Case) -> tuple[list[Throughput], float]:
    """The rows, and the wall time of the first emulated run (with the emulated HEF's build, unless cached)."""
    dataset = dataset_of(bench, case)
    folder = bench.work / "runs" / f"throughput-{case.name}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    base = ["eval", "--onnx", str(case.onnx), "--dataset", str(dataset.root), *HARNESS_PROTOCOL, "--json"]
    base += ["--no-progress"]
    store, cache = folder / "emulated.rec", folder / "cache"

    def run(name: str, *extra: str) -> dict[str, Any]:
        return run_harness(bench, [*base, *extra], folder / f"{name}.json")

    build = run("build", "--backend", "emulator", "--no-cache")
    rows = [
        _row("onnx (no cache)", run("onnx", "--no-cache")),
        _row("onnx, filling the cache", run("fill", "--cache", str(cache))),
        _row("onnx, rerun from the cache", run("rerun", "--cache", str(cache))),
        _row("emulated hailo (no cache)", run("emulated", "--backend", "emulator", "--no-cache")),
        _row("emulated hailo, recording", run("record", "--backend", "emulator", "--record", str(store), "--no-cache")),
        _row("hailo replayed from the store", run("replay", "--replay", str(store), "--no-cache")),
    ]
    return rows, build["process_s"]
