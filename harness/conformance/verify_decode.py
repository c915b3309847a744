"""Check the harness decoder against an ONNX export's own decode tail.

The export is cut at its head tensors; the cut outputs, handed over channel-last like a Hailo
host's, go through :func:`harness.families.yolov8.decode.candidates` and the decoder of the export's head family.
The model's own decoded head output ``[1, 4 + nc, anchors]`` is the reference: its boxes and class
probabilities must match anchor for anchor, and NMS over it must keep the same detections. It is
computed by the model's decode tail (:func:`harness.inputs.onnx_graph.decode_tail`) from the same head
maps, which is what the full model computes, without running the backbone twice.

A YOLO26 export (reg_max 1, no DFL: :func:`harness.families.yolo26.onnx.find_yolo26_heads`) is verified
the same way with :mod:`harness.families.yolo26.decode`: its one-to-many head against the decoded head output,
its one-to-one head exported end to end against the export's own top-k rows ``(max_det, 6)``. An SSD
export (its anchors and box coding in ``config.ssd``, which no graph holds) is verified with
:mod:`harness.families.ssd.decode` against its own boxes and scores, the sigmoid put on its cut class maps as an SSD
HEF holds it (HailoRT's SSD op applies none). Each family's reference is its ``scenes`` part
(:class:`~harness.conformance.scenes.FamilyScenes`: ``export_reference`` and ``agreement``).

When onnxruntime's dynamic quantization has put the DFL conv on 8-bit activations, the reference
runs that conv in float (:func:`harness.inputs.onnx_graph.dequantize_decode_tail`); otherwise its box
sides would be off by up to a sixth of a stride from the exact DFL any decoder computes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.backends.onnx.runner import DecodeTailRunner, OnnxRunner
from harness.conformance.agreement import (
    BOX_TOLERANCE_PX,
    SCORE_TOLERANCE,
    ImageAgreement,
    VerifyFrame,
)
from harness.conformance.scenes import family_scenes
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.decode.heads import family_anchors, head_layout
from harness.decode.layout import HeadLayout
from harness.families import descriptor
from harness.inputs.onnx_graph import (
    HeadTensor,
    cut_at_heads,
    decode_tail,
    export_heads,
    head_outputs,
    load_model,
    model_input,
)
from harness.inputs.preprocess import letterbox, load_image, to_nchw_float


@dataclass(frozen=True)
class VerifyReport:
    model: str
    input_hw: tuple[int, int]
    family: HeadFamily
    heads: tuple[HeadTensor, ...]
    layout: HeadLayout
    reference_output: str
    tail_dequantized: bool
    config: DecodeConfig
    box_tolerance_px: float
    score_tolerance: float
    images: tuple[ImageAgreement, ...]

    @property
    def max_box_diff_px(self) -> float:
        return max((i.max_box_diff_px for i in self.images), default=0.0)

    @property
    def max_score_diff(self) -> float:
        return max((i.max_score_diff for i in self.images), default=0.0)

    @property
    def detections_identical(self) -> bool:
        return all(i.same_detections for i in self.images)

    @property
    def ok(self) -> bool:
        return (
            bool(self.images)
            and self.max_box_diff_px <= self.box_tolerance_px
            and self.max_score_diff <= self.score_tolerance
            and self.detections_identical
        )


def verify_decode(
    onnx_path: str | os.PathLike[str],
    image_paths: Sequence[str | os.PathLike[str]],
    end_nodes: Sequence[str] | None = None,
    config: DecodeConfig | None = None,
    box_tolerance_px: float = BOX_TOLERANCE_PX,
    score_tolerance: float = SCORE_TOLERANCE,
    threads: int | None = None,
) -> VerifyReport:
    """Decode the cut outputs of each letterboxed image and compare with the full head output.

    ``end_nodes`` name the head nodes (or tensors) instead of finding them by structure;
    ``config`` defaults to :class:`DecodeConfig` at the model's input size; an SSD export needs its
    ``config.ssd``.
    """
    if not image_paths:
        raise HarnessError("verify-decode: no images given; expected at least one")
    model = load_model(onnx_path)
    input_name, input_hw = model_input(model)
    config = config or DecodeConfig(input_hw=input_hw)
    if tuple(config.input_hw) != input_hw:
        raise HarnessError(f"decode config: input_hw {config.input_hw}, expected the model input size {input_hw}")
    found = export_heads(model, end_nodes, config.ssd)
    heads = found.heads
    reference = family_scenes(found.family)
    reference_model, config = reference.export_reference(model, heads, config)
    images = []
    with (
        OnnxRunner(cut_at_heads(model, heads), threads) as cut,
        DecodeTailRunner(decode_tail(reference_model, heads), threads) as tail,
    ):
        specs = cut.output_specs
        layout = head_layout(found.family, specs, input_hw, family_anchors(found.family, config))
        for path in image_paths:
            feed = {input_name: to_nchw_float(letterbox(load_image(path), input_hw)[0])}
            outputs = cut.infer(feed)
            frame = VerifyFrame(
                Path(path).name,
                outputs,
                specs,
                layout,
                config,
                tail.infer(outputs),
                tail.output_name,
                box_tolerance_px,
                score_tolerance,
            )
            images.append(reference.agreement(frame))
    return VerifyReport(
        model=os.fspath(onnx_path),
        input_hw=input_hw,
        family=found.family,
        heads=heads,
        layout=layout,
        reference_output=", ".join(head_outputs(model)),
        tail_dequantized=reference_model is not model,
        config=config,
        box_tolerance_px=box_tolerance_px,
        score_tolerance=score_tolerance,
        images=tuple(images),
    )


def report_as_dict(report: VerifyReport) -> dict[str, Any]:
    """Plain JSON-ready data: every field, plus the overall figures and ``ok``."""
    data = asdict(report)
    data["config"]["mode"] = report.config.mode.value
    data.update(
        max_box_diff_px=report.max_box_diff_px,
        max_score_diff=report.max_score_diff,
        detections_identical=report.detections_identical,
        ok=report.ok,
    )
    return data


def decode_words(family: HeadFamily, config: DecodeConfig) -> str:
    """What the decoder of ``family`` does after the heads, as ``format_report`` says it: an end-to-end
    one-to-one head keeps its best (anchor, class) pairs and runs no NMS (:func:`decode_one2one`)."""
    threshold = f"score threshold {config.score_threshold}"
    if descriptor(family).end_to_end:
        return f"top-{config.max_total} (anchor, class) pairs of the one-to-one head, no NMS, {threshold}"
    return f"{config.mode.value} NMS, {threshold}, IoU threshold {config.iou_threshold}"


def format_report(report: VerifyReport) -> str:
    cfg = report.config
    height, width = report.input_hw
    heads = {head.tensor: head for head in report.heads}
    lines = [
        f"verify-decode {report.model}: input {height}x{width}, {len(report.images)} images: "
        + ("OK" if report.ok else "DISAGREES"),
        "heads:",
    ]
    for level in report.layout.levels:
        (h, w), box, cls = level.grid, heads[level.box.name], heads[level.classes.name]
        if level.anchored:
            sizes = ", ".join(f"{aw:g}x{ah:g}" for aw, ah in level.anchors)
            lines.append(
                f"  stride {level.stride:>2} grid {h}x{w}: anchored {box.tensor!r} ({box.channels} ch, node "
                f"{box.node!r}), anchors {sizes}"
            )
            continue
        lines.append(
            f"  stride {level.stride:>2} grid {h}x{w}: box {box.tensor!r} ({box.channels} ch, node "
            f"{box.node!r}), class {cls.tensor!r} ({cls.channels} ch, node {cls.node!r})"
        )
    selection = "top-k" if descriptor(report.family).end_to_end else "NMS"
    tail = ", DFL conv run in float instead of on 8-bit activations" if report.tail_dequantized else ""
    lines += [
        f"reference: {report.reference_output!r} of the model's decode tail, run on the cut heads{tail}",
        f"decode: {decode_words(report.family, cfg)}",
        f"max box difference {report.max_box_diff_px:.3g} px (tolerance {report.box_tolerance_px:g}), "
        f"max score difference {report.max_score_diff:.3g} (tolerance {report.score_tolerance:g})",
        f"detections after {selection} identical on {sum(i.same_detections for i in report.images)}/"
        f"{len(report.images)} images",
    ]
    for i in report.images:
        verdict = "same" if i.same_detections else "DIFFERENT"
        lines.append(
            f"  {i.image}: box {i.max_box_diff_px:.3g} px, score {i.max_score_diff:.3g}, "
            f"detections {i.detections} vs reference {i.reference_detections}: {verdict}"
        )
    return "\n".join(lines)
