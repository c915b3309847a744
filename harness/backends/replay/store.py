"""An output store: a Hailo path's raw outputs per input, as its runner returned them, in one
append-only file per run, so that a hosted CI job can replay what a device produced.

Layout: :data:`MAGIC`, then frames. A frame is ``<u32 meta length><u32 payload length>``, the meta
(UTF-8 JSON), the payload (zlib-compressed array bytes) and a CRC-32 of meta and payload. The
first frame is the :class:`Recording` (no payload); each further frame one input's outputs, keyed
by :func:`feed_key` (the runner's input bytes: the image and its preprocessing). A frame cut short
by a killed run is dropped when the store is opened again, and recording resumes after the last
whole one.
"""

from __future__ import annotations

import json
import os
import struct
import warnings
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import xxhash

from harness.backends.base import InputSpec
from harness.core.errors import HarnessError
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo

MAGIC = b"hailo-harness output store 1\n"
_FRAME = struct.Struct("<II")
_CRC = struct.Struct("<I")


class StoreError(HarnessError):
    """An output store that cannot be read, or that does not belong to the run replaying it."""


@dataclass(frozen=True)
class Recording:
    """What a store holds the outputs of: the path (its name, whether it was emulated), what ran it
    (``runtime``: the runner's label, device and version), the model file and its sha256, the
    runner's input and output specs, the settings that shaped the outputs, and when."""

    path: str
    emulated: bool
    runtime: str
    model_file: str
    model_sha256: str
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    shaping: Mapping[str, Any]
    created: str
    harness_version: str

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["inputs"] = [_input_json(i) for i in self.inputs]
        data["outputs"] = [_output_json(o) for o in self.outputs]
        data["shaping"] = dict(self.shaping)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], file: Path) -> Recording:
        try:
            return cls(
                path=str(data["path"]),
                emulated=bool(data["emulated"]),
                runtime=str(data["runtime"]),
                model_file=str(data["model_file"]),
                model_sha256=str(data["model_sha256"]),
                inputs=tuple(_input_spec(i) for i in data["inputs"]),
                outputs=tuple(_output_spec(o) for o in data["outputs"]),
                shaping=dict(data["shaping"]),
                created=str(data["created"]),
                harness_version=str(data["harness_version"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise StoreError(f"output store {file}: header field {error} missing or malformed") from error

    def differences(self, other: Recording) -> list[str]:
        """The fields in which ``other`` would record something else (``created`` aside)."""
        mine, theirs = self.to_json(), other.to_json()
        return [k for k in mine if k not in ("created", "harness_version") and mine[k] != theirs[k]]


def feed_key(feed: Mapping[str, np.ndarray]) -> str:
    """The key of one input: a hash of each array's name, dtype, shape and bytes."""
    digest = xxhash.xxh3_128()
    for name in sorted(feed):
        array = np.ascontiguousarray(feed[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.data)
    return digest.hexdigest()


class StoreWriter:
    """Appends outputs to a store; a store that exists is resumed when it was recorded the same way
    (its torn last frame, if any, dropped), and refused naming the fields that differ otherwise."""

    def __init__(self, file: str | os.PathLike[str], recording: Recording) -> None:
        self.file = Path(file)
        self.keys: set[str] = set()
        if self.file.exists():
            found, offsets, end = _scan(self.file)
            differ = found.differences(recording)
            if differ:
                raise StoreError(
                    f"output store {self.file}: recorded with other {differ} ({found.runtime}, {found.created}); "
                    "give a new file to record this run"
                )
            self.keys = set(offsets)
            torn = self.file.stat().st_size - end
            if torn:
                warnings.warn(f"output store {self.file}: {torn} bytes of a frame cut short dropped", stacklevel=2)
            self._fh: BinaryIO = open(self.file, "r+b")
            self._fh.truncate(end)
            self._fh.seek(end)
        else:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.file, "wb")
            self._fh.write(MAGIC)
            self._frame(recording.to_json(), b"")

    def _frame(self, meta: Mapping[str, Any], payload: bytes) -> None:
        text = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
        self._fh.write(_FRAME.pack(len(text), len(payload)) + text + payload)
        self._fh.write(_CRC.pack(zlib.crc32(payload, zlib.crc32(text))))
        self._fh.flush()

    def put(self, key: str, outputs: Mapping[str, np.ndarray]) -> None:
        """One input's outputs (once: a key already stored is kept as it is)."""
        if key in self.keys:
            return
        arrays = [(name, np.ascontiguousarray(outputs[name])) for name in sorted(outputs)]
        meta = {"key": key, "arrays": [[name, a.dtype.str, list(a.shape)] for name, a in arrays]}
        self._frame(meta, zlib.compress(b"".join(a.tobytes() for _, a in arrays), 1))
        self.keys.add(key)

    def close(self) -> None:
        if not self._fh.closed:
            os.fsync(self._fh.fileno())
            self._fh.close()


class StoreReader:
    """A store's recording and its outputs by key, read from the file when asked for."""

    def __init__(self, file: str | os.PathLike[str]) -> None:
        self.file = Path(file)
        self.recording, self._offsets, _ = _scan(self.file)

    def __len__(self) -> int:
        return len(self._offsets)

    def __contains__(self, key: str) -> bool:
        return key in self._offsets

    def get(self, key: str) -> dict[str, np.ndarray]:
        offset = self._offsets[key]
        with open(self.file, "rb") as fh:
            fh.seek(offset)
            meta, payload = _read_frame(fh, self.file)
        data = zlib.decompress(payload)
        out, at = {}, 0
        for name, dtype, shape in meta["arrays"]:
            array = np.frombuffer(data, dtype=np.dtype(dtype), count=int(np.prod(shape)), offset=at)
            out[name] = array.reshape(shape)
            at += array.nbytes
        return out


def read_recording(file: str | os.PathLike[str]) -> Recording:
    """The store's header alone."""
    path = Path(file)
    try:
        with open(path, "rb") as fh:
            if fh.read(len(MAGIC)) != MAGIC:
                raise StoreError(f"output store {path}: not an output store (expected it to start {MAGIC!r})")
            meta, _ = _read_frame(fh, path)
    except OSError as error:
        raise StoreError(f"output store {path}: cannot be read ({error.strerror or error})") from error
    return Recording.from_json(meta, path)


def _scan(file: Path) -> tuple[Recording, dict[str, int], int]:
    """The recording, the offset of each whole frame by key, and where the last whole frame ends."""
    recording = read_recording(file)
    offsets: dict[str, int] = {}
    with open(file, "rb") as fh:
        fh.seek(len(MAGIC))
        _read_frame(fh, file)
        end = fh.tell()
        while True:
            start = fh.tell()
            try:
                meta, _ = _read_frame(fh, file)
            except _Torn:
                return recording, offsets, end
            offsets[str(meta["key"])] = start
            end = fh.tell()


class _Torn(StoreError):
    """A frame cut short or damaged: where a killed recording stopped."""


def _read_frame(fh: BinaryIO, file: Path) -> tuple[dict[str, Any], bytes]:
    head = fh.read(_FRAME.size)
    if len(head) < _FRAME.size:
        raise _Torn(f"output store {file}: frame header cut short")
    n_meta, n_payload = _FRAME.unpack(head)
    body = fh.read(n_meta + n_payload)
    crc = fh.read(_CRC.size)
    if len(body) < n_meta + n_payload or len(crc) < _CRC.size:
        raise _Torn(f"output store {file}: frame cut short")
    text, payload = body[:n_meta], body[n_meta:]
    if zlib.crc32(payload, zlib.crc32(text)) != _CRC.unpack(crc)[0]:
        raise _Torn(f"output store {file}: frame checksum mismatch")
    return json.loads(text), payload


def _input_json(spec: InputSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "shape": list(spec.shape),
        "order": spec.format_order.name,
        "type": spec.format_type.name,
    }


def _input_spec(data: Mapping[str, Any]) -> InputSpec:
    return InputSpec(data["name"], tuple(data["shape"]), FormatOrder[data["order"]], FormatType[data["type"]])


def _output_json(spec: OutputSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "shape": list(spec.shape),
        "order": spec.format_order.name,
        "type": spec.format_type.name,
        "quant": [asdict(q) for q in spec.quant],
        "nms": asdict(spec.nms) if spec.nms is not None else None,
    }


def _output_spec(data: Mapping[str, Any]) -> OutputSpec:
    return OutputSpec(
        name=data["name"],
        shape=tuple(data["shape"]),
        format_order=FormatOrder[data["order"]],
        format_type=FormatType[data["type"]],
        quant=tuple(QuantInfo(**q) for q in data["quant"]),
        nms=NmsShape(**data["nms"]) if data["nms"] is not None else None,
    )
