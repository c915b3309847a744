"""When a path's matched scores moved by one common amount (harness.verdict.score_shift)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.verdict.score_shift import NORMAL_SPREAD, common_shift

# a clean emulated YOLOv5 fire/smoke HEF at threshold 0.2 drifts 0.029 (mean absolute; its spread 0.057); with every
# score shifted by -0.15 on the host the drift is -0.124 and its spread 0.067
OWN = 0.029


def test_a_shift_whose_spread_is_the_paths_own_noise_is_a_common_shift():
    assert common_shift(-0.124, 0.067, 0.05, own_drift=OWN)


def test_without_a_blessed_noise_the_whole_spread_counts_against_the_shift():
    assert not common_shift(-0.124, 0.067, 0.05)
    assert common_shift(-0.124, 0.06, 0.05)


def test_scores_moved_each_their_own_way_beyond_the_paths_noise_are_no_common_shift():
    assert not common_shift(-0.124, 0.15, 0.05, own_drift=OWN)


def test_a_drift_under_the_least_shift_is_no_shift_however_tight():
    assert not common_shift(-0.04, 0.0, 0.05, own_drift=OWN)


def test_scores_pinned_at_one_value_or_squeezed_by_a_second_sigmoid_are_no_shift_whatever_the_noise():
    assert not common_shift(0.3, 0.0, 0.05, own_drift=1.0, scale=0.0)
    assert not common_shift(0.3, 0.0, 0.05, own_drift=1.0, scale=0.23)
    assert common_shift(0.3, 0.0, 0.05, own_drift=1.0, scale=0.97)


@given(
    drift=st.floats(-1, 1),
    spread=st.floats(0, 1),
    own=st.floats(0, 1),
    scale=st.one_of(st.none(), st.floats(0, 5)),
)
def test_a_paths_own_noise_never_turns_a_common_shift_into_none(drift, spread, own, scale):
    if common_shift(drift, spread, 0.05, None, scale):
        assert common_shift(drift, spread, 0.05, own, scale)


@given(drift=st.floats(-1, 1), spread=st.floats(0, 1), own=st.floats(0, 1))
def test_a_spread_within_the_paths_own_noise_leaves_only_the_drift_and_scale_to_decide(drift, spread, own):
    if spread <= NORMAL_SPREAD * own:
        assert common_shift(drift, spread, 0.05, own) == (abs(drift) >= 0.05)
