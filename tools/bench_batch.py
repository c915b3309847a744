"""Images per second of ``hailo-harness eval`` at each ``--batch``: the ONNX path and the emulated Hailo path.

    python -m tools.bench_batch [--case demo256] [--batches 1 4 8 16] [--threads 2] [--repeat 3] [--work DIR]

Each run is a child process (:mod:`tools.bench_stages`, onnxruntime pinned to ``--threads`` intra-op
threads) on the same images and settings, without the prediction cache; a first emulated run builds
the emulated HEF into the bench's cache folder (or finds it there). Images per second count the
evaluation (the image loop and the metrics), the fastest of ``--repeat`` runs; the inference column is
the runner's milliseconds per image in that run. Each batch's detections (``--save-predictions``, full
float precision) are held to the first batch's: the largest difference of a box side or a score.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tools.bench_compare import HARNESS_PROTOCOL, Case, Lab, dataset_of, known_cases, run_harness
from tools.bench_eval import ULTRALYTICS_PYTHON

BACKENDS = ("onnx", "emulator")


def _run(bench: Lab, case: Case, folder: Path, backend: str, batch: int) -> dict[str, Any]:
    dataset = dataset_of(bench, case)
    arguments = ["eval", "--onnx", str(case.onnx), "--dataset", str(dataset.root), *HARNESS_PROTOCOL]
    saved = folder / f"{backend}-{batch}-predictions.json"
    arguments += ["--json", "--no-progress", "--no-cache", "--backend", backend, "--batch", str(batch)]
    run = run_harness(bench, [*arguments, "--save-predictions", str(saved)], folder / f"{backend}-{batch}.json")
    run["predictions"] = json.loads(saved.read_text())
    return run


def difference(rows: list[dict[str, Any]], reference: list[dict[str, Any]]) -> float:
    """The largest difference of a box coordinate or a score between the same detections; infinite
    where the detections are not the same ones (image, class, order)."""
    if [(r["image_id"], r["category_id"]) for r in rows] != [(r["image_id"], r["category_id"]) for r in reference]:
        return float("inf")
    values = [
        abs(a - b)
        for r, q in zip(rows, reference, strict=True)
        for a, b in zip([*r["bbox"], r["score"]], [*q["bbox"], q["score"]], strict=True)
    ]
    return max(values, default=0.0)


Row = tuple[float, float, float]  # images per second, inference ms per image, difference to the first batch


def measure(bench: Lab, case: Case, batches: list[int], repeat: int) -> dict[str, dict[int, Row]]:
    """Per backend and batch: (images per second, inference ms per image) of the fastest run, and the
    largest difference of its detections to the first batch's."""
    folder = bench.work / "runs" / f"batch-{case.name}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _run(bench, case, folder, "emulator", batches[0])  # builds the emulated HEF, untimed
    found: dict[str, dict[int, Row]] = {}
    for backend in BACKENDS:
        reference: list[dict[str, Any]] | None = None
        rows: dict[int, Row] = {}
        for _ in range(repeat):
            for batch in batches:
                run = _run(bench, case, folder, backend, batch)
                images = int(run["result"]["n_images"])
                seconds = run["seconds"]
                reference = reference or run["predictions"]
                differ = max(difference(run["predictions"], reference), rows[batch][2] if batch in rows else 0.0)
                speed = images / seconds["evaluate"], 1000 * seconds.get("inference", 0.0) / images
                rows[batch] = (*max(rows[batch][:2], speed), differ) if batch in rows else (*speed, differ)
        found[backend] = rows
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(known_cases()), default="demo256")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each batch; the fastest is shown")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench-batch")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    bench = Lab(args.work.resolve(), args.threads, ULTRALYTICS_PYTHON)
    case = known_cases()[args.case]
    found = measure(bench, case, args.batches, args.repeat)
    print(f"batch {case.name}: {case.onnx.name}, onnxruntime {args.threads} threads, best of {args.repeat}")
    print(f"{'':12}" + "".join(f"{f'batch {b}':>30}" for b in args.batches))
    print(f"{'':12}" + "".join(f"{'images/s':>10}{'infer ms':>10}{'max diff':>10}" for _ in args.batches))
    for backend, rows in found.items():
        print(
            f"{backend:12}"
            + "".join(f"{rows[b][0]:>10.1f}{rows[b][1]:>10.2f}{rows[b][2]:>10.2g}" for b in args.batches)
        )


if __name__ == "__main__":
    main()
