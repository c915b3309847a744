"""YOLOv8/YOLO11's static checks of its HEF's NMS op (:class:`~harness.verdict.hef_family_checks.FamilyChecks`):
per stride a box stream (DFL bins) and a class stream of one grid, the class stream of ``classes`` channels,
no anchors (hailort: libhailort/src/net_flow/ops/yolov8_post_process.hpp): the checks of box and class
streams the families share."""

from __future__ import annotations

from harness.verdict.hef_family_checks import every_decoder as strided_decoders
from harness.verdict.hef_family_checks import no_anchored_maps as anchored_maps
from harness.verdict.hef_family_checks import no_anchors as anchors
from harness.verdict.hef_family_checks import pair_box_and_class as decoder_pairing

__all__ = ["anchored_maps", "anchors", "decoder_pairing", "strided_decoders"]
