"""Plain ``struct`` reader and writer for HailoRT NMS frames, one record at a time.

Records are ``(class_id, y_min, x_min, y_max, x_max, score)`` tuples, coordinates normalised as in the
buffer. Layouts (hailort: hailort/libhailort/src/net_flow/ops/nms_post_process.cpp):
BY_CLASS: per class a float32 count then that many 5 x float32 records; BY_SCORE: uint16 count then
packed {5 x float32, uint16 class_id} records (hailort: hailort/libhailort/include/hailo/hailort.h,
``hailo_detection_t`` under ``#pragma pack(push, 1)``). Little-endian.
"""

from __future__ import annotations

import struct

BBox = tuple[int, float, float, float, float, float]

_FLOAT = struct.Struct("<f")
_BOX = struct.Struct("<5f")
_COUNT = struct.Struct("<H")
_DETECTION = struct.Struct("<5fH")


def read_by_class(raw: bytes, classes: int, max_per_class: int) -> list[BBox]:
    if len(raw) != classes * (1 + 5 * max_per_class) * 4:
        raise ValueError(f"BY_CLASS frame of {len(raw)} bytes for {classes} classes x {max_per_class}")
    records: list[BBox] = []
    offset = 0
    for class_id in range(classes):
        (count_value,) = _FLOAT.unpack_from(raw, offset)
        offset += _FLOAT.size
        count = int(count_value)
        if count != count_value or not 0 <= count <= max_per_class:
            raise ValueError(f"class {class_id}: bbox_count {count_value}")
        for _ in range(count):
            y_min, x_min, y_max, x_max, score = _BOX.unpack_from(raw, offset)
            offset += _BOX.size
            records.append((class_id, y_min, x_min, y_max, x_max, score))
    return records


def write_by_class(records: list[BBox], classes: int, max_per_class: int) -> bytes:
    out = bytearray(classes * (1 + 5 * max_per_class) * 4)
    offset = 0
    for class_id in range(classes):
        mine = sorted((r for r in records if r[0] == class_id), key=lambda r: -r[5])
        if len(mine) > max_per_class:
            raise ValueError(f"class {class_id}: {len(mine)} records, at most {max_per_class}")
        _FLOAT.pack_into(out, offset, float(len(mine)))
        offset += _FLOAT.size
        for _, y_min, x_min, y_max, x_max, score in mine:
            _BOX.pack_into(out, offset, y_min, x_min, y_max, x_max, score)
            offset += _BOX.size
    return bytes(out)


def read_by_score(raw: bytes, classes: int, max_total: int) -> list[BBox]:
    if len(raw) != _COUNT.size + _DETECTION.size * max_total:
        raise ValueError(f"BY_SCORE frame of {len(raw)} bytes for {max_total} detections")
    (count,) = _COUNT.unpack_from(raw, 0)
    if count > max_total:
        raise ValueError(f"count {count} over {max_total}")
    records: list[BBox] = []
    for i in range(count):
        y_min, x_min, y_max, x_max, score, class_id = _DETECTION.unpack_from(raw, _COUNT.size + i * _DETECTION.size)
        if class_id >= classes:
            raise ValueError(f"detection {i}: class_id {class_id}")
        records.append((class_id, y_min, x_min, y_max, x_max, score))
    return records


def write_by_score(records: list[BBox], max_total: int) -> bytes:
    if len(records) > max_total:
        raise ValueError(f"{len(records)} records, at most {max_total}")
    out = bytearray(_COUNT.size + _DETECTION.size * max_total)
    _COUNT.pack_into(out, 0, len(records))
    for i, (class_id, y_min, x_min, y_max, x_max, score) in enumerate(sorted(records, key=lambda r: -r[5])):
        _DETECTION.pack_into(out, _COUNT.size + i * _DETECTION.size, y_min, x_min, y_max, x_max, score, class_id)
    return bytes(out)
