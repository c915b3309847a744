"""The doctor modes a user of YOLO26's one-to-one head meets beyond the shared ones: YOLO26's, and its top-k
taken for an NMS or for one class per anchor."""

from __future__ import annotations

from harness.core import defaults
from harness.core.settings import NmsMode
from harness.doctor.mistakes import one2one_with_nms, one_class_per_anchor
from harness.doctor.mode import Mode, host_decoder
from harness.families.yolo26.modes import YOLO26_MODES, shared_gaps

__all__ = ["own_modes", "shared_gaps"]

ONE2MANY_IOU = 0.45  # a YOLOv8 pipeline's host NMS: Ultralytics' (best class per anchor) at this IoU


ONE2ONE_MODES: tuple[Mode, ...] = (
    Mode(
        "one2one_decoded_with_nms",
        "YOLO26's one-to-one head decoded with an NMS instead of its top-k",
        "host decoder running the evaluation's NMS (its IoU threshold, per class) over the one-to-one head's anchors",
        "nms_on_one_to_one",
        host_decoder(one2one_with_nms()),
    ),
    Mode(
        "one2one_decoded_as_one2many",
        "YOLO26's one-to-one head decoded as a one-to-many head, with a YOLOv8 pipeline's NMS",
        "host decoder running Ultralytics' NMS (best class per anchor, IoU "
        f"{ONE2MANY_IOU:g}) over the one-to-one head's anchors",
        "nms_on_one_to_one",
        host_decoder(one2one_with_nms(ONE2MANY_IOU, NmsMode.ULTRALYTICS, multi_label=False)),
    ),
    Mode(
        "one_class_per_anchor",
        "YOLO26's top-k keeping one class per anchor (its best), never a second",
        f"host decoder keeping the best class of the {defaults.MAX_TOTAL} anchors with the best class score",
        "none",
        host_decoder(one_class_per_anchor),
        gap="the same detections as the top-k wherever no anchor passes the score threshold with two classes, "
        "which a one-to-one head (one prediction an object) rarely does at a deployment threshold: no frame of "
        "the demo does at 0.2",
    ),
)


def own_modes() -> tuple[Mode, ...]:
    return (*YOLO26_MODES, *ONE2ONE_MODES)
