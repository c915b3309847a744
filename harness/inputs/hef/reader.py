"""Read a HEF's description (architecture, streams, quantization, NMS post-process) without HailoRT.

The proto schema is ``hailort/libhailort/hef.proto``; how HailoRT turns it into stream and vstream
infos is in ``hailort/libhailort/src/hef/hef.cpp`` (``HefUtils::fill_layer_info``,
``create_ops_metadata``) and ``src/hef/layer_info.hpp``. Only the fields read here are decoded.
"""

from __future__ import annotations

import enum
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import HefError
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo
from harness.families import REGISTERED, by_nms_op
from harness.inputs.hef.header import ChecksumKind, HefHeader, check_size, parse_header, verify_checksum
from harness.inputs.hef.nms_op import NmsOpConfig, nms_op
from harness.inputs.hef.wire import Message


class HwArch(enum.IntEnum):
    """``ProtoHEFHwArch`` (hailort: hailort/libhailort/hef.proto; 108 from src/device_common/device_internal.hpp)."""

    HAILO8 = 0
    HAILO8P = 1
    HAILO8R = 2
    HAILO8L = 3
    HAILO15M = 4
    HAILO10H = 5  # deprecated in HailoRT, which no longer maps it to a device
    HAILO15L = 6
    SAGE_A0 = 100
    SAGE_B0 = 101
    PAPRIKA_B0 = 102
    HAILO15H = 103  # HailoRT's HW_ARCH__HAILO1XH: the Hailo-15H / Hailo-10H family
    GINGER = 104
    LAVENDER = 105
    PLUTO = 106
    MARS = 108


# hailort: hailort/libhailort/src/device_common/device_internal.cpp, DeviceBase::hef_arch_to_device_compatible_archs
DEVICES_BY_ARCH: dict[HwArch, tuple[str, ...]] = {
    HwArch.SAGE_A0: ("HAILO8_A0",),
    HwArch.HAILO8: ("HAILO8",),
    HwArch.HAILO8P: ("HAILO8",),
    HwArch.HAILO8R: ("HAILO8",),
    HwArch.SAGE_B0: ("HAILO8",),
    HwArch.PAPRIKA_B0: ("HAILO8",),
    HwArch.HAILO8L: ("HAILO8L", "HAILO8"),
    HwArch.HAILO15H: ("HAILO15H", "HAILO10H"),
    HwArch.GINGER: ("HAILO15H", "HAILO10H"),
    HwArch.LAVENDER: ("HAILO15H", "HAILO10H"),
    HwArch.PLUTO: ("HAILO15L",),
    HwArch.HAILO15L: ("HAILO15L",),
    HwArch.HAILO15M: ("HAILO15M", "HAILO15H", "HAILO10H"),
    HwArch.MARS: ("HAILO12L",),
    HwArch.HAILO10H: (),
}

# What HailoRT 4.x calls the HEF's architecture ("Architecture HEF was compiled for" in parse-hef)
# (hailort v4.23.0: hailort/libhailort/src/device_common/device_internal.cpp, DeviceBase::hef_arch_to_device_arch)
DEVICE_ARCH_4X: dict[HwArch, str] = {
    HwArch.SAGE_A0: "HAILO8_A0",
    **dict.fromkeys((HwArch.HAILO8, HwArch.HAILO8P, HwArch.HAILO8R, HwArch.SAGE_B0, HwArch.PAPRIKA_B0), "HAILO8"),
    HwArch.HAILO8L: "HAILO8L",
    **dict.fromkeys((HwArch.HAILO15H, HwArch.GINGER, HwArch.LAVENDER), "HAILO15H"),
    **dict.fromkeys((HwArch.PLUTO, HwArch.HAILO15L), "HAILO15L"),
    HwArch.HAILO15M: "HAILO15M",
    HwArch.HAILO10H: "HAILO10H",
    HwArch.MARS: "MARS",
}

# hailort: hailort/libhailort/src/hef/hef.cpp, is_multi_layout: these keep one core op per cluster layout
_MULTI_LAYOUT_ARCHS = (HwArch.HAILO8L, HwArch.HAILO15M)

# Compiler format code (ProtoHEFEdgeLayerBase.format) -> device order, for the orders the harness knows
# (hailort: hailort/libhailort/src/hailort_defaults.cpp, HailoRTDefaults::get_device_format_order)
DEVICE_ORDER_BY_COMPILER_FORMAT = {
    0: FormatOrder.NHWC,
    1: FormatOrder.NHCW,
    2: FormatOrder.NC,
    3: FormatOrder.FCR,
    5: FormatOrder.NHW,
    6: FormatOrder.NMS_ON_CHIP,
    7: FormatOrder.F8CR,
    13: FormatOrder.NHWC,
}
_COMPILER_FORMAT_NMS = 6  # HEF__FORMAT__NMS (hailort: src/hef/hef_internal.hpp)

# Default host order of a device order (hailort: hailort/libhailort/src/hailort_defaults.cpp, DEFAULT_FORMAT_ORDER_MAP)
DEFAULT_HOST_ORDER = {
    FormatOrder.NHWC: FormatOrder.NHWC,
    FormatOrder.NHCW: FormatOrder.NHWC,
    FormatOrder.FCR: FormatOrder.FCR,
    FormatOrder.F8CR: FormatOrder.F8CR,
    FormatOrder.NHW: FormatOrder.NHW,
    FormatOrder.NC: FormatOrder.NC,
    FormatOrder.NMS_ON_CHIP: FormatOrder.NMS_BY_CLASS,
}

# hailort: hailort/libhailort/include/hailo/hailort_common.hpp, HailoRTCommon::get_format_type
_TYPE_BY_DATA_BYTES = {1: FormatType.UINT8, 2: FormatType.UINT16}

MAX_HEF_BYTES = 1 << 30  # far above a detector's HEF (tens of MB); a larger file is refused unread
_EXTENSION_OUTPUT_SCALE_PER_FEATURE = 25  # ProtoHEFExtensionType (hailort: hailort/libhailort/hef.proto)
_BBOX_PARAMS = 5  # HailoRTCommon::BBOX_PARAMS: y_min, x_min, y_max, x_max, score
_ZERO_QUANT = QuantInfo(0.0, 0.0, 0.0, 0.0)  # INVALID_QUANT_INFO (hailort: include/hailo/hailort.h)
# "In order to pass is_qp_valid check in pyhailort" (hailort: src/net_flow/ops/nms_post_process.cpp)
_NMS_QUANT = QuantInfo(0.0, 1.0, 0.0, 0.0)


@dataclass(frozen=True)
class StreamInfo:
    """One boundary stream of the core op (a raw device input or output), as HailoRT describes it.

    ``shape`` and ``padded_shape`` are ``(height, width, features)`` (the HEF's real and padded dims);
    ``quant`` is the per-tensor quant info a vstream reports (all zero when quantized per feature),
    ``quant_infos`` HailoRT's list: one entry, or one per feature.
    """

    name: str
    shape: tuple[int, int, int]
    padded_shape: tuple[int, int, int]
    device_order: FormatOrder
    host_order: FormatOrder
    data_type: FormatType
    quant: QuantInfo
    quant_infos: tuple[QuantInfo, ...]
    pad_index: int | None = None
    nms: NmsShape | None = None

    @property
    def host_shape(self) -> tuple[int, ...]:
        """One frame as a vstream delivers it: ``(C,)`` for NC, ``(classes, 5, max_bboxes)`` for NMS, else (H, W, C)."""
        return _flat_shape(self.nms, self.device_order, self.shape[2]) or self.shape

    @property
    def is_per_feature(self) -> bool:
        return len(set(self.quant_infos)) > 1

    @property
    def host_quant(self) -> tuple[QuantInfo, ...]:
        """One quant info per tensor, or one per channel when the channels differ."""
        if self.is_per_feature:
            return self.quant_infos
        return self.quant_infos[:1] or (self.quant,)


def _flat_shape(nms: NmsShape | None, order: FormatOrder, features: int) -> tuple[int, ...]:
    """A frame's shape where it is no (H, W, C) map: ``(classes, 5, max_bboxes)`` for NMS, ``(C,)`` for NC;
    else empty."""
    if nms is not None:
        return (nms.number_of_classes, _BBOX_PARAMS, nms.max_bboxes_per_class)
    if order is FormatOrder.NC:
        return (features,)
    return ()


@dataclass(frozen=True)
class VStreamInfo:
    """``hailo_vstream_info_t`` as HailoRT gives it before the user picks a host format: the device's type
    in the default host order, the layer's shape (not padded), its per-tensor quant info; an NMS
    output always FLOAT32 with quant {0, 1, 0, 0}.

    hailort: hailort/libhailort/src/hef/layer_info.hpp, get_vstream_info_from_layer_info_impl;
    src/net_flow/ops/nms_post_process.cpp, NmsOpMetadata::get_output_vstream_info.
    """

    name: str
    order: FormatOrder
    type: FormatType
    height: int
    width: int
    features: int
    quant: QuantInfo
    nms: NmsShape | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape pyhailort's ``VStreamInfo.shape`` reports (hailort: bindings/python/src/pyhailort.cpp)."""
        flat = _flat_shape(self.nms, self.order, self.features)
        if flat:
            return flat
        if self.order is FormatOrder.NHW:
            return (self.height, self.width)
        return (self.height, self.width, self.features)


def _vstream(stream: StreamInfo) -> VStreamInfo:
    if stream.nms is not None:
        return VStreamInfo(stream.name, stream.host_order, FormatType.FLOAT32, 0, 0, 0, stream.quant, stream.nms)
    return VStreamInfo(stream.name, stream.host_order, stream.data_type, *stream.shape, stream.quant)


@dataclass(frozen=True)
class NetworkGroupInfo:
    """``outputs`` are the boundary output streams in the contexts' order, as HailoRT lists its stream
    infos; ``sorted_outputs_order`` the order of their vstreams (hailort: src/hef/core_op_metadata.cpp,
    get_output_layer_infos; hef.proto, sorted_outputs_order)."""

    name: str
    inputs: tuple[StreamInfo, ...]
    outputs: tuple[StreamInfo, ...]
    nms: NmsOpConfig | None = None
    logits_op: str | None = None
    sorted_outputs_order: tuple[str, ...] = ()

    @property
    def sorted_outputs(self) -> tuple[StreamInfo, ...]:
        """The output streams in their vstreams' order (the order hosts receive them in)."""
        order = self.sorted_outputs_order
        return tuple(sorted(self.outputs, key=lambda s: order.index(s.name) if s.name in order else len(order)))

    @property
    def input_vstreams(self) -> tuple[VStreamInfo, ...]:
        return tuple(_vstream(s) for s in self.inputs)

    def bbox_only_vstream(self) -> VStreamInfo:
        """The one output of the network group's bbox-only op (an NMS op compiled ``bbox_decoding_only``):
        FLOAT32 NHWC, height 1, width the proposals, features the leading fields and then one per class,
        quant info of scale 1 (hailort: hailort/libhailort/src/hef/hef.cpp, create_yolov8_bbox_only_op_metadata
        and create_yolov5_bbox_only_op_metadata: ``output_metadata.shape = {1, num_of_proposals, ...}``;
        src/net_flow/ops/nms_post_process.cpp, expand_output_format_autos_by_op_type (bbox_only: NHWC, FLOAT32)
        and NmsOpMetadata::get_output_vstream_info; yolov8_bbox_only_post_process.cpp and
        yolov5_bbox_only_post_process.cpp, get_output_vstream_info, which set that shape).

        Proposals: YOLOv8's the cells of the op's input streams over two (a box and a class stream per grid:
        ``compute_yolov8_bbox_only_num_of_proposals``); YOLOv5's per anchored stream its anchors x cells
        (``compute_num_of_proposals``). The op's inputs are read here as the streams its decoders name.
        """
        nms = self.nms
        if nms is None or not nms.bbox_decoding_only:
            raise HefError(f"network group {self.name!r}: no NMS op compiled bbox_decoding_only")
        # HailoRT builds a bbox-only op for the kinds of the families that have one (``bbox_only_op``: YOLOv8's,
        # YOLOv5's); its YOLOX, SSD and YOLOv5-seg ops refuse ``bbox_only`` (src/net_flow/ops/yolox_post_process.cpp,
        # ssd_post_process.cpp, yolov5_seg_post_process.cpp)
        family = by_nms_op(nms.kind)
        if family is None or not family.bbox_only_op:
            having = " or ".join(d.nms_op for d in REGISTERED if d.bbox_only_op)
            raise HefError(
                f"network group {self.name!r}: NMS op {nms.name!r} of kind {nms.kind} with bbox_decoding_only; "
                f"HailoRT decodes boxes only for {having}"
            )
        # the fields before the class values in a proposal: the box (``sizeof(hailo_rectangle_t) /
        # sizeof(float32_t)``), then YOLOv5's objectness (``YOLOV5_BBOX_NUM_OF_VALUES``) (hailort:
        # hailort/libhailort/src/hef/hef.cpp, create_yolov8_bbox_only_op_metadata,
        # create_yolov5_bbox_only_op_metadata; alike in 4.23.0 and 5.2.0)
        lead = 4 + int(family.objectness)
        streams = {s.name: s for s in self.outputs}
        named = [n for d in nms.bbox_decoders for n in (d.box_stream, d.class_stream)]
        missing = sorted({n for n in named if n not in streams})
        if not nms.bbox_decoders or missing:
            raise HefError(
                f"network group {self.name!r}: NMS op {nms.name!r}: bbox_decoders name streams {missing} that are "
                f"not core outputs ({sorted(streams)}); expected at least one decoder over the core outputs"
            )
        if not family.anchored:
            cells = {n: streams[n].shape[0] * streams[n].shape[1] for n in named}
            proposals = sum(cells.values()) // 2  # YOLOV8_NUM_OF_OUTPUTS_PER_SHAPE
        else:
            anchors = {d.box_stream: len(d.anchors) for d in nms.bbox_decoders}  # HailoRT's map: the last wins
            proposals = sum(count * streams[n].shape[0] * streams[n].shape[1] for n, count in anchors.items())
        if proposals < 1 or nms.classes < 1:
            raise HefError(
                f"network group {self.name!r}: NMS op {nms.name!r}: {proposals} proposals of {nms.classes} classes "
                "(bbox_decoding_only); expected at least one of each"
            )
        return VStreamInfo(
            nms.output_name, FormatOrder.NHWC, FormatType.FLOAT32, 1, proposals, lead + nms.classes, _NMS_QUANT
        )

    @property
    def output_vstreams(self) -> tuple[VStreamInfo, ...]:
        """HailoRT's output vstream infos: an NMS op's one output in place of the core outputs it consumes
        (a bbox-only op's: :meth:`bbox_only_vstream`)."""
        if self.nms is not None and self.nms.bbox_decoding_only:
            return (self.bbox_only_vstream(),)
        if self.nms is not None:
            shape = self.nms.nms_shape
            return (
                VStreamInfo(
                    self.nms.output_name, FormatOrder.NMS_BY_CLASS, FormatType.FLOAT32, 0, 0, 0, _NMS_QUANT, shape
                ),
            )
        return tuple(_vstream(s) for s in self.sorted_outputs)

    def output_specs(self, format_type: FormatType = FormatType.FLOAT32) -> tuple[OutputSpec, ...]:
        """The outputs as the host receives them through vstreams / InferModel.

        With an NMS op, the one NMS_BY_CLASS output (always FLOAT32); with a bbox-only op, its one FLOAT32
        NHWC output ``(1, proposals, fields)`` (:meth:`bbox_only_vstream`; the host runs the NMS). Otherwise
        one spec per core output in its default host order, as FLOAT32 (de-quantized by HailoRT) or, with
        UINT8/UINT16/AUTO, as the device's own quantized type.
        """
        if self.logits_op is not None:
            raise HefError(f"network group {self.name!r}: the host output of a {self.logits_op} op is not described")
        if self.nms is not None and self.nms.bbox_decoding_only:
            info = self.bbox_only_vstream()
            return (OutputSpec(info.name, info.shape, info.order, info.type, (info.quant,)),)
        if self.nms is not None:
            shape = self.nms.nms_shape
            return (
                OutputSpec(
                    self.nms.output_name,
                    (shape.number_of_classes, _BBOX_PARAMS, shape.max_bboxes_per_class),
                    FormatOrder.NMS_BY_CLASS,
                    FormatType.FLOAT32,
                    nms=shape,
                ),
            )
        return tuple(_output_spec(stream, format_type) for stream in self.sorted_outputs)


def _output_spec(stream: StreamInfo, format_type: FormatType) -> OutputSpec:
    if stream.nms is not None:
        return OutputSpec(stream.name, stream.host_shape, FormatOrder.NMS_BY_CLASS, FormatType.FLOAT32, nms=stream.nms)
    if format_type is FormatType.AUTO:
        format_type = stream.data_type
    if format_type is not FormatType.FLOAT32 and format_type is not stream.data_type:
        raise HefError(
            f"output {stream.name!r}: format type {format_type.name} asked, the device delivers "
            f"{stream.data_type.name} (expected FLOAT32 or {stream.data_type.name})"
        )
    try:
        return OutputSpec(stream.name, stream.host_shape, stream.host_order, format_type, quant=stream.host_quant)
    except ValueError as error:
        raise HefError(f"output {stream.name!r}: {error}") from None


@dataclass(frozen=True)
class HefInfo:
    path: str
    header: HefHeader
    hw_arch: HwArch
    devices: tuple[str, ...]
    sdk_version: str
    checksum_verified: bool
    truncated: bool
    file_size: int
    network_groups: tuple[NetworkGroupInfo, ...]

    @property
    def device_arch(self) -> str:
        """HailoRT 4.x's name for the HEF's architecture (:data:`DEVICE_ARCH_4X`)."""
        return DEVICE_ARCH_4X.get(self.hw_arch, "UNKNOWN ARCHITECTURE")

    @property
    def header_version(self) -> int:
        return self.header.version

    @property
    def checksum_kind(self) -> ChecksumKind:
        return self.header.checksum_kind

    @property
    def declared_size(self) -> int:
        return self.header.declared_file_size

    def output_specs(self, format_type: FormatType = FormatType.FLOAT32) -> tuple[OutputSpec, ...]:
        """Host output specs of the first (default) network group, as HailoRT addresses it by default."""
        if not self.network_groups:
            raise HefError(f"{self.path}: no network group in the HEF")
        return self.network_groups[0].output_specs(format_type)


def read_hef(path: str | Path, tolerant: bool = False) -> HefInfo:
    """Read and verify a HEF. ``tolerant`` returns what can be read from a truncated or corrupted file."""
    source = str(path)
    return parse_hef(_read_file(Path(path), source), source, tolerant)


def _read_file(path: Path, source: str) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_HEF_BYTES` (a device, a pipe or a folder is
    refused unread: each would be read without end or not at all)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a pipe without a writer: no wait
    except OSError as error:
        raise HefError(f"{source}: cannot read the file ({error.strerror})") from None
    try:
        status = os.fstat(fd)
        _check_file(status, source)
    except HefError:
        os.close(fd)
        raise
    with open(fd, "rb") as file:
        try:
            data = file.read(status.st_size + 1)  # a buffer of the file's size, not of the bound
            if len(data) > status.st_size:  # grown since: read on, up to the bound
                data += file.read(MAX_HEF_BYTES + 1 - len(data))
        except OSError as error:
            raise HefError(f"{source}: cannot read the file ({error.strerror})") from None
    if len(data) > MAX_HEF_BYTES:  # grown while read
        raise HefError(f"{source}: more than {MAX_HEF_BYTES} bytes, expected a HEF of at most that")
    return data


def _check_file(status: os.stat_result, source: str) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise HefError(f"{source}: a folder, expected a HEF file (or an Ultralytics export folder holding one)")
    if not stat.S_ISREG(status.st_mode):
        raise HefError(f"{source}: not a regular file (a device, a pipe or a socket), expected a HEF file")
    if status.st_size > MAX_HEF_BYTES:
        raise HefError(f"{source}: {status.st_size} bytes, expected a HEF of at most {MAX_HEF_BYTES} bytes")


def parse_hef(data: bytes, source: str, tolerant: bool = False) -> HefInfo:
    """The HEF in ``data``; every refusal names ``source``. ``tolerant``: see :func:`read_hef`."""
    header = parse_header(data, source)
    verified = False
    try:
        check_size(header, len(data), source)
        verify_checksum(header, data, source)
        verified = True
    except HefError:
        if not tolerant:
            raise
    try:
        return _describe(data, header, source, verified, tolerant)
    except HefError as error:  # raised where the proto is decoded, which knows no file name
        raise HefError(f"{source}: {error}", error.status) from None


def _describe(data: bytes, header: HefHeader, source: str, verified: bool, tolerant: bool) -> HefInfo:
    proto = data[header.size : header.size + header.proto_size]
    root = Message(proto, "ProtoHEFHef", partial=len(proto) < header.proto_size)
    proto_header = root.message(1, "header")
    arch_value = proto_header.uint(1, "hw_arch")
    try:
        arch = HwArch(arch_value)
    except ValueError:
        raise HefError(f"unsupported hw_arch {arch_value} in {proto_header.path}.hw_arch") from None
    per_feature = _scale_per_feature(root)
    groups = tuple(_network_group(group, arch, per_feature) for group in root.messages(2, "network_groups"))
    if not groups and not tolerant:
        raise HefError(f"no network group in {root.path}.network_groups, expected at least one")
    return HefInfo(
        path=source,
        header=header,
        hw_arch=arch,
        devices=DEVICES_BY_ARCH[arch],
        sdk_version=_sdk_version(proto_header.string(3, "sdk_version")),
        checksum_verified=verified,
        truncated=len(data) < header.declared_file_size,
        file_size=len(data),
        network_groups=groups,
    )


def _sdk_version(text: str) -> str:
    """Newer compilers write ``sdk-version: 5.4.0, git-branch: ...``; older ones just ``3.27.0``."""
    match = re.search(r"sdk-version:\s*([^,\s]+)", text)
    return match.group(1) if match else text


def _scale_per_feature(root: Message) -> bool | None:
    """Whether the OUTPUT_SCALE_PER_FEATURE extension is on; None when the extension list was cut off."""
    extensions = root.messages(5, "extensions")
    if not extensions and root.cut:
        return None
    return any(ext.uint(1, "type_index") == _EXTENSION_OUTPUT_SCALE_PER_FEATURE for ext in extensions)


def _first_name(*names: str) -> str:
    return next((name for name in names if name), "")


def _network_group(group: Message, arch: HwArch, per_feature: bool | None) -> NetworkGroupInfo:
    # hailort: src/hef/hef.cpp, fill_core_ops: with net-flow ops the core op is the op holding core_op (4);
    # older HEFs keep it in the network group itself. Multi-layout archs use the first layout by default.
    ops = group.messages(8, "ops")
    core_ops = [op.message(4, "core_op") for op in ops if op.has(4)]
    if core_ops:
        core, partials_name, inner_name = core_ops[0], "partial_core_ops", "core_op"
    else:
        core, partials_name, inner_name = group, "partial_network_groups", "network_group"
    partials = core.messages(7, partials_name)
    if arch in _MULTI_LAYOUT_ARCHS and partials:
        core = partials[0].message(1, inner_name)
    partial_groups = group.messages(7, "partial_network_groups")
    # hailort: src/hef/hef.cpp, HefUtils::get_network_group_name
    name = _first_name(
        partial_groups[0]
        .message(1, "network_group")
        .message(1, "network_group_metadata")
        .string(1, "network_group_name")
        if partial_groups
        else "",
        group.message(1, "network_group_metadata").string(1, "network_group_name"),
        group.string(10, "network_group_name"),
        core.message(1, "network_group_metadata").string(1, "network_group_name"),
    )
    transposed_net = core.message(1, "network_group_metadata").boolean(3, "transposed_net")
    inputs: list[StreamInfo] = []
    outputs: list[StreamInfo] = []
    for context in core.messages(3, "contexts"):
        for layer in context.message(3, "metadata").messages(2, "edge_layers"):
            if layer.message(5, "context_switch_info").uint(3, "edge_connection_type") != 0:  # BOUNDARY = 0
                continue
            is_output = layer.uint(1, "direction") == 1  # DEVICE_TO_HOST = 1
            outputs_or_inputs = outputs if is_output else inputs
            outputs_or_inputs.append(_stream(layer, is_output, transposed_net, per_feature))
    order = tuple(core.strings(4, "sorted_outputs_order"))
    nms = None
    logits = None
    for op in ops:
        if op.has(5):
            pads = {s.pad_index: s.name for s in outputs if s.pad_index is not None}
            nms = nms_op(op, pads, {s.name: s.shape[0] * s.shape[1] for s in outputs})
        elif op.has(6):
            logits_type = op.message(6, "logits_op").uint(1, "logits_type")
            logits = {0: "argmax", 1: "softmax"}.get(logits_type, f"logits type {logits_type}")
    return NetworkGroupInfo(name, tuple(inputs), tuple(outputs), nms, logits, order)


def _stream(layer: Message, is_output: bool, transposed_net: bool, per_feature: bool | None) -> StreamInfo:
    kind = layer.uint(2, "edge_layer_type")
    if kind != 0:  # INFO = 0; MUX = 1, PLANES = 2
        raise HefError(f"unsupported edge layer in {layer.path}: edge_layer_type {kind}, expected 0 (INFO)")
    info = layer.message(3, "layer_info")
    name = info.string(1, "name")
    base = info.message(2, "edge_layer_base")
    code = base.uint(7, "format")
    order = DEVICE_ORDER_BY_COMPILER_FORMAT.get(code)
    if order is None:
        raise HefError(
            f"stream {name!r}: unsupported compiler format {code} in {base.path}.format, "
            f"expected one of {sorted(DEVICE_ORDER_BY_COMPILER_FORMAT)}"
        )
    data_bytes = base.uint(12, "data_bytes")
    data_type = _TYPE_BY_DATA_BYTES.get(data_bytes)
    if data_type is None:
        raise HefError(f"stream {name!r}: data_bytes {data_bytes} in {base.path}.data_bytes, expected 1 or 2")
    height, width, features = base.uint(1, "height"), base.uint(3, "width"), base.uint(5, "features")
    padded = (base.uint(2, "padded_height"), base.uint(4, "padded_width"), base.uint(6, "padded_features"))
    nms = None
    if code == _COMPILER_FORMAT_NMS:
        # hailort: src/hef/hef.cpp, parse_layer_shape: (classes, BBOX_PARAMS, max_output_size * division factor)
        nms_info = base.message(11, "additional_info").message(1, "nms_info")
        max_boxes = nms_info.uint(3, "max_output_size") * max(1, nms_info.uint(7, "input_division_factor"))
        height, width, features = nms_info.uint(2, "number_of_classes"), _BBOX_PARAMS, max_boxes
        nms = NmsShape(height, max_boxes)
    elif (transposed_net or info.boolean(6, "transposed")) and order is not FormatOrder.NC:
        height, width = width, height  # hailort: src/hef/hef.cpp, fill_layer_info_with_base_info
    quant, quant_infos = _quant(
        info.message(3, "numeric_info"), name, features, is_output, nms is not None, per_feature
    )
    return StreamInfo(
        name=name,
        shape=(height, width, features),
        padded_shape=padded,
        device_order=order,
        host_order=DEFAULT_HOST_ORDER[order],
        data_type=data_type,
        quant=quant,
        quant_infos=quant_infos,
        pad_index=layer.uint(7, "pad_index") if layer.has(7) else None,
        nms=nms,
    )


def _quant(
    numeric: Message, name: str, features: int, is_output: bool, is_nms: bool, per_feature: bool | None
) -> tuple[QuantInfo, tuple[QuantInfo, ...]]:
    """hailort: src/hef/hef.cpp, HefUtils::fill_layer_info (quant_info and quant_infos)."""
    # "+ 0.0" turns the -0.0 some compilers write into 0.0
    zp, scale = numeric.float32(1, "qp_zp") + 0.0, numeric.float32(2, "qp_scale") + 0.0
    lo, hi = numeric.float32(3, "limvals_min") + 0.0, numeric.float32(4, "limvals_max") + 0.0
    tensor = QuantInfo(zp, scale, lo, hi)
    zps = tuple(v + 0.0 for v in numeric.doubles(5, "qp_zps"))
    scales = tuple(v + 0.0 for v in numeric.doubles(6, "qp_scales"))
    if per_feature is None:  # extension list cut off: trust the lists that are there
        per_feature = bool(zps or scales)
    if not (per_feature and is_output):
        return tensor, (tensor,)
    count = 2 if is_nms else features  # NMS_NUMBER_OF_QPS (hailort: src/hef/layer_info.hpp)
    for values, field in ((zps, "qp_zps"), (scales, "qp_scales")):
        if values and len(values) != count:
            raise HefError(
                f"stream {name!r}: {len(values)} values in {numeric.path}.{field}, expected {count} (one per feature)"
            )
    infos = tuple(QuantInfo(zps[i] if zps else zp, scales[i] if scales else scale, lo, hi) for i in range(count))
    return _ZERO_QUANT, infos
