"""Seconds and calls per stage of an evaluation, recorded where the pipeline does the work.

The pipeline times its stages with :func:`stage` (a block), :func:`timed` (one call) and
:func:`clocked` (a function's every call). They record only while a clock listens (:func:`listening`,
from any thread: images are decoded on read-ahead threads); otherwise a stage costs one attribute read
and an empty ``with``.
"""

from __future__ import annotations

import enum
import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class Stage(enum.StrEnum):
    """A stage of a run. Before any path: ``dataset`` (reading and checking the images and labels) and
    ``export facts`` (the model's, from its sidecar or the model). Per path: ``evaluate`` holds the
    others (and the read-ahead waits); ``decode image`` runs on read-ahead threads, so its seconds overlap
    the others'; ``inference`` is the runner's calls (the float export's session opens in its first);
    ``cache`` is the cache's opening, lookups and writes (not the last batch, written as it closes).
    After them: ``reports`` (rendering and writing report.md, report.json and report.html)."""

    DATASET = "dataset"
    EXPORT_FACTS = "export facts"
    EVALUATE = "evaluate"
    DECODE_IMAGE = "decode image"
    PREPROCESS = "preprocess"
    INFERENCE = "inference"
    DECODE = "decode + NMS"
    METRICS = "metrics"
    CACHE = "cache"
    REPORTS = "reports"


class StageClock:
    """Seconds and calls per stage (by its name), added from any thread."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, name: Stage, seconds: float) -> None:
        with self._lock:
            self.seconds[name.value] = self.seconds.get(name.value, 0.0) + seconds
            self.calls[name.value] = self.calls.get(name.value, 0) + 1


class _Listener:
    clock: StageClock | None = None


_LISTENER = _Listener()  # the one clock listening, if any
_IDLE = nullcontext()


@contextmanager
def listening() -> Iterator[StageClock]:
    """A fresh clock that records every stage run, in any thread, until the block ends."""
    if _LISTENER.clock is not None:
        raise RuntimeError("a stage clock is already listening")
    clock = _LISTENER.clock = StageClock()
    try:
        yield clock
    finally:
        _LISTENER.clock = None


class _Timing:
    __slots__ = ("_clock", "_name", "_start")

    def __init__(self, clock: StageClock, name: Stage) -> None:
        self._clock, self._name, self._start = clock, name, 0.0

    def __enter__(self) -> None:
        self._start = time.perf_counter()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._clock.add(self._name, time.perf_counter() - self._start)


def stage(name: Stage) -> AbstractContextManager[None]:
    """``with stage(Stage.INFERENCE):`` times the block where a clock listens."""
    clock = _LISTENER.clock
    return _IDLE if clock is None else _Timing(clock, name)


def timed(name: Stage, function: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """``function(*args, **kwargs)`` timed as ``name`` where a clock listens."""
    with stage(name):
        return function(*args, **kwargs)


def clocked(name: Stage) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A decorator: the function timed as ``name`` on every call where a clock listens."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def timed(*args: P.args, **kwargs: P.kwargs) -> R:
            with stage(name):
                return function(*args, **kwargs)

        return timed

    return decorate
