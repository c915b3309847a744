"""A runner's share of a dataset's images under ``--shard K/N`` (:mod:`harness.pipeline.shard`): read
by the option table and the shard run alike, so it imports neither."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.core.errors import HarnessError

if TYPE_CHECKING:
    from harness.inputs.dataset import Sample


@dataclass(frozen=True)
class Shard:
    """The ``index``-th (1-based) of ``count`` shares of a dataset's images."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``K/N`` with 1 <= K <= N; ValueError saying what was expected otherwise."""
        index, sep, count = text.partition("/")
        if not (sep and index.strip().isdigit() and count.strip().isdigit()):
            raise ValueError("expected K/N, this runner's share K of N shares (e.g. 2/4)")
        shard = cls(int(index), int(count))
        if not 1 <= shard.index <= shard.count:
            raise ValueError(f"expected K/N with K from 1 to N (e.g. 2/4), got K {shard.index} of N {shard.count}")
        return shard

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def share(self, samples: Sequence[Sample]) -> tuple[Sample, ...]:
        """This shard's samples, in the dataset's order: sorted by image id, every ``count``-th from
        the ``index``-th. Refused where the set has fewer images than shards (a share would be empty)."""
        if len(samples) < self.count:
            raise HarnessError(
                f"--shard {self}: the dataset has {len(samples)} readable images, fewer than {self.count} shards; "
                "expected at most one shard per image"
            )
        order = sorted(range(len(samples)), key=lambda i: samples[i].image_id)
        mine = sorted(order[self.index - 1 :: self.count])
        return tuple(samples[i] for i in mine)
