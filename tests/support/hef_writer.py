"""A HEF written field by field with the protobuf wire format, for the reader's tests: a v0 header (size,
MD5) around a proto of one network group whose core outputs are boundary edge layers and whose NMS op
(YOLOv8's or YOLOv5's, ``bbox_decoding_only`` or not) names them by pad; and a real HEF given such an
op (:func:`with_bbox_only_op`), which HailoRT itself reads. Field numbers are hef.proto's
(hailort: hailort/libhailort/hef.proto), as harness/inputs/hef/reader.py reads them."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass

from harness.inputs.hef.wire import read_varint


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def uint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def double(number: int, value: float) -> bytes:
    return varint(number << 3 | 1) + struct.pack("<d", value)


def float32(number: int, value: float) -> bytes:
    return varint(number << 3 | 5) + struct.pack("<f", value)


def field(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def v0_hef(proto: bytes) -> bytes:
    """A v0 HEF around ``proto``: magic, version 0, proto size, reserved, MD5 of the proto."""
    return struct.pack(">III", 0x01484546, 0, len(proto)) + b"\0" * 4 + hashlib.md5(proto).digest() + proto


@dataclass(frozen=True)
class Stream:
    """A boundary output stream: name, ``(height, width, features)``, its pad, its quantization."""

    name: str
    shape: tuple[int, int, int]
    pad: int
    zero_point: float = 0.0
    scale: float = 1.0


@dataclass(frozen=True)
class Decoder:
    """One bbox decoder: its stride and the pads of its box and class streams (one for YOLOv5), a
    YOLOv5 decoder's anchors ``(width, height)`` and a YOLOX decoder's objectness pad."""

    stride: int
    box_pad: int
    class_pad: int
    anchors: tuple[tuple[int, int], ...] = ()
    objectness_pad: int | None = None  # a YOLOX decoder's objectness stream


def _edge_layer(stream: Stream) -> bytes:
    h, w, c = stream.shape
    base = b"".join(uint(n, v) for n, v in ((1, h), (2, h), (3, w), (4, w), (5, c), (6, c), (7, 1), (12, 1)))
    numeric = float32(1, stream.zero_point) + float32(2, stream.scale)
    info = field(1, stream.name) + field(2, base) + field(3, numeric)
    # direction 1 (DEVICE_TO_HOST), edge_layer_type 0 (INFO), context_switch_info.edge_connection_type 0 (BOUNDARY)
    return uint(1, 1) + uint(2, 0) + field(3, info) + field(5, uint(3, 0)) + uint(7, stream.pad)


def _floats(number: int, values: tuple[float, ...]) -> bytes:
    """A packed repeated float."""
    return field(number, struct.pack(f"<{len(values)}f", *values))


def _decoder(kind: str, d: Decoder) -> bytes:
    if kind == "ssd":  # ProtoHEFSSDBboxDecoder: h 1, w 2 (repeated float), reg_pad_index 3, cls_pad_index 4
        heights, widths = tuple(h for _, h in d.anchors), tuple(w for w, _ in d.anchors)
        return _floats(1, heights) + _floats(2, widths) + uint(3, d.box_pad) + uint(4, d.class_pad)
    if kind in ("yolov8", "yolox"):  # ProtoHEFYolov8/YoloxBboxDecoder: stride 1, reg_pad_index 2, cls_pad_index 3
        objectness = uint(4, d.objectness_pad) if d.objectness_pad is not None else b""  # YOLOX: obj_pad_index 4
        return uint(1, d.stride) + uint(2, d.box_pad) + uint(3, d.class_pad) + objectness
    # ProtoHEFYoloBboxDecoder: h 2, w 3 (repeated), stride 4, pad_index 5
    return b"".join(uint(2, h) + uint(3, w) for w, h in d.anchors) + uint(4, d.stride) + uint(5, d.box_pad)


def nms_hef(
    streams: tuple[Stream, ...],
    kind: str,
    decoders: tuple[Decoder, ...],
    classes: int,
    bbox_decoding_only: bool,
    image_hw: tuple[int, int] = (640, 640),
    output_name: str = "net/nms_postprocess",
    regression_length: int = 16,
    ssd_coding: tuple[int, ...] = (10, 5, 0, 0, 0, 0),
    background_index: int | None = None,
) -> bytes:
    """A HEF of one network group ``net`` with ``streams`` and a ``kind`` (``yolov8``, ``yolov5``, ``yolox`` or
    ``ssd``: its ``ssd_coding`` centers and dimensions scale factors, ty, tx, th, tw) NMS op over them: score 0.2,
    IoU 0.7, 100 per class, ``background_index`` removed where given."""
    detail = double(1, image_hw[0]) + double(2, image_hw[1])
    if kind == "ssd":  # ProtoHEFSSDNmsOp: centers_scale_factor 3, bbox_dimensions_scale_factor 4, ty..tw 5..8
        detail += b"".join(uint(number, value) for number, value in zip(range(3, 9), ssd_coding, strict=True))
    decoders_field = {"yolox": 3, "ssd": 9}.get(kind, 4)
    detail += b"".join(field(decoders_field, _decoder(kind, d)) for d in decoders)
    if kind == "yolov8":
        detail += uint(5, regression_length)
    kind_field = {"yolov5": 7, "yolox": 8, "ssd": 9, "yolov8": 12}[kind]
    nms = double(1, 0.2) + double(2, 0.7) + uint(3, 100) + uint(4, classes) + uint(13, int(bbox_decoding_only))
    if background_index is not None:  # background_removal 5, background_removal_index 6
        nms += uint(5, 1) + uint(6, background_index)
    nms += field(kind_field, detail)
    op = field(1, "nms_op") + field(3, uint(1, 0) + field(2, output_name)) + field(5, nms)
    context = field(3, b"".join(field(2, _edge_layer(s)) for s in streams))
    group = field(1, field(1, "net")) + field(3, context) + field(8, op)
    proto = field(1, uint(1, 1)) + field(2, group)  # header.hw_arch 1 (HAILO8P)
    return v0_hef(proto)


def _records(data: bytes) -> list[tuple[int, int, bytes]]:
    """A message's records in order: (field number, wire type, the whole record's bytes)."""
    out, pos = [], 0
    while pos < len(data):
        start = pos
        key, pos = read_varint(data, pos, "record")
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = read_varint(data, pos, "record")
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            length, pos = read_varint(data, pos, "record")
            pos += length
        out.append((number, wire, data[start:pos]))
    return out


def _payload(record: bytes) -> bytes:
    """The payload of a length-delimited record."""
    _, pos = read_varint(record, 0, "record")
    length, pos = read_varint(record, pos, "record")
    return record[pos : pos + length]


def _edited(data: bytes, number: int, edit: Callable[[bytes], bytes]) -> bytes:
    """``data`` with each length-delimited record of field ``number`` replaced by ``edit(payload)``."""
    return b"".join(
        field(number, edit(_payload(record))) if n == number and wire == 2 else record
        for n, wire, record in _records(data)
    )


def with_bbox_only_op(
    hef: bytes, kind: str, classes: int, anchors: tuple[tuple[int, int], ...] = (), output_name: str = "bbox_only"
) -> bytes:
    """A v0 HEF of one network group with one core output (hef/hailo8_mnist_cnn.hef) made a net-flow HEF
    whose ``kind`` NMS op, compiled ``bbox_decoding_only``, reads that output as its one decoder's box and
    class stream (pad 0): the HAILO_NET_FLOW extension (13), the group's core op moved into ``ops`` with the
    NMS op beside it, a pad edge from the core output to the op's input (hailort: libhailort/hef.proto;
    src/hef/hef.cpp, fill_core_ops and create_ops_metadata read these)."""
    proto = hef[32:]

    def edge_layer(layer: bytes) -> bytes:
        outgoing = any(n == 1 and r == uint(1, 1) for n, _, r in _records(layer))
        return layer + uint(7, 0) if outgoing else layer  # pad_index 0 on the boundary output

    def context(ctx: bytes) -> bytes:
        return _edited(ctx, 3, lambda metadata: _edited(metadata, 2, edge_layer))

    def group(old: bytes) -> bytes:
        core = _edited(old, 3, context)
        name = next(
            _payload(_records(_payload(r))[0][2]) for n, _, r in _records(old) if n == 1
        )  # network_group_metadata.network_group_name
        decoder = Decoder(32, 0, 0, anchors)
        detail = double(1, 32.0) + double(2, 32.0) + field(4, _decoder(kind, decoder))
        if kind == "yolov8":
            detail += uint(5, 4)
        nms = double(1, 0.2) + double(2, 0.7) + uint(3, 100) + uint(4, classes) + uint(13, 1)
        nms += field({"yolov5": 7, "yolov8": 12}[kind], detail)
        core_op = field(1, name) + field(3, uint(1, 0)) + field(4, core)
        nms_op = field(1, "nms") + field(2, uint(1, 1)) + field(3, uint(1, 2) + field(2, output_name)) + field(5, nms)
        # the group keeps its metadata and output order: HailoRT names the group and orders its outputs by them
        kept = b"".join(r for n, _, r in _records(old) if n in (1, 4))
        return kept + field(8, core_op) + field(8, nms_op) + field(9, uint(1, 0) + uint(2, 1)) + field(10, name)

    return v0_hef(_edited(proto, 2, group) + field(5, uint(1, 13)))
