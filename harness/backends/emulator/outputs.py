"""The emulated HEF's streams as HailoRT reports them, read from the quantized model.

- Input: uint8 NHWC ``(H, W, 3)``, raw RGB 0-255 (the normalization is inside).
- Raw heads: uint8 on the device; the host gets them channel-last ``(H, W, C)`` whatever the order
  label (hailort: hailort/libhailort/include/hailo/hailort.h, ``HAILO_FORMAT_ORDER_FCR``: host side
  ``[N, H, W, C]``; src/hailort_defaults.cpp, ``DEFAULT_FORMAT_ORDER_MAP`` keeps FCR as the host order).
  The order labels follow a Dataflow Compiler 3.33 build of YOLO11n (the field report's
  ``parse-hef``): FCR for the box heads, NHWC for the class heads except FCR on the smallest grid.
- Quant info per head: scale and zero point of its ``QuantizeLinear``; limvals the representable
  range ``[(0 - zp) * scale, (255 - zp) * scale]``, as in compiled HEFs (fixture
  hailo8l_yolov8s_nms_truncated.hef: zp 164, scale 0.13575 -> limvals [-22.26, 12.35]).
- Anchored maps (YOLOv5/YOLOv7): order labels as the class heads' (no parse-hef of a YOLOv5 HEF was at
  hand to say otherwise; the host layout is ``(H, W, C)`` either way), each map with its anchors as the
  emulator recorded them; an SSD layer's regression and class maps alike, the regression map with its
  layer's anchors (fractions of the input).
- With NMS: one HAILO_NMS_BY_CLASS float32 output, host shape ``(classes, 5, max_bboxes_per_class)``.
- With the bbox-only op: one FLOAT32 NHWC output ``(1, proposals, 4|5 + classes)`` under the NMS op's
  output name (:mod:`harness.formats.bbox_only`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from harness.backends.base import InputSpec
from harness.core.documents import Fields, parse_json
from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo
from harness.decode.layout import HeadLayout, HeadOutput, layout_of
from harness.families import descriptor, part
from harness.formats.bbox_only import bbox_only_spec
from harness.formats.nms_buffer import BBOX_PARAMS

if TYPE_CHECKING:  # onnx is imported by what reads a model (half a second), not by the specs it describes
    import onnx

# The name a HEF gives its NMS op's output (network name prefix left out), as HailoRT reports it: the family's
# ``FamilyDescriptor.nms_output``. YOLOv8's in a compiled HEF (fixture hailo8l_yolov8s_nms_truncated.hef,
# "yolov8s/yolov8_nms_postprocess"), YOLOv5's in the Model Zoo's HEFs as Hailo's own post-processes read it
# (tappas: core/hailo/libs/postprocesses/detection/yolo_hailortpp.cpp, "yolov5_nms_postprocess"; YOLOX's alike,
# its ``yolox`` reads "yolox_nms_postprocess").
# SSD's: no compiled SSD HEF nor Hailo post-process naming it was at hand; named as the others are (HailoRT
# reports the HEF's own name for its NMS layer: libhailort/src/hef/hef.cpp, ``create_ssd_op_metadata`` takes the
# op as the HEF describes it), an emulation's label.


class FamilyEmulator(Protocol):
    """A head family's part of the emulator (``harness/families/<family>/emulator.py``)."""

    def head_roles(self) -> tuple[HeadRole, ...]:
        """The roles of one stride's maps, as the emulator records them for the family's heads."""
        ...


def family_part(family: HeadFamily) -> FamilyEmulator:
    """``family``'s part of the emulator."""
    return cast(FamilyEmulator, part(family, "emulator"))


def _dims(value: onnx.ValueInfoProto) -> tuple[int, ...]:
    return tuple(d.dim_value for d in value.type.tensor_type.shape.dim)


def input_spec(model: onnx.ModelProto) -> InputSpec:
    """The one uint8 NHWC input ``(H, W, 3)``."""
    (value,) = model.graph.input
    _, h, w, c = _dims(value)
    return InputSpec(value.name, (h, w, c), FormatOrder.NHWC, FormatType.UINT8)


_DEVICE_TYPES = {np.dtype(np.uint8): FormatType.UINT8, np.dtype(np.uint16): FormatType.UINT16}


def _quant_info(model: onnx.ModelProto, tensor: str) -> tuple[QuantInfo, FormatType]:
    """Quant info and device type of the head ``tensor``, from the ``QuantizeLinear`` writing it (per
    tensor; 16-bit outputs are written by onnxruntime's com.microsoft QuantizeLinear)."""
    from onnx import numpy_helper

    node = next((n for n in model.graph.node if tensor in n.output), None)
    if node is None or node.op_type != "QuantizeLinear" or len(node.input) < 3:
        raise GraphError(
            f"emulated HEF model: head output {tensor!r} is not written by a QuantizeLinear with a zero point"
        )
    initializers = {i.name: i for i in model.graph.initializer}
    scale, zero_point = (numpy_helper.to_array(initializers[name]) for name in node.input[1:3])
    if scale.size != 1 or zero_point.dtype not in _DEVICE_TYPES:
        raise GraphError(
            f"emulated HEF model: head output {tensor!r}: quantizer scale of shape {scale.shape}, zero point "
            f"{zero_point.dtype}, expected one per-tensor scale and a uint8 or uint16 zero point"
        )
    s, zp, top = np.float32(scale.item()), np.float32(zero_point.item()), np.iinfo(zero_point.dtype).max
    return QuantInfo(float(zp), float(s), float((0 - zp) * s), float((top - zp) * s)), _DEVICE_TYPES[zero_point.dtype]


def head_roles(model: onnx.ModelProto) -> dict[str, HeadRole]:
    """``{head tensor: "box" | "class" | "objectness" | "anchored"}`` in head order (stride ascending, box
    first), as the emulator recorded it: box and class maps (and YOLOX's objectness maps) for an anchor-free
    family, anchored maps for an anchor-based one."""
    from harness.backends.emulator.quantize import HEAD_ROLES_KEY

    meta = {p.key: p.value for p in model.metadata_props}
    if HEAD_ROLES_KEY not in meta:
        raise GraphError(f"emulated HEF model: metadata {HEAD_ROLES_KEY!r} missing: not a model the emulator built")
    source = f"emulated HEF model: metadata {HEAD_ROLES_KEY!r}"
    roles = Fields(parse_json(meta[HEAD_ROLES_KEY], source), source)
    family = head_family(model)
    known = family_part(family).head_roles()
    found: dict[str, HeadRole] = {}
    for tensor, role in roles.items():
        if role not in known:
            roles.fail(tensor, role, " or ".join(f'"{r.value}"' for r in known) + f" ({family.value} heads)")
        found[tensor] = HeadRole(role)
    return found


def is_anchors(value: object) -> bool:
    """A non-empty list of ``[width, height]`` (one stride's anchors), each a positive finite number."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < float("inf") for v in pair)
            for pair in value
        )
    )


def head_anchors(model: onnx.ModelProto) -> dict[str, tuple[tuple[float, float], ...]]:
    """Per anchored map its anchors' ``(width, height)`` in input pixels (per SSD regression map its layer's, as
    fractions of the input), as the emulator recorded them: one entry for each such map and for no other head
    (none for an anchor-free family)."""
    from harness.backends.emulator.quantize import HEAD_ANCHORS_KEY

    meta = {p.key: p.value for p in model.metadata_props}
    anchored = [t for t, role in head_roles(model).items() if role in (HeadRole.ANCHORED, HeadRole.ANCHOR_BOXES)]
    if HEAD_ANCHORS_KEY not in meta:
        if anchored:
            raise GraphError(
                f"emulated HEF model: metadata {HEAD_ANCHORS_KEY!r} missing, expected the anchors of its anchored "
                f"maps {anchored}: not a model this emulator built"
            )
        return {}
    source = f"emulated HEF model: metadata {HEAD_ANCHORS_KEY!r}"
    fields = Fields(parse_json(meta[HEAD_ANCHORS_KEY], source), source)
    found = {}
    for tensor in anchored:
        pairs = fields.value(tensor, is_anchors, "a non-empty list of [width, height] (positive)")
        found[tensor] = tuple((float(w), float(h)) for w, h in pairs)
    fields.done()
    return found


def head_ssd_config(model: onnx.ModelProto) -> str | None:
    """The digest of the SSD config an SSD head's maps were found with, as the emulator recorded it (None for
    a family without a config option); an SSD model without it is refused."""
    from harness.backends.emulator.quantize import HEAD_SSD_KEY

    digest = {p.key: p.value for p in model.metadata_props}.get(HEAD_SSD_KEY)
    if descriptor(head_family(model)).config_option and digest is None:
        raise GraphError(f"emulated HEF model: metadata {HEAD_SSD_KEY!r} missing: not a model this emulator built")
    return digest


def head_family(model: onnx.ModelProto) -> HeadFamily:
    """The head family the emulator recorded for the model's heads."""
    from harness.backends.emulator.quantize import HEAD_FAMILY_KEY

    meta = {p.key: p.value for p in model.metadata_props}
    try:
        return HeadFamily(meta[HEAD_FAMILY_KEY])
    except (KeyError, ValueError):
        raise GraphError(
            f"emulated HEF model: metadata {HEAD_FAMILY_KEY!r} is {meta.get(HEAD_FAMILY_KEY)!r}, expected one of "
            f"{[f.value for f in HeadFamily]}: not a model this emulator built"
        ) from None


def head_layout(model: onnx.ModelProto) -> HeadLayout:
    """The raw heads as device values (UINT8, or UINT16) with their quant infos, laid out by the roles
    (and an anchored map's anchors) the emulator recorded."""
    shapes = {o.name: _dims(o) for o in model.graph.output}
    smallest = min(h * w for _, _, h, w in shapes.values())
    heads = []
    for tensor, role in head_roles(model).items():
        _, c, h, w = shapes[tensor]
        order = FormatOrder.FCR if role is HeadRole.BOX or h * w == smallest else FormatOrder.NHWC
        quant, device_type = _quant_info(model, tensor)
        spec = OutputSpec(tensor, (h, w, c), order, device_type, (quant,))
        heads.append(HeadOutput.of_spec(spec, role))
    return layout_of(heads, input_spec(model).hw, head_anchors(model))


def host_spec(head: OutputSpec, format_type: FormatType) -> OutputSpec:
    """A raw head as the host reads it: as on the device (UINT8 or UINT16), or FLOAT32 dequantized by HailoRT
    (the vstream info keeps the quant info either way)."""
    return OutputSpec(head.name, head.shape, head.format_order, format_type, head.quant)


def nms_spec(classes: int, max_proposals_per_class: int, family: HeadFamily = HeadFamily.YOLOV8) -> OutputSpec:
    """The NMS_BY_CLASS output of ``family``'s NMS op (a family with one: ``FamilyDescriptor.nms_output``)."""
    return OutputSpec(
        descriptor(family).nms_output,
        (classes, BBOX_PARAMS, max_proposals_per_class),
        FormatOrder.NMS_BY_CLASS,
        FormatType.FLOAT32,
        nms=NmsShape(classes, max_proposals_per_class),
    )


def bbox_only_output_spec(layout: HeadLayout, classes: int, family: HeadFamily) -> OutputSpec:
    """The one output of ``family``'s bbox-only op over the heads of ``layout``: every cell of every
    stride, times its anchors in an anchored head. Its name is the NMS op's (``FamilyDescriptor.nms_output``): HailoRT
    names either op's output by the op's output pad (hailort: libhailort/src/hef/hef.cpp,
    create_yolov8_bbox_only_op_metadata and create_yolov8_op_metadata, ``op_proto.output_pads()[0].name()``)."""
    proposals = sum(level.cells * max(1, len(level.anchors)) for level in layout.levels)
    return bbox_only_spec(descriptor(family).nms_output, proposals, classes, family)
