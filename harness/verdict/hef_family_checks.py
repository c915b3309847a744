"""What the static HEF checks ask of the family whose NMS op a HEF holds (:class:`FamilyChecks`, each
family's ``harness/families/<family>/checks.py``), found by the op's kind (``FamilyDescriptor.nms_op``), and
the checks its families share: an op's decoders each pairing a box and a class stream of one grid."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, cast

from harness.core.checks import CheckResult
from harness.families import by_nms_op, part
from harness.inputs.hef.nms_op import BboxDecoder, NmsOpConfig
from harness.inputs.hef.reader import StreamInfo

if TYPE_CHECKING:
    from harness.decode.layout import HeadLayout
    from harness.inputs.export_facts import ExportFacts


class FamilyChecks(Protocol):
    """A family's static checks of its NMS op (``harness/families/<family>/checks.py``)."""

    def anchored_maps(self) -> bool:
        """Whether the op reads one anchored map per stride (every anchor's box, objectness and classes)."""
        ...

    def strided_decoders(self, nms: NmsOpConfig) -> tuple[BboxDecoder, ...]:
        """The op's decoders whose stride sets the grid of the streams they read."""
        ...

    def decoder_pairing(self, name: str, nms: NmsOpConfig, streams: Mapping[str, StreamInfo]) -> CheckResult:
        """The check ``name`` of the streams each of the op's decoders reads (``streams``: the HEF's outputs)."""
        ...

    def anchors(self, name: str, nms: NmsOpConfig, model: ExportFacts, layout: HeadLayout) -> CheckResult:
        """The check ``name`` of the op's anchors (and box coding) against the export ``model``'s, its heads
        laid out as ``layout`` (the op being of the export's family)."""
        ...


def family_checks(kind: str) -> FamilyChecks:
    """The checks of the family whose HEF holds an NMS op of ``kind``; for a kind of no family's
    (``iou``, ``yolov5_seg``), an op's checks of box and class streams without anchors."""
    family = by_nms_op(kind)
    if family is None:
        return _NoFamily()
    return cast(FamilyChecks, part(family.family, "checks"))


def pair_box_and_class(name: str, nms: NmsOpConfig, streams: Mapping[str, StreamInfo]) -> CheckResult:
    """An op's decoders each read a box stream and a class stream (of ``classes`` channels) of one grid."""
    for d in nms.bbox_decoders:
        box, cls = streams.get(d.box_stream), streams.get(d.class_stream)
        if box is None or cls is None:
            missing = d.box_stream if box is None else d.class_stream
            return stream_missing(
                name, f"NMS decoder stride {d.stride}", missing, "name existing end-node layers as reg_layer/cls_layer"
            )
        if box.shape[:2] != cls.shape[:2]:
            fix = "pair reg_layer and cls_layer of the same scale in the nms_postprocess JSON"
            return grids_differ(name, f"NMS decoder stride {d.stride}", box, cls, fix)
        if cls.shape[2] != nms.classes:
            fix = "use the class conv (nc channels) as cls_layer and the box conv as reg_layer"
            return wrong_channels(name, "class", cls, f"{nms.classes} (NMS classes)", fix)
    return CheckResult.ok(name, f"{len(nms.bbox_decoders)} decoders pair box and class streams of the same grid")


def stream_missing(name: str, decoder: str, stream: object, fix: str) -> CheckResult:
    """The failed check ``name``: ``decoder`` reads ``stream`` (its repr or its name), which is no output of the
    HEF."""
    return CheckResult.failed(name, decoder, f"stream {stream} not among the outputs", "an output of the HEF", fix)


def wrong_channels(name: str, what: str, stream: StreamInfo, expected: str, fix: str) -> CheckResult:
    """The failed check ``name``: ``what``'s stream has other than the ``expected`` channels."""
    return CheckResult.failed(name, f"{what} stream {stream.name} channels", stream.shape[2], expected, fix)


def grids_differ(name: str, decoder: str, box: StreamInfo, cls: StreamInfo, fix: str) -> CheckResult:
    """The failed check ``name``: ``decoder``'s box and class streams are of different grids."""
    found = f"box {box.name} {box.shape[0]}x{box.shape[1]} with class {cls.name} {cls.shape[0]}x{cls.shape[1]}"
    return CheckResult.failed(name, f"{decoder} pairing", found, "box and class layers of the same grid", fix)


def no_anchored_maps() -> bool:
    """No anchored maps."""
    return False


def every_decoder(nms: NmsOpConfig) -> tuple[BboxDecoder, ...]:
    """Every decoder: its streams on the grid of its stride."""
    return nms.bbox_decoders


def no_anchors(name: str, nms: NmsOpConfig, model: ExportFacts, layout: HeadLayout) -> CheckResult:
    """The anchors check of an op without anchors: none to check."""
    return CheckResult.skipped(name, f"a {nms.kind} NMS op has no anchors")


class _NoFamily:
    """The checks of an NMS op of no family's: box and class streams per stride, no anchors."""

    anchored_maps = staticmethod(no_anchored_maps)
    strided_decoders = staticmethod(every_decoder)
    decoder_pairing = staticmethod(pair_box_and_class)
    anchors = staticmethod(no_anchors)
