"""SSD: per layer a regression map of 4 x na channels and a class map of na x nc, decoded against the anchors
and box coding of its SSD config (no graph holds them: ``--ssd-config``) by HailoRT's SSD op
(hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp)."""

from harness.core.head_family import HeadFamily
from harness.families.descriptor import FamilyDescriptor

DESCRIPTOR = FamilyDescriptor(
    HeadFamily.SSD, "SSD", __name__, nms_op="ssd", anchored=True, config_option="--ssd-config"
)
