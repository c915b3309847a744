"""The static checks of YOLOv10's NMS op: its HEF holds none (the top-k runs on the host), and no NMS kind is
YOLOv10's (``FamilyDescriptor.nms_op``), so the checks never ask these; they answer as YOLOv8's (box streams of
DFL bins and class streams, no anchors): :mod:`harness.families.yolov8.checks`."""

from __future__ import annotations

from harness.families.yolov8.checks import anchored_maps, anchors, decoder_pairing, strided_decoders

__all__ = ["anchored_maps", "anchors", "decoder_pairing", "strided_decoders"]
