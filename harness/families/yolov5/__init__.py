"""YOLOv5/YOLOv7: per stride one map of na x (5 + nc) channels (box offsets, objectness and class scores of
each anchor), decoded against the model's anchors by HailoRT's YOLOv5 op
(hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp)."""

from harness.core.head_family import HeadFamily
from harness.families.descriptor import FamilyDescriptor

DESCRIPTOR = FamilyDescriptor(
    HeadFamily.YOLOV5,
    "YOLOv5/YOLOv7",
    __name__,
    nms_op="yolov5",
    bbox_only_op="yolov5_bbox_only",
    anchored=True,
    objectness=True,
)
