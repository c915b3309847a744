"""What every backend runner offers: its inputs, its outputs as the host receives them, one frame at a time;
what a runner that takes a batch of frames in one call offers besides; and what a runner that keeps
outputs by the image file an input was made from offers (a recorder, a replay)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, runtime_checkable

import numpy as np

from harness.core.closing import Closing
from harness.core.shared_entry import EntryUse
from harness.core.specs import FormatOrder, FormatType, OutputSpec


@dataclass(frozen=True)
class InputSpec:
    """One input: ``shape`` of one frame as the runner takes it, ``(C, H, W)`` for NCHW or
    ``(H, W, C)`` for NHWC; :meth:`Runner.infer` takes a batch of one, ``(1, *shape)``."""

    name: str
    shape: tuple[int, ...]
    format_order: FormatOrder
    format_type: FormatType

    @property
    def hw(self) -> tuple[int, int]:
        """``(H, W)`` of the image input."""
        if self.format_order is FormatOrder.NCHW:
            return self.shape[1], self.shape[2]
        return self.shape[0], self.shape[1]


class Runner(Protocol):
    """A model run one frame at a time: feed ``{input name: (1, *shape)}``, get ``{output name: array}``
    with one array per :attr:`output_specs` entry, shaped as its spec says. ``label`` says what runs
    it (runtime, device and version where there is one): it is part of every cache key."""

    @property
    def label(self) -> str: ...

    @property
    def input_specs(self) -> Mapping[str, InputSpec]: ...

    @property
    def output_specs(self) -> Mapping[str, OutputSpec]: ...

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...

    def __enter__(self) -> Runner: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class RunnerBase(Closing):
    """A runner's ``with`` lifecycle (:class:`~harness.core.closing.Closing`): ``__exit__`` calls
    :meth:`close`, which releases the runner's session, device or writer; a runner that holds nothing
    keeps the default, which does nothing. ``cache_entries``: the shared-cache entries the runner runs
    (an emulated HEF's quantized model), named in the report. ``made_from``: facts of what ran it that
    only the runner knows (a device's id and firmware: harness.verdict.changes.FACTS), recorded with its results."""

    cache_entries: tuple[EntryUse, ...] = ()
    made_from: tuple[tuple[str, str], ...] = ()


@runtime_checkable
class BatchRunner(Protocol):
    """What a :class:`Runner` that also takes a batch offers besides: ``{input name: (n, *shape)}`` in
    one call -> one ``{output name: array}`` per frame, each as :meth:`Runner.infer` gives it. Its one
    member is what ``isinstance`` checks: no property of the runner is read to tell."""

    def infer_batch(self, feed: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]: ...


@runtime_checkable
class SourcedRunner(Protocol):
    """What a runner that knows the image file each input was made from offers: ``sources``, each
    frame's image file sha256 (the preprocessing is the runner's, fixed for its life). A recorder keeps
    each frame's outputs under its source as well; a replay serves them by it, the file unread."""

    def infer_sourced(self, feed: Mapping[str, np.ndarray], sources: Sequence[str]) -> list[dict[str, np.ndarray]]: ...

    def served(self, source: str) -> dict[str, np.ndarray] | None: ...


@runtime_checkable
class SubmittingRunner(Protocol):
    """What a runner that keeps batches in flight offers besides (HailoRT's: the device works while the host
    prepares and decodes others): ``submit_batch(feed)`` hands a batch over without waiting; the returned
    call waits for it and gives one output dict per frame, as :meth:`BatchRunner.infer_batch` does. Batches
    are run in the order submitted; closing the runner waits for those still in flight."""

    def submit_batch(self, feed: Mapping[str, np.ndarray]) -> Callable[[], list[dict[str, np.ndarray]]]: ...


def infer_frames(
    runner: Runner, feed: Mapping[str, np.ndarray], sources: Sequence[str] | None = None
) -> list[dict[str, np.ndarray]]:
    """``{input name: (n, *shape)}`` -> one output dict per frame: in one call where ``runner`` takes
    a batch, else frame by frame, each fed as a batch of one. ``sources``: each frame's image file
    sha256, where known, for a runner that keeps outputs by it."""
    if sources is not None and isinstance(runner, SourcedRunner):
        return runner.infer_sourced(feed, sources)
    if isinstance(runner, BatchRunner):
        return runner.infer_batch(feed)
    count = len(next(iter(feed.values())))
    return [runner.infer({name: array[i : i + 1] for name, array in feed.items()}) for i in range(count)]
