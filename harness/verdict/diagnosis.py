"""Likely causes of a bad run, from what was measured. The rules are data: each names the evidence
it needs, a predicate over :class:`Evidence`, the cause it points to and the fix. Adding a failure
mode is adding a :class:`Rule` to :data:`RULES`. Rules are listed most specific first (a signature
only one mistake leaves before a symptom many share), and :func:`diagnose` keeps that order.
The evidence itself is measured in :mod:`harness.verdict.diagnosis_evidence`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from harness.conformance import words as misreadings
from harness.conformance.words import FCR_CHANNEL_FIRST, PAIRED_ACROSS_GRIDS, SIXTEEN_AS_EIGHT
from harness.verdict.diagnosis_evidence import MIN_BOXES, Evidence
from harness.verdict.golden import DEFAULT_TOLERANCES
from harness.verdict.misreading_fixes import FIX_CHANNEL_LAST, FIX_SIGMOID_ONCE, FIX_SIXTEEN_BIT, REPRODUCED_FIXES
from harness.verdict.score_shift import common_shift

SIGMOID_0, SIGMOID_1 = 0.5, 1 / (1 + math.exp(-1))  # a sigmoid over probabilities lands in [0.5, 0.731]


@dataclass(frozen=True)
class Rule:
    """``cause`` is a sentence formatted with the evidence fields; ``needs`` the fields that must
    have been measured for ``holds`` to be asked (so ``holds`` reads them as numbers, never None;
    it takes :class:`Evidence`, typed ``Any`` for that reason)."""

    name: str
    cause: str
    needs: tuple[str, ...]
    holds: Callable[[Any], bool]
    fix: str


@dataclass(frozen=True)
class Finding:
    name: str
    cause: str
    evidence: str
    fix: str


def _double_sigmoid(e: Evidence) -> bool:
    assert e.min_score is not None and e.max_score is not None
    # Scores through a second sigmoid start at sigmoid(0) = 0.5, and those that passed the threshold t
    # first at sigmoid(t): a floor above t that no score goes under is the evidence (a threshold of
    # 0.5 included, up to t ~ 0.66 where sigmoid(t) falls below t).
    # A second sigmoid before the NMS at t = 0.5 lets every cell through, all scored in [0.5, 0.731]:
    # a flood against the reference with scores only there is the evidence then.
    floor = max(SIGMOID_0, 1 / (1 + math.exp(-e.score_threshold)))
    inside = e.n_boxes >= MIN_BOXES and e.max_score <= SIGMOID_1 + 1e-4
    floored = e.score_threshold < floor and e.min_score >= floor - 1e-6
    flood = (
        e.min_score >= SIGMOID_0 - 1e-6
        and e.reference_boxes_per_image is not None
        and e.boxes_per_image >= 3 * max(e.reference_boxes_per_image, 1.0)  # as box_flood's
    )
    return inside and (floored or flood)


_CALIBRATE_ON_THE_CLASSES = (
    "calibrate on images of the task that show the classes (e.g. the training or validation images), "
    "recompile, and check that the class outputs' limvals_max in hailo-harness inspect is near 1"
)


def _score_cap(e: Evidence) -> bool:
    assert e.max_score is not None and e.at_cap is not None
    reference_higher = e.reference_max_score is None or e.reference_max_score > e.max_score + 0.02
    return (
        e.score_ceiling is None  # a known ceiling is held to the reference's scores (_capped_below_reference)
        and e.max_score < 0.9
        and e.at_cap >= max(MIN_BOXES, 0.1 * e.n_boxes)
        and not _double_sigmoid(e)
        and reference_higher
    )


# The share of the reference's boxes a ceiling must cut before it is named: a clean in-domain calibration
# clips at most the few boxes of the evaluated set brighter than any of its own (measured on the project's
# exports: 0 to 1.7% of them); an off-domain one 15 to 100%.
CAPPED_SHARE = 0.05


def _capped_below_reference(e: Evidence) -> bool:
    """The HEF's highest representable score is under scores the float model gives on these images, for
    at least :data:`CAPPED_SHARE` of its boxes (one at least); a ceiling under the threshold is the rule
    before's."""
    assert e.score_ceiling is not None and e.reference_above_ceiling is not None and e.reference_n_boxes is not None
    return e.score_ceiling >= e.score_threshold and e.reference_above_ceiling >= max(
        1.0, CAPPED_SHARE * e.reference_n_boxes
    )


def _normalised_twice(e: Evidence) -> bool:
    """The reference's boxes gone although their float scores are ones the path can represent (with a
    known ceiling, those under it: a cap under the threshold also leaves no box, and is no near-black
    input): the path returns at most a quarter as many boxes, at most 5% of the reference's are found, and
    most of the path's own lie nowhere the reference has one (what a near-black input still finds, a few faint
    boxes, is found nowhere else; a path whose few boxes are the reference's strongest, all on them, lost its
    weaker scores instead, as logits read as scores do)."""
    assert e.reference_n_boxes is not None and e.matched is not None and e.class_flipped is not None
    representable = e.reference_n_boxes - (e.reference_above_ceiling or 0)
    found = e.matched + e.class_flipped
    few = representable >= MIN_BOXES and e.n_boxes <= 0.25 * representable and found <= 0.05 * representable
    return few and found <= 0.5 * e.n_boxes


def _host_nms_missing(e: Evidence) -> bool:
    """More boxes than the reference, most of them the reference's once an NMS runs over them: twice as many boxes
    and twice the matched share after it, or, where the derived agreement floor was measured, a run under that floor
    that an NMS over its own boxes lifts to it (few proposals overlap on images where the model finds little)."""
    assert e.reference_n_boxes is not None and e.n_boxes is not None and e.matched_share is not None
    assert e.path_nms_matched_share is not None
    if e.reference_n_boxes < MIN_BOXES:
        return False
    doubled = e.n_boxes >= 2 * e.reference_n_boxes and e.path_nms_matched_share >= max(0.5, 2 * e.matched_share)
    floor = e.agreement_floor
    lifted = floor is not None and e.n_boxes > e.reference_n_boxes and e.matched_share < floor
    return doubled or (lifted and floor is not None and e.path_nms_matched_share >= floor)


def _dataset_class_order(e: Evidence) -> bool:
    assert e.truth_matched is not None and e.truth_class_flipped is not None
    paths_agree = e.class_flipped is None or e.matched is None or e.class_flipped <= e.matched
    return (
        e.truth_class_flipped > e.truth_matched
        and e.truth_class_flipped >= 0.3 * max(e.n_ground_truth, MIN_BOXES)
        and paths_agree
    )


_REPRODUCED_NEEDS = ("reproduced_misreading", "reproduction", "reproduction_frames", "differing_frames")


def _reproduced(name: str) -> Rule:
    """The rule naming a host decoder by the misreading ``name`` reproduced on its own frames."""
    return Rule(
        name=name,
        cause="{path}'s host decoder returns, on each of the {reproduction_frames} frames run again, what the "
        "head family's reference decoder returns from the same raw outputs with {reproduction} (its detections "
        "differ from the reference decoder's on {differing_frames} of them)",
        needs=_REPRODUCED_NEEDS,
        holds=lambda e: e.reproduced_misreading == name,
        fix=REPRODUCED_FIXES[name],
    )


def _failed_conformance(name: str, failure: str, fix: str) -> Rule:
    """The rule naming a host decoder by the ``failure`` it shows in the decoder conformance suite."""
    return Rule(
        name=name,
        cause="the host decoder fails the decoder conformance suite: {decoder_conformance}",
        needs=("decoder_conformance",),
        holds=lambda e: failure in e.decoder_conformance,
        fix=fix,
    )


def _above_reference(value: float, reference: float | None, factor: float, floor: float) -> bool:
    return value >= floor and (reference is None or value >= factor * reference)


# A mAP@0.5 loss without an interval to judge it by: as large as this is called a loss.
LOSS_UNMEASURED = 0.03


def _loss_shown(e: Evidence) -> bool:
    """The path's mAP@0.5 lies below the reference's by more than the baselines' default allowed drop beyond these
    images' own noise: the whole paired bootstrap interval below minus that drop, where one was measured (a loss the
    interval cannot tell from 0, or from a drop the gates allow, is none); else a point loss of
    :data:`LOSS_UNMEASURED` or more."""
    if e.map50_difference_high is not None:
        return e.map50_difference_high < -DEFAULT_TOLERANCES.map50_drop
    return e.reference_map50 is not None and e.reference_map50 - e.map50 >= LOSS_UNMEASURED


FIX_SIGMOID_INSIDE = (
    "compile the sigmoid into the HEF: change_output_activation(<class conv>, sigmoid) for each class conv in the "
    ".alls (HailoRT's YOLOv8 NMS op does not apply it); for raw outputs apply it on the host"
)


RULES: tuple[Rule, ...] = (
    # A host decoder's own frames reproduced by a known misreading: the mistake itself, before any symptom.
    *(_reproduced(name) for name in misreadings.REPRODUCED_NAMES),
    Rule(
        name="settings_differ",
        cause="{path} was measured under other settings than the reference path ({settings_differences}): the "
        "numbers cannot be compared, and the paths prepare or filter differently (e.g. plain resize in one, "
        "letterbox in the other)",
        needs=("settings_differences",),
        holds=lambda e: bool(e.settings_differences),
        fix="run every path under the same evaluation settings; a HEF's NMS settings are compiled in, so evaluate "
        "at the HEF's (hailo-harness inspect shows them)",
    ),
    # hailort: hailort/libhailort/include/hailo/hailort.h, HAILO_FORMAT_ORDER_FCR: [N, H, W, C] on the host
    _failed_conformance("fcr_read_channel_first", FCR_CHANNEL_FIRST, FIX_CHANNEL_LAST),
    _failed_conformance(
        "heads_paired_across_grids",
        PAIRED_ACROSS_GRIDS,
        "pair each box head with the class head of the same grid size (box: 4 x regression length channels, "
        "class: one per class), never by output name or list order",
    ),
    # ultralytics: ultralytics/engine/exporter.py (export_hailo: YOLO26's output layers a16_w16);
    # hailort: hailort/libhailort/include/hailo/hailort.h (HAILO_FORMAT_TYPE_UINT16: two bytes a value)
    _failed_conformance("sixteen_bit_read_as_eight", SIXTEEN_AS_EIGHT, FIX_SIXTEEN_BIT),
    Rule(
        name="nms_on_one_to_one",
        # ultralytics: ultralytics/nn/modules/head.py (``Detect.postprocess``: the one-to-one head's top-k,
        # no NMS); ultralytics/utils/nms.py (NMS for the one-to-many head only)
        cause="{path} returns {boxes} where {reference_path} returns {reference_boxes}, and its boxes are the "
        "reference's after an NMS per class ({nms_matched_share:.0%} matched, against {matched_share:.0%} "
        "without): an NMS was run over the one-to-one head, which is decoded by its top-k alone and keeps "
        "overlapping boxes that an NMS removes",
        needs=("nms_matched_share", "matched_share", "n_boxes", "reference_n_boxes", "reference_path"),
        holds=lambda e: (
            e.reference_n_boxes >= MIN_BOXES
            and e.n_boxes < e.reference_n_boxes
            # after that NMS the path agrees as a clean one must: the floor derived from its own noise (at most 0.9)
            and e.nms_matched_share >= min(0.9, e.agreement_floor if e.agreement_floor is not None else 0.9)
            and e.nms_matched_share >= e.matched_share + 0.1
        ),
        fix="decode YOLO26's one-to-one head by its top-k (the max_det anchors with the best class score, then the "
        "best (anchor, class) pairs among them, above the threshold), without NMS; NMS belongs to the one-to-many "
        "head only",
    ),
    Rule(
        name="host_nms_missing",
        # hailort: libhailort/src/net_flow/ops/yolov8_bbox_only_post_process.hpp and
        # yolov5_bbox_only_post_process.hpp (every proposal written, no threshold and no NMS: the host's)
        cause="{path} returns {boxes} where {reference_path} returns {reference_boxes}, and after an NMS per class "
        "most of its boxes are the reference's ({path_nms_matched_share:.0%} matched, against "
        "{matched_share:.0%} without): no NMS ran over its proposals, as when a bbox-only HEF's buffer (every "
        "proposal, the NMS left to the host) is read without the host's NMS",
        needs=("path_nms_matched_share", "matched_share", "n_boxes", "reference_n_boxes", "reference_path"),
        holds=_host_nms_missing,
        fix="run the NMS over a bbox-only HEF's proposals on the host (per class, at the run's IoU threshold: "
        "harness.decode.bbox_only.decode_bbox_only does), or compile the NMS op in full",
    ),
    Rule(
        name="box_distances_read_as_dfl",
        # ultralytics: ultralytics/nn/modules/head.py (``Detect``: reg_max 1 makes ``dfl`` an identity; the
        # 4 box channels are the distances); ultralytics/nn/modules/block.py (``DFL``: softmax, then the
        # integral against the bin indices 0 .. reg_max - 1)
        cause="{path}'s median box has no size (at least half of its {boxes} have no width or height, "
        "against {reference_boxes} of the reference's with a spread of {reference_box_size_spread:.0%}): every "
        "side's distance came out 0, as when the 4 box channels of a reg_max 1 head (the distances "
        "themselves) are read as DFL bins, one a side: the softmax of one bin is 1, its integral against "
        "the bin index 0 is 0",
        needs=("box_size_ratio", "reference_box_size_spread", "n_boxes", "reference_n_boxes"),
        holds=lambda e: e.box_size_ratio == 0 and e.n_boxes >= MIN_BOXES,
        fix="read a head of 4 box channels (YOLO26: reg_max 1) as the distances left, top, right, bottom in "
        "strides, with no softmax and no DFL; DFL is for box heads of 4 x reg_max bins (YOLOv8/YOLO11: 64)",
    ),
    Rule(
        name="sigmoid_missing",
        # hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.hpp, ``extract_detections``:
        # the op only de-quantises the class values; the sigmoid must be compiled into the HEF.
        cause="{outside_unit} of {n_boxes} scores lie outside [0, 1] (from {min_score:.3g} to {max_score:.3g}): "
        "the class values reach the NMS as logits, without a sigmoid",
        needs=("outside_unit", "n_boxes", "min_score", "max_score"),
        holds=lambda e: e.outside_unit > 0,
        fix=FIX_SIGMOID_INSIDE,
    ),
    Rule(
        name="sigmoid_missing",
        # hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.hpp, as above: the HEF's own quant info
        # says its NMS reads logits, however few scores left [0, 1] on these images
        cause="the NMS op of {path}'s HEF reads class outputs that hold logits ({class_logits}): the class values "
        "reach the NMS without a sigmoid",
        needs=("class_logits",),
        holds=lambda e: bool(e.class_logits),
        fix=FIX_SIGMOID_INSIDE,
    ),
    Rule(
        name="sigmoid_applied_twice",
        cause="all {n_boxes} scores lie in [{min_score:.3f}, {max_score:.3f}], inside [0.5, 0.731] = "
        "[sigmoid(0), sigmoid(1)], although the threshold is {score_threshold:g}: "
        "a sigmoid is applied to class values that are probabilities already",
        needs=("n_boxes", "min_score", "max_score", "score_threshold"),
        holds=_double_sigmoid,
        fix=FIX_SIGMOID_ONCE,
    ),
    Rule(
        name="score_cap",
        # Before any rule that explains "too few boxes": a cap under the operating threshold leaves
        # none, and the quantization range says so whatever the boxes look like.
        cause="every score of {path} is capped at {score_ceiling:.3f} (the highest its class outputs' "
        "quantization range can represent), below your threshold {score_threshold:g}: it returns {boxes} "
        "where {reference_path} returns {reference_boxes}, as after calibrating on images that show none "
        "of the classes",
        needs=("score_ceiling", "reference_n_boxes", "reference_path"),
        holds=lambda e: e.score_ceiling < e.score_threshold and e.reference_n_boxes >= MIN_BOXES,
        fix=_CALIBRATE_ON_THE_CLASSES,
    ),
    Rule(
        name="score_cap",
        # hailort: hailort/libhailort/include/hailo/quantization.hpp: values are clipped to
        # [limvals_min, limvals_max] of the output's calibrated range, so a score above the ceiling
        # comes out at it, however few of the path's boxes reach it.
        cause="{reference_above_ceiling} of the {reference_n_boxes} boxes of {reference_path} score above "
        "{score_ceiling:.3f}, the highest score {path}'s class outputs can represent (their quantization "
        "range's top, limvals_max), up to {reference_max_score:.3f}: the HEF cannot give the scores the float "
        "model gives, as after calibrating on images that show none of the classes",
        needs=(
            "score_ceiling",
            "reference_above_ceiling",
            "reference_max_score",
            "reference_n_boxes",
            "reference_path",
        ),
        holds=_capped_below_reference,
        fix=_CALIBRATE_ON_THE_CLASSES,
    ),
    Rule(
        name="score_cap",
        # hailort: hailort/libhailort/include/hailo/quantization.hpp: values are clipped to
        # [limvals_min, limvals_max] of the output's calibrated range.
        cause="{at_cap} of {n_boxes} scores stopped at the same highest value {max_score:.3f} (within 0.001), "
        "below 0.9: the class output's quantisation range ends there (its limvals_max), "
        "as after calibrating on images that show none of the classes",
        needs=("max_score", "at_cap", "n_boxes"),
        holds=_score_cap,
        fix=_CALIBRATE_ON_THE_CLASSES,
    ),
    Rule(
        name="input_normalised_twice",
        # mz: hailo_model_zoo/cfg/alls/generic/yolov8n.alls: normalization([0,0,0],[255,255,255]) in the HEF.
        cause="{path} returns {boxes} where {reference_path} returns {reference_boxes} on the same "
        "images, scored where its class outputs can represent them, and {matched} of its boxes sit on one of "
        "the reference's: the network sees a near-black input, as when the host divides by 255 and the HEF's "
        "normalization layer divides again",
        needs=("n_boxes", "reference_n_boxes", "reference_path", "matched", "class_flipped"),
        holds=_normalised_twice,
        fix="feed the HEF raw 0-255 uint8 RGB: its normalization([0, 0, 0], [255, 255, 255]) layer divides by "
        "255 already",
    ),
    Rule(
        name="yx_swapped",
        # hailort: hailort/libhailort/include/hailo/hailort.h, ``hailo_bbox_float32_t`` {y_min, x_min, y_max, x_max}
        cause="only {matched_share:.0%} of the boxes match the reference, but {swapped_matched_share:.0%} match "
        "once x and y are swapped: NMS records are read x-first, while HailoRT writes y_min, x_min, y_max, x_max",
        needs=("matched_share", "swapped_matched_share"),
        # swapped back, the boxes match as a clean run of the path does, less half (its blessed matched share: on
        # letterboxed images the swap cannot restore the boxes an image's edge cut), and at least twice as now
        holds=lambda e: (
            e.matched_share < 0.5
            and e.swapped_matched_share >= max(0.5 * (e.own_matched_share or 1.0), 2 * e.matched_share)
        ),
        fix="read HailoRT NMS records as (y_min, x_min, y_max, x_max, score), normalised to the model input",
    ),
    Rule(
        name="channels_swapped",
        cause="{matched_share:.0%} of the boxes match the reference, but {reversed_channels_matched_share:.0%} "
        "match when the path is fed the same images with red and blue exchanged: the host feeds BGR "
        "(e.g. OpenCV's cv2.imread) where the model expects RGB",
        needs=("matched_share", "reversed_channels_matched_share"),
        holds=lambda e: e.reversed_channels_matched_share >= max(0.5, e.matched_share + 0.2),
        fix="convert frames to RGB before inference (cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)), as the model "
        "was trained and calibrated on RGB",
    ),
    Rule(
        name="class_order",
        cause="{class_flipped} boxes sit where the reference has a box of another class, against {matched} with "
        "the same class: this path's class order differs from the reference's "
        "(e.g. 0 = smoke, 1 = fire against 0 = fire, 1 = smoke)",
        needs=("class_flipped", "matched", "reference_n_boxes"),
        holds=lambda e: (
            e.reference_n_boxes >= MIN_BOXES
            and e.class_flipped > e.matched
            and e.class_flipped >= 0.3 * e.reference_n_boxes
        ),
        fix="map dataset classes to model classes by name (--map-class DATASET=MODEL) and compile the HEF's NMS "
        "with the class order the model was trained with",
    ),
    Rule(
        name="dataset_class_order",
        cause="{truth_class_flipped} boxes sit on a ground-truth box of another class, against {truth_matched} on "
        "one of the same class, while the paths agree with each other: the dataset's class ids mean other "
        "classes than the model's (class map or label order)",
        needs=("truth_matched", "truth_class_flipped", "n_ground_truth"),
        holds=_dataset_class_order,
        fix="map dataset classes to model classes by name (the dataset yaml's names, no explicit map unless the "
        "names differ), and check the label files use the order the yaml names",
    ),
    Rule(
        name="dataset_class_order",
        cause="{path} maps the dataset's classes to the model's otherwise than its baseline was blessed with "
        "(model class of each dataset class: {class_map_change}): the dataset's class ids now mean other classes "
        "(its names reordered, or another class map), and every gate held to that baseline compares other classes",
        needs=("class_map_change",),
        holds=lambda e: bool(e.class_map_change),
        fix="map dataset classes to model classes by name (the dataset yaml's names, no explicit map unless the "
        "names differ), in the order the baseline was blessed with; bless again only where the order changed "
        "knowingly",
    ),
    Rule(
        name="input_not_normalised",
        # mz: hailo_model_zoo/cfg/alls/generic/yolov8n.alls: normalization([0,0,0],[255,255,255]) in the model.
        cause="{saturation:.0%} of {n_boxes} scores are at 0.99 or above and {boxes_per_image:.1f} boxes per image "
        "come back against {reference_boxes_per_image:.1f} on the reference: the network sees its input 255 times "
        "too bright, as when the model script has no normalization layer and the frames arrive as 0-255",
        needs=("saturation", "n_boxes", "boxes_per_image", "reference_boxes_per_image", "reference_saturation"),
        holds=lambda e: (
            e.n_boxes >= MIN_BOXES
            and e.saturation >= 0.8
            and e.reference_saturation < 0.5
            and e.boxes_per_image >= 3 * e.reference_boxes_per_image
            and e.boxes_per_image - e.reference_boxes_per_image >= 2
        ),
        fix="compile with normalization1 = normalization([0, 0, 0], [255, 255, 255]) in the .alls (hailo-harness "
        "compile writes it), so that the HEF takes raw 0-255 RGB",
    ),
    Rule(
        name="box_flood",
        cause="{boxes_per_image:.1f} boxes per image (at most {max_boxes_per_image}) against "
        "{reference_boxes_per_image:.1f} on the reference: the output is decoded as something it is not, "
        "e.g. the raw-head decoder run over an NMS buffer",
        needs=("boxes_per_image", "reference_boxes_per_image", "max_boxes_per_image"),
        holds=lambda e: (
            e.boxes_per_image >= 3 * e.reference_boxes_per_image
            and e.boxes_per_image - e.reference_boxes_per_image >= 2
        ),
        fix="decode by the output's spec: an NMS output (HAILO_NMS_BY_CLASS / BY_SCORE) with the NMS-buffer "
        "reader, raw head maps with the DFL decoder (hailo-harness inspect shows which the HEF has)",
    ),
    Rule(
        name="cells_flood",
        cause="{cells_share:.1%} of the raw grid cells have a class score at or above the threshold "
        "{score_threshold:g}: the class outputs are misread (head pairing, format order, de-quantisation)",
        needs=("cells_share", "score_threshold"),
        holds=lambda e: _above_reference(e.cells_share, e.reference_cells_share, factor=5, floor=0.05),
        fix="run hailo-harness verify-decode on the raw outputs against the ONNX, and check each output's "
        "format order and quantisation in hailo-harness inspect",
    ),
    Rule(
        name="score_saturation",
        cause="{saturation:.0%} of {n_boxes} scores are at 0.99 or above: the class values reach the sigmoid "
        "far too large, as when box channels are taken for class channels or values are not de-quantised",
        needs=("saturation", "n_boxes"),
        holds=lambda e: (
            e.n_boxes >= MIN_BOXES
            and e.saturation >= 0.3
            and (e.reference_saturation is None or e.saturation >= e.reference_saturation + 0.2)
        ),
        fix="check the head pairing (box outputs have 4 x regression-length channels, class outputs one per class) "
        "and that outputs are de-quantised exactly once; hailo-harness verify-decode compares with the ONNX",
    ),
    Rule(
        name="confidence_shift",
        # Ultralytics' Hailo integration measured YOLO26 scores ~0.05 lower on a Hailo-8L.
        cause="{path} finds the same boxes as {reference_path} with every score shifted by {score_drift:+.3f} "
        "(spread {score_drift_std:.3f}): {shifted_matched_share:.0%} match once the reference's scores are shifted "
        "so and those under the threshold left out ({matched_share:.0%} as they are): a confidence shift of the "
        "device, not different boxes; compare at the matching operating point (the threshold shifted by the same "
        "amount)",
        needs=("score_drift", "score_drift_std", "matched_share", "shifted_matched_share"),
        # The same boxes at the shifted operating point: a shift down loses the reference's boxes it moves
        # under the threshold (a shift up adds the path's), which quantisation loss does not explain.
        holds=lambda e: (
            e.shifted_matched_share >= 0.7
            and common_shift(e.score_drift, e.score_drift_std, 0.05, e.own_score_drift, e.score_scale)
        ),
        fix="hold the path at the reference's operating point (--score-threshold shifted by the drift), or "
        "recalibrate: a uniform shift comes from the class outputs' quantization, not from the decoding",
    ),
    Rule(
        name="box_regression_collapse",
        # Ultralytics' Hailo integration, Hailo-8L (July 2026): 128 calibration images made the DFC drop
        # to optimization level 1; classes and scores held while every box came out 374-383 px wide.
        cause="{path}'s boxes are {box_size_ratio:.1f}x the reference's in median size and alike "
        "(size spread {box_size_spread:.0%} against {reference_box_size_spread:.0%}), while it returns "
        "{boxes} against {reference_boxes} with scores up to {max_score:.2f}: the box branch's regression "
        "collapsed, as when the DFL convs are quantized on a range too coarse",
        needs=("box_size_ratio", "box_size_spread", "reference_box_size_spread", "max_score", "reference_n_boxes"),
        holds=lambda e: (
            (e.box_size_ratio >= 1.5 or e.box_size_ratio <= 0.67)
            and e.box_size_spread <= 0.6 * e.reference_box_size_spread
            and 0.5 * e.reference_n_boxes <= e.n_boxes <= 2 * e.reference_n_boxes
        ),
        fix="calibrate on at least 1024 images so the DFC keeps its optimization level, or give the box convs "
        "16-bit precision in the model script (quantization_param(<box convs>, precision_mode=a16_w16))",
    ),
    Rule(
        name="quantisation_loss",
        cause="mAP@0.5 {map50:.3f} against {reference_map50:.3f} on the reference while {matched_share:.0%} of the "
        "boxes agree: accuracy is lost in quantisation",
        needs=("map50", "reference_map50", "matched_share"),
        holds=lambda e: e.matched_share >= 0.5 and _loss_shown(e),
        fix="calibrate with more images of the task that show the classes (64 or more), or raise the "
        "optimization level in the .alls",
    ),
    Rule(
        name="host_decoder_not_reproduced",
        # Last: a symptom above names what the host decoder does where the reproduction cannot.
        cause="{path}'s host decoder differs from the head family's reference decoder on the same raw outputs on "
        "{differing_frames} of {reproduction_frames} frames run again, and {reproduction}",
        needs=_REPRODUCED_NEEDS,
        holds=lambda e: e.reproduced_misreading == "",
        fix="hold the host decoder to the conformance suite (harness.run_conformance, or pytest --decoder) and to "
        "hailo-harness verify-decode on the same raw outputs",
    ),
)
# How evidence fields read in a finding.
EVIDENCE_LABELS: Mapping[str, str] = {
    "score_threshold": "score threshold",
    "n_boxes": "boxes",
    "boxes_per_image": "boxes per image",
    "max_boxes_per_image": "most boxes in an image",
    "saturation": "share of scores >= 0.99",
    "outside_unit": "scores outside [0, 1]",
    "min_score": "lowest score",
    "max_score": "highest score",
    "at_cap": "scores within 0.001 of the highest",
    "cells_share": "share of cells above threshold",
    "reference_path": "reference",
    "reference_n_boxes": "reference boxes",
    "reference_boxes_per_image": "reference boxes per image",
    "reference_map50": "reference mAP@0.5",
    "map50": "mAP@0.5",
    "matched": "matched boxes",
    "class_flipped": "class-flipped boxes",
    "matched_share": "matched share",
    "swapped_matched_share": "matched share after swapping x and y",
    "settings_differences": "settings that differ",
    "truth_matched": "boxes on a ground-truth box of the same class",
    "truth_class_flipped": "boxes on a ground-truth box of another class",
    "reversed_channels_matched_share": "matched share with red and blue exchanged",
    "decoder_conformance": "decoder conformance",
    "score_ceiling": "highest representable score",
    "reference_above_ceiling": "reference boxes scoring above it",
    "reference_max_score": "reference's highest score",
    "score_drift": "mean score drift",
    "score_drift_std": "score drift spread",
    "own_score_drift": "the path's blessed mean absolute score drift",
    "score_scale": "score scale (the matched scores' spread over the reference's)",
    "class_map_change": "class map",
    "own_matched_share": "the path's blessed matched share",
    "class_logits": "class outputs the NMS reads",
    "box_size_ratio": "median box size against the reference",
    "box_size_spread": "box size spread",
    "reference_box_size_spread": "reference box size spread",
    "nms_matched_share": "matched share after an NMS over the reference",
    "path_nms_matched_share": "matched share after an NMS over the path",
    "shifted_matched_share": "matched share with the reference's scores shifted by the drift",
    "reproduction_frames": "frames run again",
    "differing_frames": "frames differing from the reference decoder",
    "reproduced_misreading": "reproduced misreading",
    "reproduction": "reproduction",
}


def diagnose(evidence: Evidence, rules: tuple[Rule, ...] = RULES) -> list[Finding]:
    """The rules whose evidence was measured and holds, in rule order (most specific first)."""
    findings = []
    for rule in rules:
        if any(getattr(evidence, name) is None for name in rule.needs):
            continue
        if rule.holds(evidence):
            values = {f.name: getattr(evidence, f.name) for f in fields(evidence)}
            for key, count in (("boxes", evidence.n_boxes), ("reference_boxes", evidence.reference_n_boxes)):
                values[key] = f"{count} box{'' if count == 1 else 'es'}"
            text = "; ".join(f"{EVIDENCE_LABELS.get(n, n)} {_show(getattr(evidence, n))}" for n in rule.needs)
            findings.append(Finding(rule.name, rule.cause.format(**values), text, rule.fix))
    return findings


def _show(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
