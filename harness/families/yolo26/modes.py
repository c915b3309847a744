"""The doctor modes a user of either YOLO26 head meets beyond every family's (:mod:`harness.doctor.modes`):
its 16-bit outputs and its box heads of 4 distances misread."""

from __future__ import annotations

YOLO26_MODES = ("sixteen_bit_read_as_eight", "box_distances_read_as_dfl", "yolov8_decoder_on_yolo26")


def static_checks_control() -> bool:
    return False
