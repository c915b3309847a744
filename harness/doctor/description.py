"""What a HEF compiled from a model declares, as the HEF reader gives it: the description the
doctor's static-check modes change one field of."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.backends.emulator import EmulatedHef
from harness.backends.onnx.runner import head_format_order
from harness.core.head_family import HeadRole
from harness.core.settings import EvalSettings
from harness.core.specs import FormatOrder, FormatType, QuantInfo
from harness.decode.layout import HeadOutput, Level, layout_of_tensors
from harness.families import descriptor
from harness.inputs.export_facts import ExportFacts
from harness.inputs.hef.header import HefHeader
from harness.inputs.hef.nms_op import BboxDecoder, NmsOpConfig
from harness.inputs.hef.reader import HefInfo, HwArch, NetworkGroupInfo, StreamInfo

_NOMINAL_BOX = QuantInfo(128.0, 0.1, -12.8, 12.7)
_NOMINAL_CLASS = QuantInfo(0.0, 1 / 255, 0.0, 1.0)
_INPUT_QUANT = QuantInfo(0.0, 1.0, 0.0, 255.0)


def _decoder(net: str, level: Level) -> BboxDecoder:
    """A level's decoder as HailoRT's NMS op holds it: its stride, the streams of its boxes and class scores
    (one anchored stream for both, its anchors in whole pixels: hailort: hailort/libhailort/hef.proto,
    ``ProtoHEFYoloBboxDecoder`` ``h``/``w`` uint32) and its objectness stream where it has one of its own
    (``ProtoHEFYoloxBboxDecoder`` ``obj_pad_index``)."""

    def stream(output: HeadOutput) -> str:
        return f"{net}/{output.name.lstrip('/')}"

    anchors = tuple((float(round(w)), float(round(h))) for w, h in level.anchors) if level.anchored else ()
    objectness = stream(level.objectness) if level.objectness is not None and not level.anchored else ""
    return BboxDecoder(level.stride, stream(level.box), stream(level.classes), anchors, objectness)


def hef_description(onnx: Path, facts: ExportFacts, settings: EvalSettings, hef: EmulatedHef | None) -> HefInfo:
    """What a raw-heads HEF with its head family's NMS op compiled from ``onnx`` (its ``facts``) declares,
    as the HEF reader gives it: the emulated HEF's heads and quant infos, or, without one, the export's
    heads with nominal quant infos (score outputs post-sigmoid in [0, 1]). NMS settings are the
    evaluation's; a YOLOv5 op's anchors the export's. Stream, op and field names follow a real NMS HEF's
    metadata (hailort: hailort/libhailort/hef.proto, ProtoHEFNmsOp / ProtoHEFYoloBboxDecoder). Not for an SSD
    op, whose anchors and box coding are its config's."""
    family, heads = facts.require_heads()
    layout = layout_of_tensors(heads, facts.input_hw)
    in_h, in_w = facts.input_hw
    quant = hef.quant if hef is not None else {}
    net = Path(onnx).stem
    smallest = min(h.grid[0] * h.grid[1] for h in heads)
    streams = []
    for h in heads:
        nominal = _NOMINAL_BOX if h.role is HeadRole.BOX else _NOMINAL_CLASS
        q = quant.get(h.tensor, nominal)
        order = head_format_order(h.role, h.grid, smallest)
        shape = (*h.grid, h.channels)
        streams.append(
            StreamInfo(f"{net}/{h.tensor.lstrip('/')}", shape, shape, order, order, FormatType.UINT8, q, (q,))
        )
    op = descriptor(family).nms_op
    nms = NmsOpConfig(
        name=f"{net}/{op}_nms_postprocess",
        kind=op,
        output_name=f"{net}/{op}_nms_postprocess",
        score_threshold=settings.score_threshold,
        iou_threshold=settings.iou_threshold,
        classes=layout.classes,
        max_proposals_per_class=settings.max_per_class,
        background_removal=False,
        background_removal_index=0,
        bbox_decoding_only=False,
        image_height=float(in_h),
        image_width=float(in_w),
        regression_length=layout.reg_max if descriptor(family).dfl_boxes else 0,
        bbox_decoders=tuple(_decoder(net, level) for level in layout.levels),
    )
    shape = (in_h, in_w, 3)
    image = StreamInfo(
        f"{net}/input_layer1",
        shape,
        shape,
        FormatOrder.NHWC,
        FormatOrder.NHWC,
        FormatType.UINT8,
        _INPUT_QUANT,
        (_INPUT_QUANT,),
    )
    group = NetworkGroupInfo(net, (image,), tuple(streams), nms)
    where = hef.label if hef is not None else f"description of a HEF of {Path(onnx).name} (nominal quant infos)"
    return HefInfo(where, HefHeader(2, 0, 0), HwArch.HAILO8, ("HAILO8",), "emulated", False, False, 0, (group,))


def with_nms(info: HefInfo, **changes: Any) -> HefInfo:
    group = info.network_groups[0]
    assert group.nms is not None
    return replace(info, network_groups=(replace(group, nms=replace(group.nms, **changes)),))


def with_decoders(info: HefInfo, anchors: tuple[tuple[tuple[float, float], ...], ...]) -> HefInfo:
    """``info`` with its NMS op's decoders given ``anchors`` (per decoder, in the op's order)."""
    group = info.network_groups[0]
    assert group.nms is not None
    decoders = tuple(replace(d, anchors=a) for d, a in zip(group.nms.bbox_decoders, anchors, strict=True))
    return with_nms(info, bbox_decoders=decoders)
