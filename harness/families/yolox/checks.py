"""YOLOX's static checks of its HEF's NMS op (:class:`~harness.verdict.hef_family_checks.FamilyChecks`):
per stride a box, an objectness and a class stream of one grid, no anchors
(hailort: libhailort/src/net_flow/ops/yolox_post_process.hpp)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.core.checks import CheckResult
from harness.inputs.hef.nms_op import NmsOpConfig
from harness.inputs.hef.reader import StreamInfo
from harness.verdict.hef_family_checks import every_decoder as strided_decoders
from harness.verdict.hef_family_checks import no_anchored_maps as anchored_maps
from harness.verdict.hef_family_checks import no_anchors as anchors
from harness.verdict.hef_family_checks import stream_missing, wrong_channels

__all__ = ["anchored_maps", "anchors", "decoder_pairing", "strided_decoders"]


def decoder_pairing(name: str, nms: NmsOpConfig, streams: Mapping[str, StreamInfo]) -> CheckResult:
    """A YOLOX NMS op's decoders: per stride a box stream of 4 channels, an objectness stream of 1 and a
    class stream of ``classes``, on one grid (hailort: libhailort/src/net_flow/ops/yolox_post_process.cpp,
    ``validate_params`` holds the three layers to one grid; yolox_post_process.hpp reads 4 box values, 1
    objectness and ``classes`` class values per cell)."""
    for d in nms.bbox_decoders:
        roles = (
            ("box", d.box_stream, 4),
            ("objectness", d.objectness_stream, 1),
            ("class", d.class_stream, nms.classes),
        )
        found = {role: streams.get(stream) for role, stream, _ in roles}
        for role, stream, channels in roles:
            info = found[role]
            if info is None:
                return stream_missing(
                    name,
                    f"NMS decoder stride {d.stride} {role} layer",
                    repr(stream),
                    "name existing end-node layers as reg_layer, objectness_layer and cls_layer",
                )
            if info.shape[2] != channels:
                return wrong_channels(
                    name,
                    f"NMS decoder stride {d.stride} {role}",
                    info,
                    f"{channels} (the {role} conv{'; NMS classes' if role == 'class' else ''})",
                    "name the box conv (4 channels) reg_layer, the objectness conv (1) objectness_layer and the class "
                    "conv (nc) cls_layer in the nms_postprocess JSON",
                )
        grids = {role: info.shape[:2] for role, info in found.items() if info is not None}
        if len(set(grids.values())) != 1:
            said = ", ".join(f"{role} {h}x{w}" for role, (h, w) in grids.items())
            return CheckResult.failed(
                name,
                f"NMS decoder stride {d.stride} pairing",
                said,
                "box, objectness and class layers of the same grid",
                "give each decoder the three layers of one scale in the nms_postprocess JSON",
            )
    return CheckResult.ok(name, f"{len(nms.bbox_decoders)} decoders each read box, objectness and class of one grid")
