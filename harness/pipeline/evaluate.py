"""Run one detection path over a labelled dataset and measure it: the :class:`~harness.verdict.result.PathResult`.

Images the cache does not hold are read on a thread pool while the path infers, and inferred a batch
at a time (``batch`` images in one runner call where the path takes a batch, with the same detections
as one by one; else one by one; on a device that keeps batches in flight, :data:`IN_FLIGHT` at once);
each prediction goes to the cache (if any) as soon as it is made, which writes them a batch at a time
and the rest when the run ends, by an exception too: a run interrupted by an exception loses at most
the batch in its runner (the batches in flight on a device, nothing where the path infers one by one),
a killed one at most the cache's unwritten batch, and a repeated one infers nothing. Ground truth is
relabelled to the model's class ids by name (``settings.class_map``, or the identity when the dataset's
and the model's class names are the same list, order included); metrics follow at
``settings.score_threshold``, under ``settings.metric``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, TextIO

import numpy as np

from harness import __version__
from harness.core import defaults
from harness.core.environment import environment
from harness.core.errors import HarnessError
from harness.core.path_names import PathKind
from harness.core.shared_entry import EntryUse
from harness.core.stage_clock import Stage, clocked, timed
from harness.inputs.dataset import LEFT_OUT, Dataset, DatasetError, Sample, class_map
from harness.inputs.preprocess import load_image
from harness.pipeline.backends import kind_named
from harness.pipeline.cache import CacheFile, PredictionCache
from harness.pipeline.detect import Collect, DetectionPath, FrameResult, SourcedPath, keeps_in_flight, submit_frames
from harness.verdict.metrics import METRICS, box_counts, score_distribution
from harness.verdict.metrics.distribution import CellsAboveThreshold
from harness.verdict.result import PathResult, Provenance

if TYPE_CHECKING:
    from concurrent.futures import Future

PROGRESS_MIN_IMAGES = 20  # shorter runs show no progress bar unless it is forced
PREFETCH = 4  # images read ahead of the batch being inferred, at the least (a whole next batch where larger)
IN_FLIGHT = 3  # batches handed to a device that keeps them in flight before the first is waited for


def resolve_class_map(dataset_names: Sequence[str], model_names: Sequence[str], given: Sequence[int]) -> np.ndarray:
    """Dataset class id -> model class id: ``given`` (as :func:`harness.inputs.dataset.class_map` made it
    from an explicit name mapping) checked against both name lists, or else the identity, which
    needs the same names in the same order."""
    if not given:
        return class_map(dataset_names, model_names)
    mapping = np.asarray(given, dtype=np.int64)
    if len(mapping) != len(dataset_names) or mapping.min() < LEFT_OUT or mapping.max() >= len(model_names):
        raise DatasetError(
            f"settings class_map {list(given)}: expected one model class id in 0..{len(model_names) - 1} "
            f"(or {LEFT_OUT}: left out) for each of the {len(dataset_names)} dataset classes {list(dataset_names)}"
        )
    return mapping


class Progress:
    """A one-line stderr progress bar, redrawn at most ten times a second."""

    def __init__(self, label: str, total: int, stream: TextIO) -> None:
        self.label, self.total, self.stream = label, total, stream
        self.done = self.cached = 0
        self._start = self._drawn = time.monotonic()

    def step(self, cached: bool) -> None:
        self.done += 1
        self.cached += cached
        now = time.monotonic()
        if now - self._drawn >= 0.1 or self.done == self.total:
            self._drawn = now
            width = 30
            filled = width * self.done // max(self.total, 1)
            rate = (self.done - self.cached) / max(now - self._start, 1e-9)
            self.stream.write(
                f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} images, "
                f"{self.cached} cached, {rate:.1f} inferred/s"
            )
            if self.done == self.total:
                self.stream.write("\n")
            self.stream.flush()


def _progress(label: str, total: int, progress: bool | None, stream: TextIO) -> Progress | None:
    if progress is None:
        progress = total > PROGRESS_MIN_IMAGES and stream.isatty()
    return Progress(label, total, stream) if progress else None


@dataclass
class _Entry:
    """A sample on its way: its frame once cached or inferred, the image being read until then."""

    sample: Sample
    frame: FrameResult | None
    reading: Future[np.ndarray] | None
    cached: bool
    submitted: bool = False


def _image(entry: _Entry) -> np.ndarray:
    assert entry.reading is not None
    image = entry.reading.result()
    sample = entry.sample
    if image.shape[:2] != sample.original_hw:
        raise HarnessError(
            f"image {sample.image_id!r}: {image.shape[0]}x{image.shape[1]} when read, but "
            f"{sample.original_hw[0]}x{sample.original_hw[1]} when the dataset was listed (changed since?)"
        )
    return image


def _frames(
    path: DetectionPath,
    samples: Sequence[Sample],
    cache: CacheFile | None,
    bar: Progress | None,
    batch: int = defaults.BATCH,
) -> Iterator[tuple[FrameResult, bool]]:
    """Each sample's frame, in order, and whether it came from the cache. The images the cache does
    not hold are read on a thread pool, up to a batch and :data:`PREFETCH` (or a second batch) ahead,
    and inferred ``batch`` at a time while the next are read; cached ones wait in the same window
    (twice as long), so a batch is whole unless the cache holds most of its neighbours. Where the path
    keeps batches in flight on a device, :data:`IN_FLIGHT` are handed to it before the first is waited
    for: the host prepares the next and decodes the last while the device works (the window a batch
    longer per batch in flight); the frames come out in order all the same."""
    if batch < 1:
        raise HarnessError(f"batch {batch}: expected a whole number of at least 1")
    depth = IN_FLIGHT if keeps_in_flight(path) else 1
    reads_ahead = depth * batch + max(PREFETCH, batch)
    sourced = path if isinstance(path, SourcedPath) else None  # a replay serves by the image file's sha256
    with ExitStack() as stack:
        pool = None  # made for the first image read: a run served from cache or store never imports it

        def read(sample: Sample) -> Future[np.ndarray]:
            nonlocal pool
            if pool is None:
                from concurrent.futures import ThreadPoolExecutor

                pool = stack.enter_context(ThreadPoolExecutor(max_workers=2, thread_name_prefix="hailo-harness-read"))
            return pool.submit(timed, Stage.DECODE_IMAGE, load_image, sample.path)

        ahead: deque[_Entry] = deque()
        flight: deque[tuple[list[_Entry], Collect]] = deque()  # batches handed to the path, not yet collected
        queue = iter(samples)
        reading = 0  # entries in ahead still without a frame
        while True:
            while reading < reads_ahead and len(ahead) < 2 * reads_ahead and (sample := next(queue, None)) is not None:
                cached = timed(Stage.CACHE, cache.get, sample.sha256) if cache is not None else None
                served = sourced.served(sample.sha256, sample.original_hw) if cached is None and sourced else None
                if served is not None:
                    ahead.append(_Entry(sample, served, None, False))
                    if cache is not None:
                        timed(Stage.CACHE, cache.put, sample.sha256, sample.image_id, served)
                elif cached is None:
                    ahead.append(_Entry(sample, None, read(sample), False))
                    reading += 1
                else:
                    ahead.append(_Entry(sample, cached, None, True))
            if not ahead:
                return
            if ahead[0].frame is None:
                while len(flight) < depth:
                    pending = [entry for entry in ahead if entry.frame is None and not entry.submitted][:batch]
                    if not pending:
                        break
                    for entry in pending:
                        entry.submitted = True
                    images = (_image(entry) for entry in pending)
                    sources = [entry.sample.sha256 for entry in pending]
                    flight.append((pending, submit_frames(path, images, sources)))
                pending, collect = flight.popleft()
                for entry, frame in zip(pending, collect(), strict=True):
                    entry.frame, entry.reading = frame, None
                    if cache is not None:
                        timed(Stage.CACHE, cache.put, entry.sample.sha256, entry.sample.image_id, frame)
                reading -= len(pending)
            entry = ahead.popleft()
            assert entry.frame is not None
            if bar is not None:
                bar.step(entry.cached)
            yield entry.frame, entry.cached


def _cells(frames: Sequence[FrameResult], threshold: float) -> CellsAboveThreshold | None:
    counted = [f.cells for f in frames if f.cells is not None]
    if not counted:
        return None
    if len(counted) != len(frames):
        raise HarnessError(f"cells above threshold: counted for {len(counted)} of {len(frames)} images, expected all")
    return CellsAboveThreshold(
        threshold,
        sum(c.cells for c in counted),
        sum(c.cells_above for c in counted),
        sum(c.candidates for c in counted),
    )


@clocked(Stage.EVALUATE)
def evaluate_path(
    path: DetectionPath,
    dataset: Dataset,
    cache: PredictionCache | None = None,
    progress: bool | None = None,
    stream: TextIO | None = None,
    batch: int = defaults.BATCH,
    kind: PathKind | None = None,
    recorded: PathKind | None = None,
) -> PathResult:
    """Predict every readable sample of ``dataset`` with ``path`` (from ``cache`` where it has them)
    and measure the predictions.

    ``progress``: None shows a bar on ``stream`` (default stderr) when it is a terminal and the set
    has more than :data:`PROGRESS_MIN_IMAGES` images; True always; False never. ``batch``: images
    inferred together where the path takes a batch (its detections are the same at any batch).
    ``kind``: what made the path's outputs, as its backend's descriptor says (``recorded``: a replay's
    recorded kind); None: the kind of the backend whose paths carry ``path.name``.
    """
    if not dataset.samples:
        raise DatasetError(f"dataset {dataset.root}: no readable images to evaluate")
    if path.model_names is None:
        raise HarnessError(
            f"model {path.model_file}: class names unknown (not in its metadata); "
            "give the model's class names in class-id order"
        )
    names = path.model_names
    settings = path.settings
    mapping = resolve_class_map(dataset.names, names, settings.class_map)
    stream = sys.stderr if stream is None else stream
    bar = _progress(f"eval {path.name}", len(dataset.samples), progress, stream)
    if cache is None:
        done = list(_frames(path, dataset.samples, None, bar, batch))
    else:
        with timed(Stage.CACHE, cache.open, path) as cache_file:
            done = list(_frames(path, dataset.samples, cache_file, bar, batch))
    frames = [frame for frame, _ in done]
    predictions = tuple(f.detections for f in frames)
    ground_truth = [s.ground_truth.mapped(mapping) for s in dataset.samples]
    settings = dataclasses.replace(settings, class_map=tuple(int(i) for i in mapping))
    return PathResult(
        path=path.name,
        kind=kind or kind_named(path.name),
        settings=settings,
        provenance=Provenance(
            model_path=str(path.model_file),
            model_sha256=path.model_sha256,
            dataset=str(dataset.root),
            dataset_manifest=dataset.manifest,
            harness_version=__version__,
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            environment=environment(),
            runtime=path.runtime,
            from_cache=sum(cached for _, cached in done),
            shared_cache=(*((dataset.cache_entry,) if dataset.cache_entry else ()), *_cache_entries(path)),
            made_from=tuple(getattr(path, "made_from", ())),  # what only its runner knows (a device's firmware)
        ),
        image_ids=tuple(s.image_id for s in dataset.samples),
        predictions=predictions,
        metrics=timed(
            Stage.METRICS, METRICS[settings.metric], ground_truth, predictions, names, settings.score_threshold
        ),
        box_counts=timed(Stage.METRICS, box_counts, predictions),
        scores=timed(Stage.METRICS, score_distribution, predictions),
        cells=_cells(frames, settings.score_threshold),
        fps=path.fps,
        score_ceiling=path.score_ceiling,
        recorded=recorded,
    )


def _cache_entries(path: DetectionPath) -> tuple[EntryUse, ...]:
    """The shared-cache entries ``path`` runs (a path over a runner that names them; none otherwise)."""
    return tuple(getattr(path, "cache_entries", ()))
