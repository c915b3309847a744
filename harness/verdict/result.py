"""What one path measured on one dataset: the unit that golden baselines, gates, diagnosis and
reports work on. It never says which backend produced it beyond ``path`` and ``kind``."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.core.path_names import PathKind
from harness.core.settings import EvalSettings
from harness.core.shared_entry import EntryUse
from harness.verdict.metrics.coco import CocoMetrics
from harness.verdict.metrics.distribution import BoxCounts, CellsAboveThreshold, ScoreDistribution


@dataclass(frozen=True)
class Provenance:
    """Exactly what was measured: model and dataset by content hash, and by which harness."""

    model_path: str
    model_sha256: str
    dataset: str
    dataset_manifest: str
    harness_version: str
    created: str  # ISO 8601 UTC
    environment: tuple[tuple[str, str], ...] = ()  # (package, version), e.g. onnxruntime, hailort
    # What ran the model (runtime and device, as the runner names itself), and how many of the
    # predictions were read from the prediction cache instead (made by that same runtime: its key).
    runtime: str = ""
    from_cache: int = 0
    # The shared-cache entries the path used (the demo set, an emulated HEF): folder, name, content sha256
    # and how each stood (signed, sealed, unverified, built or rebuilt).
    shared_cache: tuple[EntryUse, ...] = ()
    # What the measurement was made from beyond the model and dataset (harness.verdict.changes.FACTS):
    # (fact, value), e.g. the HEF's sha256, the calibration images, the settings, the code digest.
    made_from: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class PathResult:
    """``path`` is the path's name; ``kind`` what made its outputs, decided where the path was built
    (``recorded``: a replayed path's recorded kind, else None), and every report and log line says so.
    ``predictions[i]`` belong to ``image_ids[i]``, in original-image pixels and model class ids."""

    path: str
    kind: PathKind
    settings: EvalSettings
    provenance: Provenance
    image_ids: tuple[str, ...]
    predictions: tuple[Detections, ...]
    metrics: CocoMetrics
    box_counts: BoxCounts
    scores: ScoreDistribution
    cells: CellsAboveThreshold | None = None  # raw-head paths only
    fps: float | None = None  # frames per second measured on Hailo hardware; None: not measured (or cached)
    score_ceiling: float | None = None  # the highest score its class outputs can represent, where known
    recorded: PathKind | None = None

    def __post_init__(self) -> None:
        if (self.kind is PathKind.REPLAYED) != (self.recorded is not None) or self.recorded is PathKind.REPLAYED:
            raise HarnessError(
                f"path {self.path!r}: kind {self.kind.value}, recorded {self.recorded and self.recorded.value}: "
                "expected a recorded kind (float, emulated or device) exactly where the kind is replayed"
            )

    @property
    def made_by(self) -> PathKind:
        """What made its outputs: a replay's recorded kind, else its own."""
        return self.recorded or self.kind

    @property
    def emulated(self) -> bool:
        """Its outputs were made by an emulation of a Hailo model, not on Hailo hardware nor by the float export."""
        return self.made_by is PathKind.EMULATED

    @property
    def hardware(self) -> bool:
        """Its outputs were made on a Hailo device (the one kind labelled hardware)."""
        return self.made_by is PathKind.DEVICE

    @property
    def labelled(self) -> bool:
        """Measured against ground truth; False on images without labels (no mAP, precision, recall)."""
        return any(c.n_ground_truth for c in self.metrics.per_class)

    @property
    def replayed(self) -> bool:
        """Its outputs were recorded by an earlier run (on a device or emulated) and served again."""
        return self.kind is PathKind.REPLAYED

    @property
    def label(self) -> str:
        """Its name, marked ``emulated`` and ``replayed`` where it is."""
        marks = [m for m, on in (("emulated", self.emulated), ("replayed", self.replayed)) if on]
        return f"{self.path} ({', '.join(marks)})" if marks else self.path

    @property
    def highest_score(self) -> float:
        """The highest score of any box (NaN without boxes): far below 1, a cap on every score,
        the opposite of saturation."""
        scores = [float(d.scores.max()) for d in self.predictions if len(d.scores)]
        return max(scores, default=math.nan)


def result_json(result: PathResult) -> dict[str, Any]:
    """Everything ``result`` measured but its predictions, as strict JSON values (NaN and infinity as
    null): the one form ``eval --json`` prints and the reports keep per path."""
    return strict_json(
        {
            "path": result.path,
            "label": result.label,
            "kind": result.kind.value,
            "recorded_kind": result.recorded.value if result.recorded else None,
            "emulated": result.emulated,
            "fps": result.fps,
            "highest_score": result.highest_score,
            "n_images": len(result.image_ids),
            "metrics": asdict(result.metrics),
            "box_counts": asdict(result.box_counts),
            "scores": asdict(result.scores),
            "cells": {**asdict(result.cells), "share": result.cells.share} if result.cells else None,
            "settings": result.settings.to_dict(),
            "provenance": {
                **asdict(result.provenance),
                "environment": dict(result.provenance.environment),
                "shared_cache": [e.to_json() for e in result.provenance.shared_cache],
                "made_from": dict(result.provenance.made_from),
            },
        }
    )


def strict_json(node: Any) -> Any:
    """Tuples become lists and NaN or infinity ``None``, so that the value is strict JSON."""
    if isinstance(node, dict):
        return {k: strict_json(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [strict_json(v) for v in node]
    if isinstance(node, float) and not math.isfinite(node):
        return None
    return node
