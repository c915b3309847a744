"""What one path measured on one dataset: the unit that golden baselines, gates, diagnosis and
reports work on. It never says which backend produced it beyond ``path`` and ``emulated``."""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.core.detections import Detections
from harness.core.path_names import REPLAYED_FROM
from harness.core.settings import EvalSettings
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


@dataclass(frozen=True)
class PathResult:
    """``path`` is ``onnx``, ``hailo`` or an emulated path; ``emulated`` is True for every path
    that did not run on Hailo hardware, and every report and log line says so.
    ``predictions[i]`` belong to ``image_ids[i]``, in original-image pixels and model class ids."""

    path: str
    emulated: bool
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

    @property
    def labelled(self) -> bool:
        """Measured against ground truth; False on images without labels (no mAP, precision, recall)."""
        return any(c.n_ground_truth for c in self.metrics.per_class)

    @property
    def replayed(self) -> bool:
        """Its outputs were recorded by an earlier run (on a device or emulated) and served again."""
        return self.provenance.runtime.startswith(REPLAYED_FROM)

    @property
    def label(self) -> str:
        marks = [
            m for m, on in (("emulated", self.emulated and self.path != "onnx"), ("replayed", self.replayed)) if on
        ]
        return f"{self.path} ({', '.join(marks)})" if marks else self.path

    @property
    def highest_score(self) -> float:
        """The highest score of any box (NaN without boxes): far below 1, a cap on every score,
        the opposite of saturation."""
        scores = [float(d.scores.max()) for d in self.predictions if len(d.scores)]
        return max(scores, default=math.nan)
