"""Which detect head a model carries: the one fact that picks its decoder and what its HEF compiles in."""

from __future__ import annotations

import enum


class HeadFamily(str, enum.Enum):
    """Which detect head an export carries, and so how its six raw maps are decoded.

    - ``YOLOV8``: YOLOv8/YOLO11, box maps of 4 x reg_max DFL bins, decoded then NMS'd;
    - ``YOLO26_ONE2ONE``: YOLO26's one-to-one head (exported end to end, ``[1, max_det, 6]``): top-k, no NMS;
    - ``YOLO26_ONE2MANY``: YOLO26's one-to-many head (``[1, 4 + nc, anchors]``): box maps of 4, then NMS.

    A YOLO26 HEF ends at the head convolutions: Ultralytics compiles it without the class sigmoid and
    without an NMS op, both run on the host (ultralytics: ultralytics/engine/exporter.py, ``export_hailo``).
    """

    YOLOV8 = "yolov8"
    YOLO26_ONE2ONE = "yolo26-one2one"
    YOLO26_ONE2MANY = "yolo26-one2many"

    @property
    def host_postprocess(self) -> bool:
        """True where the sigmoid and the selection of boxes run on the host, not inside the HEF."""
        return self is not HeadFamily.YOLOV8
