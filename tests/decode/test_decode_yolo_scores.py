"""Whether a float class output holds probabilities: the one-pass bit test decides as the float comparisons do."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.decode.maps import classes_are_probabilities

SPEC = OutputSpec("classes", (2, 2, 80), FormatOrder.NHWC, FormatType.FLOAT32)
# the edges of [0, 1] and of the bit test: -0.0, the tiniest of each sign, 1 and the next float32, and
# what is no number
ABOVE_ONE = np.nextafter(np.float32(1), np.float32(2))
EDGES = np.array([0.0, -0.0, 1e-45, -1e-45, 0.5, 1.0, ABOVE_ONE, -0.5, 2.0, np.inf, -np.inf, np.nan], np.float32)
values = st.lists(st.sampled_from(list(EDGES)) | st.floats(-2, 2, width=32), min_size=1, max_size=6)


@given(values, st.sampled_from([np.float32, np.float64]))
def test_a_float_class_output_holds_probabilities_when_every_value_is_within_0_and_1(drawn, dtype):
    array = np.array(drawn, dtype=dtype)
    with np.errstate(invalid="ignore"):
        expected = bool(array.min() >= 0 and array.max() <= 1)
    assert classes_are_probabilities(SPEC, array) is expected


def test_negative_nan_and_minus_zero_are_told_apart():
    assert classes_are_probabilities(SPEC, np.array([0.2, -0.0, 1.0], np.float32))
    assert not classes_are_probabilities(SPEC, np.array([0.2, -0.0, 1.5], np.float32))
    assert not classes_are_probabilities(SPEC, np.array([0.2, -np.nan], np.float32))
    assert not classes_are_probabilities(SPEC, np.array([0.2, np.nan], np.float32))
