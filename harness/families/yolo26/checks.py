"""The static checks of either YOLO26 head's NMS op (:class:`~harness.verdict.hef_family_checks.FamilyChecks`).
Its HEF holds none: Ultralytics compiles YOLO26 without an NMS op (ultralytics: ultralytics/engine/exporter.py,
``export_hailo``), and no NMS kind is YOLO26's (``FamilyDescriptor.nms_op``), so the checks never ask these; they
answer as for an op of box and class streams (reg_max 1) without anchors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from harness.core.checks import CheckResult
from harness.inputs.hef.nms_op import BboxDecoder, NmsOpConfig
from harness.inputs.hef.reader import StreamInfo
from harness.verdict.hef_family_checks import no_anchors, pair_box_and_class

if TYPE_CHECKING:
    from harness.decode.layout import HeadLayout
    from harness.inputs.export_facts import ExportFacts


def anchored_maps() -> bool:
    """No anchored maps."""
    return False


def strided_decoders(nms: NmsOpConfig) -> tuple[BboxDecoder, ...]:
    """Every decoder: its box and class streams on the grid of its stride."""
    return nms.bbox_decoders


def decoder_pairing(name: str, nms: NmsOpConfig, streams: Mapping[str, StreamInfo]) -> CheckResult:
    """Each decoder's box and class streams: of one grid, the class stream of ``classes`` channels."""
    return pair_box_and_class(name, nms, streams)


def anchors(name: str, nms: NmsOpConfig, model: ExportFacts, layout: HeadLayout) -> CheckResult:
    """None to check: the heads are anchor-free."""
    return no_anchors(name, nms)
