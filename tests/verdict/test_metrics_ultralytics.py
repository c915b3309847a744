import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.detections import Detections
from harness.inputs.dataset import GroundTruth
from harness.verdict.metrics import coco, ultralytics
from harness.verdict.metrics.coco import MetricsError

from support.reference import ultralytics_metric as reference

NAMES = ("fire", "smoke")
BOX = [10.0, 10.0, 50.0, 60.0]


def _gt(boxes, classes, crowd=()):
    return GroundTruth(np.array(boxes, dtype=np.float32).reshape(-1, 4), np.array(classes), np.array(crowd, bool))


def _det(boxes, scores, classes):
    return Detections(np.array(boxes, dtype=np.float32).reshape(-1, 4), np.array(scores, np.float32), np.array(classes))


def _random_images(rng, n_images, n_classes, tie_scores, crowd_rate=0.05, crowded=False):
    """~3 boxes per image, predictions near them (some of another class), misses, extras, duplicates;
    ``crowded``: one image with 60 detections around one box, more than one rank of pairs per group."""
    truths, preds = [], []
    for _ in range(n_images):
        m = int(rng.integers(0, 7))
        xy = rng.uniform(0, 250, (m, 2))
        boxes = np.concatenate([xy, xy + rng.uniform(8, 120, (m, 2))], axis=1)
        classes = rng.integers(0, n_classes, m)
        truths.append(_gt(boxes, classes, rng.random(m) < crowd_rate))
        keep = rng.random(m) < 0.8
        copies = rng.integers(1, 3, int(keep.sum()))  # a second detection of an object is a duplicate
        p_boxes = np.repeat(boxes[keep], copies, axis=0)
        p_boxes = p_boxes + rng.normal(0, 6, p_boxes.shape)
        p_classes = np.repeat(classes[keep], copies)
        flip = rng.random(len(p_classes)) < 0.1
        p_classes = np.where(flip, rng.integers(0, n_classes, len(p_classes)), p_classes)
        e = int(rng.integers(0, 3))
        exy = rng.uniform(0, 250, (e, 2))
        p_boxes = np.concatenate([p_boxes, np.concatenate([exy, exy + rng.uniform(8, 80, (e, 2))], axis=1)])
        p_classes = np.concatenate([p_classes, rng.integers(0, n_classes, e)])
        scores = rng.random(len(p_boxes))
        preds.append(_det(p_boxes, np.round(scores, 1) if tie_scores else scores, p_classes))
    if crowded:
        boxes = np.tile(BOX, (60, 1)) + rng.normal(0, 2, (60, 4))
        truths.append(_gt(np.tile(BOX, (3, 1)) + rng.normal(0, 2, (3, 4)), [0, 0, 0]))
        preds.append(_det(boxes, np.round(rng.random(60), 1) if tie_scores else rng.random(60), np.zeros(60)))
    return truths, preds


def _assert_equals_reference(truths, preds, n_classes):
    names = tuple(f"c{k}" for k in range(n_classes))
    metrics = ultralytics.evaluate(truths, preds, names, 0.25)
    map50, map50_95, per_class, flags = reference.validate(truths, preds)
    if not per_class:
        assert math.isnan(metrics.map50) and math.isnan(metrics.map50_95)
    else:
        assert (metrics.map50, metrics.map50_95) == (
            pytest.approx(map50, abs=1e-12),
            pytest.approx(map50_95, abs=1e-12),
        )
    for k, row in enumerate(metrics.per_class):
        if k in per_class:
            assert (row.ap50, row.ap50_95) == (
                pytest.approx(per_class[k][0], abs=1e-12),
                pytest.approx(per_class[k].mean(), abs=1e-12),
            )
        else:
            assert math.isnan(row.ap50) and math.isnan(row.ap50_95) and row.n_ground_truth == 0
    matches = ultralytics.match(truths, preds, n_classes)
    assert np.array_equal(matches.correct, np.concatenate(flags).reshape(-1, 10))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_images=st.integers(1, 10),
    n_classes=st.integers(1, 3),
    ties=st.booleans(),
    crowded=st.booleans(),
)
def test_the_vectorised_metric_equals_ultralytics_loops_on_random_images(seed, n_images, n_classes, ties, crowded):
    truths, preds = _random_images(np.random.default_rng(seed), n_images, n_classes, ties, crowded=crowded)
    _assert_equals_reference(truths, preds, n_classes)


def test_perfect_predictions_score_0995_as_yolo_val_prints_them():
    # compute_ap's last recall point reads the envelope's 0 sentinel: a perfect class integrates to 0.995
    truths = [_gt([BOX, [100, 100, 140, 160]], [0, 1])]
    metrics = ultralytics.evaluate(truths, [_det(t.boxes, [0.9] * len(t), t.class_ids) for t in truths], NAMES)
    assert (metrics.map50, metrics.map50_95) == (pytest.approx(0.995), pytest.approx(0.995))
    assert coco.evaluate(
        truths, [_det(t.boxes, [0.9] * len(t), t.class_ids) for t in truths], NAMES
    ).map50 == pytest.approx(1.0)


def test_a_false_positive_above_the_only_true_positive_interpolates_to_04975_where_coco_says_05():
    truths = [_gt([BOX], [0])]
    preds = [_det([[200, 200, 240, 260], BOX], [0.9, 0.8], [0, 0])]
    assert ultralytics.evaluate(truths, preds, NAMES).map50 == pytest.approx(0.4975)
    assert coco.evaluate(truths, preds, NAMES).map50 == pytest.approx(0.5)


def test_every_detection_counts_where_coco_keeps_100_per_class_and_image():
    rng = np.random.default_rng(3)
    boxes = np.tile(BOX, (150, 1)) + rng.normal(0, 1, (150, 4))
    scores = np.linspace(0.9, 0.1, 150)
    truths, preds = [_gt([BOX], [0])], [_det(boxes, scores, np.zeros(150))]
    preds_tp_last = [_det(np.concatenate([boxes[:149] + 300, [BOX]]), scores, np.zeros(150))]
    # the only true positive ranked 150th: Ultralytics counts it, COCO cuts it off
    assert ultralytics.evaluate(truths, preds_tp_last, NAMES).map50 > 0
    assert coco.evaluate(truths, preds_tp_last, NAMES).map50 == 0
    _assert_equals_reference(truths, preds, 1)


def test_crowd_regions_are_left_out_as_ultralytics_coco_converter_drops_them():
    truths = [_gt([BOX, [100, 100, 140, 160]], [0, 0], [False, True])]
    preds = [_det([BOX, [100, 100, 140, 160]], [0.9, 0.8], [0, 0])]
    metrics = ultralytics.evaluate(truths, preds, NAMES, 0.25)
    fire = metrics.per_class[0]
    assert (fire.n_ground_truth, fire.precision, fire.recall) == (1, 0.5, 1.0)  # on the crowd: a false positive
    _assert_equals_reference(truths, preds, 2)


def test_ties_on_iou_take_the_first_ground_truth_and_a_claimed_one_is_not_taken_again():
    # the first detection meets both objects at the same IoU (0.82: correct to 0.80) and takes the
    # first; the second then meets only the other at 0.50-0.80, at 0.67, and the first, unclaimed,
    # at 0.85-0.95 (had the first detection taken the second object, the second would match at 1.0)
    a, b = [0, 0, 10, 10], [2, 0, 12, 10]
    truths = [_gt([a, b], [0, 0])]
    preds = [_det([[1, 0, 11, 10], a], [0.9, 0.8], [0, 0])]
    correct = ultralytics.match(truths, preds, 1).correct
    assert correct.tolist() == [[True] * 7 + [False] * 3, [True] * 4 + [False] * 3 + [True] * 3]
    _assert_equals_reference(truths, preds, 1)
    duplicates = [_det([BOX, BOX, BOX], [0.9, 0.8, 0.7], [0, 0, 0])]
    assert ultralytics.match([_gt([BOX, BOX], [0, 0])], duplicates, 1).correct.all(1).tolist() == [True, True, False]


def test_no_predictions_score_zero_and_no_ground_truth_scores_nan():
    truths = [_gt([BOX], [0])]
    empty = [_det(np.zeros((0, 4)), [], [])]
    assert ultralytics.evaluate(truths, empty, NAMES).map50 == 0.0
    nothing = ultralytics.evaluate([_gt(np.zeros((0, 4)), [])], [_det([BOX], [0.9], [0])], NAMES)
    assert math.isnan(nothing.map50) and math.isnan(nothing.map50_95)


def test_inputs_that_cannot_be_scored_together_are_errors():
    with pytest.raises(MetricsError, match="1 ground-truth images but 2 prediction sets"):
        ultralytics.evaluate([_gt([BOX], [0])], [_det([BOX], [0.9], [0])] * 2, NAMES)
    with pytest.raises(MetricsError, match=r"predictions of image 0: class ids \[2\], expected 0\.\.1"):
        ultralytics.evaluate([_gt([BOX], [0])], [_det([BOX], [0.9], [2])], NAMES)


def test_precision_and_recall_at_the_operating_threshold_count_iou_05_matches_scoring_at_least_it():
    truths = [_gt([BOX, [100, 100, 140, 160]], [0, 0])]
    preds = [_det([BOX, [300, 300, 340, 360], [100, 100, 140, 160]], [0.9, 0.5, 0.2], [0, 0, 0])]
    fire = ultralytics.evaluate(truths, preds, NAMES, 0.5).per_class[0]
    assert (fire.precision, fire.recall, fire.n_predictions) == (0.5, 0.5, 3)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_images=st.integers(1, 8), n_classes=st.integers(1, 3), ties=st.booleans())
def test_an_image_set_scores_as_the_dataset_listing_those_images_would(seed, n_images, n_classes, ties):
    """Resampling with repeats is evaluating the resampled dataset: the set's scores equal
    ``evaluate`` on the images listed in the set's order, the identity set's the run's own."""
    rng = np.random.default_rng(seed)
    truths, preds = _random_images(rng, n_images, n_classes, ties)
    names = tuple(f"c{k}" for k in range(n_classes))
    sets = np.concatenate([np.arange(n_images)[None], rng.integers(0, n_images, (4, n_images))])
    map50, map50_95 = ultralytics.set_scores(truths, preds, n_classes, sets)
    for b, images in enumerate(sets):
        whole = ultralytics.evaluate([truths[i] for i in images], [preds[i] for i in images], names)
        assert (map50[b], map50_95[b]) == pytest.approx((whole.map50, whole.map50_95), abs=0, nan_ok=True)


def test_image_sets_outside_the_images_are_an_error():
    truths = [_gt([BOX], [0])]
    with pytest.raises(MetricsError, match=r"^image sets: shape \(1, 1\), expected \(B, M\) indices in 0\.\.0$"):
        ultralytics.set_scores(truths, [_det([BOX], [0.9], [0])], 2, np.array([[1]]))


def test_the_paired_bootstrap_under_ultralytics_measures_ultralytics_differences():
    truths, preds = _random_images(np.random.default_rng(7), 12, 2, False)
    worse = [p.select(slice(0, len(p) // 2)) for p in preds]
    boot = coco.paired_bootstrap(truths, worse, preds, NAMES, resamples=100, scores=ultralytics.set_scores)
    theirs = ultralytics.evaluate(truths, preds, NAMES).map50 - ultralytics.evaluate(truths, worse, NAMES).map50
    cocos = coco.evaluate(truths, preds, NAMES).map50 - coco.evaluate(truths, worse, NAMES).map50
    assert boot.map50.point == theirs != cocos
    assert boot.map50.low <= boot.map50.point <= boot.map50.high
    # the default is COCO's (its class means round apart from evaluate's summary in the last bit)
    assert coco.paired_bootstrap(truths, worse, preds, NAMES, resamples=100).map50.point == pytest.approx(
        cocos, abs=1e-12
    )
