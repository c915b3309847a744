"""YOLO26's one-to-many head's model script (:mod:`harness.families.yolo26.dfc`): NMS on the host."""

from __future__ import annotations

from harness.families.yolo26.dfc import *  # noqa: F403  (what either head's model script shares)

HEAD_WORDS = "YOLO26's one-to-many head (cv2/cv3; sigmoid and NMS on the host)"
HEAD_OPTION = "one2many"
HEAD_DEFAULT = False
HEAD_FIX = "export the model with end2end=False: an end-to-end export holds the one-to-one head only"
