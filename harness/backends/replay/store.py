"""An output store: a Hailo path's raw outputs per input, as its runner returned them, in one
append-only file per run, so that a hosted CI job can replay what a device produced.

The file is a :mod:`~harness.core.journal` of format :data:`FORMAT` (framing, lock, repair). Its
first record (:data:`HEADER_RECORD`) is the :class:`Recording` as JSON; each further one
(:data:`FRAME_RECORD`) one input's outputs, keyed by :func:`feed_key` (the runner's input bytes:
the image and its preprocessing) and, where the input was made from an image file, that file's
sha256 (``image``: the header's shaping fixes the preprocessing, so a replay finds a file's outputs
without reading the file again)::

    frame = meta length:u32  meta (UTF-8 JSON: key, image, arrays: name, dtype, shape)  zlib(array bytes)

A store of format 2 (no ``image``) is replayed by its keys alone, and never appended to.

The header carries a seal (:mod:`harness.core.sealed`: its sha256, and its HMAC where
``HARNESS_SIGNING_KEY`` is set), checked on every opening: a header changed after it was recorded
(an emulated recording made to claim the device) or whose signature does not hold is refused, and
under ``--require-signed`` so is one not signed; a header without a seal (recorded before seals) is
``unsealed``. The replay names the state in its runtime label.

One process records into a store at a time (a second is refused). Resuming a store cuts off a
frame cut short by a killed run; a frame damaged before the last costs that frame alone (the file
rewritten with every sound frame, the file as found kept beside it) and is recorded again. Each
lost frame is named (:class:`StoreDamaged`), by its key where the damaged record still shows it.
"""

from __future__ import annotations

import enum
import json
import math
import os
import re
import struct
import warnings
import zlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import xxhash

from harness.backends.base import InputSpec
from harness.backends.spec_json import input_json, input_spec, output_json, output_spec, shape_of
from harness.core.documents import DocumentError, Fields, parse_json
from harness.core.errors import HarnessError
from harness.core.journal import Format, Loss, Record, Scan, Writer, keep_damaged, read, read_record
from harness.core.sealed import checked, sealed, stored_seal
from harness.core.signing import SealCheck
from harness.core.specs import OutputSpec

FORMAT = 4
HEADER_RECORD, FRAME_RECORD = b"HEAD", b"OUTS"
_META = struct.Struct("<I")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_KEY = re.compile(r"[0-9a-f]{32}")
_MAX_ELEMENTS = 1 << 31  # the most elements one recorded array holds
T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)


class StoreError(HarnessError):
    """An output store that cannot be read, or that does not belong to the run replaying it."""


class StoreDamaged(UserWarning):
    """Frames of an output store lost to an interrupted write or to damage, each named."""


JOURNAL = Format(
    name="output store",
    magic=b"HHOUTPUT",
    version=FORMAT,
    kinds=(HEADER_RECORD, FRAME_RECORD),
    error=StoreError,
    advice="record it again with this harness, into a new file: --record NEW.rec",
    older=(
        (b"hailo-harness output store 1\n", "an output store of format 1 (an older harness)"),
        (b"HHOUTPUT" + struct.pack("<I", 2), "an output store of format 2 (replayed as it is, never appended to)"),
    ),
    header_copies=2,  # format 4: the header written twice, so that a flipped bit in it costs nothing
    busy=(
        "another process is recording into it (it holds the file's lock); let that recording end, "
        "or give --record another file"
    ),
)


# the formats a store is replayed from: format 2's frames have no image sha256
READS = {
    FORMAT: JOURNAL,
    3: replace(JOURNAL, version=3, header_copies=1),
    2: replace(JOURNAL, version=2, header_copies=1),
}


@dataclass(frozen=True)
class Recording:
    """What a store holds the outputs of: the path (its name, whether it was emulated), what ran it
    (``runtime``: the runner's label, device and version), the model file and its sha256, the
    run's export (its ONNX, or a HEF in its Ultralytics export folder) and its sha256, the runner's
    input and output specs, the settings that shaped the outputs, and when."""

    path: str
    emulated: bool
    runtime: str
    model_file: str
    model_sha256: str
    export_file: str
    export_sha256: str
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    shaping: Mapping[str, Any]
    created: str
    harness_version: str

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["inputs"] = [input_json(i) for i in self.inputs]
        data["outputs"] = [output_json(o) for o in self.outputs]
        data["shaping"] = dict(self.shaping)
        return data

    @classmethod
    def from_json(cls, fields: Fields) -> Recording:
        """The recording in a header's fields, each of its type; a :class:`DocumentError` names the field."""
        recording = cls(
            path=fields.string("path", nonempty=True),
            emulated=fields.boolean("emulated"),
            runtime=fields.string("runtime"),
            model_file=fields.string("model_file", nonempty=True),
            model_sha256=fields.value("model_sha256", _is(_SHA256), "64 lowercase hex digits"),
            export_file=fields.string("export_file", nonempty=True),
            export_sha256=fields.value("export_sha256", _is(_SHA256), "64 lowercase hex digits"),
            inputs=tuple(input_spec(i) for i in fields.objects("inputs")),
            outputs=tuple(output_spec(o) for o in fields.objects("outputs")),
            shaping=_shaping(fields.object("shaping")),
            created=fields.string("created"),
            harness_version=fields.string("harness_version"),
        )
        fields.done()
        return recording

    def differences(self, other: Recording) -> list[str]:
        """The fields in which ``other`` would record something else (when and where aside: the
        date, the harness version and the files' names; their sha256s are compared)."""
        mine, theirs = self.to_json(), other.to_json()
        aside = ("created", "harness_version", "model_file", "export_file")
        return [k for k in mine if k not in aside and mine[k] != theirs[k]]


def feed_key(feed: Mapping[str, np.ndarray]) -> str:
    """The key of one input: a hash of each array's name, dtype, shape and bytes."""
    digest = xxhash.xxh3_128()
    for name in sorted(feed):
        array = np.ascontiguousarray(feed[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.data)
    return digest.hexdigest()


class StoreWriter:
    """Appends outputs to a store, this process alone. A store that exists is resumed when it was
    recorded the same way, made sound first (see the module; each lost frame named), and refused
    naming the fields that differ otherwise."""

    def __init__(self, file: str | os.PathLike[str], recording: Recording) -> None:
        self.file = Path(file)
        self.keys: set[str] = set()
        fmt = _format_of(self.file)
        self._journal = Writer(self.file, fmt if fmt.version >= 3 else JOURNAL)  # format 3 resumed as it is
        try:
            found = self._journal.read()
            if found.records:
                stored = _recording(found, self.file)[0]
                differ = stored.differences(recording)
                if differ:
                    raise StoreError(
                        f"output store {self.file}: recorded with other {differ} ({stored.runtime}, "
                        f"{stored.created}); give a new file to record this run"
                    )
                self.keys = {_frame(r, self.file)[1].key for r in found.records[1:]}
                copy = self._journal.repair()
            else:
                copy = self._journal.start(HEADER_RECORD, _json(sealed(recording.to_json())))
        except BaseException:
            self._journal.close()
            raise
        kept = f"; the file as found is kept as {copy}" if copy else ""
        if found.losses:
            warnings.warn(
                f"output store {self.file}: {_said(_lost(found.losses))}{kept}; "
                "each lost input is recorded again when this run infers it",
                StoreDamaged,
                stacklevel=2,
            )
        elif found.header_damage:
            warnings.warn(f"output store {self.file}: {_header_said(found)}{kept}", StoreDamaged, stacklevel=2)

    def put(self, key: str, outputs: Mapping[str, np.ndarray], image: str | None = None) -> None:
        """One input's outputs (once: a key already stored is kept as it is); ``image``: the sha256
        of the image file the input was made from, where it was."""
        if key in self.keys:
            return
        if image is not None and not _SHA256.fullmatch(image):
            raise StoreError(f"output store {self.file}: image {image!r}, expected a sha256 (64 lowercase hex digits)")
        arrays = [(name, np.ascontiguousarray(outputs[name])) for name in sorted(outputs)]
        described = [{"name": n, "dtype": a.dtype.str, "shape": list(a.shape)} for n, a in arrays]
        meta = _json({"key": key, "image": image, "arrays": described})
        data = zlib.compress(b"".join(a.tobytes() for _, a in arrays), 1)
        self._journal.append(FRAME_RECORD, _META.pack(len(meta)) + meta + data, sync=False)
        self.keys.add(key)

    def close(self) -> None:
        self._journal.close()


class StoreReader:
    """A store's recording and its outputs by key, read from the file when asked for (and the key
    of an image file's input by the file's sha256, :meth:`key_of`); ``lost``: its frames lost to
    damage or an interrupted write, each with its key where the damaged record still shows it
    (warned of on opening)."""

    def __init__(self, file: str | os.PathLike[str]) -> None:
        self.file = Path(file)
        self._format = _format_of(self.file)
        found = read(self.file, self._format)
        self.recording, self.seal = _recording(found, self.file)
        self._frames: dict[str, _Stored] = {}
        self._images: dict[str, str] = {}  # image file sha256: key
        for rec in found.records[1:]:
            meta, frame = _frame(rec, self.file)
            self._frames.setdefault(frame.key, _Stored(rec.number, rec.offset, meta, frame))
            if frame.image is not None:
                self._images.setdefault(frame.image, frame.key)
        self.lost = _lost(found.losses)
        if found.header_damage:
            warnings.warn(f"output store {self.file}: {_header_said(found)}", StoreDamaged, stacklevel=2)
        if self.lost:
            warnings.warn(
                f"output store {self.file}: {_said(self.lost)}; replay serves the other {len(self)} inputs",
                StoreDamaged,
                stacklevel=2,
            )

    def __len__(self) -> int:
        return len(self._frames)

    def __contains__(self, key: str) -> bool:
        return key in self._frames

    def key_of(self, image: str) -> str | None:
        """The key of the input made from the image file of sha256 ``image``, where one was recorded."""
        return self._images.get(image)

    def get(self, key: str) -> dict[str, np.ndarray]:
        """The outputs recorded for ``key``; a :class:`StoreError` names the frame and what is wrong."""
        stored = self._frames[key]
        payload = read_record(self.file, stored.offset, self._format)
        where = f"output store {self.file}: record {stored.number} at byte {stored.offset}"
        meta, compressed = _frame_parts(payload, where)
        if meta != stored.meta:  # the meta parsed on opening is the one served: no second parse
            raise StoreError(f"{where}: another frame than when the store was opened (the file changed since)")
        arrays = stored.frame.arrays
        size = sum(math.prod(shape) * dtype.itemsize for _, dtype, shape in arrays)
        stream = zlib.decompressobj()
        try:
            data = stream.decompress(compressed, size + 1)
        except zlib.error as error:
            raise StoreError(f"{where}: its array bytes do not decompress (zlib: {error})") from None
        names = [name for name, _, _ in arrays]
        if len(data) > size:
            raise StoreError(f"{where}: its array bytes decompress to more than the {size} bytes of arrays {names}")
        if len(data) < size or not stream.eof:
            raise StoreError(
                f"{where}: its array bytes decompress to {len(data)} bytes and end early, expected the {size} "
                f"bytes of arrays {names}"
            )
        if stream.unused_data:
            raise StoreError(f"{where}: its array bytes are followed by {len(stream.unused_data)} bytes, expected none")
        out, at = {}, 0
        for name, dtype, shape in arrays:
            count = math.prod(shape)
            out[name] = np.frombuffer(data, dtype=dtype, count=count, offset=at).reshape(shape)
            at += count * dtype.itemsize
        return out


def read_recording(file: str | os.PathLike[str]) -> Recording:
    """The store's header alone (its seal checked: see :func:`read_header`)."""
    return read_header(file)[0]


def read_header(file: str | os.PathLike[str]) -> tuple[Recording, SealCheck]:
    """The store's header and how it stands against its seal: refused where it was changed after it
    was recorded or its signature does not hold, and under ``--require-signed`` where it is not
    signed with the key in hand (:func:`harness.core.sealed.checked`); a store recorded before seals
    is ``unsealed``."""
    path = Path(file)
    fmt = _format_of(path)
    try:
        payload = read_record(path, len(fmt.preamble), fmt)
    except StoreError:
        if fmt.header_copies < 2:
            raise
        return _recording(read(path, fmt), path)  # the first copy damaged: the other one
    return _header(payload, path)


def _header(payload: bytes | memoryview, file: Path) -> tuple[Recording, SealCheck]:
    """The recording in a header record's payload, its seal checked."""
    source = f"output store {file}: header"
    try:
        document = parse_json(bytes(payload), source)
        fields = Fields(document, source)
        stored = stored_seal(fields) if isinstance(document, dict) and "seal" in document else None
        if isinstance(document, dict):
            document = {k: v for k, v in document.items() if k != "seal"}
        recording = Recording.from_json(Fields(document, source))
    except DocumentError as error:
        raise StoreError(str(error)) from None
    seal = checked(source, document, stored)
    return recording, seal


def _format_of(file: Path) -> Format:
    """The journal format a store is read in: the one of its preamble where it is replayed, else this
    harness's (whose reader then names what the file is)."""
    try:
        with file.open("rb") as fh:
            head = fh.read(len(JOURNAL.preamble))
    except OSError:
        return JOURNAL  # the reader names the file and why it cannot be read
    return next((f for f in READS.values() if head == f.preamble), JOURNAL)


def _recording(found: Scan, file: Path) -> tuple[Recording, SealCheck]:
    """The recording in a store's first record, which must be sound, and its seal's state."""
    first = found.records[0] if found.records else None
    if first is None or first.number != 1 or first.kind != HEADER_RECORD:
        said = str(found.losses[0]) if found.losses else "no header record"
        copies = " (every copy)" if _format_of(file).header_copies > 1 else ""
        try:
            kept = f"; the file as found is kept as {keep_damaged(file)}"
        except OSError as error:
            kept = f"; no copy of it could be kept ({error.strerror or error})"
        raise StoreError(
            f"output store {file}: {said}: its header{copies} (what was recorded, from which model) is lost, so "
            f"none of its frames can be replayed or appended to{kept}; record again into a new file (--record NEW.rec)"
        )
    return _header(first.payload, file)


@dataclass(frozen=True)
class _Frame:
    """A frame's meta: its key, the sha256 of the image file its input was made from (None: not
    recorded), and its arrays (name, dtype, shape)."""

    key: str
    image: str | None
    arrays: list[tuple[str, np.dtype[Any], tuple[int, ...]]]


def _frame(rec: Record, file: Path) -> tuple[bytes, _Frame]:
    """A sound frame record's meta: its bytes and what they hold."""
    where = f"output store {file}: record {rec.number} at byte {rec.offset}"
    if rec.kind != FRAME_RECORD:
        raise StoreError(f"{where}: a second header")
    meta = _frame_parts(rec.payload, where)[0]
    return meta, _parsed(meta, f"{where} meta", _frame_meta)


@dataclass(frozen=True)
class _Stored:
    """Where a frame lies (its record's number and offset), its meta's bytes and the meta they hold."""

    number: int
    offset: int
    meta: bytes
    frame: _Frame


def _frame_parts(payload: bytes | memoryview, where: str) -> tuple[bytes, bytes | memoryview]:
    """A frame's meta bytes and its arrays' compressed bytes."""
    if len(payload) < _META.size:
        raise StoreError(f"{where}: {len(payload)} bytes, expected at least {_META.size} (the meta length)")
    (length,) = _META.unpack_from(payload)
    if length > len(payload) - _META.size:
        raise StoreError(f"{where}: meta length {length}, more than the {len(payload) - _META.size} bytes after it")
    return bytes(payload[_META.size : _META.size + length]), payload[_META.size + length :]


def _frame_meta(fields: Fields) -> _Frame:
    key = fields.value("key", _is(_KEY), "32 lowercase hex digits (an input's key)")
    sha256 = _is(_SHA256)
    image = fields.value("image", lambda v: v is None or sha256(v), "null or an image file's sha256 (64 hex)", None)
    arrays = [_array(a) for a in fields.objects("arrays")]
    fields.done()
    return _Frame(key, image, arrays)


def _array(fields: Fields) -> tuple[str, np.dtype[Any], tuple[int, ...]]:
    name = fields.string("name", nonempty=True)
    text = fields.string("dtype")
    try:
        dtype = np.dtype(text)
    except TypeError:
        fields.fail("dtype", text, "a numpy dtype")
    if dtype.kind not in "biuf" or dtype.str != text:
        fields.fail("dtype", text, "a numeric numpy dtype as numpy writes it (e.g. '<f4', '|u1')")
    shape = shape_of(fields, "shape")
    if int(np.prod(shape, dtype=np.float64)) > _MAX_ELEMENTS:
        fields.fail("shape", list(shape), f"at most {_MAX_ELEMENTS} elements")
    fields.done()
    return name, dtype, shape


def _parsed(text: bytes | memoryview, source: str, read_fields: Callable[[Fields], T]) -> T:
    """``read_fields`` over the JSON object in ``text``; a malformed one is a :class:`StoreError`."""
    try:
        return read_fields(Fields(parse_json(bytes(text), source), source))
    except DocumentError as error:
        raise StoreError(str(error)) from None


def _header_said(found: Scan) -> str:
    """A header copy's damage in words: nothing was lost, the other copy is read."""
    said = "; ".join(str(loss) for loss in found.header_damage)
    return f"{said}; the header's other copy is read, no frame is lost"


def _lost(losses: list[Loss]) -> list[tuple[Loss, str | None]]:
    """Each loss with the key its record still shows (unverified: its checksum failed), where it does."""
    return [(loss, _lost_key(loss)) for loss in losses]


def _lost_key(loss: Loss) -> str | None:
    if loss.payload is None:
        return None
    try:
        return _parsed(_frame_parts(loss.payload, "")[0], "", _frame_meta).key
    except StoreError:
        return None


def _said(lost: list[tuple[Loss, str | None]]) -> str:
    """The lost frames in words, each by its record and the key it still shows."""
    said = [f"{loss}" + (f" (key {key[:16]}, unverified)" if key else "") for loss, key in lost]
    return f"{len(lost)} record(s) lost: " + "; ".join(said)


def _json(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def _is(pattern: re.Pattern[str]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and pattern.fullmatch(value) is not None


def _shaping(fields: Fields) -> dict[str, Any]:
    """The settings that shaped the outputs: each a string, a number, a bool or a list of numbers."""

    def plain(value: Any) -> bool:
        return isinstance(value, str | int | float | bool)

    shaping = {}
    for key, value in fields.items():
        if not (plain(value) or (isinstance(value, list) and all(plain(v) and not isinstance(v, str) for v in value))):
            fields.fail(key, value, "a string, a number, true or false, or a list of numbers")
        shaping[key] = value
    return shaping
