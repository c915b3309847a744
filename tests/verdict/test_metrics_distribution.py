import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.core.detections import Detections
from harness.verdict.metrics.distribution import (
    SCORE_BIN_EDGES,
    DistributionError,
    _percentile_95,
    box_counts,
    cells_above_threshold,
    score_distribution,
)


def _with_scores(scores):
    scores = np.asarray(scores, dtype=np.float32)
    return Detections(np.zeros((len(scores), 4)), scores, np.zeros(len(scores)))


def test_box_counts_give_mean_p95_max_and_total_boxes_per_image():
    preds = [_with_scores([0.5] * n) for n in [0] * 10 + list(range(10))]
    counts = box_counts(preds)
    assert (counts.mean, counts.max, counts.total) == (2.25, 9, 45)
    assert counts.p95 == pytest.approx(np.percentile([0] * 10 + list(range(10)), 95)) == pytest.approx(8.05)


@given(st.lists(st.integers(0, 400), min_size=1, max_size=300) | st.lists(st.integers(0, 3), min_size=1, max_size=50))
@example([0, 43]).via("numpy's two interpolation branches round apart here")
@example([0, 0, 45]).via("numpy's two interpolation branches round apart here")
@example([0, 0, 16, 73]).via("numpy's two interpolation branches round apart here")
@example([0] * 13 + [25]).via("numpy's two interpolation branches round apart here")
def test_the_p95_of_box_counts_is_numpys_percentile_to_the_bit(counts):
    expected = np.percentile(np.array(counts), 95)
    assert _percentile_95(np.array(counts)).hex() == float(expected).hex()


def test_box_counts_of_no_images_are_an_error():
    with pytest.raises(DistributionError, match="no images"):
        box_counts([])


def test_saturation_is_the_share_of_boxes_scoring_at_least_099():
    dist = score_distribution([_with_scores([0.5, 0.99, 1.0]), _with_scores([0.98]), Detections.empty()])
    assert (dist.n_boxes, dist.saturation) == (4, 0.5)
    assert score_distribution([Detections.empty()]).saturation == 0.0


def test_histogram_has_twenty_fixed_bins_with_one_in_the_last_and_logits_counted_apart():
    dist = score_distribution([_with_scores([0.0, 0.04, 0.05, 0.5, 0.97, 1.0, -3.0, 43.9])])
    assert len(dist.histogram) == 20 == len(SCORE_BIN_EDGES) - 1
    assert dist.histogram[0] == 2 and dist.histogram[1] == 1 and dist.histogram[10] == 1 and dist.histogram[19] == 2
    assert (dist.below_zero, dist.above_one) == (1, 1)
    assert dist.saturation == pytest.approx(2 / 8)


@given(hnp.arrays(np.float32, st.integers(0, 200), elements=st.floats(-2, 2, width=32)))
def test_every_score_lands_in_exactly_one_histogram_bin_or_outside_count(scores):
    dist = score_distribution([_with_scores(scores)])
    assert sum(dist.histogram) + dist.below_zero + dist.above_one == len(scores) == dist.n_boxes


def test_non_finite_scores_are_an_error():
    with pytest.raises(DistributionError, match="non-finite"):
        score_distribution([_with_scores([0.5, np.nan])])


def test_cells_above_threshold_count_cells_and_cell_class_candidates_over_all_heads():
    # the three heads of a 640x640 two-class model: 6400 + 1600 + 400 = 8400 cells
    heads = [np.zeros((80, 80, 2), np.float32), np.zeros((40, 40, 2), np.float32), np.zeros((20, 20, 2), np.float32)]
    heads[0][0, :10, 0] = 0.5  # 10 cells, one class each
    heads[1][3, 3, :] = 0.1  # one cell, both classes exactly at the threshold
    heads[2][5, 5, 1] = 0.0999  # just below
    cells = cells_above_threshold(heads, 0.1)
    assert (cells.cells, cells.cells_above, cells.candidates) == (8400, 11, 12)
    assert cells.share == pytest.approx(11 / 8400)


def test_class_scores_with_different_class_counts_per_head_are_an_error():
    with pytest.raises(DistributionError, match=r"head 1: shape \(4, 4, 3\), expected \(\.\.\., 2\)"):
        cells_above_threshold([np.zeros((8, 8, 2)), np.zeros((4, 4, 3))], 0.5)
    with pytest.raises(DistributionError, match="no heads"):
        cells_above_threshold([], 0.5)


@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=3, max_side=6), elements=st.floats(0, 1, width=32)))
def test_raising_the_threshold_never_adds_cells(scores):
    low, high = cells_above_threshold([scores], 0.3), cells_above_threshold([scores], 0.7)
    assert high.cells_above <= low.cells_above <= low.candidates
    assert high.candidates <= low.candidates <= scores.size
