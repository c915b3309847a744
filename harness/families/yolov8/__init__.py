"""YOLOv8/YOLO11: per stride a box map of 4 x reg_max DFL bins and a class map, decoded then NMS'd by
HailoRT's YOLOv8 op (hailort: libhailort/src/net_flow/ops/yolov8_post_process.hpp)."""

from harness.core.head_family import HeadFamily
from harness.families.descriptor import FamilyDescriptor

DESCRIPTOR = FamilyDescriptor(
    HeadFamily.YOLOV8,
    "YOLOv8/YOLO11",
    __name__,
    nms_op="yolov8",
    bbox_only_op="yolov8_bbox_only",
    dfl_boxes=True,
    cut_at_end_nodes=True,
)
