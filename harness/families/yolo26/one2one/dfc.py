"""YOLO26's one-to-one head's model script (:mod:`harness.families.yolo26.dfc`): top-k on the host, no NMS."""

from __future__ import annotations

from harness.backends.dfc.writing import DfcHead
from harness.families.yolo26.dfc import *  # noqa: F403  (what either head's model script shares)
from harness.families.yolo26.dfc import EXPORT_NAME

HEAD = DfcHead(
    "YOLO26's one-to-one head (one2one_cv2/one2one_cv3; sigmoid and top-k on the host, no NMS)",
    EXPORT_NAME,
    option="one2one",
    default=True,
    fix="export the model with end2end=True for the one-to-one head, or give --head one2many to compile this one "
    "(NMS on the host)",
)
