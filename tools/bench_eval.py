"""Benchmark: the harness's cost per image, stage by stage, beside Ultralytics' ``yolo val``; its
throughput on each path; its peak memory. Printed numbers, not a test.

    python -m tools.bench_eval [--parts compare throughput memory] [--cases demo256 fire_smoke256 coco640]
        [--threads N] [--repeat R] [--work DIR] [--ultralytics-python PY] [--data DIR] [--sizes 500 2000]

- ``compare`` (:mod:`tools.bench_compare`): ``hailo-harness eval --onnx`` and Ultralytics' ``yolo val``
  (run by ``--ultralytics-python``, default /work/train-venv/bin/python, which needs ultralytics and
  onnxruntime; without it the harness's side alone) on the same images, image size and threads, at
  Ultralytics' val protocol (conf 0.001, iou 0.7, max_det 300): ms per image in image decoding,
  preprocessing, inference, decode + NMS, metrics, prediction cache and dataset scan, end to end,
  and both mAPs with each side's boxes scored by the other's metric. Cases: the shipped demo
  YOLO11n (256) on its demo set and on the real fire/smoke fixture frames, the fixtures' YOLOv8n
  int8 export (640) on the COCO fixture frames;
- ``throughput`` (:mod:`tools.bench_throughput`): images per second of the ONNX path, the emulated
  Hailo path, recording and replaying it, and a rerun from the prediction cache (``--throughput-case``);
- ``memory``: peak memory at each of ``--sizes`` images, below.

Children run in ``--work`` (default: a folder in the temporary directory; its ``.harness-cache``
keeps the demo set and the emulated HEFs between runs). Each side of ``compare`` is the fastest of
``--repeat`` runs.

The ``memory`` part: a synthetic fire/smoke val set (:mod:`harness.inputs.synthetic`, generated into ``--data`` if that
folder has none) runs through :class:`harness.pipeline.detect.RawHeadsPath` on a fake runner that hands back
one precomputed 640x640 frame of six UINT8 heads with the sigmoid compiled in (as a HEF delivers
them; :func:`tools.bench_decode.make_frame`, typical scene), so inference costs nothing and
everything measured is the harness: image loading, letterbox, decode, cells, unletterbox, the
prediction cache (written and fsynced a batch at a time), then COCO metrics and distributions.
Its ms per image by stage (:func:`stage_breakdown`): those the evaluating thread runs (letterbox, the
fake inference, decode + NMS with cells and unletterbox, the cache, the metrics) and ``untimed_ms`` (waits
for images, the cache's last batch, the loop) add up to ``total_ms_per_image``; ``decode_image_ms`` runs
on the read-ahead threads, overlapping them.

Each set size runs in a fresh process, twice: once timed (with ``ru_maxrss``, the process's peak
resident memory), once under tracemalloc (peak of Python and numpy allocations during the run).
Memory must not grow with the set beyond the predictions themselves, so the 500- and 2,000-image
runs are set side by side.
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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

import harness.pipeline.evaluate as evaluate_module
from harness.backends.base import InputSpec, RunnerBase
from harness.core.settings import EvalSettings
from harness.core.specs import FormatOrder, FormatType
from harness.core.stage_clock import Stage, StageClock, listening
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.synthetic import CLASS_NAMES, Recipe, write_dataset
from harness.pipeline.cache import PredictionCache
from harness.pipeline.detect import RawHeadsPath
from tools.bench_compare import ROOT, Case, Lab, compare, known_cases, ultralytics_available
from tools.bench_decode import INPUT, make_frame
from tools.bench_throughput import Throughput
from tools.bench_throughput import measure as throughput

PARTS = ("compare", "throughput", "memory")
ULTRALYTICS_PYTHON = Path(os.environ.get("HARNESS_ULTRALYTICS_PYTHON", "/work/train-venv/bin/python"))


class FrameRunner(RunnerBase):
    """One precomputed frame of raw heads for every input: a runner whose inference costs nothing."""

    label = "precomputed raw heads"

    def __init__(self, seed: int) -> None:
        self._outputs, self.output_specs, _ = make_frame(len(CLASS_NAMES), "typical", FormatType.UINT8, seed)
        self.input_specs = {"images": InputSpec("images", (INPUT, INPUT, 3), FormatOrder.NHWC, FormatType.UINT8)}

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(self._outputs)


# The stages the evaluating thread runs one after another (harness.core.stage_clock): with the untimed rest they
# make up the evaluation. ``decode image`` runs on the read-ahead threads beside them, so it is not one of them.
MAIN_THREAD_STAGES = {
    "preprocess_ms": Stage.PREPROCESS,  # letterbox
    "inference_ms_per_image": Stage.INFERENCE,  # the frames stacked and the fake runner called
    "decode_cells_ms": Stage.DECODE,  # decode + NMS, cells above the threshold, unletterbox
    "cache_ms": Stage.CACHE,
    "metrics_ms": Stage.METRICS,
}


def stage_breakdown(clock: StageClock, images: int) -> dict[str, float]:
    """Milliseconds per image of each stage the evaluating thread ran and of the rest of the evaluation
    (``untimed_ms``: waits for the read-ahead threads, the cache's last batch written as it closes, the loop),
    which add up to ``total_ms_per_image``; beside them the read-ahead threads' image decoding, which
    overlaps them, and how many times each stage ran."""
    ms = {stage: 1000 * clock.seconds.get(stage, 0.0) / images for stage in Stage}
    parts = {field: ms[stage] for field, stage in MAIN_THREAD_STAGES.items()}
    return {
        "total_ms_per_image": ms[Stage.EVALUATE],
        **parts,
        "untimed_ms": ms[Stage.EVALUATE] - sum(parts.values()),
        "harness_ms_per_image": ms[Stage.EVALUATE] - ms[Stage.INFERENCE],
        "decode_image_ms": ms[Stage.DECODE_IMAGE],
        **{f"{stage.name.lower()}_calls": clock.calls.get(stage, 0) for stage in Stage},
    }


def measure(data: Path, size: int, seed: int, trace: bool) -> dict[str, Any]:
    """One run over the first ``size`` images, cache in a fresh folder, timed by the pipeline's stage clock,
    then a rerun from the cache."""
    full = load_yolo(data / "data.yaml")
    if len(full.samples) < size:
        raise SystemExit(f"{data}: {len(full.samples)} images, fewer than {size}")
    dataset = dataclasses.replace(full, samples=full.samples[:size])
    runner = FrameRunner(seed)
    model = data / "data.yaml"  # any file: the fake runner has no model of its own
    settings = EvalSettings(input_hw=(INPUT, INPUT))
    path = RawHeadsPath(runner, settings, model, model_names=tuple(CLASS_NAMES[k] for k in sorted(CLASS_NAMES)))
    before_metrics: dict[str, float] = {}
    metrics = evaluate_module.METRICS[settings.metric]

    def measured_metrics(*args: Any, **kwargs: Any) -> Any:
        """Memory at the end of the image loop, before the metrics build their own structures."""
        if not before_metrics:  # the first run, not the rerun from the cache
            before_metrics["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            before_metrics["traced"] = tracemalloc.get_traced_memory()[1] if tracemalloc.is_tracing() else 0
        return metrics(*args, **kwargs)

    evaluate_module.METRICS[settings.metric] = measured_metrics  # a memory reading, not a timing
    try:
        with tempfile.TemporaryDirectory() as folder:
            cache = PredictionCache(folder)
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            if trace:
                tracemalloc.start()
            with listening() as clock:
                result = evaluate_module.evaluate_path(path, dataset, cache, progress=False)
            traced_peak = tracemalloc.get_traced_memory()[1] if trace else 0
            if trace:
                tracemalloc.stop()
            rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            start = time.perf_counter()
            evaluate_module.evaluate_path(path, dataset, cache, progress=False)
            cached_total = time.perf_counter() - start
            cache_bytes = sum(f.stat().st_size for f in Path(folder).glob("*.bin"))
    finally:
        evaluate_module.METRICS[settings.metric] = metrics
    return {
        "images": size,
        "boxes": result.box_counts.total,
        **stage_breakdown(clock, size),
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


def memory_part(data: Path, sizes: list[int], seed: int) -> None:
    if not (data / "data.yaml").is_file():
        if data.exists() and any(data.iterdir()):  # never write into someone's dataset
            sys.exit(f"bench_eval: --data {data} holds files but no data.yaml: give an empty or new folder")
        start = time.perf_counter()
        write_dataset(data, Recipe(seed=seed, train=0, val=max(sizes), calib=0))
        print(f"generated {max(sizes)} synthetic images in {data} ({time.perf_counter() - start:.0f} s)")
    rows = []
    for size in sizes:
        timed = _child(data, size, seed, trace=False)
        traced = _child(data, size, seed, trace=True)
        timed.update({k: traced[k] for k in ("loop_tracemalloc_peak_mib", "tracemalloc_peak_mib")})
        rows.append(timed)
    print(f"\nmemory: fake runner, 640x640, six UINT8 heads, 2 classes; cpu count {os.cpu_count()}")
    fields = [k for k in rows[0] if k not in ("images", "rss_before_run_mib")]
    print(f"{'':32}" + "".join(f"{r['images']:>12} img" for r in rows))
    for field in fields:
        cells = (f"{r[field]:>16}" if isinstance(r[field], int) else f"{r[field]:>16.3f}" for r in rows)
        print(f"{field:32}" + "".join(cells))
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        extra = large["images"] - small["images"]
        for field in ("loop_peak_rss_mib", "peak_rss_mib", "loop_tracemalloc_peak_mib", "tracemalloc_peak_mib"):
            growth = (large[field] - small[field]) * 2**20 / extra
            print(f"{field} growth: {growth:.0f} bytes per extra image")


def _stage_rows(found: dict[str, Any]) -> list[tuple[str, float | None, float | None]]:
    """(stage, harness seconds, Ultralytics seconds) for the whole set; None where a side does not time it."""
    h = found["harness"]["seconds"]
    rows: list[tuple[str, float | None, float | None]] = [
        ("decode image (read-ahead threads)", h.get("decode image", 0.0), None),
        ("preprocess (resize, pad, tensor)", h.get("preprocess", 0.0), None),
        ("inference", h.get("inference", 0.0), None),
        ("decode + NMS", h.get("decode + NMS", 0.0), None),
        ("metrics", h.get("metrics", 0.0), None),
        ("prediction cache", h.get("cache", 0.0), None),
        ("dataset scan", None, None),  # not a stage of the harness's clock (harness.core.stage_clock)
    ]
    u = found.get("ultralytics")
    if u is None:
        return rows
    n, st, speed = found["images"], u["stages"], u["speed"]
    theirs: list[float | None] = [
        st.get("decode image", 0.0),
        st.get("decode + resize", 0.0)
        - st.get("decode image", 0.0)
        + st.get("letterbox pad", 0.0)
        + speed["preprocess"] * n / 1000,
        speed["inference"] * n / 1000,
        speed["postprocess"] * n / 1000,
        st.get("metrics", 0.0),
        None,  # no prediction cache
        st.get("dataset scan", 0.0),
    ]
    return [(label, ours, their) for (label, ours, _), their in zip(rows, theirs, strict=True)]


def print_compare(found: dict[str, Any], threads: int) -> None:
    case, n, h, u = found["case"], found["images"], found["harness"], found.get("ultralytics")
    metrics = h["result"]["metrics"]
    print(
        f"\ncompare {case.name}: {case.onnx.name}, {n} images at {found['imgsz']}, conf 0.001 iou 0.7 max_det 300, "
        f"onnxruntime {threads} intra-op threads"
        # torch: Ultralytics' select_device sets min(8, cpu_count - 1) (ultralytics/utils/torch_utils.py)
        + (f" (torch {u['torch_threads']}, as Ultralytics sets it)" if u else "; Ultralytics not available")
    )
    print(f"{'ms per image':40}{'harness':>10}" + (f"{'ultralytics':>13}" if u else ""))

    def line(label: str, ours: float | None, theirs: float | None) -> None:
        mine = f"{'-':>10}" if ours is None else f"{1000 * ours / n:>10.2f}"
        said = "" if u is None else f"{'-':>13}" if theirs is None else f"{1000 * theirs / n:>13.2f}"
        print(f"{label:40}{mine}{said}")

    for label, ours, theirs in _stage_rows(found):
        line(label, ours, theirs)
    line("evaluation (image loop + metrics)", h["seconds"]["evaluate"], None)
    line("command (eval | YOLO() + val())", h["wall_s"], u["load_s"] + u["val_s"] if u else None)
    line("end to end (the whole process)", h["process_s"], u["process_s"] if u else None)
    inference = h["seconds"].get("inference", 0.0)
    theirs = {row[0]: row[2] for row in _stage_rows(found)}["inference"]
    less = u["process_s"] - theirs if u and theirs is not None else None
    line("end to end less inference", h["process_s"] - inference, less)
    if u is None:
        print(f"mAP50 {metrics['map50']:.5f}  mAP50-95 {metrics['map50_95']:.5f}")
        return
    print(
        f"end to end: the harness {u['process_s'] / h['process_s']:.2f}x as fast as Ultralytics; "
        f"less inference: {(less or 0.0) / (h['process_s'] - inference):.2f}x"
    )
    print(f"{'':40}{'mAP50':>10}{'mAP50-95':>13}")
    print(f"{'harness (its COCO metric, its boxes)':40}{metrics['map50']:>10.5f}{metrics['map50_95']:>13.5f}")
    print(f"{'Ultralytics (yolo val)':40}{u['map50']:>10.5f}{u['map50_95']:>13.5f}")
    print(f"{'difference':40}{metrics['map50'] - u['map50']:>+10.5f}{metrics['map50_95'] - u['map50_95']:>+13.5f}")
    cross = found["cross"]
    for label, scored in cross.items():
        print(f"{label:40}{scored['map50']:>10.5f}{scored['map50_95']:>13.5f}")
    ours_theirs = cross["harness metric, Ultralytics' boxes"]
    clipped = cross["Ultralytics' metric, its boxes clipped"]
    causes = {  # the three steps add up to the difference
        "boxes (harness metric: ours - theirs)": (metrics, ours_theirs),
        "metric (on Ultralytics' clipped boxes)": (ours_theirs, clipped),
        "clipping (Ultralytics' metric)": (clipped, u),
    }
    print("the difference, step by step:")
    for label, (a, b) in causes.items():
        print(f"  {label:38}{a['map50'] - b['map50']:>+10.5f}{a['map50_95'] - b['map50_95']:>+13.5f}")
    a = found["agreement"]
    print(
        f"same detections (0.01 px, 1e-4 score): {a.same_geometry_same_boxes} of {a.same_geometry} images letterboxed "
        f"alike, {a.other_geometry_same_boxes} of {a.other_geometry} letterboxed to another size by Ultralytics' val"
    )


def print_throughput(case: Case, rows: list[Throughput], first_emulated_s: float) -> None:
    print(f"\nthroughput {case.name}: {case.onnx.name}, {rows[0].images} images, conf 0.001 iou 0.7 max_det 300")
    print(f"(the first emulated run, building the emulated HEF unless cached: {first_emulated_s:.1f} s)")
    print(f"{'':34}{'images/s':>10}{'from cache':>12}{'process s':>11}")
    for row in rows:
        print(f"{row.label:34}{row.images_per_s:>10.1f}{row.from_cache:>12}{row.process_s:>11.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--cases", nargs="+", choices=sorted(known_cases()), help="default: those whose files exist")
    parser.add_argument("--throughput-case", choices=sorted(known_cases()), default="demo256")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="onnxruntime/OMP threads, both sides")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side; the fastest is shown")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench-eval")
    parser.add_argument("--ultralytics-python", type=Path, default=ULTRALYTICS_PYTHON)
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "bench-eval-data")
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.data, args.one, args.seed, args.trace)))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    bench = Lab(args.work.resolve(), args.threads, args.ultralytics_python)
    cases = known_cases()
    if "compare" in args.parts:
        chosen = args.cases or [name for name, c in cases.items() if c.onnx.is_file() and (c.dataset or ROOT).exists()]
        with_ultralytics = ultralytics_available(args.ultralytics_python)
        for name in chosen:
            print_compare(compare(bench, cases[name], args.repeat, with_ultralytics), args.threads)
    if "throughput" in args.parts:
        case = cases[args.throughput_case]
        print_throughput(case, *throughput(bench, case))
    if "memory" in args.parts:
        memory_part(args.data, args.sizes, args.seed)


if __name__ == "__main__":
    main()
