"""Whether a path moved every matched score by one amount: a confidence shift (Ultralytics measured
YOLO26 ~0.05 lower on a Hailo-8L), not scores moved each their own way.

A shift moves the mean drift (candidate minus reference score of the matched pairs) and leaves their
spread to the path's own noise. That noise is the model's and the HEF's, not a fixed share: on the demo's
first 30 images at threshold 0.2 a clean emulated YOLOv8 demo HEF scores its matched boxes with a spread
(standard deviation) of 0.021, a clean emulated YOLOv5 fire/smoke HEF 0.057 (mean absolute drift 0.029),
more than half a shift of 0.1. So the spread a shift may add is measured beyond the path's own where a
baseline blessed it: ``sqrt(spread^2 - own^2)``, with ``own`` the standard deviation of normal noise whose
mean absolute value is the blessed drift (``sqrt(pi / 2)`` times it: 0.036 for that YOLOv5 HEF, whose
noise has the heavier tails; the margin is on the side of calling a wide shift no shift).
A mean drift of at least the least shift the caller names, whose spread beyond the path's own noise is
at most :data:`SHIFT_SPREAD` of it, is a common shift; with no blessed drift the whole spread counts. A
shift keeps the score scale (:mod:`harness.verdict.score_scale`): scores pinned at one value (scale 0) or
squeezed by a second sigmoid (0.21 to 0.24) move by a mean amount too, and are no shift.
"""

from __future__ import annotations

import math

from harness.verdict.score_scale import SCALE_LIMIT

SHIFT_SPREAD = 0.5  # the spread beyond the path's own noise a common shift may have, as a share of it
NORMAL_SPREAD = math.sqrt(math.pi / 2)  # standard deviation over mean absolute value, normal noise


def common_shift(
    drift: float, spread: float, least: float, own_drift: float | None = None, scale: float | None = None
) -> bool:
    """Whether a mean score ``drift`` with standard deviation ``spread`` is one common shift of at least
    ``least``, given the path's blessed mean absolute drift ``own_drift`` (None: not blessed) and the
    matched scores' ``scale`` (None: not measured)."""
    own = NORMAL_SPREAD * own_drift if own_drift is not None else 0.0
    beyond = math.sqrt(max(spread * spread - own * own, 0.0))
    kept = scale is None or 1 / SCALE_LIMIT <= scale <= SCALE_LIMIT
    return abs(drift) >= least and beyond <= SHIFT_SPREAD * abs(drift) and kept
