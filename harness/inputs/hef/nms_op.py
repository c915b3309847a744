"""A HEF's NMS op as HailoRT reads it (``ProtoHEFNmsOp``: hailort: hailort/libhailort/hef.proto): its
configuration, its decoders and the core outputs they read, read from the op's wire message."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from harness.core.errors import HefError
from harness.core.settings import SSD_BOX_INDICES, SsdConfig, SsdConfigError
from harness.core.specs import NmsShape
from harness.inputs.hef.wire import Message


@dataclass(frozen=True)
class BboxDecoder:
    """One detection scale of an NMS op: its stride and the core outputs that carry boxes and class scores."""

    stride: int
    box_stream: str
    class_stream: str
    # a YOLOv5 decoder's anchors, (width, height) in input pixels (hailort: hailort/libhailort/hef.proto,
    # ProtoHEFYoloBboxDecoder ``w``/``h``; src/hef/hef.cpp, ``create_yolov5_config`` pairs them w, h)
    # an SSD decoder's (hef.proto ProtoHEFSSDBboxDecoder ``w``/``h`` floats): fractions of the input
    anchors: tuple[tuple[float, float], ...] = ()
    # a YOLOX decoder's objectness output (hailort: hailort/libhailort/hef.proto, ProtoHEFYoloxBboxDecoder
    # ``obj_pad_index``); "" for the other kinds
    objectness_stream: str = ""


@dataclass(frozen=True)
class NmsOpConfig:
    """``ProtoHEFNmsOp``: the NMS post-process HailoRT runs on the host (hailort: hailort/libhailort/hef.proto)."""

    name: str
    kind: str
    output_name: str
    score_threshold: float
    iou_threshold: float
    classes: int
    max_proposals_per_class: int
    background_removal: bool
    background_removal_index: int
    bbox_decoding_only: bool
    image_height: float
    image_width: float
    regression_length: int
    bbox_decoders: tuple[BboxDecoder, ...]
    ssd: SsdConfig | None = None  # an SSD op's anchors and box coding

    @property
    def nms_shape(self) -> NmsShape:
        """The NMS output's shape.

        hailort: hailort/libhailort/src/net_flow/ops/nms_post_process.cpp, NmsOpMetadata::get_output_vstream_info
        """
        classes = self.classes - 1 if self.background_removal else self.classes
        return NmsShape(classes, self.max_proposals_per_class, self.max_proposals_per_class * self.classes)


@dataclass(frozen=True)
class _OpMessage:
    """The wire layout of one kind of ``ProtoHEFNmsOp``'s op message and of its decoders (hailort:
    hailort/libhailort/hef.proto, ``ProtoHEF*NmsOp`` and ``ProtoHEF*BboxDecoder``).

    ``decoders``: the bbox_decoders field (0: none read); per decoder the ``stride`` field (0: none) and the
    (field, name) of the pads feeding boxes and class scores (YOLOv5 decoders have one pad for both), and of
    the objectness pad where the decoder has one (YOLOX's ``obj_pad_index``); ``anchors``: the decoder's h and
    w fields where it has anchors, uint32 (whole pixels) where ``whole_anchors``, else float;
    ``regression_length``: the op's field of it (0: none); ``ssd_coding``: the op holds an SSD box coding."""

    kind: str
    decoders: int = 0
    stride: int = 0
    box_pad: tuple[int, str] = (0, "")
    class_pad: tuple[int, str] = (0, "")
    objectness_pad: tuple[int, str] | None = None
    anchors: tuple[int, int] | None = None
    whole_anchors: bool = False
    regression_length: int = 0
    ssd_coding: bool = False


# Per ``ProtoHEFNmsOp`` field: its op message (ProtoHEFYoloBboxDecoder h 2, w 3 as uint32;
# ProtoHEFSSDBboxDecoder h 1, w 2 as float; ProtoHEFYoloxBboxDecoder obj_pad_index 4;
# ProtoHEFYolov8NmsOp regression_length 5).
_OP_MESSAGES = {
    7: _OpMessage("yolov5", 4, 4, (5, "pad_index"), (5, "pad_index"), anchors=(2, 3), whole_anchors=True),
    8: _OpMessage("yolox", 3, 1, (2, "reg_pad_index"), (3, "cls_pad_index"), objectness_pad=(4, "obj_pad_index")),
    9: _OpMessage("ssd", 9, 0, (3, "reg_pad_index"), (4, "cls_pad_index"), anchors=(1, 2), ssd_coding=True),
    10: _OpMessage("iou"),
    11: _OpMessage("yolov5_seg", 3, 4, (5, "pad_index"), (5, "pad_index")),
    12: _OpMessage("yolov8", 4, 1, (2, "reg_pad_index"), (3, "cls_pad_index"), regression_length=5),
}


def nms_op(op: Message, pads: Mapping[int, str], cells: Mapping[str, int]) -> NmsOpConfig:
    """The NMS op of ``op`` (a ``ProtoHEFOp`` holding ``nms_op``); ``pads``: the core output streams by pad
    index, ``cells``: each one's grid cells."""
    nms = op.message(5, "nms_op")
    kinds = [number for number in _OP_MESSAGES if nms.has(number)]
    if len(kinds) != 1:
        raise HefError(f"malformed proto field {nms.path}: {len(kinds)} NMS kinds set, expected exactly 1")
    wire = _OP_MESSAGES[kinds[0]]
    detail = nms.message(kinds[0], f"{wire.kind}_nms_op")
    decoders = []
    if wire.decoders:
        for decoder in detail.messages(wire.decoders, "bbox_decoders"):
            names = []
            for field, label in (wire.box_pad, wire.class_pad, *filter(None, (wire.objectness_pad,))):
                pad = decoder.uint(field, label)
                if pad not in pads:
                    raise HefError(
                        f"malformed proto field {decoder.path}.{label}: pad {pad} is not a core output stream "
                        f"(output pads: {sorted(pads)})"
                    )
                names.append(pads[pad])
            stride = decoder.uint(wire.stride, "stride") if wire.stride else 0
            anchors: tuple[tuple[float, float], ...] = ()
            if wire.anchors is not None:
                h_field, w_field = wire.anchors
                read: Callable[[int, str], tuple[float, ...]] = decoder.uints if wire.whole_anchors else decoder.floats
                heights, widths = read(h_field, "h"), read(w_field, "w")
                if len(heights) != len(widths):
                    raise HefError(
                        f"malformed proto field {decoder.path}: {len(widths)} anchor widths w and {len(heights)} "
                        "heights h, expected one of each per anchor"
                    )
                anchors = tuple(zip(widths, heights, strict=True))
            decoders.append(BboxDecoder(stride, names[0], names[1], anchors, *names[2:]))
    output_pads = op.messages(3, "output_pads")
    return NmsOpConfig(
        name=op.string(1, "name"),
        kind=wire.kind,
        output_name=output_pads[0].string(2, "name") if output_pads else op.string(1, "name"),
        score_threshold=nms.double(1, "nms_score_th"),
        iou_threshold=nms.double(2, "nms_iou_th"),
        classes=nms.uint(4, "classes"),
        max_proposals_per_class=nms.uint(3, "max_proposals_per_class"),
        background_removal=nms.boolean(5, "background_removal"),
        background_removal_index=nms.uint(6, "background_removal_index"),
        bbox_decoding_only=nms.boolean(13, "bbox_decoding_only"),
        image_height=detail.double(1, "image_height"),
        image_width=detail.double(2, "image_width"),
        regression_length=detail.uint(wire.regression_length, "regression_length") if wire.regression_length else 0,
        bbox_decoders=tuple(decoders),
        ssd=_ssd_config(nms, detail, decoders, cells) if wire.ssd_coding else None,
    )


def _ssd_config(nms: Message, detail: Message, decoders: list[BboxDecoder], cells: Mapping[str, int]) -> SsdConfig:
    """An SSD op's box coding as HailoRT builds it from the HEF (hailort: hailort/libhailort/src/hef/hef.cpp,
    ``create_ssd_op_metadata``: ty, tx, th, tw all 0 mean the op's defaults; each decoder's anchors paired
    (w, h); the background class from the NMS config's ``background_removal``), its layers largest grid first."""
    indices = tuple(detail.uint(field, label) for field, label in ((5, "ty"), (6, "tx"), (7, "th"), (8, "tw")))
    ty, tx, th, tw = indices if any(indices) else SSD_BOX_INDICES
    layers = sorted(decoders, key=lambda d: -cells[d.box_stream])
    try:
        return SsdConfig(
            anchors=tuple(d.anchors for d in layers),
            centers_scale_factor=detail.uint(3, "centers_scale_factor"),
            bbox_dimensions_scale_factor=detail.uint(4, "bbox_dimensions_scale_factor"),
            ty_index=ty,
            tx_index=tx,
            th_index=th,
            tw_index=tw,
            background_class=nms.uint(6, "background_removal_index") if nms.boolean(5, "background_removal") else None,
        )
    except SsdConfigError as error:
        raise HefError(f"malformed proto field {detail.path}: {error}") from None
