import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.detections import Detections
from harness.verdict.metrics.agreement import AgreementError, agreement, differing_boxes, disagreement

from support.reference import agreement as loop

agreement_module = importlib.import_module("harness.verdict.metrics.agreement")  # the package re-exports its function


@st.composite
def _detections(draw, max_boxes=8, n_classes=3):
    n = draw(st.integers(0, max_boxes))
    corner = draw(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=n, max_size=n))
    size = draw(st.lists(st.tuples(st.integers(1, 30), st.integers(1, 30)), min_size=n, max_size=n))
    boxes = np.array([[x, y, x + w, y + h] for (x, y), (w, h) in zip(corner, size, strict=True)], np.float32)
    scores = draw(st.lists(st.floats(0, 1, width=32), min_size=n, max_size=n))
    classes = draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n))
    return Detections(boxes.reshape(-1, 4), np.array(scores, np.float32), np.array(classes))


@st.composite
def _separated_detections(draw, n_classes=3):
    """Boxes on a coarse grid, so no two of them overlap."""
    cells = draw(st.lists(st.integers(0, 24), unique=True, max_size=8))
    boxes = np.array([[(c % 5) * 100, (c // 5) * 100, (c % 5) * 100 + 50, (c // 5) * 100 + 60] for c in cells])
    scores = draw(st.lists(st.floats(0, 1, width=32), min_size=len(cells), max_size=len(cells)))
    classes = draw(st.lists(st.integers(0, n_classes - 1), min_size=len(cells), max_size=len(cells)))
    return Detections(boxes.reshape(-1, 4), np.array(scores, np.float32), np.array(classes))


_paths = st.integers(1, 4).flatmap(
    lambda n: st.tuples(
        st.lists(_detections(), min_size=n, max_size=n), st.lists(_detections(), min_size=n, max_size=n)
    )
)


@given(st.lists(_detections(), min_size=1, max_size=4))
def test_agreement_of_a_path_with_itself_is_total(path):
    result = agreement(path, path)
    n = sum(len(d) for d in path)
    assert (result.matched, result.class_flipped, result.missed, result.extra) == (n, 0, 0, 0)
    assert result.mean_score_drift == result.mean_abs_score_drift == 0.0


@given(_paths)
def test_every_box_is_matched_flipped_missed_or_extra_exactly_once(paths):
    reference, candidate = paths
    result = agreement(reference, candidate)
    assert result.n_reference == sum(len(d) for d in reference)
    assert result.n_candidate == sum(len(d) for d in candidate)
    assert result.matched + result.class_flipped + result.missed == result.n_reference
    assert result.matched + result.class_flipped + result.extra == result.n_candidate
    assert min(result.matched, result.class_flipped, result.missed, result.extra) >= 0
    assert abs(result.mean_score_drift) <= result.mean_abs_score_drift + 1e-12


@given(st.lists(_separated_detections(), min_size=1, max_size=3))
def test_relabelling_every_box_turns_every_match_into_a_class_flip(path):
    relabelled = [Detections(d.boxes, d.scores, (d.class_ids + 1) % 3) for d in path]
    result = agreement(path, relabelled)
    n = sum(len(d) for d in path)
    assert (result.matched, result.class_flipped, result.missed, result.extra) == (0, n, 0, 0)


@given(st.lists(_detections(), min_size=1, max_size=3))
def test_moving_every_box_away_leaves_only_misses_and_extras(path):
    moved = [Detections(d.boxes + 1000, d.scores, d.class_ids) for d in path]
    result = agreement(path, moved)
    n = sum(len(d) for d in path)
    assert (result.matched, result.class_flipped, result.missed, result.extra) == (0, 0, n, n)


@given(st.lists(_separated_detections(), min_size=1, max_size=3), st.floats(-0.5, 0.5))
def test_score_drift_is_the_mean_score_change_of_matched_boxes(path, delta):
    shifted = [Detections(d.boxes + 3, d.scores + np.float32(delta), d.class_ids) for d in path]
    result = agreement(path, shifted)
    if result.matched:
        assert result.mean_score_drift == pytest.approx(delta, abs=1e-6)
        assert result.mean_abs_score_drift == pytest.approx(abs(delta), abs=1e-6)


def test_the_higher_scoring_candidate_takes_the_reference_box_and_iou_05_is_enough():
    reference = [Detections(np.array([[0, 0, 10, 10]]), np.array([0.8]), np.array([0]))]
    # both candidates overlap the reference with IoU 0.5 exactly (half-area shifted copies)
    boxes = np.array([[0, 0, 10, 5], [0, 5, 10, 10]])
    candidate = [Detections(boxes, np.array([0.3, 0.6]), np.array([0, 0]))]
    result = agreement(reference, candidate)
    assert (result.matched, result.extra, result.missed) == (1, 1, 0)
    assert result.mean_score_drift == pytest.approx(0.6 - 0.8)


def test_a_box_just_below_iou_05_is_missed():
    reference = [Detections(np.array([[0, 0, 10, 10]]), np.array([0.8]), np.array([0]))]
    candidate = [Detections(np.array([[0, 0, 10, 4.99]]), np.array([0.8]), np.array([0]))]
    result = agreement(reference, candidate)
    assert (result.matched, result.missed, result.extra) == (0, 1, 1)


def test_paths_over_different_image_counts_are_an_error():
    with pytest.raises(AgreementError, match="2 reference images but 1 candidate images"):
        agreement([Detections.empty()] * 2, [Detections.empty()])


# --- the vectorised matching against the per-image loop it replaced ---------------------------------


@st.composite
def _crowded(draw, max_boxes=12, n_classes=3):
    """Boxes on a small grid of few sizes and scores from a short list: many equal IoUs and equal
    scores, IoUs exactly at 0.5, boxes nested and repeated."""
    n = draw(st.integers(0, max_boxes))
    cells = draw(
        st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.sampled_from([4, 8])), min_size=n, max_size=n)
    )
    boxes = np.array([[x * 4, y * 4, x * 4 + w, y * 4 + w] for x, y, w in cells], np.float32).reshape(-1, 4)
    scores = draw(st.lists(st.sampled_from([0.25, 0.5, 0.5, 0.75, 0.9]), min_size=n, max_size=n))
    classes = draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n))
    return Detections(boxes, np.array(scores, np.float32), np.array(classes))


_crowded_paths = st.integers(1, 6).flatmap(
    lambda n: st.tuples(st.lists(_crowded(), min_size=n, max_size=n), st.lists(_crowded(), min_size=n, max_size=n))
)


def _same(found, expected):
    assert found == expected  # counts equal, drifts equal to the bit (dataclass equality of the floats)


@settings(max_examples=300)
@given(_crowded_paths, st.sampled_from([0.5, 0.3, 0.0]))
def test_the_vectorised_matching_equals_the_per_image_loop_bit_for_bit(paths, threshold):
    reference, candidate = paths
    _same(agreement(reference, candidate, threshold), loop.agreement(reference, candidate, threshold))
    _same(agreement(candidate, reference, threshold), loop.agreement(candidate, reference, threshold))


@settings(max_examples=100)
@given(_paths | _crowded_paths, st.integers(1, 64))
def test_matching_in_chunks_of_any_size_changes_nothing(paths, cells):
    reference, candidate = paths
    whole = agreement(reference, candidate)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agreement_module, "_CELLS", cells)
        assert agreement(reference, candidate) == whole
        assert differing_boxes(reference, candidate).tolist() == [
            loop.differing(r, c) for r, c in zip(reference, candidate, strict=True)
        ]


@given(_paths | _crowded_paths)
def test_the_differing_boxes_per_image_are_those_the_report_counted_image_by_image(paths):
    reference, candidate = paths
    expected = [loop.differing(r, c) for r, c in zip(reference, candidate, strict=True)]
    assert differing_boxes(reference, candidate).tolist() == expected


def test_many_images_of_many_boxes_agree_as_the_loop_counted():
    """300 images of up to 40 boxes and their jittered copies (several chunks), the drift statistics
    to the bit."""
    rng = np.random.default_rng(5)
    images = []
    for _ in range(300):
        n = int(rng.integers(0, 40))
        corner = rng.uniform(0, 600, (n, 2))
        boxes = np.concatenate([corner, corner + rng.uniform(5, 120, (n, 2))], axis=1).astype(np.float32)
        images.append(Detections(boxes, rng.uniform(0, 1, n).astype(np.float32), rng.integers(0, 5, n)))
    jittered = [
        Detections(d.boxes + rng.normal(0, 3, d.boxes.shape).astype(np.float32), d.scores * 0.9, d.class_ids)
        for d in images
    ]
    _same(agreement(images, jittered), loop.agreement(images, jittered))


def _neighbour_iou_by_loop(path: Detections) -> np.ndarray:
    """Each box's highest IoU with another box of its image and class, box by box."""
    out = np.zeros(len(path))
    for i in range(len(path)):
        for j in range(len(path)):
            if i != j and path.class_ids[i] == path.class_ids[j]:
                a, b = path.boxes[i].astype(np.float64), path.boxes[j].astype(np.float64)
                w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
                h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
                union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
                out[i] = max(out[i], w * h / union if w * h > 0 else 0.0)
    return out


@settings(max_examples=150)
@given(_paths | _crowded_paths, st.integers(1, 64))
def test_the_disagreeing_boxes_are_the_ones_agreement_counts_in_any_chunking(paths, cells):
    reference, candidate = paths
    counts = agreement(reference, candidate)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agreement_module, "_CELLS", cells)
        found = disagreement(reference, candidate)
    assert (len(found.missed_scores), len(found.extra_scores)) == (counts.missed, counts.extra)
    assert (len(found.drift), found.flipped) == (counts.matched, counts.class_flipped)
    assert np.all(found.matched_iou >= 0.5) and len(found.matched_iou) == counts.matched
    assert float(found.drift.mean()) == pytest.approx(counts.mean_score_drift) if counts.matched else True
    # every unmatched box's neighbour IoU is one its own path has
    for own, neighbours in ((reference, found.missed_neighbour_iou), (candidate, found.extra_neighbour_iou)):
        possible = np.concatenate([_neighbour_iou_by_loop(d) for d in own] or [np.zeros(0)])
        assert all(np.isclose(possible, n).any() for n in neighbours)


def test_a_missed_box_carries_its_score_and_its_overlap_with_its_neighbour():
    kept = Detections(
        np.array([[0, 0, 10, 10], [0, 0, 10, 8]], np.float32), np.array([0.9, 0.3], np.float32), np.array([0, 0])
    )
    alone = Detections(kept.boxes[:1], kept.scores[:1], kept.class_ids[:1])
    found = disagreement([kept], [alone])
    assert found.missed_scores.tolist() == [pytest.approx(0.3)] and found.extra_scores.size == 0
    assert found.missed_neighbour_iou.tolist() == [pytest.approx(0.8)]
    assert found.matched_iou.tolist() == [1.0] and found.drift.tolist() == [0.0]
