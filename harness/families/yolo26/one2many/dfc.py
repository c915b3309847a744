"""YOLO26's one-to-many head's model script (:mod:`harness.families.yolo26.dfc`): NMS on the host."""

from __future__ import annotations

from harness.backends.dfc.writing import DfcHead
from harness.families.yolo26.dfc import *  # noqa: F403  (what either head's model script shares)
from harness.families.yolo26.dfc import EXPORT_NAME

HEAD = DfcHead(
    "YOLO26's one-to-many head (cv2/cv3; sigmoid and NMS on the host)",
    EXPORT_NAME,
    option="one2many",
    fix="export the model with end2end=False: an end-to-end export holds the one-to-one head only",
)
