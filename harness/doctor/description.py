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
from harness.families.yolov8.onnx import find_heads
from harness.inputs.hef.header import HefHeader
from harness.inputs.hef.nms_op import BboxDecoder, NmsOpConfig
from harness.inputs.hef.reader import HefInfo, HwArch, NetworkGroupInfo, StreamInfo
from harness.inputs.onnx_graph import load_model, model_input

_NOMINAL_BOX = QuantInfo(128.0, 0.1, -12.8, 12.7)
_NOMINAL_CLASS = QuantInfo(0.0, 1 / 255, 0.0, 1.0)
_INPUT_QUANT = QuantInfo(0.0, 1.0, 0.0, 255.0)


def hef_description(onnx: Path, settings: EvalSettings, hef: EmulatedHef | None) -> HefInfo:
    """What a raw-heads HEF with the YOLOv8 NMS op compiled from ``onnx`` declares, as the HEF
    reader gives it: the emulated HEF's heads and quant infos, or, without one, the ONNX's heads
    with nominal quant infos (class outputs post-sigmoid in [0, 1]). NMS settings are the
    evaluation's. Stream, op and field names follow a real NMS HEF's metadata
    (hailort: hailort/libhailort/hef.proto, ProtoHEFNmsOp / ProtoHEFYoloBboxDecoder)."""
    model = load_model(onnx)
    _, (in_h, in_w) = model_input(model)
    heads = find_heads(model)
    quant = hef.quant if hef is not None else {}
    net = Path(onnx).stem
    smallest = min(h.grid[0] * h.grid[1] for h in heads)
    streams = []
    for h in heads:
        q = quant.get(h.tensor, _NOMINAL_BOX if h.role is HeadRole.BOX else _NOMINAL_CLASS)
        order = head_format_order(h.role, h.grid, smallest)
        shape = (*h.grid, h.channels)
        streams.append(
            StreamInfo(f"{net}/{h.tensor.lstrip('/')}", shape, shape, order, order, FormatType.UINT8, q, (q,))
        )
    boxes = [h for h in heads if h.role is HeadRole.BOX]
    decoders = tuple(
        BboxDecoder(in_h // b.grid[0], f"{net}/{b.tensor.lstrip('/')}", f"{net}/{c.tensor.lstrip('/')}")
        for b in boxes
        for c in heads
        if c.role is HeadRole.CLASS and c.grid == b.grid
    )
    nms = NmsOpConfig(
        name=f"{net}/yolov8_nms_postprocess",
        kind="yolov8",
        output_name=f"{net}/yolov8_nms_postprocess",
        score_threshold=settings.score_threshold,
        iou_threshold=settings.iou_threshold,
        classes=next(h.channels for h in heads if h.role is HeadRole.CLASS),
        max_proposals_per_class=settings.max_per_class,
        background_removal=False,
        background_removal_index=0,
        bbox_decoding_only=False,
        image_height=float(in_h),
        image_width=float(in_w),
        regression_length=boxes[0].channels // 4,
        bbox_decoders=decoders,
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
