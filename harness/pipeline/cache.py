"""Per-image predictions of one path, kept on disk as they are produced, so that an interrupted run
resumes where it stopped and a re-run with unchanged inputs does no inference.

One append-only JSON-lines file per key: the path name, the model's sha256, the path's variant, the
settings that fix the predictions (all of :class:`~harness.core.settings.EvalSettings` but the class map,
which only relabels the ground truth) and the harness version. The first line states that key; each
further line is one image, written whole, flushed and fsynced before the next image is run::

    {"image_sha256": "...", "image_id": "images/val/a.jpg", "boxes": "<base64 float32 LE>",
     "scores": "<base64 float32 LE>", "class_ids": [0, 2], "cells": [8400, 19, 21] | null}

Boxes and scores are the float32 bytes themselves, so a cached prediction is bit-identical to a
fresh one. A crash mid-write leaves at most the last line incomplete: it is reported
(:class:`CacheRepaired`), cut off and that image inferred again. A bad line anywhere else is an error.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from harness import __version__
from harness.core import defaults
from harness.core.detections import Detections
from harness.core.environment import code_digest, environment
from harness.core.errors import HarnessError
from harness.core.files import fsync_folder
from harness.pipeline.detect import DetectionPath, FrameResult
from harness.verdict.metrics.distribution import CellsAboveThreshold

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; one process per cache file there
    fcntl = None  # type: ignore[assignment]

DEFAULT_ROOT = defaults.CACHE_DIR / "predictions"
FORMAT = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")


class CacheError(HarnessError):
    """A cache file that contradicts its format or its key."""


class CacheRepaired(UserWarning):
    """A cache file's incomplete last line (an interrupted write) was cut off; that image is redone."""


# The harness code that turns a runner's outputs into detections: an edit to it makes a new key.
_DETECTION_CODE = ("backends", "core", "decode", "formats", "inputs/preprocess.py", "pipeline/detect.py")


def cache_key(path: DetectionPath) -> dict[str, Any]:
    """Everything that fixes a path's predictions of an image (the image's own sha256 aside): the
    model, the settings, what ran it (runtime and device), the package versions and the harness's
    own detection code. A runtime upgrade, another device or an edited decoder is another key."""
    settings = {k: v for k, v in path.settings.to_dict().items() if k != "class_map"}
    return {
        "format": FORMAT,
        "harness": __version__,
        "path": path.name,
        "model_sha256": path.model_sha256,
        "variant": path.variant,
        "settings": settings,
        "runtime": path.runtime,
        "environment": dict(environment()),
        "code": code_digest(*_DETECTION_CODE),
    }


def _digest(key: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _floats(values: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype="<f4").tobytes()).decode("ascii")


def encode_entry(image_sha256: str, image_id: str, frame: FrameResult) -> bytes:
    """One cache line, newline included."""
    d, c = frame.detections, frame.cells
    entry = {
        "image_sha256": image_sha256,
        "image_id": image_id,
        "boxes": _floats(d.boxes),
        "scores": _floats(d.scores),
        "class_ids": d.class_ids.tolist(),
        "cells": None if c is None else [c.cells, c.cells_above, c.candidates],
    }
    return (json.dumps(entry, separators=(",", ":")) + "\n").encode()


def _decode_floats(text: object, count: int, field: str) -> np.ndarray:
    if not isinstance(text, str):
        raise ValueError(f"{field}: {type(text).__name__}, expected base64 text")
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as error:
        raise ValueError(f"{field}: not base64 ({error})") from error
    if len(raw) != 4 * count:
        raise ValueError(f"{field}: {len(raw)} bytes, expected {4 * count} (float32 x {count})")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


def decode_entry(line: bytes, threshold: float) -> tuple[str, FrameResult]:
    """A cache line -> (image sha256, the frame); ValueError says what is wrong with it."""
    try:
        entry = json.loads(line)
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"not JSON ({error})") from error
    if not isinstance(entry, dict):
        raise ValueError(f"a JSON {type(entry).__name__}, expected an object")
    sha = entry.get("image_sha256")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        raise ValueError(f"image_sha256 {sha!r}, expected 64 hex digits")
    class_ids = entry.get("class_ids")
    if not isinstance(class_ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in class_ids):
        raise ValueError(f"class_ids {class_ids!r}, expected a list of integers")
    n = len(class_ids)
    boxes = _decode_floats(entry.get("boxes"), 4 * n, "boxes").reshape(n, 4)
    scores = _decode_floats(entry.get("scores"), n, "scores")
    cells = entry.get("cells")
    if cells is not None:
        if not (isinstance(cells, list) and len(cells) == 3 and all(isinstance(c, int) for c in cells)):
            raise ValueError(f"cells {cells!r}, expected null or [cells, cells_above, candidates]")
        cells = CellsAboveThreshold(threshold, *cells)
    return sha, FrameResult(Detections(boxes, scores, np.array(class_ids, dtype=np.int64)), cells)


class CacheFile:
    """The open cache file of one key: cached frames by image sha256, and appending new ones."""

    def __init__(self, file: Path, key: dict[str, Any], threshold: float) -> None:
        self.file = file
        self.frames: dict[str, FrameResult] = {}
        header = (json.dumps({"cache": key}, sort_keys=True, separators=(",", ":")) + "\n").encode()
        file.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)  # no newline translation
        self._fd: int | None = os.open(file, flags, 0o644)
        # One writer per key at a time (pytest-xdist workers, parallel CI jobs): a second process
        # waits here, then finds the first one's frames and infers nothing again.
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        good = self._read(header, threshold)
        if good == 0:
            os.ftruncate(self._fd, 0)
            self._write(header)
            fsync_folder(file.parent)
        elif good < file.stat().st_size:
            os.ftruncate(self._fd, good)
            os.fsync(self._fd)

    def _read(self, header: bytes, threshold: float) -> int:
        """Load the file's frames; returns the length of its sound part (0: none, start afresh)."""
        try:
            data = self.file.read_bytes()
        except FileNotFoundError:
            return 0
        except OSError as error:
            raise CacheError(f"cache {self.file}: cannot be read ({error.strerror or error})") from error
        *complete, torn = data.split(b"\n")  # ``torn``: what follows the last newline, empty if nothing
        if torn:
            warnings.warn(
                f"cache {self.file}: line {len(complete) + 1} is incomplete ({len(torn)} bytes without a newline), "
                "an interrupted write; it is cut off and its image inferred again",
                CacheRepaired,
                stacklevel=3,
            )
        if not complete:
            return 0
        if complete[0] + b"\n" != header:
            raise CacheError(
                f"cache {self.file}: first line {complete[0][:200]!r} does not state this cache's key "
                f"{header.strip()!r}"
            )
        good = len(header)
        for number, line in enumerate(complete[1:], start=2):
            try:
                sha, frame = decode_entry(line, threshold)
            except ValueError as error:
                raise CacheError(
                    f"cache {self.file}: line {number}: {error}; expected one image's predictions "
                    "(delete the file to infer all its images again)"
                ) from error
            self.frames[sha] = frame
            good += len(line) + 1
        return good

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise CacheError(f"cache {self.file}: written after close")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)

    def get(self, image_sha256: str) -> FrameResult | None:
        return self.frames.get(image_sha256)

    def put(self, image_sha256: str, image_id: str, frame: FrameResult) -> None:
        """Append one image's frame, on disk before this returns."""
        self._write(encode_entry(image_sha256, image_id, frame))
        self.frames[image_sha256] = frame

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> CacheFile:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class PredictionCache:
    """Cache files under ``root`` (default ``.harness-cache/`` in the working directory)."""

    def __init__(self, root: str | os.PathLike[str] = DEFAULT_ROOT) -> None:
        self.root = Path(root)

    def file_for(self, path: DetectionPath) -> Path:
        return self.root / f"{path.name}-{_digest(cache_key(path))[:24]}.jsonl"

    def open(self, path: DetectionPath) -> CacheFile:
        return CacheFile(self.file_for(path), cache_key(path), path.settings.score_threshold)
