"""The doctor modes a user of YOLOv8/YOLO11 heads meets beyond every family's (:mod:`harness.doctor.modes`):
the NMS op's (compiled without the sigmoid, its buffer misread, its config wrong) and a host decoder's of the
raw DFL heads."""

from __future__ import annotations

from harness.doctor.mode import Mode


def doctor_modes() -> tuple[str, ...]:
    return (
        "nms_without_sigmoid",
        "host_sigmoid_on_probabilities",
        "raw_decoder_on_nms_buffer",
        "nms_records_read_x_first",
        "heads_paired_across_grids",
        "fcr_read_channel_first",
        "box_range_collapsed",
        "nms_classes_wrong",
        "nms_regression_length_wrong",
        "nms_score_threshold_differs",
    )


def static_checks_control() -> bool:
    return True


def own_modes() -> tuple[Mode, ...]:
    return ()
