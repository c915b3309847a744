"""The static checks of either YOLO26 head's NMS op (:class:`~harness.verdict.hef_family_checks.FamilyChecks`).
Its HEF holds none: Ultralytics compiles YOLO26 without an NMS op (ultralytics: ultralytics/engine/exporter.py,
``export_hailo``), and no NMS kind is YOLO26's (``FamilyDescriptor.nms_op``), so the checks never ask these; they
answer as for an op of box and class streams (reg_max 1) without anchors: the checks the families share."""

from __future__ import annotations

from harness.verdict.hef_family_checks import every_decoder as strided_decoders
from harness.verdict.hef_family_checks import no_anchored_maps as anchored_maps
from harness.verdict.hef_family_checks import no_anchors as anchors
from harness.verdict.hef_family_checks import pair_box_and_class as decoder_pairing

__all__ = ["anchored_maps", "anchors", "decoder_pairing", "strided_decoders"]
