"""A HEF written field by field with the protobuf wire format, for the reader's tests: a v0 header (size,
MD5) around a proto of one network group whose core outputs are boundary edge layers and whose NMS op
(YOLOv8's or YOLOv5's, ``bbox_decoding_only`` or not) names them by pad. Field numbers are hef.proto's
(hailort: hailort/libhailort/hef.proto), as harness/inputs/hef/reader.py reads them."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass


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
    """One bbox decoder: its stride and the pads of its box and class streams (one for YOLOv5), and a
    YOLOv5 decoder's anchors ``(width, height)``."""

    stride: int
    box_pad: int
    class_pad: int
    anchors: tuple[tuple[int, int], ...] = ()


def _edge_layer(stream: Stream) -> bytes:
    h, w, c = stream.shape
    base = b"".join(uint(n, v) for n, v in ((1, h), (2, h), (3, w), (4, w), (5, c), (6, c), (7, 1), (12, 1)))
    numeric = float32(1, stream.zero_point) + float32(2, stream.scale)
    info = field(1, stream.name) + field(2, base) + field(3, numeric)
    # direction 1 (DEVICE_TO_HOST), edge_layer_type 0 (INFO), context_switch_info.edge_connection_type 0 (BOUNDARY)
    return uint(1, 1) + uint(2, 0) + field(3, info) + field(5, uint(3, 0)) + uint(7, stream.pad)


def _decoder(kind: str, d: Decoder) -> bytes:
    if kind in ("yolov8", "yolox"):  # ProtoHEFYolov8/YoloxBboxDecoder: stride 1, reg_pad_index 2, cls_pad_index 3
        return uint(1, d.stride) + uint(2, d.box_pad) + uint(3, d.class_pad)
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
) -> bytes:
    """A HEF of one network group ``net`` with ``streams`` and a ``kind`` (``yolov8``, ``yolov5`` or
    ``yolox``) NMS op over them: score 0.2, IoU 0.7, 100 per class."""
    detail = double(1, image_hw[0]) + double(2, image_hw[1])
    detail += b"".join(field(4 if kind != "yolox" else 3, _decoder(kind, d)) for d in decoders)
    if kind == "yolov8":
        detail += uint(5, regression_length)
    kind_field = {"yolov5": 7, "yolox": 8, "yolov8": 12}[kind]
    nms = double(1, 0.2) + double(2, 0.7) + uint(3, 100) + uint(4, classes) + uint(13, int(bbox_decoding_only))
    nms += field(kind_field, detail)
    op = field(1, "nms_op") + field(3, uint(1, 0) + field(2, output_name)) + field(5, nms)
    context = field(3, b"".join(field(2, _edge_layer(s)) for s in streams))
    group = field(1, field(1, "net")) + field(3, context) + field(8, op)
    proto = field(1, uint(1, 1)) + field(2, group)  # header.hw_arch 1 (HAILO8P)
    return v0_hef(proto)
