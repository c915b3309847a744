"""Benchmark: NMS at 80 classes, the harness beside Ultralytics' ``non_max_suppression`` with
torchvision's C++ NMS, on the same frames, one thread each. Printed numbers, not a test.

    python -m tools.bench_nms [--torch-python PY] [--rounds R] [--repeat N] [--images DIR]

Frames: the fixture exports (``yolov8n_coco80_640_int8.onnx``, ``yolo11n_coco80_320_int8.onnx`` in
``$HARNESS_FIXTURES/onnx``, default ../shared/fixtures) run by onnxruntime on the letterboxed COCO
fixture images (``datasets/coco128_val16``): each frame's full head ``(84, anchors)`` and its six raw
heads (the export cut at its heads, :class:`harness.backends.onnx.runner.FloatHeadsRunner`).

Settings: Ultralytics' val (conf 0.001, IoU 0.7, multi-label, max_det 300), the same at conf 0.25, and
its predict (conf 0.25, best class only). Columns, ms per frame:

- ``torchvision``: ``ultralytics.utils.nms.non_max_suppression`` on the head as a torch tensor, with
  torchvision imported first (as ``yolo val`` has it; without it Ultralytics takes a pure-torch NMS),
  ``torch.set_num_threads(1)``, in ``--torch-python`` (a venv with torch, torchvision and ultralytics;
  default /tmp/tv/bin/python), a worker process driven over a pipe;
- ``harness``: :func:`harness.decode.nms.nms_ultralytics` from the same head (the boxes converted,
  the scores a transposed view of the head, not copied), and ``harness copy``: the same after the
  contiguous copy of the scores that :class:`harness.pipeline.detect.OnnxPath` makes today;
- ``hailort``: :func:`harness.decode.nms.nms_hailort` at the same thresholds (no torch counterpart);
- ``decode+nms``: :func:`harness.families.yolov8.decode.decode` from the six raw heads (DFL included), Ultralytics
  mode.

Each round times the harness and the worker over every frame (``--repeat`` passes, the mean), in
turn, the order alternating between rounds; printed: the median over ``--rounds`` rounds of each
column, and the medians of the per-round ratios torchvision / harness (``tv/nms``) and torchvision /
decode+nms (``tv/decode``): above 1 where the harness is faster. The detections of ``harness``
are compared with the worker's, frame by frame: boxes, scores and classes as sets, to the bit.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from harness.backends.onnx.runner import FloatHeadsRunner, FullHeadRunner
from harness.core.detections import Detections, xywh_to_xyxy
from harness.core.settings import DecodeConfig, NmsMode
from harness.decode.nms import nms_hailort, nms_ultralytics
from harness.families.yolov8.decode import decode
from harness.inputs.preprocess import letterbox, load_image, to_nchw_float

FIXTURES = Path(os.environ.get("HARNESS_FIXTURES", Path(__file__).resolve().parents[2] / "shared" / "fixtures"))
MODELS = {"yolov8n 640": "yolov8n_coco80_640_int8.onnx", "yolo11n 320": "yolo11n_coco80_320_int8.onnx"}
SETTINGS = {  # name: (conf, multi_label); IoU 0.7 and max_det 300 throughout (ultralytics/cfg/default.yaml)
    "val conf 0.001": (0.001, True),
    "val conf 0.25": (0.25, True),
    "predict conf 0.25": (0.25, False),
}

# The worker, in the torch venv: loads the heads, then answers "time SETTING REPEAT" with ms per frame
# and "dets SETTING PATH" by saving each frame's detections (x1 y1 x2 y2 score class rows).
WORKER = r"""
import json, sys, time
import numpy as np, torch, torchvision  # torchvision first: Ultralytics uses its NMS only when imported
from ultralytics.utils.nms import non_max_suppression
torch.set_num_threads(1)
heads = [torch.from_numpy(h[None]) for h in np.load(sys.argv[1])]
settings = json.loads(sys.argv[2])
def run(conf, multi_label):
    return [non_max_suppression(h, conf, 0.7, multi_label=multi_label, max_det=300)[0] for h in heads]
print("ready", flush=True)
for line in sys.stdin:
    command, setting, arg = line.split()
    conf, multi_label = settings[setting]
    if command == "time":
        run(conf, multi_label)
        start = time.perf_counter()
        for _ in range(int(arg)):
            run(conf, multi_label)
        print(1000 * (time.perf_counter() - start) / int(arg) / len(heads), flush=True)
    else:
        np.savez(arg, *[d.numpy() for d in run(conf, multi_label)])
        print("saved", flush=True)
"""


@dataclasses.dataclass(frozen=True)
class Frames:
    """One model's frames: full heads ``(frames, 4 + nc, anchors)``, and the six raw heads of each."""

    input_hw: tuple[int, int]
    heads: np.ndarray
    raw: list[dict[str, np.ndarray]]
    raw_specs: dict


def load_frames(model: Path, images: list[Path]) -> Frames:
    full, cut = FullHeadRunner(model, threads=1), FloatHeadsRunner(model, threads=1)
    input_hw = next(iter(cut.input_specs.values())).hw
    heads, raw = [], []
    for image in images:
        canvas, _ = letterbox(load_image(image), input_hw)
        heads.append(full.infer({next(iter(full.input_specs)): to_nchw_float(canvas[None])}))
        raw.append(cut.infer({next(iter(cut.input_specs)): canvas[None]}))
    return Frames(input_hw, np.stack(heads).astype(np.float32), raw, cut.output_specs)


def config(frames: Frames, setting: str, mode: NmsMode) -> DecodeConfig:
    conf, multi_label = SETTINGS[setting]
    return DecodeConfig(frames.input_hw, conf, 0.7, max_total=300, mode=mode, multi_label=multi_label)


def harness_runs(frames: Frames, setting: str) -> dict[str, Callable[[], list[Detections]]]:
    """Each harness column: a function that runs it over every frame."""
    ultralytics, hailort = config(frames, setting, NmsMode.ULTRALYTICS), config(frames, setting, NmsMode.HAILORT)

    def on_heads(nms: Callable, cfg: DecodeConfig, copy: bool) -> Callable[[], list[Detections]]:
        def run() -> list[Detections]:
            out = []
            for head in frames.heads:
                scores = np.ascontiguousarray(head[4:].T) if copy else head[4:].T
                out.append(nms(xywh_to_xyxy(head[:4].T), scores, cfg))
            return out

        return run

    return {
        "harness": on_heads(nms_ultralytics, ultralytics, copy=False),
        "harness copy": on_heads(nms_ultralytics, ultralytics, copy=True),
        "hailort": on_heads(nms_hailort, hailort, copy=False),
        "decode+nms": lambda: [decode(raw, frames.raw_specs, ultralytics) for raw in frames.raw],
    }


def ms_per_frame(run: Callable[[], object], frames: int, repeat: int) -> float:
    run()
    start = time.perf_counter()
    for _ in range(repeat):
        run()
    return 1000 * (time.perf_counter() - start) / repeat / frames


def _word(setting: str) -> str:
    """A setting's name as one word of the worker's commands."""
    return setting.replace(" ", "_")


class Worker:
    """The torch side, a process of ``python`` over the heads in ``heads_file``."""

    def __init__(self, python: Path, heads_file: Path) -> None:
        self._process = subprocess.Popen(
            [str(python), "-c", WORKER, str(heads_file), json.dumps({_word(k): v for k, v in SETTINGS.items()})],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
        )
        if self._answer() != "ready":
            raise SystemExit(f"bench_nms: {python} could not start the torch worker (torch, torchvision, ultralytics?)")

    def _answer(self) -> str:
        assert self._process.stdout is not None
        return self._process.stdout.readline().strip()

    def _ask(self, *words: object) -> str:
        assert self._process.stdin is not None
        self._process.stdin.write(" ".join(map(str, words)) + "\n")
        self._process.stdin.flush()
        return self._answer()

    def ms_per_frame(self, setting: str, repeat: int) -> float:
        return float(self._ask("time", _word(setting), repeat))

    def detections(self, setting: str, folder: Path) -> list[np.ndarray]:
        path = folder / "dets.npz"
        self._ask("dets", _word(setting), path)
        with np.load(path) as saved:
            return [saved[f"arr_{i}"] for i in range(len(saved.files))]

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait()


def rows(detections: Detections) -> np.ndarray:
    """Detections as sorted ``x1 y1 x2 y2 score class`` rows (float32), to compare as sets."""
    table = np.concatenate(
        [detections.boxes, detections.scores[:, None], detections.class_ids[:, None].astype(np.float32)], axis=1
    ).astype(np.float32)
    return table[np.lexsort(table.T[::-1])]


def same_frames(ours: list[Detections], theirs: list[np.ndarray]) -> int:
    return sum(np.array_equal(rows(d), t[np.lexsort(t.T[::-1])]) for d, t in zip(ours, theirs, strict=True))


def ratio(theirs: list[float], ours: list[float]) -> float:
    """The median of the rounds' ratios, theirs / ours: above 1 where ours is faster."""
    return statistics.median(t / o for t, o in zip(theirs, ours, strict=True))


def bench(name: str, frames: Frames, worker: Worker | None, rounds: int, repeat: int, folder: Path) -> None:
    n = len(frames.heads)
    for setting in SETTINGS:
        runs = harness_runs(frames, setting)
        found: dict[str, list[float]] = {column: [] for column in [*runs, "torchvision"] if worker or column in runs}
        for r in range(rounds):
            sides: list[tuple[str, Callable[[], float]]] = [
                (column, functools.partial(ms_per_frame, run, n, repeat)) for column, run in runs.items()
            ]
            if worker is not None:
                sides.append(("torchvision", functools.partial(worker.ms_per_frame, setting, repeat)))
            for column, measure in sides if r % 2 == 0 else sides[::-1]:
                found[column].append(measure())
        medians = {column: statistics.median(times) for column, times in found.items()}
        line = f"{name:12} {setting:18} " + " ".join(f"{medians[c]:>12.3f}" for c in found)
        if worker is not None:
            ratios = [ratio(found["torchvision"], found[column]) for column in ("harness", "decode+nms")]
            same = same_frames(runs["harness"](), worker.detections(setting, folder))
            line += "".join(f" {r:>8.2f}x" for r in ratios) + f" {same:>6}/{n}"
        detections = sum(len(d) for d in runs["harness"]())
        print(f"{line} {detections / n:>8.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-python", type=Path, default=Path("/tmp/tv/bin/python"))
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds; medians over them")
    parser.add_argument("--repeat", type=int, default=5, help="passes over every frame in one timing")
    parser.add_argument("--images", type=Path, default=FIXTURES / "datasets" / "coco128_val16" / "images" / "val2017")
    args = parser.parse_args()
    images = sorted(p for p in args.images.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    if not images:
        raise SystemExit(f"bench_nms: --images {args.images}: no .jpg or .png images")
    with_torch = args.torch_python.is_file()
    columns = ["harness", "harness copy", "hailort", "decode+nms"]
    columns += ["torchvision", "tv/nms", "tv/decode", "same"] if with_torch else []
    print(
        f"NMS at 80 classes, IoU 0.7, max_det 300, one thread, {len(images)} COCO frames; median ms per frame "
        f"of {args.rounds} interleaved rounds"
        + ("" if with_torch else f"; {args.torch_python}: none, harness only")
        + f"; {_load()}"
    )
    print(
        f"{'model':12} {'setting':18} "
        + " ".join(f"{c:>12}" for c in columns[:5])
        + "".join(f" {c:>9}" for c in columns[5:])
        + f" {'dets/frame':>8}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for name, file in MODELS.items():
            frames = load_frames(FIXTURES / "onnx" / file, images)
            heads_file = Path(folder) / "heads.npy"
            np.save(heads_file, frames.heads)
            worker = Worker(args.torch_python, heads_file) if with_torch else None
            try:
                bench(name, frames, worker, args.rounds, args.repeat, Path(folder))
            finally:
                if worker is not None:
                    worker.close()
    print(f"after: {_load()}")


def _load() -> str:
    """The machine's load (1, 5 and 15 minute averages) and its cores: other work skews the timings."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


if __name__ == "__main__":
    main()
