"""The doctor modes a user of YOLO26's one-to-many head meets beyond the shared ones: YOLO26's."""

from __future__ import annotations

from harness.doctor.mode import Mode
from harness.families.yolo26.modes import YOLO26_MODES, shared_gaps

__all__ = ["own_modes", "shared_gaps"]


def own_modes() -> tuple[Mode, ...]:
    return YOLO26_MODES
