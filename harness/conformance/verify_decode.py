"""Check the harness decoder against an ONNX export's own decode tail.

The export is cut at its head tensors; the cut outputs, handed over channel-last like a Hailo
host's, go through :func:`harness.families.yolov8.decode.candidates` and the decoder of the export's head family.
The model's own decoded head output ``[1, 4 + nc, anchors]`` is the reference: its boxes and class
probabilities must match anchor for anchor, and NMS over it must keep the same detections. It is
computed by the model's decode tail (:func:`harness.inputs.onnx_graph.decode_tail`) from the same head
maps, which is what the full model computes, without running the backbone twice.

A YOLO26 export (reg_max 1, no DFL: :func:`harness.inputs.onnx_graph.find_yolo26_heads`) is verified
the same way with :mod:`harness.families.yolo26.decode`: its one-to-many head against the decoded head output,
its one-to-one head exported end to end against the export's own top-k rows ``(max_det, 6)``. An SSD
export (its anchors and box coding in ``config.ssd``, which no graph holds) is verified with
:mod:`harness.families.ssd.decode` against its own boxes and scores, the sigmoid put on its cut class maps as an SSD
HEF holds it (HailoRT's SSD op applies none).

When onnxruntime's dynamic quantization has put the DFL conv on 8-bit activations, the reference
runs that conv in float (:func:`harness.inputs.onnx_graph.dequantize_decode_tail`); otherwise its box
sides would be off by up to a sixth of a stride from the exact DFL any decoder computes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.backends.onnx.runner import DecodeTailRunner, OnnxRunner
from harness.core.detections import Detections, xywh_to_xyxy
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.decode.heads import decoder, head_layout
from harness.decode.layout import HeadLayout
from harness.decode.nms import above, nms
from harness.families.ssd import decode as ssd
from harness.families.yolo26.one2one.decode import decode as decode_one2one
from harness.families.yolov5 import decode as yolov5
from harness.families.yolov8 import decode as yolo
from harness.families.yolox import decode as yolox
from harness.inputs.onnx_graph import (
    HeadTensor,
    cut_at_heads,
    decode_tail,
    dequantize_decode_tail,
    export_heads,
    head_outputs,
    load_model,
    model_input,
)
from harness.inputs.preprocess import letterbox, load_image, to_nchw_float

# Largest differences still counted as agreement. Measured on yolov8n (640) and yolo11n (320) over
# 16 COCO images against the float-DFL reference: 1.2e-4 px (two float32 steps at 640) and
# 1.8e-7 (sigmoid rounding). The margins leave room for larger inputs.
BOX_TOLERANCE_PX = 1e-3
SCORE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class ImageAgreement:
    """How the decoded cut outputs of one image compare with the reference."""

    image: str
    max_box_diff_px: float
    max_score_diff: float
    detections: int
    reference_detections: int
    same_detections: bool


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


def same_detections(a: Detections, b: Detections, box_tolerance_px: float, score_tolerance: float) -> bool:
    """Whether two detection sets are the same up to the tolerances: each detection of one has
    exactly one partner in the other, of the same class, with box and score that close."""
    if len(a) != len(b):
        return False
    close = (
        (a.class_ids[:, None] == b.class_ids[None, :])
        & (np.abs(a.boxes[:, None, :] - b.boxes[None, :, :]).max(axis=2, initial=0) <= box_tolerance_px)
        & (np.abs(a.scores[:, None] - b.scores[None, :]) <= score_tolerance)
    )
    return bool((close.sum(axis=1) == 1).all() and (close.sum(axis=0) == 1).all())


def _partners(a: Detections, b: Detections, reach_px: float = 1.0) -> np.ndarray:
    """For each detection of ``a`` the index of its partner in ``b``: same class, box within
    ``reach_px``, nearest first, each of ``b`` taken once; -1 for none."""
    distance = np.abs(a.boxes[:, None, :] - b.boxes[None, :, :]).max(axis=2, initial=0.0)
    distance[(a.class_ids[:, None] != b.class_ids[None, :]) | (distance > reach_px)] = np.inf
    partner = np.full(len(a), -1)
    taken = np.zeros(len(b), dtype=bool)
    for i in np.argsort(distance.min(axis=1, initial=np.inf), kind="stable"):
        row = np.where(taken, np.inf, distance[i])
        j = int(row.argmin()) if len(b) else -1
        if j >= 0 and np.isfinite(row[j]):
            partner[i], taken[j] = j, True
    return partner


def _paired_differences(a: Detections, b: Detections, cut: float, spare: float) -> tuple[float, float]:
    """The largest box and score differences between the detections of ``a`` and ``b`` scored above
    ``cut``, each paired with its partner in the other; infinite when one above ``cut + spare`` has
    no partner (those within ``spare`` of the cut may have fallen on the other side of it)."""
    a, b = a.select(a.scores > cut - spare), b.select(b.scores > cut - spare)
    forward, backward = _partners(a, b), _partners(b, a)
    if (a.scores[forward < 0] > cut + spare).any() or (b.scores[backward < 0] > cut + spare).any():
        return math.inf, math.inf
    paired = forward >= 0
    if not paired.any():
        return 0.0, 0.0
    boxes = np.abs(a.boxes[paired] - b.boxes[forward[paired]]).max(initial=0)
    return float(boxes), float(np.abs(a.scores[paired] - b.scores[forward[paired]]).max(initial=0))


def _one_to_one_agreement(
    image: str, outputs: dict[str, np.ndarray], specs: dict[str, Any], config: DecodeConfig, reference: np.ndarray
) -> ImageAgreement:
    """A YOLO26 export's own top-k ``(max_det, 6)`` rows (x1, y1, x2, y2, score, class) against
    :func:`~harness.families.yolo26.one2one.decode.decode` at the same number of rows and no threshold, then
    both above the threshold. Rows scored within rounding of the last row may take each other's place
    (the export's sigmoid and top-k round otherwise), so the rows compared are those clearly above it."""
    own = Detections(reference[:, :4], reference[:, 4], reference[:, 5].astype(np.int64))
    ours = decode_one2one(outputs, specs, replace(config, max_total=len(reference), score_threshold=0.0))
    last = float(own.scores.min()) if len(own) else 0.0
    box_diff, score_diff = _paired_differences(ours, own, last, 1e-5)
    kept, expected = decode_one2one(outputs, specs, config), own.select(above(own.scores, config.score_threshold))
    return ImageAgreement(
        image, box_diff, score_diff, len(kept), len(expected), same_detections(kept, expected, BOX_TOLERANCE_PX, 1e-5)
    )


def _anchored_rows(reference: np.ndarray, layout: HeadLayout) -> tuple[np.ndarray, np.ndarray]:
    """A YOLOv5 or YOLOX export's rows ``(rows, 5 + nc)`` (per stride, anchor by anchor, its cells: xywh in
    input pixels, objectness, classes) as the harness's candidates lie: per stride, cell by cell, anchor by
    anchor; boxes xyxy and scores objectness x class (ultralytics/yolov5: models/yolo.py, ``Detect``;
    utils/general.py, ``non_max_suppression``; Megvii-BaseDetection/YOLOX: yolox/models/yolo_head.py,
    ``decode_outputs``, one row per cell)."""
    blocks, start = [], 0
    for level in layout.levels:
        na = max(len(level.anchors), 1)
        block = reference[start : start + na * level.cells]
        blocks.append(block.reshape(na, level.cells, -1).transpose(1, 0, 2).reshape(na * level.cells, -1))
        start += na * level.cells
    if start != len(reference):
        raise HarnessError(
            f"export rows: {len(reference)}, expected {start} (anchors x cells over the strides of the heads)"
        )
    rows = np.concatenate(blocks).astype(np.float32, copy=False)
    return xywh_to_xyxy(rows[:, :4]), np.ascontiguousarray(rows[:, 5:] * rows[:, 4:5])


def _class_maps_sigmoided(outputs: dict[str, np.ndarray], layout: HeadLayout) -> dict[str, np.ndarray]:
    """The cut outputs with the sigmoid on each class map (float32, as onnxruntime's Sigmoid gives it)."""
    classes = {level.classes.name for level in layout.levels}
    return {
        name: (1 / (1 + np.exp(-value, dtype=np.float32))).astype(np.float32) if name in classes else value
        for name, value in outputs.items()
    }


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
    if found.family.anchor_based and not config.anchors:  # the anchors the export's tail multiplies
        config = replace(config, anchors=tuple(h.anchors for h in heads))
    reference_model = dequantize_decode_tail(model) if found.family is HeadFamily.YOLOV8 else model
    images = []
    with (
        OnnxRunner(cut_at_heads(model, heads), threads) as cut,
        DecodeTailRunner(decode_tail(reference_model, heads), threads) as tail,
    ):
        specs = cut.output_specs
        anchors = config.ssd.anchors if config.ssd is not None else config.anchors
        layout = head_layout(found.family, specs, input_hw, anchors)
        for path in image_paths:
            feed = {input_name: to_nchw_float(letterbox(load_image(path), input_hw)[0])}
            outputs = cut.infer(feed)
            reference = tail.infer(outputs)
            if found.family is HeadFamily.SSD:  # the sigmoid on the class maps, inside an SSD HEF
                outputs = _class_maps_sigmoided(outputs, layout)
            if found.family is HeadFamily.YOLO26_ONE2ONE:  # end to end: (max_det, 6)
                images.append(_one_to_one_agreement(Path(path).name, outputs, specs, config, reference))
                continue
            if found.family is HeadFamily.YOLOV5:
                boxes, scores = yolov5.candidates(outputs, layout, config)
                ref_boxes, ref_scores = _anchored_rows(reference, layout)
            elif found.family is HeadFamily.YOLOX:
                boxes, scores = yolox.candidates(outputs, layout, config)
                ref_boxes, ref_scores = _anchored_rows(reference, layout)
            elif found.family is HeadFamily.SSD:
                boxes, scores = ssd.candidates(outputs, layout, config)
                ref_boxes, ref_scores = ssd.export_rows(reference, config)
            else:
                boxes, scores = yolo.candidates(outputs, layout, config)
                ref_boxes = xywh_to_xyxy(reference[:4].T)
                ref_scores = np.ascontiguousarray(reference[4:].T, dtype=np.float32)
            if boxes.shape != ref_boxes.shape or scores.shape != ref_scores.shape:
                raise HarnessError(
                    f"decoded candidates: boxes {boxes.shape}, scores {scores.shape}; expected the reference's "
                    f"{ref_boxes.shape} and {ref_scores.shape} (one per anchor of {tail.output_name!r})"
                )
            detections = decoder(found.family)(outputs, specs, config)
            expected = nms(ref_boxes, ref_scores, config)
            images.append(
                ImageAgreement(
                    image=Path(path).name,
                    max_box_diff_px=float(np.abs(boxes - ref_boxes).max(initial=0)),
                    max_score_diff=float(np.abs(scores - ref_scores).max(initial=0)),
                    detections=len(detections),
                    reference_detections=len(expected),
                    same_detections=same_detections(detections, expected, box_tolerance_px, score_tolerance),
                )
            )
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
    """What the decoder of ``family`` does after the heads, as ``format_report`` says it: YOLO26's
    one-to-one head keeps its best (anchor, class) pairs and runs no NMS (:func:`decode_one2one`)."""
    threshold = f"score threshold {config.score_threshold}"
    if family is HeadFamily.YOLO26_ONE2ONE:
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
    selection = "top-k" if report.family is HeadFamily.YOLO26_ONE2ONE else "NMS"
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
