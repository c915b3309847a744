"""YOLOX: per stride a box map of 4, an objectness map and a class map; HailoRT's YOLOX op decodes, reading
objectness and classes as probabilities (hailort: libhailort/src/net_flow/ops/yolox_post_process.hpp)."""

from harness.core.head_family import HeadFamily
from harness.families.descriptor import FamilyDescriptor

DESCRIPTOR = FamilyDescriptor(HeadFamily.YOLOX, "YOLOX", __name__, nms_op="yolox", objectness=True)
