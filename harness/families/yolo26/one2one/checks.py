"""The static checks of YOLO26's one-to-one head's NMS op: either head's (:mod:`harness.families.yolo26.checks`)."""

from __future__ import annotations

from harness.families.yolo26.checks import anchored_maps, anchors, decoder_pairing, strided_decoders

__all__ = ["anchored_maps", "anchors", "decoder_pairing", "strided_decoders"]
