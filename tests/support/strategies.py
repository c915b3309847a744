"""Hypothesis strategies that tests in more than one room draw from."""

import numpy as np
from hypothesis import strategies as st

from harness.core.specs import FormatOrder
from harness.formats import layout
from harness.formats.layout import padded_shape

DTYPES = st.sampled_from([np.dtype(np.uint8), np.dtype(np.uint16)])
ORDERS = st.sampled_from(layout.SUPPORTED_ORDERS)


@st.composite
def geometries(draw, orders=ORDERS):
    """(order, host shape, dtype, device dims): the default padding, or more of it, as a HEF may store."""
    order = draw(orders)
    dtype = draw(DTYPES)
    if order is FormatOrder.NC:
        shape = (draw(st.integers(1, 33)),)
    else:
        shape = (draw(st.integers(1, 4)), draw(st.integers(1, 33)), draw(st.integers(1, 33)))
    padded = padded_shape(order, shape, dtype)
    if draw(st.booleans()):
        extra = [draw(st.integers(0, 9)) for _ in padded]
        if order is FormatOrder.F8CR:
            extra[2] = 8 * draw(st.integers(0, 2))
        padded = tuple(p + e for p, e in zip(padded, extra, strict=True))
    return order, shape, dtype, padded
