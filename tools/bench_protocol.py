"""``--metric ultralytics`` alone against ``yolo val``: the one option is Ultralytics' protocol.

    python -m tools.bench_protocol [--threads N] [--work DIR] [--ultralytics-python PY] [--cases ...] [--write-figures]

For each case (the fixture exports on the 16 COCO images, the demo model on the 200 fire/smoke frames;
``HARNESS_FIXTURES``) the harness runs ``eval --onnx M --dataset D --metric ultralytics --no-cache``
and nothing else, and Ultralytics runs ``yolo val`` (:mod:`tools.ultralytics_val`, its own venv, at its
own defaults: conf 0.001, iou 0.7, max_det 300) on a dataset YAML of links to the same images and labels
(:func:`tools.bench_compare.ultralytics_set`). Printed per case: both mAP@0.5 and mAP@0.5:0.95, their
differences (target: at most 0.001) and, for the record, the harness under the metric's old meaning (the
metric and yolo val's letterbox over HailoRT's NMS at the default thresholds), which the one option no
longer gives. Not a timing: the load average is printed for the record only. ``--write-figures`` writes
them to ``docs/figures/protocol.json``, where the documentation reads them (``tools/docs_figures.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.inputs.demo import DEMO_ONNX
from harness.inputs.onnx_graph import load_model, model_input
from tools.bench_compare import (
    FIXTURES,
    Case,
    Lab,
    dataset_of,
    lend_onnxruntime,
    no_predictions,
    run_ultralytics,
    ultralytics_set,
)
from tools.bench_paths import writable_folder
from tools.docs_figures import rounded, write_figures

TARGET = 0.001
# The metric's old meaning, spelled out: what `--metric ultralytics` alone measured before it set the protocol.
OLD_MEANING = [
    "--nms",
    "hailort",
    "--score-threshold",
    "0.2",
    "--iou-threshold",
    "0.7",
    "--preprocess",
    "ultralytics-val",
]


def cases() -> dict[str, Case]:
    datasets = FIXTURES / "datasets"
    return {
        case.name: case
        for case in (
            Case("yolov8n640-coco16", FIXTURES / "onnx" / "yolov8n_coco80_640_int8.onnx", datasets / "coco128_val16"),
            Case("yolo11n320-coco16", FIXTURES / "onnx" / "yolo11n_coco80_320_int8.onnx", datasets / "coco128_val16"),
            Case("demo-yolo11n256-fire200", DEMO_ONNX, datasets / "fire_smoke_val"),
        )
    }


def harness_maps(lab: Lab, case: Case, more: list[str]) -> dict[str, float]:
    command = [sys.executable, "-m", "harness.cli.main", "eval", "--onnx", str(case.onnx), "--dataset"]
    command += [str(case.dataset), "--metric", "ultralytics", *more, "--no-cache", "--no-progress", "--json"]
    done = subprocess.run(command, cwd=lab.work, env=lab.env(), capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench_protocol: {' '.join(command[2:])} exited {done.returncode}:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return {"map50": result["metrics"]["map50"], "map50_95": result["metrics"]["map50_95"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None, help="an existing folder for the temporary files")
    parser.add_argument("--ultralytics-python", type=Path, default=Path("/work/train-venv/bin/python"))
    parser.add_argument("--cases", nargs="*", choices=sorted(cases()), default=sorted(cases()))
    parser.add_argument("--write-figures", action="store_true", help="write docs/figures/protocol.json")
    args = parser.parse_args()
    if args.work is not None:
        writable_folder("bench_protocol", "--work", args.work)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.work, prefix="bench-protocol-") as folder:
        lab = lend_onnxruntime(Lab(Path(folder), args.threads, args.ultralytics_python))
        for name in args.cases:
            case = cases()[name]
            dataset = dataset_of(lab, case)
            _, (imgsz, _) = model_input(load_model(case.onnx))
            yaml = ultralytics_set(dataset, lab.work / name / "ultralytics")
            none = no_predictions(dataset, lab.work / name / "none.json")
            theirs = run_ultralytics(lab, case.onnx, yaml, imgsz, none, lab.work / name / "u.json")
            rows.append(
                (name, len(dataset.samples), harness_maps(lab, case, []), theirs, harness_maps(lab, case, OLD_MEANING))
            )
    version = theirs["versions"]["ultralytics"]
    print(f"--metric ultralytics alone against yolo val (Ultralytics {version}); load {os.getloadavg()[0]:.1f}")
    print(f"{'case':<26}{'images':>7}{'harness':>20}{'yolo val':>20}{'difference':>22}{'within':>8}{'old meaning':>20}")
    worst = 0.0
    for name, images, ours, u, old in rows:
        d50, d = abs(ours["map50"] - u["map50"]), abs(ours["map50_95"] - u["map50_95"])
        worst = max(worst, d50, d)
        print(
            f"{name:<26}{images:>7}{_pair(ours, 10)}{_pair(u, 10)}{d50:>11.6f}{d:>11.6f}"
            f"{'yes' if max(d50, d) <= TARGET else 'NO':>8}{_pair(old, 10)}"
        )
    print(f"largest difference {worst:.6f} (target <= {TARGET}); columns: mAP@0.5, mAP@0.5:0.95")
    if args.write_figures:
        figures: dict[str, Any] = {"ultralytics": version, "largest_difference": worst, "target": TARGET}
        for name, images, ours, u, old in rows:
            figures[name.replace("-", "_")] = {
                "images": images,
                "harness": rounded(ours, 6),
                "yolo_val": rounded({"map50": u["map50"], "map50_95": u["map50_95"]}, 6),
                "old_meaning": rounded(old, 6),
                "old_meaning_lower_map50": round(u["map50"] - old["map50"], 6),
            }
        size = ", ".join(f"{name}: {images} images" for name, images, *_ in rows)
        path = write_figures("protocol", figures, "python -m tools.bench_protocol", size)
        print(f"wrote {path.name}")


def _pair(maps: dict[str, float], width: int) -> str:
    return f"{maps['map50']:>{width}.6f}{maps['map50_95']:>{width}.6f}"


if __name__ == "__main__":
    main()
