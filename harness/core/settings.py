"""Evaluation and decoding settings: part of every result. Two results are comparable only under equal settings.

(`hailomz eval` measures at score threshold 0.001 while a HEF's NMS was compiled at 0.2: that
difference alone looks like a regression, so it is an error, never a number.)
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any

from harness.core import defaults
from harness.core.documents import Fields
from harness.core.errors import HarnessError


class NmsMode(str, enum.Enum):
    """Which NMS semantics to reproduce.

    - ``hailort``: the HailoRT YOLOv8 post-process op (hailort: libhailort/src/net_flow/ops/
      yolov8_post_process.cpp, nms_post_process.cpp): every (cell, class) with score >= threshold
      is a candidate (multi-label), greedy NMS per class suppressing IoU >= threshold, then the top
      ``max_per_class`` per class.
    - ``ultralytics``: Ultralytics ``non_max_suppression`` (ultralytics/utils/ops.py or
      utils/nms.py): score > threshold, per-class NMS suppressing IoU > threshold, at most
      ``max_candidates`` boxes into NMS, ``max_total`` kept overall; ``multi_label`` as in val.
    """

    HAILORT = "hailort"
    ULTRALYTICS = "ultralytics"


@dataclass(frozen=True)
class DecodeConfig:
    input_hw: tuple[int, int]
    score_threshold: float = defaults.SCORE_THRESHOLD
    iou_threshold: float = defaults.IOU_THRESHOLD
    max_per_class: int = defaults.MAX_PER_CLASS
    max_total: int = defaults.MAX_TOTAL
    mode: NmsMode = NmsMode.HAILORT
    multi_label: bool = True
    max_candidates: int = defaults.MAX_CANDIDATES
    # None: decide from the class outputs' quant limvals or value range whether they are logits.
    classes_are_probabilities: bool | None = None
    # Anchor-based heads (YOLOv5/YOLOv7): per stride, ascending, each anchor's (width, height) in input
    # pixels, as HailoRT's YOLOv5 op config holds them (hailort: libhailort/src/net_flow/ops_metadata/
    # yolov5_op_metadata.hpp, ``YoloPostProcessConfig::anchors``); read from the export or its HEF.
    anchors: tuple[tuple[tuple[float, float], ...], ...] = ()


class Preprocess(str, enum.Enum):
    """How an image becomes the model's input (harness.inputs.preprocess.fit), and how its boxes map back.

    - ``letterbox``: keep the aspect ratio, one resize to fit, pad 114 (Ultralytics' ``LetterBox``,
      the Model Zoo); boxes clipped to the image;
    - ``ultralytics-val``: as ``yolo val`` loads an image (ultralytics/data/base.py ``load_image``: the
      long side to the input's with ``ceil``, then ``LetterBox(scaleup=False)``); boxes not clipped.
      ``--metric ultralytics`` chooses it for ``letterbox`` (:meth:`under`);
    - ``resize``: plain resize, aspect ratio not kept.
    """

    LETTERBOX = "letterbox"
    RESIZE = "resize"
    ULTRALYTICS_VAL = "ultralytics-val"

    def under(self, metric: MetricProtocol) -> Preprocess:
        """The preprocessing a metric's protocol measures with: ``yolo val``'s letterbox under
        ``ultralytics`` where a letterbox was asked for; otherwise this one."""
        if metric is MetricProtocol.ULTRALYTICS and self is Preprocess.LETTERBOX:
            return Preprocess.ULTRALYTICS_VAL
        return self


class MetricProtocol(str, enum.Enum):
    """Which mAP a run measures: the same predictions give other numbers under each.

    - ``coco``: pycocotools' ``COCOeval`` for boxes (harness.verdict.metrics.coco), the default;
    - ``ultralytics``: the numbers ``yolo val`` prints (harness.verdict.metrics.ultralytics): its
      matching, its interpolated AP (a perfect class scores 0.995), every detection counted.
    """

    COCO = "coco"
    ULTRALYTICS = "ultralytics"


class SettingsMismatch(HarnessError):
    """Two results measured under different settings were compared."""


@dataclass(frozen=True)
class EvalSettings:
    input_hw: tuple[int, int]
    score_threshold: float = defaults.SCORE_THRESHOLD
    iou_threshold: float = defaults.IOU_THRESHOLD
    max_per_class: int = defaults.MAX_PER_CLASS
    max_total: int = defaults.MAX_TOTAL
    nms_mode: NmsMode = NmsMode.HAILORT
    preprocess: Preprocess = Preprocess.LETTERBOX
    # dataset class id -> model class id, by name (see harness.inputs.dataset.class_map)
    class_map: tuple[int, ...] = ()
    metric: MetricProtocol = MetricProtocol.COCO  # how the mAPs are measured; fixes no prediction

    def decode_config(
        self,
        classes_are_probabilities: bool | None = None,
        anchors: tuple[tuple[tuple[float, float], ...], ...] = (),
    ) -> DecodeConfig:
        """The decoding these settings ask for; ``anchors``, a fact of the model, for anchor-based heads."""
        return DecodeConfig(
            input_hw=self.input_hw,
            score_threshold=self.score_threshold,
            iou_threshold=self.iou_threshold,
            max_per_class=self.max_per_class,
            max_total=self.max_total,
            mode=self.nms_mode,
            classes_are_probabilities=classes_are_probabilities,
            anchors=anchors,
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["input_hw"] = list(self.input_hw)
        d["nms_mode"] = self.nms_mode.value
        d["preprocess"] = self.preprocess.value
        d["class_map"] = list(self.class_map)
        d["metric"] = self.metric.value
        return d

    @classmethod
    def from_dict(cls, data: Any, source: str = "settings", path: str = "settings") -> EvalSettings:
        """The settings written by :meth:`to_dict`, read strictly (see :mod:`harness.core.documents`):
        every field typed as written (no number as a string, no float for an integer), no unknown field;
        errors name ``source`` and the field's ``path``."""
        f = Fields(data, source, path)
        settings = cls(
            input_hw=tuple(f.value("input_hw", _is_hw, "[height, width], two integers > 0")),
            score_threshold=f.number("score_threshold", defaults.SCORE_THRESHOLD, lo=0, hi=1),
            iou_threshold=f.number("iou_threshold", defaults.IOU_THRESHOLD, lo=0, hi=1),
            max_per_class=f.integer("max_per_class", defaults.MAX_PER_CLASS, lo=1),
            max_total=f.integer("max_total", defaults.MAX_TOTAL, lo=1),
            nms_mode=NmsMode(f.value("nms_mode", _one_of(NmsMode), _names(NmsMode), NmsMode.HAILORT.value)),
            preprocess=Preprocess(
                f.value("preprocess", _one_of(Preprocess), _names(Preprocess), Preprocess.LETTERBOX.value)
            ),
            class_map=tuple(
                f.value("class_map", _is_ids, "a list of model class ids (integers >= 0, or -1: left out)", [])
            ),
            # a document from before the metric was chosen measured COCO's
            metric=MetricProtocol(
                f.value("metric", _one_of(MetricProtocol), _names(MetricProtocol), MetricProtocol.COCO.value)
            ),
        )
        f.done()
        return settings

    def differences(self, other: EvalSettings) -> list[str]:
        """``field: this vs other`` for every field that differs."""
        mine, theirs = self.to_dict(), other.to_dict()
        return [f"{k}: {mine[k]!r} vs {theirs[k]!r}" for k in mine if mine[k] != theirs[k]]

    def require_same(self, other: EvalSettings, what: str) -> None:
        diff = self.differences(other)
        if diff:
            metrics = (
                f": mAPs of --metric {self.metric.value} and --metric {other.metric.value} are not comparable"
                if self.metric != other.metric
                else ""
            )
            raise SettingsMismatch(f"{what}: results measured under different settings ({'; '.join(diff)}){metrics}")


def _is_hw(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(_is_count(v) and v > 0 for v in value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_ids(value: Any) -> bool:
    """Model class ids, or -1 for a dataset class left out (harness.inputs.dataset.LEFT_OUT)."""
    return isinstance(value, list) and all(_is_count(v) and v >= -1 for v in value)


def _one_of(kind: type[enum.Enum]) -> Any:
    return lambda value: isinstance(value, str) and value in {m.value for m in kind}


def _names(kind: type[enum.Enum]) -> str:
    return "one of " + ", ".join(repr(m.value) for m in kind)
