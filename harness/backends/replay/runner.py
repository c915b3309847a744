"""The replay backend: a recorded Hailo path's outputs served for the same inputs, and the recorder
that writes them while any other runner works."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from harness.backends.base import InputSpec, Runner, RunnerBase, infer_frames
from harness.backends.replay.store import Recording, StoreError, StoreReader, StoreWriter, feed_key
from harness.core.path_names import REPLAYED_FROM
from harness.core.signing import SealState
from harness.core.specs import OutputSpec


class ReplayRunner(RunnerBase):
    """A :class:`~harness.backends.base.Runner` over a store: for each input, the outputs recorded
    for exactly that input (the same image, preprocessed the same way), or for the image file it was
    made from (a :class:`~harness.backends.base.SourcedRunner`: the store's header fixes the
    preprocessing); any other input is refused."""

    def __init__(self, store: str | os.PathLike[str]) -> None:
        self._store = StoreReader(store)
        self.recording = self._store.recording

    @property
    def label(self) -> str:
        r = self.recording
        return (
            f"{REPLAYED_FROM}{r.runtime}, recorded {r.created} ({len(self._store)} inputs in {self._store.file}; "
            f"{self.origin})"
        )

    @property
    def origin(self) -> str:
        """The store's seal in words: the header's state, and where it claims a device origin that no
        release key vouches for, that it is unsigned."""
        seal = self._store.seal
        said = f"header {seal.state.value}: {seal.detail}"
        if not self.recording.emulated and seal.state is not SealState.SIGNED:
            said += "; its device origin is not vouched for (an unsigned recording: not signed with the release key)"
        return said

    @property
    def input_specs(self) -> Mapping[str, InputSpec]:
        return {i.name: i for i in self.recording.inputs}

    @property
    def output_specs(self) -> Mapping[str, OutputSpec]:
        return {o.name: o for o in self.recording.outputs}

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        key = feed_key(feed)
        if key not in self._store:
            raise StoreError(
                f"output store {self._store.file}: no outputs recorded for this input (key {key[:16]}): "
                + self._missing(key)
            )
        return self._store.get(key)

    def served(self, source: str) -> dict[str, np.ndarray] | None:
        """The outputs recorded for the input made from the image file of sha256 ``source``, if any."""
        key = self._store.key_of(source)
        return None if key is None else self._store.get(key)

    def infer_sourced(self, feed: Mapping[str, np.ndarray], sources: Sequence[str]) -> list[dict[str, np.ndarray]]:
        """Each frame's outputs by its image file where the store has them, else by its input."""
        return [
            self.served(source) or self.infer({name: array[i : i + 1] for name, array in feed.items()})
            for i, source in enumerate(sources)
        ]

    def _missing(self, key: str) -> str:
        """Why a key is not in the store: lost to damage (surely, or perhaps where a lost frame's key
        cannot be read), else other images or other preprocessing."""
        lost = self._store.lost
        again = f"record them again on the device (--record {self._store.file} resumes the store)"
        surely = [str(loss) for loss, lost_key in lost if lost_key == key]
        if surely:
            return f"the store is damaged: its frame was lost ({surely[0]}); {again}"
        unknown = [str(loss) for loss, lost_key in lost if lost_key is None]
        if unknown:
            return (
                f"the store is damaged: {len(unknown)} lost record(s) whose inputs cannot be read "
                f"({'; '.join(unknown)}) may have held it; {again}"
            )
        shaping = ", ".join(f"{k} {v}" for k, v in self.recording.shaping.items())
        return f"it was recorded on other images or with other preprocessing (recorded with {shaping})"


class RecordingRunner(RunnerBase):
    """``runner`` as it is (taking a batch where it does), each frame's outputs also appended to the store
    at ``file``."""

    def __init__(self, runner: Runner, file: str | os.PathLike[str], recording: Recording) -> None:
        self._runner = runner
        self.file = Path(file)
        self._writer = StoreWriter(file, recording)
        self.cache_entries = getattr(runner, "cache_entries", ())
        self.made_from = getattr(runner, "made_from", ())

    @property
    def label(self) -> str:
        return self._runner.label

    @property
    def fps(self) -> float | None:
        return getattr(self._runner, "fps", None)

    @property
    def score_ceiling(self) -> float | None:
        return getattr(self._runner, "score_ceiling", None)

    @property
    def input_specs(self) -> Mapping[str, InputSpec]:
        return self._runner.input_specs

    @property
    def output_specs(self) -> Mapping[str, OutputSpec]:
        return self._runner.output_specs

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs = self._runner.infer(feed)
        self._writer.put(feed_key(feed), outputs)
        return outputs

    def infer_batch(self, feed: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """A batch in one call where the runner takes one; each frame recorded under the key of its own
        feed as a batch of one, as :meth:`infer` records it and :class:`ReplayRunner` looks it up."""
        return self._recorded(feed, [None] * len(next(iter(feed.values()))))

    def infer_sourced(self, feed: Mapping[str, np.ndarray], sources: Sequence[str]) -> list[dict[str, np.ndarray]]:
        """As :meth:`infer_batch`, each frame also recorded as made from the image file of sha256 ``sources[i]``."""
        return self._recorded(feed, list(sources))

    def served(self, source: str) -> None:
        """A recorder serves nothing: every input is inferred."""
        return None

    def _recorded(self, feed: Mapping[str, np.ndarray], sources: Sequence[str | None]) -> list[dict[str, np.ndarray]]:
        frames = infer_frames(self._runner, feed)
        if len(sources) != len(frames):
            raise StoreError(f"output store {self.file}: {len(sources)} image sha256s for {len(frames)} frames")
        for i, outputs in enumerate(frames):
            self._writer.put(feed_key({name: array[i : i + 1] for name, array in feed.items()}), outputs, sources[i])
        return frames

    def close(self) -> None:
        self._writer.close()
