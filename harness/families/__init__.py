"""The head families, each registered once (:data:`REGISTERED`, in the order an export's heads are tried):
a :class:`~harness.families.descriptor.FamilyDescriptor` of its facts, and a folder of its parts, one module
per room (:data:`~harness.families.descriptor.ROOMS`). A room asks :func:`descriptor` for facts and
:func:`part` for the family's module of its own room; no room compares families.

Adding a family: its member of :class:`~harness.core.head_family.HeadFamily`, its folder here, and its line below.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from harness.core.head_family import HeadFamily
from harness.families import ssd, yolo26, yolov5, yolov8, yolov10, yolox
from harness.families.descriptor import ROOMS, FamilyDescriptor

REGISTERED: tuple[FamilyDescriptor, ...] = (
    ssd.DESCRIPTOR,
    yolov8.DESCRIPTOR,
    yolov5.DESCRIPTOR,
    yolox.DESCRIPTOR,
    yolo26.ONE2ONE,
    yolo26.ONE2MANY,
    yolov10.DESCRIPTOR,
)

_BY_FAMILY = {d.family: d for d in REGISTERED}


def descriptor(family: HeadFamily) -> FamilyDescriptor:
    """``family``'s facts."""
    return _BY_FAMILY[family]


def by_nms_op(kind: str) -> FamilyDescriptor | None:
    """The family whose HEF HailoRT decodes with the NMS op of ``kind`` (a HEF's ``NmsOpConfig.kind``),
    None for a kind no family's HEF holds (``iou``, ``yolov5_seg``)."""
    return next((d for d in REGISTERED if kind and d.nms_op == kind), None)


def part(family: HeadFamily, room: str) -> ModuleType:
    """``family``'s module of ``room`` (one of :data:`ROOMS`), imported where first asked for: each room loads
    only its own part, so no room imports the rooms above it through a family."""
    if room not in ROOMS:
        raise ValueError(f"room {room!r}; expected one of {', '.join(ROOMS)}")
    return importlib.import_module(f"{_BY_FAMILY[family].parts}.{room}")


__all__ = ["REGISTERED", "ROOMS", "FamilyDescriptor", "by_nms_op", "descriptor", "part"]
