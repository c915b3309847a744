import contextlib
import io
import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval, Params

from harness.core.detections import Detections
from harness.inputs.dataset import GroundTruth
from harness.inputs.dataset_yolo import load_yolo
from harness.verdict.metrics import coco
from harness.verdict.metrics.coco import (
    MetricsError,
    evaluate,
    mean_average_precision,
    paired_bootstrap,
    per_image_matches,
)

NAMES = ("fire", "smoke")
BOX = [10.0, 10.0, 50.0, 60.0]
OTHER_BOX = [100.0, 100.0, 140.0, 160.0]


def _gt(boxes, classes, crowd=()):
    return GroundTruth(np.array(boxes, dtype=np.float32).reshape(-1, 4), np.array(classes), np.array(crowd, bool))


def _det(boxes, scores, classes):
    return Detections(np.array(boxes, dtype=np.float32).reshape(-1, 4), np.array(scores), np.array(classes))


def _as_predictions(truths, score=0.9):
    return [_det(t.boxes, np.full(len(t), score), t.class_ids) for t in truths]


def test_perfect_predictions_score_one_everywhere():
    truths = [_gt([BOX, OTHER_BOX], [0, 1]), _gt([BOX], [1])]
    metrics = evaluate(truths, _as_predictions(truths), NAMES)
    assert (metrics.map50, metrics.map50_95) == (pytest.approx(1.0), pytest.approx(1.0))
    # pycocotools divides by tp + fp + machine epsilon: "1.0" is 1 - 2e-16
    expected = [(pytest.approx(1.0),) * 2 + (1.0, 1.0)] * 2
    assert [(c.ap50, c.ap50_95, c.precision, c.recall) for c in metrics.per_class] == expected
    assert [(c.n_ground_truth, c.n_predictions) for c in metrics.per_class] == [(1, 1), (2, 2)]


def test_a_false_positive_ranked_above_the_only_true_positive_halves_the_ap():
    # PR points (recall 0, precision 0), (recall 1, precision 0.5): the interpolated precision is 0.5 everywhere
    truths = [_gt([BOX], [0])]
    preds = [_det([OTHER_BOX, BOX], [0.9, 0.8], [0, 0])]
    metrics = evaluate(truths, preds, NAMES)
    fire, smoke = metrics.per_class
    assert fire.ap50 == pytest.approx(0.5) and fire.ap50_95 == pytest.approx(0.5)
    assert (fire.precision, fire.recall) == (0.5, 1.0)
    assert math.isnan(smoke.ap50) and smoke.n_ground_truth == 0
    assert metrics.map50 == pytest.approx(0.5)  # smoke has no ground truth and does not count


def test_a_false_positive_ranked_below_every_true_positive_costs_no_ap_but_precision():
    truths = [_gt([BOX], [0])]
    metrics = evaluate(truths, [_det([BOX, OTHER_BOX], [0.9, 0.8], [0, 0])], NAMES)
    assert metrics.map50 == pytest.approx(1.0)
    assert metrics.per_class[0].precision == 0.5


def test_operating_threshold_keeps_only_predictions_scoring_at_least_it():
    truths = [_gt([BOX, OTHER_BOX], [0, 0])]
    preds = [_det([BOX, OTHER_BOX, [300, 300, 320, 320]], [0.9, 0.3, 0.5], [0, 0, 0])]
    fire = evaluate(truths, preds, NAMES, score_threshold=0.4).per_class[0]
    assert (fire.precision, fire.recall) == (0.5, 0.5)
    fire = evaluate(truths, preds, NAMES, score_threshold=0.3).per_class[0]
    assert (fire.precision, fire.recall) == (2 / 3, 1.0)


def test_swapped_classes_score_zero():
    truths = [_gt([BOX, OTHER_BOX], [0, 1])]
    preds = [_det([BOX, OTHER_BOX], [0.9, 0.9], [1, 0])]
    metrics = evaluate(truths, preds, NAMES)
    assert metrics.map50 == metrics.map50_95 == 0.0
    assert all(c.recall == 0.0 and c.precision == 0.0 for c in metrics.per_class)


def test_empty_images_without_predictions_change_nothing_and_with_predictions_add_false_positives():
    truths = [_gt([BOX], [0])]
    base = evaluate(truths, [_det([BOX], [0.5], [0])], NAMES)
    empty = [_gt([], [])] * 3
    padded = evaluate(truths + empty, [_det([BOX], [0.5], [0])] + [Detections.empty()] * 3, NAMES)
    assert (padded.map50, padded.map50_95, padded.n_images) == (base.map50, base.map50_95, 4)
    noisy = evaluate(truths + empty[:1], [_det([BOX], [0.5], [0]), _det([BOX], [0.9], [0])], NAMES)
    assert noisy.map50 == pytest.approx(0.5)


def test_no_predictions_score_zero_and_no_ground_truth_scores_nan():
    assert evaluate([_gt([BOX], [1])], [Detections.empty()], NAMES).map50 == 0.0
    metrics = evaluate([_gt([], [])], [_det([BOX], [0.9], [0])], NAMES)
    assert math.isnan(metrics.map50) and math.isnan(metrics.map50_95)


def test_a_detection_on_a_crowd_region_is_neither_hit_nor_false_positive():
    truths = [_gt([BOX, OTHER_BOX], [0, 0], [False, True])]
    preds = [_det([OTHER_BOX, BOX], [0.9, 0.8], [0, 0])]
    fire = evaluate(truths, preds, NAMES).per_class[0]
    assert (fire.ap50, fire.precision, fire.recall, fire.n_ground_truth) == (pytest.approx(1.0), 1.0, 1.0, 1)


def test_boxes_shifted_by_half_their_size_pass_iou_05_at_one_third_and_fail_above():
    # 40x50 box shifted right by 20: IoU = 20*50 / (2*40*50 - 20*50) = 1/3
    truths = [_gt([BOX], [0])]
    shifted = [_det([[30, 10, 70, 60]], [0.9], [0])]
    assert evaluate(truths, shifted, NAMES).map50 == 0.0
    # shifted by 8: IoU = 32/48 = 2/3, a hit at 0.50, 0.55, 0.60, 0.65 only
    metrics = evaluate(truths, [_det([[18, 10, 58, 60]], [0.9], [0])], NAMES)
    assert (metrics.map50, metrics.map50_95) == (pytest.approx(1.0), pytest.approx(0.4))


def test_evaluation_prints_nothing(capsys):
    evaluate([_gt([BOX], [0])], [_det([BOX], [0.9], [0])], NAMES)
    paired_bootstrap([_gt([BOX], [0])], [Detections.empty()], [_det([BOX], [0.9], [0])], NAMES, resamples=3)
    assert capsys.readouterr() == ("", "")


def test_inputs_that_cannot_be_scored_together_are_errors():
    with pytest.raises(MetricsError, match="1 ground-truth images but 2 prediction sets"):
        evaluate([_gt([BOX], [0])], [Detections.empty()] * 2, NAMES)
    with pytest.raises(MetricsError, match=r"predictions of image 0: class ids \[2\], expected 0\.\.1"):
        evaluate([_gt([BOX], [0])], [_det([BOX], [0.9], [2])], NAMES)
    with pytest.raises(MetricsError, match="predictions of image 0: non-finite scores"):
        evaluate([_gt([BOX], [0])], [_det([BOX], [np.nan], [0])], NAMES)
    with pytest.raises(MetricsError, match="no images"):
        evaluate([], [], NAMES)


@pytest.mark.fixtures
def test_the_real_labels_scored_against_themselves_give_map_one(shared_fixtures):
    dataset = load_yolo(shared_fixtures / "datasets" / "fire_smoke_val")
    metrics = evaluate(dataset.ground_truths, _as_predictions(dataset.ground_truths), dataset.names)
    assert (metrics.map50, metrics.map50_95) == (pytest.approx(1.0), pytest.approx(1.0))
    assert sum(c.n_ground_truth for c in metrics.per_class) == 287


# --- own accumulation over resampled image sets against pycocotools -----------------------------


def _random_images(rng, n_images, n_classes=2, tie_scores=False, crowd_rate=0.05):
    """Fixture-like data: ~3 boxes per image, predictions near them, misses, class flips, extras."""
    truths, preds = [], []
    for _ in range(n_images):
        m = int(rng.integers(0, 7))
        xy = rng.uniform(0, 250, (m, 2))
        boxes = np.concatenate([xy, xy + rng.uniform(8, 120, (m, 2))], axis=1)
        classes = rng.integers(0, n_classes, m)
        truths.append(_gt(boxes, classes, rng.random(m) < crowd_rate))
        keep = rng.random(m) < 0.8
        p_boxes = boxes[keep] + rng.normal(0, 6, (int(keep.sum()), 4))
        p_classes = np.where(
            rng.random(int(keep.sum())) < 0.1, rng.integers(0, n_classes, int(keep.sum())), classes[keep]
        )
        e = int(rng.integers(0, 3))
        exy = rng.uniform(0, 250, (e, 2))
        p_boxes = np.concatenate([p_boxes, np.concatenate([exy, exy + rng.uniform(8, 80, (e, 2))], axis=1)])
        p_classes = np.concatenate([p_classes, rng.integers(0, n_classes, e)])
        scores = rng.random(len(p_boxes))
        preds.append(_det(p_boxes, np.round(scores, 1) if tie_scores else scores, p_classes))
    return truths, preds


def _crowded_image(rng, n_detections=150):
    """One fire box under ``n_detections`` fire detections around it: more than COCOeval keeps."""
    boxes = np.tile(BOX, (n_detections, 1)) + rng.normal(0, 1, (n_detections, 4))
    return _gt([BOX], [0]), _det(boxes, rng.random(n_detections), np.zeros(n_detections))


def _pycocotools_eval(truths, preds, n_classes):
    """A plain one-shot pycocotools run over the whole set with default parameters, accumulated."""
    gt_anns, dt_anns = [], []
    for i, (t, p) in enumerate(zip(truths, preds, strict=True)):
        for b, c, crowd in zip(t.boxes.astype(float), t.class_ids, t.crowd, strict=True):
            xywh = [b[0], b[1], b[2] - b[0], b[3] - b[1]]
            gt_anns.append({"id": len(gt_anns) + 1, "image_id": i, "category_id": int(c), "bbox": xywh,
                            "area": xywh[2] * xywh[3], "iscrowd": int(crowd)})  # fmt: skip
        for b, c, s in zip(p.boxes.astype(float), p.class_ids, p.scores.astype(float), strict=True):
            xywh = [b[0], b[1], b[2] - b[0], b[3] - b[1]]
            dt_anns.append({"id": len(dt_anns) + 1, "image_id": i, "category_id": int(c), "bbox": xywh,
                            "area": xywh[2] * xywh[3], "score": s})  # fmt: skip
    images = [{"id": i} for i in range(len(truths))]
    categories = [{"id": k} for k in range(n_classes)]
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt, coco_dt = COCO(), COCO()
        coco_gt.dataset = {"images": images, "categories": categories, "annotations": gt_anns}
        coco_dt.dataset = {"images": images, "categories": categories, "annotations": dt_anns}
        coco_gt.createIndex()
        coco_dt.createIndex()
        e = COCOeval(coco_gt, coco_dt, "bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
    return e


def _pycocotools_map(truths, preds, n_classes):
    """mAP@0.5, mAP@0.5:0.95 from a plain pycocotools run with default parameters."""
    e = _pycocotools_eval(truths, preds, n_classes)
    return e.stats[1], e.stats[0]


def _pycocotools_class_metrics(truths, preds, n_classes, score_threshold):
    """Per class (n_ground_truth, ap50, ap50_95, precision, recall) from one plain pycocotools run: AP
    from its accumulated precision (area "all", 100 detections), precision and recall at IoU 0.5 from
    its per-image matches of the detections scoring at least ``score_threshold``."""
    e = _pycocotools_eval(truths, preds, n_classes)
    n_areas, n_images = len(e.params.areaRng), len(truths)
    rows = []
    for k in range(n_classes):
        precision = e.eval["precision"][:, :, k, 0, -1]
        ap50, ap = (math.nan, math.nan) if (precision == -1).any() else (precision[0].mean(), precision.mean())
        tp = fp = n_gt = 0
        for entry in e.evalImgs[k * n_areas * n_images : (k * n_areas + 1) * n_images]:
            if entry is None:
                continue
            kept = (np.asarray(entry["dtScores"]) >= score_threshold) & ~entry["dtIgnore"][0].astype(bool)
            tp += int((kept & (entry["dtMatches"][0] > 0)).sum())
            fp += int((kept & (entry["dtMatches"][0] == 0)).sum())
            n_gt += int((entry["gtIgnore"] == 0).sum())
        rows.append((n_gt, ap50, ap, tp / (tp + fp) if tp + fp else 0.0, tp / n_gt if n_gt else 0.0))
    return rows


def _assert_evaluate_equals_one_shot_pycocotools(truths, preds, names, score_threshold=0.25):
    metrics = evaluate(truths, preds, names, score_threshold)
    ref50, ref = _pycocotools_map(truths, preds, len(names))
    if ref50 == -1:
        assert math.isnan(metrics.map50) and math.isnan(metrics.map50_95)
    else:
        assert (metrics.map50, metrics.map50_95) == (pytest.approx(ref50, abs=1e-6), pytest.approx(ref, abs=1e-6))
    own = [(c.n_ground_truth, c.ap50, c.ap50_95, c.precision, c.recall) for c in metrics.per_class]
    expected = _pycocotools_class_metrics(truths, preds, len(names), score_threshold)
    assert own == [pytest.approx(row, abs=1e-6, nan_ok=True) for row in expected]
    counts = np.bincount(np.concatenate([p.class_ids for p in preds]), minlength=len(names))
    assert [c.n_predictions for c in metrics.per_class] == counts.tolist()


def _assert_own_accumulation_equals_pycocotools(truths, preds, sets, n_classes=2):
    matches = per_image_matches(truths, preds, n_classes)
    own50, own = mean_average_precision(matches, sets)
    for b, image_set in enumerate(sets):
        ref50, ref = _pycocotools_map([truths[i] for i in image_set], [preds[i] for i in image_set], n_classes)
        if ref50 == -1:
            assert math.isnan(own50[b]) and math.isnan(own[b])
            continue
        assert own50[b] == pytest.approx(ref50, abs=1e-6)
        assert own[b] == pytest.approx(ref, abs=1e-6)


def test_evaluate_equals_a_default_pycocotools_run():
    truths, preds = _random_images(np.random.default_rng(8), 60, n_classes=3)
    metrics = evaluate(truths, preds, ("a", "b", "c"))
    assert (metrics.map50, metrics.map50_95) == pytest.approx(_pycocotools_map(truths, preds, 3), abs=1e-12)


def test_own_accumulation_equals_pycocotools_on_200_fixture_like_images_resampled():
    rng = np.random.default_rng(7)
    truths, preds = _random_images(rng, 200)
    sets = np.concatenate([np.arange(200)[None], rng.integers(0, 200, (2, 200))])
    _assert_own_accumulation_equals_pycocotools(truths, preds, sets)


@given(
    seed=st.integers(0, 2**32 - 1),
    n_images=st.integers(1, 12),
    chunk=st.integers(1, 40),
    ties=st.booleans(),
    n_classes=st.integers(1, 3),
)
def test_own_accumulation_of_matches_in_chunks_equals_pycocotools_on_random_resampled_image_sets(
    seed, n_images, chunk, ties, n_classes
):
    rng = np.random.default_rng(seed)
    truths, preds = _random_images(rng, n_images, n_classes, tie_scores=ties)
    sets = rng.integers(0, n_images, (3, int(rng.integers(1, 2 * n_images + 1))))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(coco, "CHUNK_PAIRS", chunk)
        _assert_own_accumulation_equals_pycocotools(truths, preds, sets, n_classes)


def test_over_100_detections_of_a_class_in_an_image_only_the_best_100_count():
    rng = np.random.default_rng(3)
    truths, preds = _random_images(rng, 3)
    crowded_truth, crowded = _crowded_image(rng)
    truths, preds = [*truths, crowded_truth], [*preds, crowded]
    _assert_own_accumulation_equals_pycocotools(truths, preds, np.array([[0, 1, 2, 3], [3, 3, 0, 1]]))


# --- matching in chunks of pairs against one pycocotools run over the whole set ------------------


def _hard_images(rng, n_images, n_classes, tie_scores=False):
    """Random images with frequent crowd regions, a few with more than 100 detections, and one class
    more than the ground truth uses, which only false positives predict."""
    truths, preds = _random_images(rng, n_images, n_classes, tie_scores, crowd_rate=0.3)
    for i in rng.choice(n_images, size=max(1, n_images // 4), replace=False):
        truths[i], preds[i] = _crowded_image(rng, int(rng.integers(101, 160)))
    for i, p in enumerate(preds):
        stray = rng.random(len(p)) < 0.15
        preds[i] = _det(p.boxes, p.scores, np.where(stray, n_classes, p.class_ids))
    return truths, preds


@given(
    seed=st.integers(0, 2**32 - 1),
    n_images=st.integers(1, 12),
    chunk=st.integers(1, 40),
    ties=st.booleans(),
    n_classes=st.integers(1, 3),
)
def test_evaluate_in_chunks_equals_one_shot_pycocotools_on_random_sets(seed, n_images, chunk, ties, n_classes):
    rng = np.random.default_rng(seed)
    truths, preds = _hard_images(rng, n_images, n_classes, tie_scores=ties)
    names = tuple(f"class {k}" for k in range(n_classes + 1))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(coco, "CHUNK_PAIRS", chunk)
        _assert_evaluate_equals_one_shot_pycocotools(truths, preds, names, float(rng.choice([0.0, 0.25, 0.5])))


def test_matches_of_10_images_in_chunks_of_7_pairs_are_those_of_one_chunk(monkeypatch):
    truths, preds = _hard_images(np.random.default_rng(21), 10, 2)
    whole = per_image_matches(truths, preds, 3)
    monkeypatch.setattr(coco, "CHUNK_PAIRS", 7)  # groups split between chunks
    chunked = per_image_matches(truths, preds, 3)
    assert chunked.n_images == whole.n_images == 10
    for a, b in zip(chunked.classes, whole.classes, strict=True):
        for field in ("image", "score", "true_positive", "false_positive", "n_positive"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert len(whole.classes[2].score) and not whole.classes[2].n_positive.any()  # the class without ground truth
    assert max(len(p) for p in preds) > 100 and np.bincount(whole.classes[0].image).max() == coco.MAX_DETECTIONS
    _assert_evaluate_equals_one_shot_pycocotools(truths, preds, ("fire", "smoke", "other"))


def _predictions_near(truths, n_classes, rng):
    """Detections of labelled boxes: jittered by about 7 % of their size, 15 % missed, 10 % of a
    random class, plus up to 3 false positives per image, random scores."""
    preds = []
    for t in truths:
        kept = rng.random(len(t)) > 0.15
        size = np.tile(t.boxes[kept, 2:] - t.boxes[kept, :2], 2)
        boxes = t.boxes[kept] + rng.normal(0, 0.07, size.shape) * size
        classes = np.where(rng.random(len(boxes)) < 0.1, rng.integers(0, n_classes, len(boxes)), t.class_ids[kept])
        n_extra = int(rng.integers(0, 4))
        corner = rng.uniform(0, 600, (n_extra, 2))
        boxes = np.concatenate([boxes, np.concatenate([corner, corner + rng.uniform(10, 200, (n_extra, 2))], 1)])
        classes = np.concatenate([classes, rng.integers(0, n_classes, n_extra)])
        preds.append(_det(boxes, rng.random(len(boxes)), classes))
    return preds


@pytest.mark.fixtures
def test_evaluate_in_chunks_equals_one_shot_pycocotools_on_the_real_labels(shared_fixtures, monkeypatch):
    dataset = load_yolo(shared_fixtures / "datasets" / "fire_smoke_val")
    truths = dataset.ground_truths
    preds = _predictions_near(truths, len(dataset.names), np.random.default_rng(13))
    monkeypatch.setattr(coco, "CHUNK_PAIRS", 50)  # 200 images: dozens of chunks
    _assert_evaluate_equals_one_shot_pycocotools(truths, preds, dataset.names)
    metrics = evaluate(truths, preds, dataset.names)
    assert 0.1 < metrics.map50_95 < metrics.map50 < 0.9 and len(truths) == metrics.n_images == 200


def _busy_images(rng, n_images, merged=8):
    """Images of ``merged`` random images' boxes each: about 25 ground-truth boxes and detections."""
    truths, preds = _random_images(rng, n_images * merged)
    groups = [slice(i, i + merged) for i in range(0, len(truths), merged)]
    return (
        [
            _gt(np.concatenate([t.boxes for t in truths[g]]), np.concatenate([t.class_ids for t in truths[g]]))
            for g in groups
        ],
        [
            Detections(*(np.concatenate([getattr(p, f) for p in preds[g]]) for f in ("boxes", "scores", "class_ids")))
            for g in groups
        ],
    )


def _traced_peak(function, *args):
    tracemalloc.start()
    try:
        function(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_matching_memory_grows_with_the_boxes_not_with_their_pairs(monkeypatch):
    # 48 images of ~25 ground-truth boxes and detections each hold 17,192 (detection, ground truth)
    # pairs; in one chunk their IoU bookkeeping costs ~1,000 bytes per box, in chunks of 2,048 pairs
    # the growth is the records and the box tables alone (73 bytes per box measured)
    monkeypatch.setattr(coco, "CHUNK_PAIRS", 2048)
    truths, preds = _busy_images(np.random.default_rng(4), 64)
    per_image_matches(truths[:2], preds[:2], 2)  # first-use allocations of numpy
    small, large = (_traced_peak(per_image_matches, truths[:n], preds[:n], 2) for n in (16, 64))
    n_boxes = sum(len(t) + len(p) for t, p in zip(truths[16:], preds[16:], strict=True))
    assert large - small < 100 * n_boxes


# --- the matcher against COCOeval, flag by flag and stat by stat ---------------------------------


def _assert_matches_and_stats_equal_cocoeval(truths, preds, n_classes):
    """Every kept detection's score and true/false positive flags per threshold, every image's count
    of ground truth that counts, and mAP@0.5, mAP@0.5:0.95 (``==``) equal a default COCOeval run's."""
    e = _pycocotools_eval(truths, preds, n_classes)
    matches = per_image_matches(truths, preds, n_classes)
    n_areas, n_images = len(e.params.areaRng), len(truths)
    for k, m in enumerate(matches.classes):
        for i in range(n_images):
            entry = e.evalImgs[k * n_areas * n_images + i]  # area range "all", 100 detections
            mine = m.image == i
            if entry is None:
                assert not mine.any() and m.n_positive[i] == 0, (k, i)
                continue
            matched, ignored = entry["dtMatches"] > 0, entry["dtIgnore"].astype(bool)
            assert m.score[mine].tolist() == entry["dtScores"], (k, i)
            assert np.array_equal(m.true_positive[:, mine], matched & ~ignored), (k, i)
            assert np.array_equal(m.false_positive[:, mine], ~matched & ~ignored), (k, i)
            assert m.n_positive[i] == (entry["gtIgnore"] == 0).sum(), (k, i)
    metrics = evaluate(truths, preds, [str(k) for k in range(n_classes)])
    if e.stats[1] == -1:
        assert math.isnan(metrics.map50) and math.isnan(metrics.map50_95)
    else:
        assert (metrics.map50, metrics.map50_95) == (e.stats[1], e.stats[0])


def test_thresholds_and_recall_points_are_cocoevals_floats():
    params = Params(iouType="bbox")
    assert coco.IOU_THRESHOLDS.tolist() == params.iouThrs.tolist()
    assert coco.RECALL_POINTS.tolist() == params.recThrs.tolist()
    assert coco.AREA_ALL == tuple(params.areaRng[0]) and coco.MAX_DETECTIONS == params.maxDets[-1]


def test_detections_whose_iou_equals_a_threshold_are_matched_as_cocoeval_matches_them():
    # a 100x1 box against boxes of width 50..100 inside it: IoU exactly w / 100, every threshold met
    widths = np.arange(50, 101)
    truths = [_gt([[0, 0, 100, 1]], [0]) for _ in widths]
    preds = [_det([[0, 0, w, 1]], [0.5], [0]) for w in widths]
    _assert_matches_and_stats_equal_cocoeval(truths, preds, 1)
    hits = np.array([m for m in per_image_matches(truths, preds, 1).classes[0].true_positive.sum(0)])
    assert hits[widths == 50] == 1 and hits[widths == 100] == 10 and np.all(np.diff(hits) >= 0)


def test_two_equally_good_partners_go_to_the_later_one_and_a_counted_one_beats_a_crowd_region():
    # detection 1 has IoU 0.6 with both ground-truth boxes: COCOeval keeps the later one, leaving the
    # earlier one to detection 2; a crowd region of higher IoU loses to a counted box above the threshold
    truths = [
        _gt([[0, 0, 10, 10], [0, 5, 10, 15]], [0, 0]),
        _gt([[0, 0, 10, 10], [0, 0, 10, 6]], [0, 0], [True, False]),
    ]
    preds = [_det([[0, 2.5, 10, 12.5], [0, 0, 10, 10]], [0.9, 0.8], [0, 0]), _det([[0, 0, 10, 10]], [0.9], [0])]
    _assert_matches_and_stats_equal_cocoeval(truths, preds, 1)
    m = per_image_matches(truths, preds, 1).classes[0]
    assert m.true_positive[0].tolist() == [True, True, True]
    # above IoU 0.6 only the crowd region is left: the detection on it is neither hit nor false positive
    assert (m.true_positive[3].tolist(), m.false_positive[3].tolist()) == ([False, True, False], [True, False, False])


_GRID_BOX = st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(0, 10), st.integers(0, 10)).map(
    lambda b: (b[0], b[1], b[0] + b[2], b[1] + b[3])
)
# x_max < x_min (negative area: ignored), both flipped (positive area), area 2e10 and exactly 1e10
_ODD_BOX = st.sampled_from([(5, 5, 3, 9), (4, 4, 2, 2), (0, 0, 2e5, 1e5), (0, 0, 1e5, 1e5)])
_SCORE = st.one_of(st.sampled_from([0.25, 0.5, 0.75]), st.floats(0, 1, width=32))


def _copy_or_box(source, truth_boxes):
    """A detection's box: ``source`` itself, or the ground-truth box it indexes (``BOX`` past the end)."""
    if not isinstance(source, int):
        return source
    return truth_boxes[source] if source < len(truth_boxes) else BOX


@st.composite
def _hard_sets(draw):
    """Boxes on a small integer grid (many IoU ties and IoUs exactly at thresholds), crowd regions,
    duplicate detections, equal scores, boxes outside COCO's area range, empty images, a class only
    false positives predict, and optionally an image with more than 100 detections of one class."""
    n_classes = draw(st.integers(1, 3))
    box = st.one_of(_GRID_BOX, _GRID_BOX, _GRID_BOX, _ODD_BOX)
    truths, preds = [], []
    for _ in range(draw(st.integers(1, 5))):
        gt = draw(st.lists(st.tuples(box, st.integers(0, n_classes - 1), st.booleans()), max_size=6))
        truths.append(_gt([b for b, _, _ in gt], [c for _, c, _ in gt], [crowd for _, _, crowd in gt]))
        dets = draw(
            st.lists(st.tuples(st.one_of(box, st.integers(0, 5)), st.integers(0, n_classes), _SCORE), max_size=12)
        )
        boxes = [_copy_or_box(source, [b for b, _, _ in gt]) for source, _, _ in dets]
        preds.append(_det(boxes, [s for _, _, s in dets], [c for _, c, _ in dets]))
    if draw(st.integers(0, 3)) == 3:  # one image with 101..130 detections of class 0 on the grid
        n, rng = draw(st.integers(101, 130)), np.random.default_rng(draw(st.integers(0, 2**16)))
        corner = rng.integers(0, 12, (n, 2))
        crowded = _det(
            np.concatenate([corner, corner + rng.integers(1, 10, (n, 2))], 1), rng.choice([0.2, 0.6], n), [0] * n
        )
        preds[0] = Detections.concatenate([preds[0], crowded])
    return truths, preds, n_classes + 1


@given(_hard_sets())
def test_matches_and_stats_equal_cocoevals_on_sets_of_ties_crowds_duplicates_and_over_100_detections(case):
    truths, preds, n_classes = case
    _assert_matches_and_stats_equal_cocoeval(truths, preds, n_classes)


@given(_hard_sets(), st.integers(1, 30))
def test_matches_in_chunks_of_any_number_of_pairs_are_those_of_one_chunk(case, chunk):
    truths, preds, n_classes = case
    whole = per_image_matches(truths, preds, n_classes)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(coco, "CHUNK_PAIRS", chunk)
        chunked = per_image_matches(truths, preds, n_classes)
    for a, b in zip(chunked.classes, whole.classes, strict=True):
        for field in ("image", "score", "true_positive", "false_positive", "n_positive"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), field


@pytest.mark.fixtures
@pytest.mark.parametrize("folder", ["fire_smoke_val", "coco128_val16/config.yaml"])
def test_matches_and_stats_equal_cocoevals_on_the_real_labels(shared_fixtures, folder):
    dataset = load_yolo(shared_fixtures / "datasets" / folder)
    truths, rng = dataset.ground_truths, np.random.default_rng(17)
    preds = _predictions_near(truths, len(dataset.names), rng)
    # plus a crowd region in every fourth image, and duplicates of a quarter of the detections
    truths = [_gt(t.boxes, t.class_ids, np.arange(len(t)) == 0) if i % 4 == 0 else t for i, t in enumerate(truths)]
    preds = [Detections.concatenate([p, p.select(rng.random(len(p)) < 0.25)]) for p in preds]
    _assert_matches_and_stats_equal_cocoeval(truths, preds, len(dataset.names))


# --- paired bootstrap ----------------------------------------------------------------------------


@given(seed=st.integers(0, 2**32 - 1), boot_seed=st.integers(0, 1000))
def test_bootstrap_interval_of_identical_paths_is_zero(seed, boot_seed):
    truths, preds = _random_images(np.random.default_rng(seed), 15)
    result = paired_bootstrap(truths, preds, preds, NAMES, resamples=20, seed=boot_seed)
    for interval in (result.map50, result.map50_95):
        assert (interval.point, interval.low, interval.high) == (0.0, 0.0, 0.0)


def test_bootstrap_point_is_the_evaluated_difference_and_a_clearly_better_path_excludes_zero():
    rng = np.random.default_rng(11)
    truths, noisy = _random_images(rng, 200)
    perfect = _as_predictions(truths)
    result = paired_bootstrap(truths, noisy, perfect, NAMES, resamples=200, seed=1)
    a, b = evaluate(truths, noisy, NAMES), evaluate(truths, perfect, NAMES)
    assert result.map50.point == pytest.approx(b.map50 - a.map50, abs=1e-12)
    assert result.map50_95.point == pytest.approx(b.map50_95 - a.map50_95, abs=1e-12)
    assert 0 < result.map50_95.low < result.map50_95.point < result.map50_95.high
    assert result.resamples == 200 and result.seed == 1
    again = paired_bootstrap(truths, noisy, perfect, NAMES, resamples=200, seed=1)
    assert again == result


def test_bootstrap_of_a_path_that_loses_its_hits_on_some_images_lies_below_zero():
    # moving every box of 20 images far away turns their hits into false positives: no resample can gain
    rng = np.random.default_rng(5)
    truths, preds = _random_images(rng, 100)
    away = [_det(p.boxes + 10_000, p.scores, p.class_ids) if i < 20 else p for i, p in enumerate(preds)]
    result = paired_bootstrap(truths, preds, away, NAMES, resamples=100, seed=2)
    for interval in (result.map50, result.map50_95):
        assert interval.low <= interval.point <= interval.high <= 0.0
        assert interval.point < 0
