"""YOLOv10's model script: its HEF ends at the one-to-one head's convolutions, the box maps then the class maps,
a16_w16 on them, no NMS op and no sigmoid (both on the host), as Ultralytics compiles any end-to-end head
(ultralytics: ultralytics/engine/exporter.py, ``export_hailo``): YOLO26's script
(:mod:`harness.families.yolo26.dfc`)."""

from __future__ import annotations

from harness.backends.dfc.writing import DfcHead
from harness.families.yolo26.dfc import check_scripts, end_nodes, render_alls, write_scripts

# Its export carries one head.
HEAD = DfcHead(
    "the YOLOv10 one-to-one head (one2one_cv2/one2one_cv3, DFL box maps; sigmoid and top-k on the host)", "YOLOv10"
)


__all__ = [
    "HEAD",
    "check_scripts",
    "end_nodes",
    "render_alls",
    "write_scripts",
]
