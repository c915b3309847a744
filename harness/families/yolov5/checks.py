"""YOLOv5/YOLOv7's static checks of its HEF's NMS op (:class:`~harness.verdict.hef_family_checks.FamilyChecks`):
one anchored stream per decoder, the anchors the export's
(hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from harness.core.checks import CheckResult
from harness.inputs.hef.nms_op import NmsOpConfig
from harness.inputs.hef.reader import StreamInfo
from harness.verdict.hef_family_checks import every_decoder as strided_decoders
from harness.verdict.hef_family_checks import stream_missing, wrong_channels

__all__ = ["anchored_maps", "anchors", "decoder_pairing", "strided_decoders"]

if TYPE_CHECKING:
    from harness.decode.layout import HeadLayout
    from harness.inputs.export_facts import ExportFacts


def anchored_maps() -> bool:
    """One anchored map per stride: every anchor's box, objectness and class channels."""
    return True


def decoder_pairing(name: str, nms: NmsOpConfig, streams: Mapping[str, StreamInfo]) -> CheckResult:
    """A YOLOv5 NMS op's decoders: one stream each, of ``anchors x (5 + classes)`` channels
    (hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp, ``extract_detections`` checks the
    buffer size against it)."""
    for d in nms.bbox_decoders:
        stream = streams.get(d.box_stream)
        if stream is None:
            return stream_missing(
                name,
                f"NMS decoder stride {d.stride}",
                d.box_stream,
                "name existing end-node layers in the nms_postprocess JSON",
            )
        expected = len(d.anchors) * (5 + nms.classes)
        if stream.shape[2] != expected:
            words = f"{expected} ({len(d.anchors)} anchors x (5 + {nms.classes} classes))"
            fix = "give each decoder its stride's anchors and the model's class count in the nms_postprocess JSON"
            return wrong_channels(name, f"NMS decoder stride {d.stride}", stream, words, fix)
    return CheckResult.ok(name, f"{len(nms.bbox_decoders)} decoders each read anchors x (5 + classes) channels")


def anchors(name: str, nms: NmsOpConfig, model: ExportFacts, layout: HeadLayout) -> CheckResult:
    """The op's anchors against those the export's decode tail multiplies (the HEF keeps them as whole
    pixels: hailort: hailort/libhailort/hef.proto, ProtoHEFYoloBboxDecoder ``w``, ``h`` uint32)."""
    ours = {d.stride: d.anchors for d in nms.bbox_decoders}
    for level in layout.levels:
        theirs = ours.get(level.stride, ())
        expected = tuple((round(w), round(h)) for w, h in level.anchors)
        if theirs != expected:
            return CheckResult.failed(
                name,
                f"NMS decoder stride {level.stride} anchors (w, h)",
                list(theirs),
                f"{list(expected)} (the anchors of {model.source}'s stride {level.stride}, in whole pixels)",
                "copy the export's anchors into the nms_postprocess JSON (the model's own, not the defaults: "
                "autoanchor may have changed them) and recompile",
            )
    return CheckResult.ok(name, f"the NMS op's anchors are the export's at all {len(layout.levels)} strides")
