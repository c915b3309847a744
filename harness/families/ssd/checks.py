"""SSD's static checks of its HEF's NMS op (:class:`~harness.verdict.hef_family_checks.FamilyChecks`): per
layer a regression and a class stream of every anchor, the anchors and box coding the SSD config's
(hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from harness.core.checks import CheckResult
from harness.inputs.hef.nms_op import BboxDecoder, NmsOpConfig
from harness.inputs.hef.reader import StreamInfo
from harness.verdict.hef_family_checks import grids_differ, stream_missing, wrong_channels
from harness.verdict.hef_family_checks import no_anchored_maps as anchored_maps

__all__ = ["anchored_maps", "anchors", "decoder_pairing", "strided_decoders"]

if TYPE_CHECKING:
    from harness.decode.layout import HeadLayout
    from harness.inputs.export_facts import ExportFacts


def strided_decoders(nms: NmsOpConfig) -> tuple[BboxDecoder, ...]:
    """None: an SSD op's layers have no stride (hailort: hailort/libhailort/hef.proto, ProtoHEFSSDBboxDecoder):
    their grids need not divide the input (300 over 19); only the export's grids hold them."""
    return ()


def decoder_pairing(name: str, nms: NmsOpConfig, streams: Mapping[str, StreamInfo]) -> CheckResult:
    """An SSD NMS op's decoders: per layer a regression stream of 4 x anchors channels and a class stream of
    anchors x classes, on one grid (hailort: libhailort/src/net_flow/ops/ssd_post_process.cpp, ``validate_params``
    and ``extract_detections``: 4 values and ``classes`` scores per anchor of the decoder)."""
    for i, d in enumerate(nms.bbox_decoders):
        box, cls = streams.get(d.box_stream), streams.get(d.class_stream)
        if box is None or cls is None:
            missing = d.box_stream if box is None else d.class_stream
            return stream_missing(
                name, f"NMS decoder {i}", missing, "name existing end-node layers as reg_layer/cls_layer"
            )
        na = len(d.anchors)
        for stream, expected, words in ((box, 4 * na, "4 x"), (cls, na * nms.classes, f"{nms.classes} classes x")):
            if stream.shape[2] != expected:
                fix = "give each decoder its layer's anchors (w, h) and the model's class count, background included"
                return wrong_channels(
                    name, f"NMS decoder {i}", stream, f"{expected} ({words} the decoder's {na} anchors)", fix
                )
        if box.shape[:2] != cls.shape[:2]:
            return grids_differ(name, f"NMS decoder {i}", box, cls, "pair reg_layer and cls_layer of the same layer")
    return CheckResult.ok(name, f"{len(nms.bbox_decoders)} decoders each read 4 and classes values per anchor")


def anchors(name: str, nms: NmsOpConfig, model: ExportFacts, layout: HeadLayout) -> CheckResult:
    """An SSD op's anchors and box coding against the run's SSD config (``--ssd-config``, held to the export's
    own decode tail when its heads were found), field by field; anchors within float32 rounding (the HEF
    keeps them as float: hailort: hailort/libhailort/hef.proto, ProtoHEFSSDBboxDecoder)."""
    compiled, given = nms.ssd, model.ssd
    if compiled is None or given is None:
        return CheckResult.skipped(name, "needs an SSD op and --ssd-config")
    fix = "compile the HEF with the anchors and box coding of the export's SSD config (--ssd-config)"
    for field in ("centers_scale_factor", "bbox_dimensions_scale_factor", "box_indices", "background_class"):
        if getattr(compiled, field) != getattr(given, field):
            found, expected = getattr(compiled, field), getattr(given, field)
            return CheckResult.failed(name, f"SSD op {field}", found, f"{expected} (--ssd-config)", fix)
    if len(compiled.anchors) != len(given.anchors):
        return CheckResult.failed(
            name, "SSD op layers", len(compiled.anchors), f"{len(given.anchors)} (--ssd-config)", fix
        )
    for i, (ours, theirs) in enumerate(zip(compiled.anchors, given.anchors, strict=True)):
        flat = [(a, b) for pair, other in zip(ours, theirs, strict=False) for a, b in zip(pair, other, strict=True)]
        close = len(ours) == len(theirs) and all(abs(a - b) <= 1e-6 * max(1.0, abs(b)) for a, b in flat)
        if not close:
            return CheckResult.failed(
                name,
                f"SSD op layer {i} (largest grid first) anchors (w, h)",
                [tuple(round(v, 6) for v in a) for a in ours],
                f"{list(theirs)} (--ssd-config)",
                fix,
            )
    return CheckResult.ok(
        name, f"the SSD op's anchors and box coding are the SSD config's at all {len(given.anchors)} layers"
    )
