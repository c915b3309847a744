"""The doctor modes a user of YOLO26's one-to-one head meets beyond every family's: YOLO26's, and its top-k
taken for an NMS or for one class per anchor."""

from __future__ import annotations

from harness.families.yolo26.modes import YOLO26_MODES, static_checks_control

__all__ = ["doctor_modes", "static_checks_control"]


def doctor_modes() -> tuple[str, ...]:
    return (*YOLO26_MODES, "one2one_decoded_with_nms", "one2one_decoded_as_one2many", "one_class_per_anchor")
