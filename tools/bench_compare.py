"""The harness's ``eval --onnx`` and Ultralytics' ``yolo val`` on the same images, side by side.

Each side runs in a process of its own, on the same images, image size and threads, at Ultralytics'
val protocol (:data:`PROTOCOL`): the harness through its CLI (:mod:`tools.bench_stages`, a fresh
prediction cache), Ultralytics with its own interpreter (:mod:`tools.ultralytics_val`) on a dataset
YAML in a temporary folder whose files are links to the images and label files the harness read.

Where the two mAPs differ, the predictions of each side are scored with the other's metric too: the
harness's COCO metric (pycocotools matching) on Ultralytics' boxes here, Ultralytics' metric on the
harness's boxes in the Ultralytics process. Predictions that differ are set beside the one place
the two preprocess differently: Ultralytics' val loader first resizes the long side with
``ceil`` (ultralytics: ultralytics/data/base.py, ``BaseDataset.load_image``), then pads with
``LetterBox(scaleup=False)``; the harness letterboxes in one step with ``round``
(harness/core/detections.py, ``Letterbox.fit``).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.cli.commands.eval import coco_image_id
from harness.core.detections import Detections
from harness.inputs.dataset import Dataset
from harness.inputs.demo import DEMO_ONNX
from harness.inputs.onnx_graph import load_model, model_input
from harness.pipeline.factory import load_dataset
from harness.verdict.metrics import evaluate

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(os.environ.get("HARNESS_FIXTURES", ROOT.parent / "shared" / "fixtures"))
# Ultralytics' val protocol: conf 0.001, iou 0.7, max_det 300, multi-label NMS
# (ultralytics: ultralytics/cfg/default.yaml, ultralytics/models/yolo/detect/val.py).
PROTOCOL = {"conf": 0.001, "iou": 0.7, "max_det": 300}
HARNESS_PROTOCOL = [
    "--nms",
    "ultralytics",
    "--score-threshold",
    "0.001",
    "--iou-threshold",
    "0.7",
    "--max-total",
    "300",
]


@dataclass(frozen=True)
class Case:
    """A model and the images it is measured on (``dataset`` None: the demo set)."""

    name: str
    onnx: Path
    dataset: Path | None


def known_cases() -> dict[str, Case]:
    """The shipped demo model on its set and on the real fire/smoke frames; the one 640 export among
    the fixtures (fixtures SOURCES.md: yolov8n_coco80_640_int8.onnx) on the COCO frames."""
    datasets = FIXTURES / "datasets"
    return {
        case.name: case
        for case in (
            Case("demo256", DEMO_ONNX, None),
            Case("fire_smoke256", DEMO_ONNX, datasets / "fire_smoke_val"),
            Case("coco640", FIXTURES / "onnx" / "yolov8n_coco80_640_int8.onnx", datasets / "coco128_val16"),
        )
    }


@dataclass(frozen=True)
class Lab:
    """Where children run and write (``work``; its ``.harness-cache`` keeps the demo set and emulated
    HEFs between runs), their threads, and the interpreter with Ultralytics."""

    work: Path
    threads: int
    ultralytics_python: Path
    lent: Path | None = None  # a folder holding this interpreter's onnxruntime, where Ultralytics' venv has none

    @property
    def cache_dir(self) -> Path:
        return self.work / ".harness-cache"

    def env(self) -> dict[str, str]:
        threads = str(self.threads)
        pinned = {k: threads for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        path = os.pathsep.join(str(p) for p in (ROOT, self.lent) if p is not None)
        return {**os.environ, **pinned, "PYTHONPATH": path}


def lend_onnxruntime(lab: Lab) -> Lab:
    """``lab``, its children able to import onnxruntime in Ultralytics' venv: where that venv has none and runs
    this interpreter's Python version, a link to this interpreter's onnxruntime in a folder of ``lab.work``
    put last on ``PYTHONPATH`` (the same runtime for both sides; nothing is installed)."""
    probe = [str(lab.ultralytics_python), "-c", "import onnxruntime, sys; print(sys.version_info[:2])"]
    if subprocess.run(probe, capture_output=True, env=lab.env()).returncode == 0:
        return lab
    import onnxruntime

    version = [str(lab.ultralytics_python), "-c", "import sys; print(tuple(sys.version_info[:2]))"]
    theirs = subprocess.run(version, capture_output=True, text=True).stdout.strip()
    if theirs != str(tuple(sys.version_info[:2])):
        raise SystemExit(f"bench: {lab.ultralytics_python} has no onnxruntime and runs Python {theirs}: install one")
    folder = lab.work / "lent-onnxruntime"
    folder.mkdir(exist_ok=True)
    link = folder / "onnxruntime"
    if not link.exists():
        link.symlink_to(Path(onnxruntime.__file__).parent)
    return Lab(lab.work, lab.threads, lab.ultralytics_python, folder)


def dataset_of(lab: Lab, case: Case) -> Dataset:
    return load_dataset(case.dataset, cache_dir=lab.cache_dir)


def run_harness(lab: Lab, arguments: list[str], out: Path) -> dict[str, Any]:
    """``hailo-harness ARGUMENTS`` in a child, timed by stage; ``process_s`` its whole wall time."""
    command = [sys.executable, "-m", "tools.bench_stages", str(out), "--threads", str(lab.threads), "--", *arguments]
    out.unlink(missing_ok=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=lab.work, env=lab.env(), capture_output=True, text=True)
    process_s = time.perf_counter() - start
    result = json.loads(out.read_text()) if done.returncode == 0 else {}
    if result.get("status") != 0:
        raise SystemExit(f"bench_eval: hailo-harness {' '.join(arguments)} failed:\n{done.stderr[-3000:]}")
    result["process_s"] = process_s
    if "--json" in arguments:
        result["result"] = json.loads(result["stdout"])
    return result


def link_name(index: int, path: Path) -> str:
    return f"{index:05d}_{path.name}"


def ultralytics_set(dataset: Dataset, folder: Path) -> Path:
    """A dataset YAML in Ultralytics' layout under ``folder``: links to the images the harness read
    and to their label files (Ultralytics' rule: ``/images/`` -> ``/labels/``, ``.txt``;
    ultralytics: ultralytics/data/utils.py, ``img2label_paths``)."""
    if not dataset.labelled:
        raise SystemExit(f"bench_eval: {dataset.root}: images without labels, Ultralytics' val needs labels")
    shutil.rmtree(folder, ignore_errors=True)
    images, labels = folder / "images" / "val", folder / "labels" / "val"
    images.mkdir(parents=True)
    labels.mkdir(parents=True)
    for index, sample in enumerate(dataset.samples):
        real = sample.path.resolve()
        label = Path("/labels/".join(str(real).rsplit("/images/", 1))).with_suffix(".txt")
        if "/images/" not in str(real) or (len(sample.ground_truth.boxes) and not label.is_file()):
            raise SystemExit(f"bench_eval: {sample.path}: no YOLO label file at {label} (a YOLO layout is needed)")
        name = link_name(index, real)
        (images / name).symlink_to(real)
        if label.is_file():
            (labels / name).with_suffix(".txt").symlink_to(label)
    names = "".join(f"  {i}: {json.dumps(n)}\n" for i, n in enumerate(dataset.names))
    yaml = folder / "data.yaml"
    yaml.write_text(f"path: {folder}\ntrain: images/val\nval: images/val\nnames:\n{names}")
    return yaml


def run_ultralytics(lab: Lab, model: Path, yaml: Path, imgsz: int, score: Path, out: Path) -> dict[str, Any]:
    command = [
        str(lab.ultralytics_python),
        str(ROOT / "tools" / "ultralytics_val.py"),
        *("--model", str(model), "--data", str(yaml), "--imgsz", str(imgsz), "--threads", str(lab.threads)),
        *("--conf", str(PROTOCOL["conf"]), "--iou", str(PROTOCOL["iou"]), "--out", str(out), "--score", str(score)),
    ]
    out.unlink(missing_ok=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=lab.work, env=lab.env(), capture_output=True, text=True)
    process_s = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench_eval: Ultralytics' val failed:\n{done.stderr[-3000:]}")
    result = json.loads(out.read_text())
    result["process_s"] = process_s
    return result


def no_predictions(dataset: Dataset, path: Path) -> Path:
    """An empty list of other predictions per image at ``path``, for :func:`run_ultralytics` to score (nothing)."""
    empty: dict[str, list[float]] = {"boxes": [], "scores": [], "classes": []}
    path.write_text(json.dumps({link_name(i, s.path.resolve()): empty for i, s in enumerate(dataset.samples)}))
    return path


def harness_predictions(saved: Path, dataset: Dataset) -> list[Detections]:
    """``eval --save-predictions`` (COCO results: xywh in original pixels) back into one
    :class:`Detections` per sample, in the dataset's order."""
    index = {coco_image_id(s.image_id): i for i, s in enumerate(dataset.samples)}
    if len(index) != len(dataset.samples):
        raise SystemExit(f"bench_eval: {dataset.root}: two images share one COCO image id")
    rows: list[list[dict[str, Any]]] = [[] for _ in dataset.samples]
    for row in json.loads(saved.read_text()):
        rows[index[row["image_id"]]].append(row)
    out = []
    for found in rows:
        xywh = np.array([r["bbox"] for r in found], dtype=np.float32).reshape(-1, 4)
        boxes = np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)
        scores = np.array([r["score"] for r in found], dtype=np.float32)
        out.append(Detections(boxes, scores, np.array([r["category_id"] for r in found], dtype=np.int64)))
    return out


def as_named(predictions: list[Detections], dataset: Dataset) -> dict[str, dict[str, Any]]:
    """Per linked file name, as :mod:`tools.ultralytics_val` reads other predictions."""
    return {
        link_name(i, s.path.resolve()): {
            "boxes": d.boxes.tolist(),
            "scores": d.scores.tolist(),
            "classes": d.class_ids.tolist(),
        }
        for i, (s, d) in enumerate(zip(dataset.samples, predictions, strict=True))
    }


def from_named(images: dict[str, dict[str, Any]], dataset: Dataset) -> list[Detections]:
    out = []
    for i, sample in enumerate(dataset.samples):
        image = images[link_name(i, sample.path.resolve())]
        boxes = np.array(image["boxes"], dtype=np.float32).reshape(-1, 4)
        scores = np.array(image["scores"], dtype=np.float32)
        out.append(Detections(boxes, scores, np.array(image["classes"], dtype=np.int64)))
    return out


def geometry_differs(original_hw: tuple[int, int], imgsz: int) -> bool:
    """Whether Ultralytics' val letterbox puts the image at another size than the harness's: its
    ``min(ceil(side * r), imgsz)`` (ultralytics: ultralytics/data/base.py, ``load_image``) against
    ``round(side * r)`` (harness/core/detections.py, ``Letterbox.fit``)."""
    h, w = original_hw
    r = imgsz / max(h, w)
    theirs = (h, w) if r == 1 else (min(math.ceil(h * r), imgsz), min(math.ceil(w * r), imgsz))
    return (round(h * r), round(w * r)) != theirs


def same_detections(a: Detections, b: Detections, pixels: float = 0.01, score: float = 1e-4) -> bool:
    """The same boxes in the same order, within ``pixels`` and ``score`` (Ultralytics rounds nothing here)."""
    if len(a) != len(b):
        return False
    order_a, order_b = np.lexsort((a.class_ids, -a.scores)), np.lexsort((b.class_ids, -b.scores))
    return (
        bool(np.array_equal(a.class_ids[order_a], b.class_ids[order_b]))
        and bool(np.abs(a.boxes[order_a] - b.boxes[order_b]).max(initial=0.0) <= pixels)
        and bool(np.abs(a.scores[order_a] - b.scores[order_b]).max(initial=0.0) <= score)
    )


@dataclass(frozen=True)
class Agreement:
    """Images whose two sides' detections are the same, split by whether their geometry is."""

    same_geometry: int
    same_geometry_same_boxes: int
    other_geometry: int
    other_geometry_same_boxes: int


def agreement(ours: list[Detections], theirs: list[Detections], dataset: Dataset, imgsz: int) -> Agreement:
    counts = np.zeros((2, 2), dtype=int)  # [geometry differs][boxes same]
    for sample, a, b in zip(dataset.samples, ours, theirs, strict=True):
        counts[int(geometry_differs(sample.original_hw, imgsz)), int(same_detections(a, b))] += 1
    return Agreement(int(counts[0].sum()), int(counts[0, 1]), int(counts[1].sum()), int(counts[1, 1]))


def ultralytics_available(python: Path) -> bool:
    """Whether ``python`` runs and imports ultralytics and onnxruntime."""
    if not python.is_file():
        return False
    done = subprocess.run([str(python), "-c", "import ultralytics, onnxruntime"], capture_output=True)
    return done.returncode == 0


def compare(lab: Lab, case: Case, repeat: int, with_ultralytics: bool) -> dict[str, Any]:
    """Both sides on ``case`` (each the fastest of ``repeat`` runs, taking turns), their mAPs, the
    cross-scoring; the harness's side alone without Ultralytics. The harness runs with a fresh
    prediction cache each time, as a first ``eval`` does."""
    dataset = dataset_of(lab, case)
    _, (imgsz, width) = model_input(load_model(case.onnx))
    if imgsz != width:
        raise SystemExit(f"bench_eval: {case.onnx}: input {imgsz}x{width}, Ultralytics' val takes a square imgsz")
    folder = lab.work / "runs" / case.name
    folder.mkdir(parents=True, exist_ok=True)
    saved, named = folder / "harness_predictions.json", folder / "harness_named.json"
    arguments = ["eval", "--onnx", str(case.onnx), "--dataset", str(dataset.root), *HARNESS_PROTOCOL]
    arguments += ["--no-progress", "--json", "--save-predictions", str(saved)]
    yaml = ultralytics_set(dataset, folder / "ultralytics") if with_ultralytics else None
    harness_runs, ultralytics_runs = [], []
    for attempt in range(repeat):  # the two sides take turns, so that both meet the same load
        cache = folder / f"cache-{attempt}"
        shutil.rmtree(cache, ignore_errors=True)
        harness_runs.append(run_harness(lab, [*arguments, "--cache", str(cache)], folder / f"harness-{attempt}.json"))
        shutil.rmtree(cache, ignore_errors=True)
        if yaml is not None:
            if attempt == 0:
                named.write_text(json.dumps(as_named(harness_predictions(saved, dataset), dataset)))
            out = folder / f"ultralytics-{attempt}.json"
            ultralytics_runs.append(run_ultralytics(lab, case.onnx, yaml, imgsz, named, out))
    found: dict[str, Any] = {
        "case": case,
        "images": len(dataset.samples),
        "imgsz": imgsz,
        "harness": min(harness_runs, key=lambda r: r["process_s"]),
    }
    if not ultralytics_runs:
        return found
    ultralytics = min(ultralytics_runs, key=lambda r: r["process_s"])
    if len(ultralytics["images"]) != len(dataset.samples):
        seen = len(ultralytics["images"])
        raise SystemExit(f"bench_eval: Ultralytics saw {seen} images, the harness {len(dataset.samples)}")
    theirs = from_named(ultralytics["images"], dataset)
    scored = evaluate([s.ground_truth for s in dataset.samples], theirs, dataset.names, PROTOCOL["conf"])
    found["ultralytics"] = ultralytics
    found["cross"] = {
        "harness metric, Ultralytics' boxes": {"map50": scored.map50, "map50_95": scored.map50_95},
        "Ultralytics' metric, harness boxes": ultralytics["rescored"]["other"],
        "Ultralytics' metric, its boxes clipped": ultralytics["rescored"]["ultralytics"],
    }
    found["agreement"] = agreement(harness_predictions(saved, dataset), theirs, dataset, imgsz)
    return found
