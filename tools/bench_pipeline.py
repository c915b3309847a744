"""Throughput of the hardware path with batches in flight on the device against the same path waiting for
each batch, on the fake hailo_platform (tests/support) at a fixed latency per frame.

    python -m tools.bench_pipeline [--latencies-ms 1 10] [--images N] [--batch 8] [--rounds 3] [--api infer_model]

The demo model's raw heads, emulated into a HEF (uint8 outputs, the class sigmoid inside; cached under
``--work``), are served by :class:`support.fake_hailo_platform.FakeHailoRT` with each frame taking the
latency given (its outputs kept by the frame's bytes, so that the device's own computing costs nothing
after the first round: the device is the latency alone). The frames are the fire/smoke fixture images
(``HARNESS_FIXTURES``), repeated to ``--images``. Each round times, one after the other (A B A B):

- ``device``: the frames, letterboxed beforehand, through the runner alone, batches kept in flight;
- ``host``: ``evaluate_path`` with a device that answers at once (latency 0): reading, letterbox, decode
  and NMS, the metrics;
- ``synchronous``: ``evaluate_path`` at the latency, each batch waited for before the next is made;
- ``pipelined``: the same, batches kept in flight (what the harness does).

Printed per latency: frames per second of each (medians of the rounds) and the pipelined and synchronous
throughputs over the slower of device and host (target: pipelined >= 0.90), with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from harness.backends.emulator import EmulatedHef, EmulatorOptions, build_emulated_hef
from harness.backends.hailort import Api, HailoRTRunner
from harness.core.path_names import HAILO
from harness.core.settings import EvalSettings
from harness.core.specs import FormatType
from harness.inputs.dataset import Dataset
from harness.inputs.demo import DEMO_ONNX
from harness.inputs.preprocess import letterbox, load_image
from harness.pipeline.detect import RawHeadsPath
from harness.pipeline.evaluate import evaluate_path
from tools.bench_paths import writable_folder
from tools.bench_sets import FIRE_SMOKE, repeated

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the fake hailo_platform: tests/support
from support.fake_hailo_platform import HAILORT_5_1, FakeHailoRT

TARGET = 0.90
INPUT_HW = (256, 256)


class Waiting:
    """A runner whose batches are each waited for (it offers no ``submit_batch``): the synchronous path."""

    def __init__(self, runner: HailoRTRunner) -> None:
        self._runner = runner
        self.label, self.input_specs, self.output_specs = runner.label, runner.input_specs, runner.output_specs

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, Any]:
        return self._runner.infer(feed)

    def infer_batch(self, feed: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
        return self._runner.infer_batch(feed)


def timed_eval(runner: Any, dataset: Dataset, batch: int) -> float:
    path = RawHeadsPath(runner, EvalSettings(input_hw=INPUT_HW), DEMO_ONNX, name=HAILO, model_names=dataset.names)
    start = time.perf_counter()
    evaluate_path(path, dataset, batch=batch, progress=False)
    return time.perf_counter() - start


def timed_device(runner: HailoRTRunner, frames: np.ndarray, batch: int) -> float:
    start = time.perf_counter()
    waiting = [runner.submit_batch({"images": frames[i : i + batch]}) for i in range(0, len(frames), batch)]
    for result in waiting:
        result()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latencies-ms", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queue", type=int, help="frames the fake device's async queue takes (default: two batches)")
    parser.add_argument("--api", choices=[Api.INFER_MODEL.value, Api.VSTREAMS.value], default=Api.INFER_MODEL.value)
    parser.add_argument("--work", type=Path, default=None, help="an existing folder (the emulated HEF kept there)")
    args = parser.parse_args()
    work = writable_folder("bench_pipeline", "--work", args.work) if args.work else Path(tempfile.gettempdir())
    cache = work / "bench-pipeline-cache"  # the emulated HEF, kept for the next run
    with tempfile.TemporaryDirectory(dir=work, prefix="bench-pipeline-") as folder:
        root = Path(folder)
        dataset = repeated(args.images, root / "set")
        calibration = FIRE_SMOKE / "images" / "val"
        options = EmulatorOptions(calibration_count=8, sigmoid_inside=True, output_format=FormatType.UINT8)
        hef = build_emulated_hef(DEMO_ONNX, calibration, options, cache)
        hef_file = root / "demo.hef"
        hef_file.write_bytes(b"HEF stand-in: the fake maps the path to an emulated HEF")
        frames = np.stack([letterbox(load_image(s.path), INPUT_HW)[0] for s in dataset.samples])
        rows = [_latency(hef, hef_file, dataset, frames, ms / 1000, args) for ms in args.latencies_ms]
    print(
        f"{args.images} frames (fire/smoke fixtures), batch {args.batch}, api {args.api}, fake device at a fixed "
        f"latency per frame, its queue {args.queue or 2 * args.batch} frames; medians of {args.rounds} interleaved "
        f"rounds; load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'latency':>8}{'device':>10}{'host':>10}{'sync':>10}{'pipelined':>11}{'pipe/slower':>13}{'sync/slower':>13}"
    )
    for ms, (device, host, sync, pipelined) in zip(args.latencies_ms, rows, strict=True):
        slower = min(device, host)
        print(
            f"{ms:>6.1f}ms{device:>10.1f}{host:>10.1f}{sync:>10.1f}{pipelined:>11.1f}"
            f"{pipelined / slower:>13.2f}{sync / slower:>13.2f}"
        )
    print(f"frames per second; target pipelined >= {TARGET:.2f} x the slower of device and host")


def _latency(
    hef: EmulatedHef, hef_file: Path, dataset: Dataset, frames: np.ndarray, latency: float, args: argparse.Namespace
) -> tuple[float, float, float, float]:
    queue = args.queue or 2 * args.batch
    fast = FakeHailoRT({hef_file: hef}, HAILORT_5_1, latency_s=0.0, memo=True, async_queue_size=queue)
    slow = FakeHailoRT({hef_file: hef}, HAILORT_5_1, latency_s=latency, memo=True, async_queue_size=queue)
    slow._memo = fast._memo  # one memory of outputs: the first round fills it
    times: dict[str, list[float]] = {"device": [], "host": [], "sync": [], "pipelined": []}
    n = len(dataset.samples)
    for round_ in range(args.rounds + 1):  # the first fills the outputs' memory, untimed
        with _installed(fast), HailoRTRunner(hef_file, api=args.api) as runner:
            host = timed_eval(runner, dataset, args.batch)
        with _installed(slow), HailoRTRunner(hef_file, api=args.api) as runner:
            device = timed_device(runner, frames, args.batch)
            sync = timed_eval(Waiting(runner), dataset, args.batch)
            pipelined = timed_eval(runner, dataset, args.batch)
        if round_:
            for key, seconds in (("device", device), ("host", host), ("sync", sync), ("pipelined", pipelined)):
                times[key].append(n / seconds)
    return tuple(statistics.median(times[k]) for k in ("device", "host", "sync", "pipelined"))  # type: ignore[return-value]


MODULES = ("hailo_platform", "hailo_platform.pyhailort", "hailo_platform.pyhailort.pyhailort")


class _installed:
    """``fake`` importable as hailo_platform for the block."""

    def __init__(self, fake: FakeHailoRT) -> None:
        self.fake = fake

    def __enter__(self) -> None:
        self.saved = {
            k: sys.modules.get(k)
            for k in ("hailo_platform", "hailo_platform.pyhailort", "hailo_platform.pyhailort.pyhailort")
        }
        sys.modules["hailo_platform"] = self.fake.module
        sys.modules["hailo_platform.pyhailort"] = self.fake.module.pyhailort
        sys.modules["hailo_platform.pyhailort.pyhailort"] = self.fake.pyhailort

    def __exit__(self, *args: object) -> None:
        for key, value in self.saved.items():
            if value is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = value


if __name__ == "__main__":
    main()
