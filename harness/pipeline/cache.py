"""Per-image predictions of one path, kept on disk as they are produced, so that an interrupted run
resumes where it stopped and a re-run with unchanged inputs does no inference.

One append-only binary file per key (``<path name>-<key digest>.bin``): the path name, the model's
sha256, the path's variant, the settings that fix the predictions (all of
:class:`~harness.core.settings.EvalSettings` but the class map, which only relabels the ground
truth, and the metric, which only measures: the preprocessing it chooses, ``yolo val``'s frames and
unclipped boxes under ``ultralytics``, is in the key as ``preprocess``), what ran it, the package
versions, the harness's detection code and version (:func:`cache_key`). All numbers are little-endian::

    file    = MAGIC  format:u32  record(KEY_RECORD, key JSON)*2  record(BATCH_RECORD, batch)*
    record  = a journal record (harness.core.journal): kind, length, checksums, payload
    batch   = n:u32  total:u32  cells:i64[n,3]  class_ids:i64[total]  boxes:f32[total,4]
              scores:f32[total]  counts:u32[n]  id_lengths:u32[n]  has_cells:u8[n]
              image_sha256:32B[n]  image ids:utf-8

A batch holds the frames of up to :data:`BATCH` images (``counts[i]`` detections each, in order);
boxes and scores are the float32 bytes themselves, so a cached prediction is bit-identical to a
fresh one. Puts are written and fsynced one batch at a time: every :data:`BATCH` puts, once the
oldest unwritten put is :data:`BATCH_SECONDS` old, on :meth:`CacheFile.flush` and on close (an
exception that ends the run still writes the images it completed). A kill loses at most the
unwritten batch.

The file is a :mod:`~harness.core.journal` (framing, lock, repair): one process writes it at a
time, a second waits for the first and then finds its frames. A kill mid-write leaves at most the
last record incomplete (or, after a power loss, zero-filled or failing its checksum): it is cut
off; a damaged record before it costs that record alone (the file is rewritten with every sound
record, the file as found kept beside it as ``<name>.damaged-<time>``). Either is reported
(:class:`CacheRepaired`) and its images inferred again; no record is ever half-read. A file of
another format (the JSON-lines files of format 1 included), of another key, or whose key record
is damaged is a :class:`CacheError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness import __version__
from harness.core import defaults
from harness.core.closing import Closing
from harness.core.detections import Detections
from harness.core.environment import code_digest, environment
from harness.core.errors import HarnessError
from harness.core.journal import Format, Scan, Writer, keep_damaged
from harness.pipeline.detect import DetectionPath, FrameResult
from harness.verdict.metrics.distribution import CellsAboveThreshold

DEFAULT_ROOT = defaults.CACHE_DIR / "predictions"
FORMAT = 3
MAGIC = b"HHPCACHE"
BATCH = 64  # puts per batch at most
BATCH_SECONDS = 1.0  # age of the oldest unwritten put that writes the batch at the next put

KEY_RECORD, BATCH_RECORD = b"KEY ", b"BAT "
_COUNTS = struct.Struct("<II")  # images, detections


class CacheError(HarnessError):
    """A cache file that contradicts its format or its key."""


JOURNAL = Format(
    name="prediction cache",
    magic=MAGIC,
    version=FORMAT,
    kinds=(KEY_RECORD, BATCH_RECORD),
    error=CacheError,
    advice="delete the file to infer its images again",
    older=(
        (b'{"cache":', "a JSON-lines cache of format 1 (an older harness)"),
        (MAGIC + struct.pack("<I", 2), "a prediction cache of format 2 (an older harness: its key record once)"),
    ),
    header_copies=2,  # format 3: the key record written twice, so that a flipped bit in it costs nothing
)


class CacheRepaired(UserWarning):
    """A cache file's records lost to an interrupted write (cut off) or to damage (the file rewritten
    without them): each named, their images inferred again."""


# The harness code that turns a runner's outputs into detections: an edit to it makes a new key.
_DETECTION_CODE = ("backends", "core", "decode", "families", "formats", "inputs/preprocess.py", "pipeline/detect.py")


def cache_key(path: DetectionPath) -> dict[str, Any]:
    """Everything that fixes a path's predictions of an image (the image's own sha256 aside): the
    model, the settings, what ran it (runtime and device), the package versions and the harness's
    own detection code. A runtime upgrade, another device or an edited decoder is another key."""
    settings = {k: v for k, v in path.settings.to_dict().items() if k not in ("class_map", "metric")}
    return {
        "format": FORMAT,
        "harness": __version__,
        "path": path.name,
        "model_sha256": path.model_sha256,
        "variant": path.variant,
        "settings": settings,
        "runtime": path.runtime,
        "environment": dict(environment()),
        "code": detection_code(),
    }


def _digest(key: dict[str, Any]) -> str:
    return hashlib.sha256(_key_bytes(key)).hexdigest()


def _key_bytes(key: dict[str, Any]) -> bytes:
    return json.dumps(key, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Entry:
    """One image's cached prediction."""

    image_sha256: str
    image_id: str
    frame: FrameResult


def encode_batch(entries: Sequence[Entry]) -> bytes:
    """The payload of one batch record (see the module's layout)."""
    dets = [e.frame.detections for e in entries]
    counts = np.array([len(d) for d in dets], dtype="<u4")
    cells = np.array(
        [(0, 0, 0) if (c := e.frame.cells) is None else (c.cells, c.cells_above, c.candidates) for e in entries],
        dtype="<i8",
    ).reshape(-1, 3)
    has_cells = np.array([e.frame.cells is not None for e in entries], dtype=np.uint8)
    ids = [e.image_id.encode(errors="surrogateescape") for e in entries]  # a name's bytes, UTF-8 or not

    def joined(arrays: list[np.ndarray], dtype: str, width: int) -> bytes:
        if not arrays:
            return b""
        return np.concatenate(arrays).astype(dtype, copy=False).reshape(-1, width).tobytes()

    return b"".join(
        (
            _COUNTS.pack(len(entries), int(counts.sum())),
            cells.tobytes(),
            joined([d.class_ids for d in dets], "<i8", 1),
            joined([d.boxes for d in dets], "<f4", 4),
            joined([d.scores for d in dets], "<f4", 1),
            counts.tobytes(),
            np.array([len(i) for i in ids], dtype="<u4").tobytes(),
            has_cells.tobytes(),
            bytes.fromhex("".join(e.image_sha256 for e in entries)),
            *ids,
        )
    )


class _Reader:
    """Consecutive arrays out of one payload; ValueError when the payload runs short."""

    def __init__(self, payload: memoryview) -> None:
        self.payload, self.at = payload, 0

    def take(self, size: int, what: str) -> memoryview:
        if self.at + size > len(self.payload):
            raise ValueError(f"{what}: {len(self.payload) - self.at} bytes left, expected {size}")
        part = self.payload[self.at : self.at + size]
        self.at += size
        return part

    def array(self, dtype: str, count: int, what: str) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        return np.frombuffer(self.take(size, what), dtype=dtype).astype(dtype[1:], copy=True)


def decode_batch(payload: memoryview, threshold: float) -> list[Entry]:
    """A batch record's payload -> its entries; ValueError says what is wrong with it."""
    if len(payload) < _COUNTS.size:
        raise ValueError(f"{len(payload)} bytes, expected at least {_COUNTS.size} (image and detection counts)")
    n, total = _COUNTS.unpack_from(payload)
    read = _Reader(payload[_COUNTS.size :])
    cells = read.array("<i8", 3 * n, "cells").reshape(n, 3)
    class_ids = read.array("<i8", total, "class ids")
    boxes = read.array("<f4", 4 * total, "boxes").reshape(total, 4)
    scores = read.array("<f4", total, "scores")
    counts = read.array("<u4", n, "detection counts").astype(np.int64)
    id_lengths = read.array("<u4", n, "image id lengths").astype(np.int64)
    has_cells = read.array("<u1", n, "cells flags")
    shas = bytes(read.take(32 * n, "image sha256s")).hex()
    ids = bytes(read.take(int(id_lengths.sum()), "image ids"))
    if read.at != len(read.payload):
        raise ValueError(f"{len(read.payload) - read.at} bytes after the image ids, expected none")
    if int(counts.sum()) != total:
        raise ValueError(f"detection counts sum to {int(counts.sum())}, expected {total}")
    if has_cells.max(initial=0) > 1:
        raise ValueError(f"cells flags {sorted(set(has_cells.tolist()))}, expected 0 or 1")
    ends, id_ends = np.cumsum(counts).tolist(), np.cumsum(id_lengths).tolist()
    cell_rows, flags = cells.tolist(), has_cells.tolist()
    entries, start, id_start = [], 0, 0
    for i in range(n):
        end, id_end = ends[i], id_ends[i]
        frame = FrameResult(
            Detections(boxes[start:end], scores[start:end], class_ids[start:end]),
            CellsAboveThreshold(threshold, *cell_rows[i]) if flags[i] else None,
        )
        entries.append(Entry(shas[64 * i : 64 * i + 64], ids[id_start:id_end].decode(errors="surrogateescape"), frame))
        start, id_start = end, id_end
    return entries


class CacheFile(Closing):
    """The open cache file of one key: cached frames by image sha256, and appending new ones.

    Puts are written a batch at a time (see the module): at most ``batch`` puts, or as soon as the
    oldest unwritten one is ``batch_seconds`` old, and on :meth:`flush` and :meth:`close`."""

    def __init__(
        self,
        file: Path,
        key: dict[str, Any],
        threshold: float,
        batch: int = BATCH,
        batch_seconds: float = BATCH_SECONDS,
    ) -> None:
        if batch < 1:
            raise CacheError(f"prediction cache {file}: batch {batch}, expected at least 1 put per batch")
        self.file, self.batch, self.batch_seconds = file, batch, batch_seconds
        self.frames: dict[str, FrameResult] = {}
        self._pending: list[Entry] = []
        self._since = 0.0
        self._journal = Writer(file, JOURNAL)  # a second process waits here, then finds this one's frames
        try:
            found = self._journal.read()
            self._load(found, _key_bytes(key), threshold)
            if found.records:
                copy = self._journal.repair()
            else:
                copy = self._journal.start(KEY_RECORD, _key_bytes(key))
        except BaseException:
            self._journal.close()
            raise
        for loss in found.header_damage:
            said = f"{loss}; its other copy is read, nothing is lost (the file rewritten; as found: {copy})"
            warnings.warn(f"prediction cache {file}: {said}", CacheRepaired, stacklevel=3)
        for loss in found.losses:
            if loss.tail:
                said = f"{loss}, an interrupted write; it is cut off and its images inferred again"
            else:
                said = f"{loss}: damaged; its images are inferred again, every sound record kept (as found: {copy})"
            warnings.warn(f"prediction cache {file}: {said}", CacheRepaired, stacklevel=3)

    def _load(self, found: Scan, key: bytes, threshold: float) -> None:
        """The frames of the file's sound records, once its first record states ``key``."""
        if not found.records:
            return
        first = found.records[0]
        if first.number != 1 or first.kind != KEY_RECORD:
            said = found.losses[0] if first.number != 1 else f"record 1 is of kind {first.kind!r}, not {KEY_RECORD!r}"
            try:
                kept = f"the file as found is kept as {keep_damaged(self.file)}; "
            except OSError as error:
                kept = f"no copy of it could be kept ({error.strerror or error}); "
            raise CacheError(
                f"prediction cache {self.file}: {said}: no key to check its batches against (every copy lost), so "
                f"none is read ({kept}delete the file to infer its images again)"
            )
        if first.payload != key:
            raise CacheError(
                f"prediction cache {self.file}: first record {bytes(first.payload[:200])!r} does not state this "
                f"cache's key {key!r}"
            )
        for rec in found.records[1:]:
            where = f"prediction cache {self.file}: record {rec.number} at byte {rec.offset}"
            if rec.kind != BATCH_RECORD:
                raise CacheError(f"{where}: a second key")
            try:
                entries = decode_batch(rec.payload, threshold)
            except (ValueError, UnicodeDecodeError) as error:
                raise CacheError(
                    f"{where}: {error}; expected a batch of predictions (delete the file to infer its images again)"
                ) from error
            self.frames.update((e.image_sha256, e.frame) for e in entries)

    def get(self, image_sha256: str) -> FrameResult | None:
        return self.frames.get(image_sha256)

    def put(self, image_sha256: str, image_id: str, frame: FrameResult) -> None:
        """Add one image's frame: on disk with its batch (see the class)."""
        if self._journal.closed:
            raise CacheError(f"prediction cache {self.file}: written after close (or after a failed write)")
        if len(image_sha256) != 64 or image_sha256.strip("0123456789abcdef"):
            raise CacheError(
                f"prediction cache {self.file}: image {image_id!r} sha256 {image_sha256!r}, expected 64 hex digits"
            )
        now = time.monotonic()
        if not self._pending:
            self._since = now
        self._pending.append(Entry(image_sha256, image_id, frame))
        self.frames[image_sha256] = frame
        if len(self._pending) >= self.batch or now - self._since >= self.batch_seconds:
            self.flush()

    def flush(self) -> None:
        """Write the unwritten puts as one batch, on disk before this returns."""
        if self._pending:
            self._journal.append(BATCH_RECORD, encode_batch(self._pending), sync=True)
            self._pending.clear()

    def close(self) -> None:
        """Flush, then release the file (and its lock)."""
        if not self._journal.closed:
            try:
                self.flush()
            finally:
                self._journal.close()


class PredictionCache:
    """Cache files under ``root`` (default ``.harness-cache/`` in the working directory); ``batch`` and
    ``batch_seconds`` as :class:`CacheFile` takes them."""

    def __init__(
        self, root: str | os.PathLike[str] = DEFAULT_ROOT, batch: int = BATCH, batch_seconds: float = BATCH_SECONDS
    ) -> None:
        self.root = Path(root)
        self.batch, self.batch_seconds = batch, batch_seconds

    def file_for(self, path: DetectionPath) -> Path:
        return self.root / f"{path.name}-{_digest(cache_key(path))[:24]}.bin"

    def open(self, path: DetectionPath) -> CacheFile:
        return CacheFile(
            self.file_for(path), cache_key(path), path.settings.score_threshold, self.batch, self.batch_seconds
        )


def detection_code() -> str:
    """The digest of the harness's detection code, as a cache key states it (``code``)."""
    return code_digest(*_DETECTION_CODE)


def key_digest(key: dict[str, Any]) -> str:
    """The digest a cache file's name carries (its first 24 hex digits) of the key its first record states."""
    return _digest(key)
