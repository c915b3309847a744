"""What a HEF says, as a dict (for ``--json``) and as text in the spirit of ``hailortcli parse-hef``.

Besides the raw description it states the facts a test harness needs: how each output arrives on the
host, which outputs carry boxes or class scores (from the NMS op), whether class scores are already
post-sigmoid, the highest score each class output can represent and its quantization step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.core.errors import HefError
from harness.core.head_family import HeadRole
from harness.core.specs import FormatOrder, NmsShape, OutputSpec
from harness.families import by_nms_op
from harness.inputs.hef.nms_op import NmsOpConfig
from harness.inputs.hef.reader import HefInfo, NetworkGroupInfo, StreamInfo, VStreamInfo

# How a device order reaches a host buffer through a vstream
# (hailort: hailort/libhailort/src/transform/transform.cpp; default orders: src/hailort_defaults.cpp)
_ARRIVAL = {
    FormatOrder.NHWC: "copied without padding into a dense (H, W, C) channel-last array",
    FormatOrder.NHCW: "transposed from rows of (C, W) into a dense (H, W, C) channel-last array",
    FormatOrder.FCR: "copied without padding into a dense (H, W, C) channel-last array (labelled FCR, memory NHWC)",
    FormatOrder.F8CR: "de-interleaved from 8-channel blocks into a dense (H, W, C) channel-last array",
    FormatOrder.NHW: "copied into an (H, W, 1) array (argmax indices)",
    FormatOrder.NC: "copied without padding into a (C,) vector",
    FormatOrder.NMS_ON_CHIP: "parsed into a FLOAT32 NMS_BY_CLASS buffer (per class: count, then boxes)",
}

# HailoRT line per device (hailort branches: hailo8 = 4.x for Hailo-8/8L, master = 5.x for Hailo-10/15)
_FAMILY_BY_DEVICE = {
    "HAILO8_A0": "Hailo-8 (HailoRT 4.x)",
    "HAILO8": "Hailo-8 (HailoRT 4.x)",
    "HAILO8L": "Hailo-8 (HailoRT 4.x)",
    "HAILO15H": "Hailo-10/15 (HailoRT 5.x)",
    "HAILO10H": "Hailo-10/15 (HailoRT 5.x)",
    "HAILO15M": "Hailo-10/15 (HailoRT 5.x)",
    "HAILO15L": "Hailo-10/15 (HailoRT 5.x)",
    "HAILO12L": "Hailo-10/15 (HailoRT 5.x)",
}


def sigmoid(x: float) -> float:
    """Overflow-free logistic function."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def nms_frame_bytes(shape: NmsShape) -> int:
    """FLOAT32 NMS_BY_CLASS buffer size: per class one count and max_bboxes records of 5 floats."""
    return shape.number_of_classes * (1 + 5 * shape.max_bboxes_per_class) * 4


def device_families(info: HefInfo) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_FAMILY_BY_DEVICE[d] for d in info.devices if d in _FAMILY_BY_DEVICE))


@dataclass(frozen=True)
class OutputFacts:
    """Derived facts about one raw output; ``role`` comes from the NMS op's bbox decoders (None: not stated)."""

    name: str
    role: str | None
    arrives_as: str
    quant_steps: tuple[float, ...]
    limvals: tuple[float, float]
    within_unit_interval: bool
    post_sigmoid: bool | None
    max_score: float | None


def _roles(nms: NmsOpConfig | None) -> dict[str, str]:
    if nms is None:
        return {}
    roles = {d.box_stream: HeadRole.BOX.value for d in nms.bbox_decoders}
    roles.update({d.class_stream: HeadRole.CLASS.value for d in nms.bbox_decoders if d.class_stream != d.box_stream})
    return roles


def output_facts(group: NetworkGroupInfo) -> tuple[OutputFacts, ...]:
    roles = _roles(group.nms)
    facts = []
    for stream in group.outputs:
        quant = stream.host_quant
        lo, hi = quant[0].limvals_min, quant[0].limvals_max
        inside = 0.0 <= lo and hi <= 1.0
        role = roles.get(stream.name)
        if group.nms is not None:
            arrives = f"consumed on the host by the {group.nms.kind} NMS op {group.nms.name!r}; not delivered"
        else:
            arrives = f"{stream.data_type.name} {_ARRIVAL[stream.device_order]}, shape {stream.host_shape}"
        facts.append(
            OutputFacts(
                name=stream.name,
                role=role,
                arrives_as=arrives,
                quant_steps=tuple(dict.fromkeys(q.scale for q in quant)),
                limvals=(lo, hi),
                within_unit_interval=inside,
                post_sigmoid=inside if role == HeadRole.CLASS else None,
                max_score=(hi if inside else sigmoid(hi)) if role == HeadRole.CLASS else None,
            )
        )
    return tuple(facts)


def _stream_dict(stream: StreamInfo) -> dict[str, Any]:
    quant = stream.host_quant
    out: dict[str, Any] = {
        "name": stream.name,
        "shape": list(stream.shape),
        "padded_shape": list(stream.padded_shape),
        "host_shape": list(stream.host_shape),
        "device_order": stream.device_order.name,
        "host_order": stream.host_order.name,
        "data_type": stream.data_type.name,
        "per_feature_quant": stream.is_per_feature,
        "zero_point": [q.zero_point for q in quant] if stream.is_per_feature else quant[0].zero_point,
        "scale": [q.scale for q in quant] if stream.is_per_feature else quant[0].scale,
        "limvals": [quant[0].limvals_min, quant[0].limvals_max],
    }
    if stream.pad_index is not None:
        out["pad_index"] = stream.pad_index
    return out


def _nms_dict(nms: NmsOpConfig, group: NetworkGroupInfo) -> dict[str, Any]:
    return {
        "name": nms.name,
        "kind": nms.kind,
        "output_name": nms.output_name,
        "score_threshold": nms.score_threshold,
        "iou_threshold": nms.iou_threshold,
        "classes": nms.classes,
        "max_proposals_per_class": nms.max_proposals_per_class,
        "background_removal": nms.background_removal,
        "background_removal_index": nms.background_removal_index,
        "bbox_decoding_only": nms.bbox_decoding_only,
        "image_height": nms.image_height,
        "image_width": nms.image_width,
        "regression_length": nms.regression_length,
        "bbox_decoders": [
            {"stride": d.stride, "box_stream": d.box_stream, "class_stream": d.class_stream} for d in nms.bbox_decoders
        ],
        "output_frame_bytes": _op_frame_bytes(nms, group),
    }


def _op_frame_bytes(nms: NmsOpConfig, group: NetworkGroupInfo) -> int | None:
    """Bytes of one frame of the op's output: the NMS_BY_CLASS buffer, or a bbox-only op's float32
    ``proposals x fields`` (None where the reader does not describe that output)."""
    if not nms.bbox_decoding_only:
        return nms_frame_bytes(nms.nms_shape)
    specs = _host_specs(group)
    return None if specs is None else 4 * specs[0].shape[1] * specs[0].shape[2]


def _group_dict(group: NetworkGroupInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": group.name,
        "inputs": [_stream_dict(s) for s in group.inputs],
        "outputs": [_stream_dict(s) for s in group.outputs],
        "nms": _nms_dict(group.nms, group) if group.nms is not None else None,
        "logits_op": group.logits_op,
        "output_facts": [
            {
                "name": f.name,
                "role": f.role,
                "arrives_as": f.arrives_as,
                "quant_steps": list(f.quant_steps),
                "limvals": list(f.limvals),
                "within_unit_interval": f.within_unit_interval,
                "post_sigmoid": f.post_sigmoid,
                "max_score": f.max_score,
            }
            for f in output_facts(group)
        ],
    }
    specs = _host_specs(group)
    if specs is not None:
        out["host_outputs"] = [
            {
                "name": spec.name,
                "shape": list(spec.shape),
                "format_order": spec.format_order.name,
                "format_type": spec.format_type.name,
            }
            for spec in specs
        ]
    return out


def _host_specs(group: NetworkGroupInfo) -> tuple[OutputSpec, ...] | None:
    """The FLOAT32 host outputs, or None where the HEF's post-process output is not described here (a
    logits op; a bbox-only op HailoRT would not build)."""
    if group.logits_op is not None:
        return None
    if group.nms is not None and group.nms.bbox_decoding_only:
        try:
            return group.output_specs()
        except HefError:
            return None
    return group.output_specs()


def summary(info: HefInfo) -> dict[str, Any]:
    """Everything :func:`render_text` prints, as plain JSON-able data."""
    return {
        "path": info.path,
        "header_version": info.header_version,
        "hw_arch": info.hw_arch.name,
        "devices": list(info.devices),
        "device_families": list(device_families(info)),
        "sdk_version": info.sdk_version,
        "checksum": {"kind": info.checksum_kind.value, "verified": info.checksum_verified},
        "size": {"declared": info.declared_size, "actual": info.file_size, "truncated": info.truncated},
        "network_groups": [_group_dict(g) for g in info.network_groups],
    }


def _g(value: float) -> str:
    return f"{value:.6g}"


def _dims(order: FormatOrder, shape: tuple[int, ...]) -> str:
    """A shape as hailortcli parse-hef prints it: features for NC, HxW for NHW, else HxWxC
    (hailort: hailort/libhailort/src/hef/hef.cpp, get_shape_str)."""
    h, w, c = shape
    if order is FormatOrder.NC:
        return f"{c}"
    if order is FormatOrder.NHW:
        return f"{h}x{w}"
    return f"{h}x{w}x{c}"


def _stream_lines(direction: str, stream: StreamInfo) -> list[str]:
    """parse-hef's stream info line (the device's type and order, the padded shape HailoRT transfers),
    then the quantization under it."""
    quant = stream.host_quant
    if stream.is_per_feature:
        scales = [q.scale for q in quant]
        q = f"zp {_g(quant[0].zero_point)}.., scale {_g(min(scales))}..{_g(max(scales))} ({len(quant)} features)"
    else:
        q = f"zp {_g(quant[0].zero_point)}, scale {_g(quant[0].scale)}"
    padded = "" if stream.padded_shape == stream.shape else "; shape {}x{}x{} before padding".format(*stream.shape)
    limvals = f"limvals [{_g(quant[0].limvals_min)}, {_g(quant[0].limvals_max)}]"
    dims = _dims(stream.device_order, stream.padded_shape)
    return [
        f"{direction} {stream.name} {stream.data_type.name}, {stream.device_order.name}({dims})",
        f"    quantization: {q}; {limvals}{padded}",
    ]


def _vstream_line(direction: str, vstream: VStreamInfo) -> str:
    """parse-hef's vstream info line: the device's type in the default host order, as HailoRT lists it
    before the user picks a host format (hailort: hailort/libhailort/src/hef/hef.cpp, get_shape_str)."""
    if vstream.nms is not None:
        shape = vstream.nms
        dims = (
            f"HAILO NMS BY CLASS(number of classes: {shape.number_of_classes}, maximum bounding boxes per class: "
            f"{shape.max_bboxes_per_class}, maximum frame size: {nms_frame_bytes(shape)})"
        )
    else:
        dims = f"{vstream.order.name}({_dims(vstream.order, (vstream.height, vstream.width, vstream.features))})"
    return f"{direction} {vstream.name} {vstream.type.name}, {dims}"


def _group_lines(group: NetworkGroupInfo) -> list[str]:
    specs = _host_specs(group)
    lines = [f"Network group name: {group.name}", "    Stream infos:"]
    for direction, streams in (("Input ", group.inputs), ("Output", group.outputs)):
        lines += [f"        {line}" for stream in streams for line in _stream_lines(direction, stream)]
    lines.append("    VStream infos:")
    lines += [f"        {_vstream_line('Input ', v)}" for v in group.input_vstreams]
    if specs is None:
        lines.append("        Output of a post-process op this reader does not describe")
    else:
        lines += [f"        {_vstream_line('Output', v)}" for v in group.output_vstreams]
    if group.nms is not None:
        nms = group.nms
        lines += [
            "        Operation:",
            f"            Op {nms.kind.upper()}",
            f"            Name: {nms.name}",
            f"            Score threshold: {nms.score_threshold:.3f}",
            f"            IoU threshold: {nms.iou_threshold:.2f}",
            f"            Classes: {nms.classes}",
            f"            Max bboxes per class: {nms.max_proposals_per_class}",
            f"            Background removal: {str(nms.background_removal).lower()}",
            f"            Image height: {nms.image_height:g}",
            f"            Image width: {nms.image_width:g}",
        ]
        family = by_nms_op(nms.kind)
        if family is not None and family.dfl_boxes:
            lines.append(f"            Regression length: {nms.regression_length}")
        if nms.bbox_decoding_only:
            lines.append("            Bbox decoding only: HailoRT decodes the boxes, the host runs the NMS")
        for d in nms.bbox_decoders:
            lines.append(f"            Decoder stride {d.stride}: boxes {d.box_stream}, classes {d.class_stream}")
    if specs is not None:
        lines.append(
            "    Host outputs, as the harness reads them "
            "(FLOAT32: de-quantized by HailoRT; --hailo-format uint8 keeps the device's type):"
        )
        for spec in specs:
            shape = "x".join(str(d) for d in spec.shape)
            lines.append(f"        {spec.name} {spec.format_type.name}, {spec.format_order.name}({shape})")
    lines.append("    Derived:")
    for f in output_facts(group):
        role = f" [{f.role}]" if f.role else ""
        steps = (
            "/".join(_g(s) for s in f.quant_steps)
            if len(f.quant_steps) < 3
            else (f"{_g(min(f.quant_steps))}..{_g(max(f.quant_steps))}")
        )
        lines.append(f"        {f.name}{role}: {f.arrives_as}; quantization step {steps}")
        if f.max_score is not None:
            state = "post-sigmoid (limvals inside [0, 1])" if f.post_sigmoid else "logits (limvals outside [0, 1])"
            lines.append(f"            class scores are {state}; highest representable score {_g(f.max_score)}")
    return lines


def render_text(info: HefInfo) -> str:
    if info.truncated:
        integrity = f"NOT verified: truncated, header declares {info.declared_size} bytes, file has {info.file_size}"
    elif info.checksum_verified:
        integrity = "verified"
    else:
        integrity = "NOT verified"
    lines = [
        f"HEF: {info.path}",
        f"Header version: {info.header_version}, checksum {info.checksum_kind.value} {integrity}",
        # parse-hef's own lines, HailoRT 4.x's then 5.x's (hailort: libhailort/src/hef/hef.cpp, get_description)
        f"Architecture HEF was compiled for: {info.device_arch}",
        f"HEF Compatible for: {', '.join(info.devices) or 'UNKNOWN ARCHITECTURE'}",
        f"HEF Compiler Version: {info.sdk_version}",
        f"hw_arch in the HEF: {info.hw_arch.name}, run by {', '.join(device_families(info)) or 'no HailoRT line'}",
    ]
    for group in info.network_groups:
        lines += _group_lines(group)
    return "\n".join(lines)
