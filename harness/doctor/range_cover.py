"""How well one set of images covers the activation ranges another reaches, and the fewest images of a pool that
cover them as well as calibrating on the evaluated images themselves would: pure numpy over per-image ranges
(:class:`~harness.backends.emulator.ranges.ImageRanges`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Cover:
    """A range ``[low, high]`` per tensor, held against the range ``[target_low, target_high]`` the evaluated
    images reach."""

    low: np.ndarray
    high: np.ndarray
    target_low: np.ndarray
    target_high: np.ndarray

    @property
    def uncovered(self) -> np.ndarray:
        """Per tensor, the share of the target range outside the range (0: covered; 1: none of it)."""
        return uncovered(self.low, self.high, self.target_low, self.target_high)


def uncovered(low: np.ndarray, high: np.ndarray, target_low: np.ndarray, target_high: np.ndarray) -> np.ndarray:
    """The share of each ``[target_low, target_high]`` that ``[low, high]`` does not reach (broadcast over
    leading axes); 0 where the target range is a point."""
    span = target_high - target_low
    missed = np.clip(target_high - high, 0.0, None) + np.clip(low - target_low, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(span > 0, missed / np.where(span > 0, span, 1.0), 0.0)
    return np.minimum(share, 1.0)


def images_to_add(
    base_low: np.ndarray,
    base_high: np.ndarray,
    pool_low: np.ndarray,
    pool_high: np.ndarray,
    target_low: np.ndarray,
    target_high: np.ndarray,
    allowed: np.ndarray,
) -> list[int]:
    """The pool images (rows of ``pool_low`` / ``pool_high``, per tensor the image's range) to add to a set of
    range ``[base_low, base_high]`` so that no tensor leaves more of its target range uncovered than
    ``allowed`` (per tensor): greedily, each time the image that removes the most uncovered excess, until none is
    left or no image removes any. In the order chosen."""
    low, high = base_low.copy(), base_high.copy()
    chosen: list[int] = []
    free = np.ones(len(pool_low), dtype=bool)

    def excess(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.clip(uncovered(lo, hi, target_low, target_high) - allowed, 0.0, None).sum(axis=-1)

    left = float(excess(low, high))
    while left > 0 and free.any():
        candidates = np.flatnonzero(free)
        after = excess(np.minimum(low, pool_low[candidates]), np.maximum(high, pool_high[candidates]))
        best = int(np.argmin(after))
        if after[best] >= left:
            break
        pick = int(candidates[best])
        chosen.append(pick)
        free[pick] = False
        low, high = np.minimum(low, pool_low[pick]), np.maximum(high, pool_high[pick])
        left = float(after[best])
    return chosen
