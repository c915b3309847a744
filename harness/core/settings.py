"""Evaluation and decoding settings: part of every result. Two results are comparable only under equal settings.

(`hailomz eval` measures at score threshold 0.001 while a HEF's NMS was compiled at 0.2: that
difference alone looks like a regression, so it is an error, never a number.)
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from harness.core import defaults
from harness.core.documents import DocumentError, Fields
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


# The regression channels' order HailoRT's SSD op takes where a HEF gives none: ty, tx, th, tw
# (hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp, ``DEFAULT_Y_OFFSET_IDX`` .. ``DEFAULT_W_OFFSET_IDX``;
# libhailort/src/hef/hef.cpp, ``create_ssd_op_metadata``).
SSD_BOX_INDICES = (0, 1, 2, 3)


@dataclass(frozen=True)
class SsdConfig:
    """How an SSD head's boxes are coded: what HailoRT's SSD op is configured with, and what no ONNX graph
    holds (hailort: libhailort/src/net_flow/ops_metadata/ssd_op_metadata.hpp, ``SSDPostProcessConfig``;
    libhailort/hef.proto, ``ProtoHEFSSDNmsOp``, ``ProtoHEFSSDBboxDecoder``; nms_op_metadata.hpp,
    ``background_removal``).

    - ``anchors``: per layer, largest grid first, each anchor's ``(width, height)`` as a fraction of the
      input size (the ``w`` and ``h`` lists of one bbox decoder); a layer's regression map has 4 channels per
      anchor, its class map ``nc`` per anchor;
    - ``centers_scale_factor``, ``bbox_dimensions_scale_factor``: the centre offsets are divided by the
      first, the log sizes by the second (the training's box coder scales; hef.proto: "derived from
      faster_rcnn architecture");
    - ``ty_index`` .. ``tw_index``: where each offset lies among an anchor's 4 regression channels;
    - ``background_class``: the class map's background channel, left out of the detections (the first or
      the last class; the first shifts every class id down by one); None: no background channel;
    - ``normalize_boxes``: HailoRT's clip of each corner to ``[0, grid width - 1]`` (``[0, grid height -
      1]``) of the layer, which no HEF sets (libhailort/src/hef/hef.cpp, ``create_ssd_op_metadata``, leaves it
      false).
    """

    anchors: tuple[tuple[tuple[float, float], ...], ...]
    centers_scale_factor: int
    bbox_dimensions_scale_factor: int
    ty_index: int = SSD_BOX_INDICES[0]
    tx_index: int = SSD_BOX_INDICES[1]
    th_index: int = SSD_BOX_INDICES[2]
    tw_index: int = SSD_BOX_INDICES[3]
    background_class: int | None = None
    normalize_boxes: bool = False

    def __post_init__(self) -> None:
        if not self.anchors or not all(self.anchors):
            raise SsdConfigError(
                f"SSD config: anchors {self.anchors!r}; expected per layer at least one (width, height) anchor"
            )
        for i, layer in enumerate(self.anchors):
            for anchor in layer:
                if len(anchor) != 2 or not all(math.isfinite(v) and v > 0 for v in anchor):
                    raise SsdConfigError(
                        f"SSD config: anchors[{i}] holds {anchor!r}; expected (width, height), two finite numbers > 0"
                    )
        for field in ("centers_scale_factor", "bbox_dimensions_scale_factor"):
            if getattr(self, field) < 1:
                raise SsdConfigError(f"SSD config: {field} is {getattr(self, field)}; expected an integer >= 1")
        if sorted(self.box_indices) != list(SSD_BOX_INDICES):
            raise SsdConfigError(
                f"SSD config: ty, tx, th, tw indices {self.box_indices}; expected each of 0, 1, 2, 3 once"
            )
        if self.background_class is not None and self.background_class < 0:
            raise SsdConfigError(f"SSD config: background_class is {self.background_class}; expected an index >= 0")

    @property
    def digest(self) -> str:
        """sha256 of every field (canonical JSON): how an export's facts and an emulated HEF name the config."""
        fields = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(fields.encode()).hexdigest()

    @property
    def box_indices(self) -> tuple[int, int, int, int]:
        """The regression channels of ty, tx, th, tw within an anchor's 4."""
        return (self.ty_index, self.tx_index, self.th_index, self.tw_index)

    @classmethod
    def from_dict(cls, data: Any, source: str, path: str = "") -> SsdConfig:
        """An SSD config file's content (JSON or YAML, read by :mod:`harness.core.documents`), in the words of
        HailoRT's HEF (hailort: libhailort/hef.proto, ``ProtoHEFSSDNmsOp``)::

            centers_scale_factor: 10
            bbox_dimensions_scale_factor: 5
            ty: 0                            # optional, with tx, th, tw: 0, 1, 2, 3
            background_removal_index: 0      # optional: no background channel where absent
            normalize_boxes: false           # optional
            bbox_decoders:                   # one per layer, largest grid first
              - {w: [0.1, 0.14, 0.07], h: [0.1, 0.07, 0.14]}

        Errors name ``source`` and the key path."""
        f = Fields(data, source, path)
        anchors = []
        for decoder in f.objects("bbox_decoders"):
            widths = decoder.value("w", _is_sizes, "a non-empty list of numbers > 0 (fractions of the input width)")
            heights = decoder.value("h", _is_sizes, "a non-empty list of numbers > 0 (fractions of the input height)")
            if len(widths) != len(heights):
                decoder.fail("h", heights, f"as many heights as widths ({len(widths)})")
            decoder.done()
            anchors.append(tuple((float(w), float(h)) for w, h in zip(widths, heights, strict=True)))
        if not anchors:
            f.fail("bbox_decoders", [], "one bbox decoder per layer, largest grid first")
        indices = tuple(
            f.integer(key, default, lo=0, hi=3)
            for key, default in zip(("ty", "tx", "th", "tw"), SSD_BOX_INDICES, strict=True)
        )
        try:
            config = cls(
                anchors=tuple(anchors),
                centers_scale_factor=f.integer("centers_scale_factor", lo=1),
                bbox_dimensions_scale_factor=f.integer("bbox_dimensions_scale_factor", lo=1),
                ty_index=indices[0],
                tx_index=indices[1],
                th_index=indices[2],
                tw_index=indices[3],
                background_class=f.integer("background_removal_index", None, lo=0),
                normalize_boxes=f.boolean("normalize_boxes", False),
            )
        except SsdConfigError as error:
            raise DocumentError(f"{source}: {error}") from None
        f.done()
        return config


class SsdConfigError(HarnessError):
    """An SSD head's box coding (:class:`SsdConfig`) that HailoRT's SSD op could not take."""


@dataclass(frozen=True)
class _Selection:
    """What a selection of detections is held to, the leading fields of both :class:`DecodeConfig` and
    :class:`EvalSettings` (in this order, with these defaults): the input size, the thresholds, the limits."""

    input_hw: tuple[int, int]
    score_threshold: float = defaults.SCORE_THRESHOLD
    iou_threshold: float = defaults.IOU_THRESHOLD
    max_per_class: int = defaults.MAX_PER_CLASS
    max_total: int = defaults.MAX_TOTAL

    def _selection(self) -> dict[str, Any]:
        """These fields by name: what a :class:`DecodeConfig` takes of an :class:`EvalSettings` as it is."""
        return {f.name: getattr(self, f.name) for f in fields(_Selection)}


@dataclass(frozen=True)
class DecodeConfig(_Selection):
    mode: NmsMode = NmsMode.HAILORT
    multi_label: bool = True
    max_candidates: int = defaults.MAX_CANDIDATES
    # None: decide from the class outputs' quant limvals or value range whether they are logits.
    classes_are_probabilities: bool | None = None
    # Anchor-based heads (YOLOv5/YOLOv7): per stride, ascending, each anchor's (width, height) in input
    # pixels, as HailoRT's YOLOv5 op config holds them (hailort: libhailort/src/net_flow/ops_metadata/
    # yolov5_op_metadata.hpp, ``YoloPostProcessConfig::anchors``); read from the export or its HEF.
    anchors: tuple[tuple[tuple[float, float], ...], ...] = ()
    # An SSD head (HeadFamily.SSD): its anchors and box coding, given in a config file (no graph holds them).
    # The anchors a family decodes against, of these two: harness.decode.heads.family_anchors.
    ssd: SsdConfig | None = None


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
        """Deprecated (a preprocessing given is now kept under any metric; one not given is the metric's
        protocol's, :attr:`MetricProtocol.protocol`): ``yolo val``'s letterbox under ``ultralytics``
        where a letterbox was asked for; otherwise this one."""
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

    @property
    def protocol(self) -> Protocol:
        """The settings this metric's protocol measures with where a run gives none of its own."""
        return PROTOCOLS[self]

    def protocol_note(self, differences: list[str]) -> str:
        """Why two runs of this metric may differ in the settings its protocol sets: ``--metric ultralytics``
        once set the metric and the letterbox alone, and now sets yolo val's NMS, thresholds and cap too."""
        fixed = ("nms_mode", "score_threshold", "iou_threshold", "max_total", "preprocess")
        if self is not MetricProtocol.ULTRALYTICS or not any(d.split(":")[0] in fixed for d in differences):
            return ""
        return (
            ": --metric ultralytics sets yolo val's NMS, thresholds, detections cap and letterbox wherever a run "
            "does not give its own (a run before it took HailoRT's NMS and the Hailo path's thresholds); give "
            "--nms, --score-threshold, --iou-threshold, --max-total and --preprocess as the other run had them, "
            "or bless anew"
        )


@dataclass(frozen=True)
class Protocol:
    """How a protocol makes the predictions it measures: the NMS, its thresholds, the detections cap and
    the image fit a run takes where it gives none of its own (each option overrides its own setting).
    A threshold None: the one compiled into the Hailo path's NMS where it has one, else the default."""

    nms_mode: NmsMode
    preprocess: Preprocess
    max_total: int
    score_threshold: float | None = None
    iou_threshold: float | None = None

    def differences(self, settings: Mapping[str, Any]) -> list[str]:
        """``field value (the protocol's: value)`` for each setting of ``settings`` (as
        :meth:`EvalSettings.to_dict` writes them) the protocol fixes and the run set otherwise (an
        override or a Hailo path's compiled threshold, said in the reports)."""
        mine = {
            "nms_mode": self.nms_mode.value,
            "preprocess": self.preprocess.value,
            "max_total": self.max_total,
            "score_threshold": self.score_threshold,
            "iou_threshold": self.iou_threshold,
        }
        return [
            f"{k} {settings[k]} (the protocol's: {v})"
            for k, v in mine.items()
            if v is not None and k in settings and settings[k] != v
        ]


PROTOCOLS = {
    MetricProtocol.COCO: Protocol(NmsMode.HAILORT, Preprocess.LETTERBOX, defaults.MAX_TOTAL),
    # yolo val's (Ultralytics 8.4: ultralytics/engine/validator.py, conf 0.001 where none is given;
    # ultralytics/cfg/default.yaml, iou 0.7 and max_det 300; ultralytics/utils/nms.py, non_max_suppression;
    # ultralytics/data/base.py, load_image, then LetterBox(scaleup=False))
    MetricProtocol.ULTRALYTICS: Protocol(NmsMode.ULTRALYTICS, Preprocess.ULTRALYTICS_VAL, 300, 0.001, 0.7),
}


class SettingsMismatch(HarnessError):
    """Two results measured under different settings were compared."""


@dataclass(frozen=True)
class EvalSettings(_Selection):
    nms_mode: NmsMode = NmsMode.HAILORT
    preprocess: Preprocess = Preprocess.LETTERBOX
    # dataset class id -> model class id, by name (see harness.inputs.dataset.class_map)
    class_map: tuple[int, ...] = ()
    metric: MetricProtocol = MetricProtocol.COCO  # how the mAPs are measured; fixes no prediction

    def decode_config(
        self,
        classes_are_probabilities: bool | None = None,
        anchors: tuple[tuple[tuple[float, float], ...], ...] = (),
        ssd: SsdConfig | None = None,
    ) -> DecodeConfig:
        """The decoding these settings ask for; ``anchors``, a fact of the model, for anchor-based heads;
        ``ssd``, an SSD head's anchors and box coding (its config file, ``--ssd-config``)."""
        return DecodeConfig(
            **self._selection(),
            mode=self.nms_mode,
            classes_are_probabilities=classes_are_probabilities,
            anchors=anchors,
            ssd=ssd,
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
                else self.metric.protocol_note(diff)
            )
            raise SettingsMismatch(f"{what}: results measured under different settings ({'; '.join(diff)}){metrics}")


def _is_hw(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(_is_count(v) and v > 0 for v in value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_ids(value: Any) -> bool:
    """Model class ids, or -1 for a dataset class left out (harness.inputs.dataset.LEFT_OUT)."""
    return isinstance(value, list) and all(_is_count(v) and v >= -1 for v in value)


def _is_sizes(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_number(v) and v > 0 for v in value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _one_of(kind: type[enum.Enum]) -> Any:
    return lambda value: isinstance(value, str) and value in {m.value for m in kind}


def _names(kind: type[enum.Enum]) -> str:
    return "one of " + ", ".join(repr(m.value) for m in kind)
