"""The doctor modes a user of YOLOv8/YOLO11 heads meets beyond the shared ones (:mod:`harness.doctor.modes`,
offered by the family's facts: its NMS op, its sigmoid compiled in, its DFL box maps): none of its own."""

from __future__ import annotations

from collections.abc import Mapping

from harness.doctor.mode import Mode


def shared_gaps() -> Mapping[str, str]:
    return {}


def own_modes() -> tuple[Mode, ...]:
    return ()
