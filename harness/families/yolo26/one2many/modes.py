"""The doctor modes a user of YOLO26's one-to-many head meets beyond every family's: YOLO26's."""

from __future__ import annotations

from harness.families.yolo26.modes import YOLO26_MODES, static_checks_control

__all__ = ["doctor_modes", "static_checks_control"]


def doctor_modes() -> tuple[str, ...]:
    return YOLO26_MODES
