"""PathResults built from small synthetic ground truth and predictions, with real metrics, for the
golden, gate, diagnosis and report tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from harness.core.detections import Detections
from harness.core.path_names import ONNX, PathKind
from harness.core.settings import EvalSettings
from harness.inputs.dataset import Dataset, GroundTruth
from harness.inputs.dataset_yolo import load_yolo
from harness.verdict.gates import GateResult, run_gates
from harness.verdict.golden_blessing import golden_from_result
from harness.verdict.metrics.coco import evaluate, paired_bootstrap
from harness.verdict.metrics.distribution import CellsAboveThreshold, box_counts, score_distribution
from harness.verdict.result import PathResult, Provenance

NAMES = ("fire", "smoke")
SIDE = 640
SETTINGS = EvalSettings((SIDE, SIDE), score_threshold=0.2)
MANIFEST = "a" * 64
ENVIRONMENT = (("hailort", "4.23.0"), ("onnxruntime", "1.20.1"))


def truths(n_images: int = 16, seed: int = 0, side: int = SIDE) -> list[GroundTruth]:
    """1 to 3 well separated objects per image, classes alternating."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_images):
        n = int(rng.integers(1, 4))
        cells = rng.choice(9, size=n, replace=False)  # a 3 x 3 grid: boxes never overlap
        cell = side / 3
        x0 = (cells % 3) * cell + rng.uniform(5, cell / 3, n)
        y0 = (cells // 3) * cell + rng.uniform(5, cell / 3, n)
        w, h = rng.uniform(cell / 4, cell / 2, n), rng.uniform(cell / 4, cell / 2, n)
        out.append(GroundTruth(np.stack([x0, y0, x0 + w, y0 + h], 1), rng.integers(0, 2, n)))
    return out


def predictions(
    ground_truth: Sequence[GroundTruth], seed: int = 1, jitter: float = 1.5, scores: tuple[float, float] = (0.55, 0.97)
) -> list[Detections]:
    """Every object found, boxes jittered by up to ``jitter`` pixels, scores uniform in ``scores``."""
    rng = np.random.default_rng(seed)
    out = []
    for t in ground_truth:
        boxes = t.boxes + rng.uniform(-jitter, jitter, t.boxes.shape)
        out.append(Detections(boxes, rng.uniform(*scores, len(t)), t.class_ids))
    return out


def result(
    preds: Sequence[Detections],
    ground_truth: Sequence[GroundTruth],
    path: str = "onnx",
    emulated: bool = False,
    settings: EvalSettings = SETTINGS,
    manifest: str = MANIFEST,
    image_ids: Sequence[str] | None = None,
    cells: CellsAboveThreshold | None = None,
    created: str = "2025-03-04T05:06:07Z",
    model_sha256: str = "0123456789abcdef" * 4,
) -> PathResult:
    suffix = "onnx" if path == ONNX else "hef"
    kind = PathKind.EMULATED if emulated else PathKind.FLOAT if path == ONNX else PathKind.DEVICE
    return PathResult(
        path=path,
        kind=kind,
        settings=settings,
        provenance=Provenance(
            model_path=f"models/fire_smoke_yolo11n.{suffix}",
            model_sha256=model_sha256,
            dataset="/data/sets/fire_smoke_val",  # where it was read, as the pipeline records it
            dataset_manifest=manifest,
            harness_version="0.1.0",
            created=created,
            environment=ENVIRONMENT,
        ),
        image_ids=tuple(image_ids)
        if image_ids is not None
        else tuple(f"images/{i:03d}.png" for i in range(len(preds))),
        predictions=tuple(preds),
        metrics=evaluate(ground_truth, preds, NAMES, score_threshold=settings.score_threshold),
        box_counts=box_counts(preds),
        scores=score_distribution(preds),
        cells=cells,
    )


def with_scores(preds: Sequence[Detections], transform) -> list[Detections]:
    return [Detections(p.boxes, transform(p.scores.astype(np.float64)), p.class_ids) for p in preds]


def replaced(obj, **changes):
    return dataclasses.replace(obj, **changes)


def write_dataset(folder: Path, n_images: int = 8, size: tuple[int, int] = (240, 320)) -> Dataset:
    """A YOLO dataset of ``n_images`` drawn images (fire orange, smoke grey boxes on a gradient)."""
    h, w = size
    (folder / "images" / "val").mkdir(parents=True)
    (folder / "labels" / "val").mkdir(parents=True)
    for i, truth in enumerate(truths(n_images, seed=5, side=h)):
        gradient = np.linspace(40, 200, w, dtype=np.float32)[None, :, None] * np.ones((h, 1, 3), np.float32)
        image = Image.fromarray(gradient.astype(np.uint8) // np.array([1, 2, 3], np.uint8))
        draw = ImageDraw.Draw(image)
        lines = []
        for box, c in zip(truth.boxes, truth.class_ids, strict=True):
            draw.rectangle(box.tolist(), fill=(240, 120, 20) if c == 0 else (170, 170, 170))
            x0, y0, x1, y1 = box.tolist()
            lines.append(f"{c} {(x0 + x1) / 2 / w:.6f} {(y0 + y1) / 2 / h:.6f} {(x1 - x0) / w:.6f} {(y1 - y0) / h:.6f}")
        image.save(folder / "images" / "val" / f"{i:03d}.png")
        (folder / "labels" / "val" / f"{i:03d}.txt").write_text("\n".join(lines) + "\n")
    return load_yolo(folder, names=NAMES)


@dataclasses.dataclass(frozen=True)
class ReportCase:
    dataset: Dataset
    onnx: PathResult
    hailo: PathResult
    gates: tuple[GateResult, ...]
    worst: frozenset[str]  # the two images the hailo path gets wrong


def report_case(folder: Path) -> ReportCase:
    """An ONNX reference and an emulated Hailo path that misses every box of one image and flips the
    classes of another, with their gates against a baseline of the reference."""
    dataset = write_dataset(folder)
    gt = dataset.ground_truths
    ids = [s.image_id for s in dataset.samples]
    onnx = result(predictions(gt), gt, image_ids=ids, manifest=dataset.manifest)
    preds = predictions(gt, seed=2)
    preds[2] = preds[2].select(slice(0, 0))
    preds[5] = Detections(preds[5].boxes, preds[5].scores, 1 - preds[5].class_ids)
    hailo = result(preds, gt, path="hailo", emulated=True, image_ids=ids, manifest=dataset.manifest)
    bootstrap = paired_bootstrap(gt, onnx.predictions, hailo.predictions, NAMES, resamples=50)
    baseline = dataclasses.replace(golden_from_result(onnx), path="hailo")  # a baseline as good as the reference
    gates = run_gates(hailo, baseline, reference=onnx, bootstrap=bootstrap)
    return ReportCase(dataset, onnx, hailo, gates, frozenset((ids[2], ids[5])))


IN_DOMAIN = (
    ("hef_sha256", "b" * 64),
    ("calibration", "the demo's in-domain frames (64)"),
    ("calibration_sha256", "c" * 64),
)
OFF_DOMAIN = (
    ("hef_sha256", "e" * 64),
    ("calibration", "the demo's off-domain frames (64)"),
    ("calibration_sha256", "d" * 64),
)


def signed_off_case(folder: Path, now: tuple[tuple[str, str], ...] = OFF_DOMAIN) -> tuple[ReportCase, dict]:
    """The report case with both paths' baselines blessed twice, r1 from the in-domain calibration
    and r2 from the off-domain one (the same model), and this run made from ``now``: the case, its
    results (this run's made_from set) and the ``baselines`` write_reports takes."""
    from harness.verdict.golden import golden_path
    from harness.verdict.golden_blessing import write_golden
    from harness.verdict.golden_reading import load_golden

    case = report_case(folder / "dataset")
    results = []
    baselines = {}
    for r in (case.onnx, case.hailo):
        made = (("settings", "score_threshold 0.2"),)
        hailo = r is case.hailo
        first = dataclasses.replace(
            r,
            provenance=dataclasses.replace(
                r.provenance, created="2025-01-02T03:04:05Z", made_from=(*IN_DOMAIN, *made) if hailo else made
            ),
        )
        second = dataclasses.replace(
            r,
            provenance=dataclasses.replace(
                r.provenance, created="2025-02-03T04:05:06Z", made_from=(*OFF_DOMAIN, *made) if hailo else made
            ),
        )
        file = golden_path(folder / "golden", r.provenance.model_path, r.path, r.provenance.dataset)
        write_golden(file, golden_from_result(first, release="r1"))
        write_golden(file, golden_from_result(second, release="r2"))
        baselines[r.path] = (file, load_golden(file))
        results.append(
            dataclasses.replace(
                r, provenance=dataclasses.replace(r.provenance, made_from=(*now, *made) if hailo else made)
            )
        )
    return dataclasses.replace(case, onnx=results[0], hailo=results[1]), baselines
