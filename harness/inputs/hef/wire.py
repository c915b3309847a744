"""Protocol-buffer wire format, decoded by hand: just enough to read a message by field number.

A message is a sequence of ``(field number, wire type, value)`` records. Wire types: 0 varint,
1 fixed 64-bit, 2 length-delimited (bytes, strings, embedded messages, packed repeated scalars),
5 fixed 32-bit; the group types 3/4 are not used by proto3 and are refused. Fields the reader does
not ask for are skipped without being decoded. Scalars keep the last occurrence and embedded
messages that occur more than once are merged by concatenation, as protobuf itself does.

A message read from a cut-off buffer (``partial=True``) keeps the complete records and, for a
length-delimited record that runs past the end, the bytes that are there: reading that record as a
message again reads it partially. Every decoding error is a :class:`HefError` naming the field path.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from harness.core.errors import HEF_CORRUPTED, HefError


class ProtoError(HefError):
    """A proto that does not decode: HailoRT refuses it as corrupted ("Failed parsing HEF file")."""

    def __init__(self, message: str) -> None:
        super().__init__(message, HEF_CORRUPTED)


VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
FIXED32 = 5

_WIRE_TYPE_NAMES = {VARINT: "varint", FIXED64: "64-bit", LENGTH_DELIMITED: "length-delimited", FIXED32: "32-bit"}
_MAX_VARINT_BYTES = 10


def read_varint(data: bytes | memoryview, pos: int, path: str) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    result = 0
    shift = 0
    end = len(data)
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= end:
            raise ProtoError(f"malformed proto field {path}: varint runs past the end of the data")
        byte = data[pos + i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & 0xFFFF_FFFF_FFFF_FFFF, pos + i + 1
        shift += 7
    raise ProtoError(f"malformed proto field {path}: varint longer than {_MAX_VARINT_BYTES} bytes")


@dataclass(frozen=True)
class FieldValue:
    """One field occurrence: an int for varint/fixed records, the raw bytes for length-delimited ones."""

    number: int
    wire_type: int
    value: int | bytes
    cut: bool = False


def _varint_or_cut(data: bytes | memoryview, pos: int, path: str, partial: bool) -> tuple[int, int] | None:
    """The varint at ``pos`` and the position after it; None where a ``partial`` read's data ends in it."""
    try:
        return read_varint(data, pos, path)
    except HefError:
        if partial:
            return None
        raise


def _scan(data: bytes | memoryview, path: str, partial: bool) -> tuple[dict[int, list[FieldValue]], bool]:
    records: dict[int, list[FieldValue]] = {}
    pos = 0
    end = len(data)
    while pos < end:
        if (read := _varint_or_cut(data, pos, f"{path}.<key>", partial)) is None:
            return records, True
        key, pos = read
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise ProtoError(f"malformed proto field {path}: field number 0")
        field_path = f"{path}.#{number}"
        if wire_type == VARINT:
            if (read := _varint_or_cut(data, pos, field_path, partial)) is None:
                return records, True
            value, pos = read
            record = FieldValue(number, wire_type, value)
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if pos + size > end:
                if partial:
                    return records, True
                raise ProtoError(f"malformed proto field {field_path}: {size}-byte value runs past the end of the data")
            value = int.from_bytes(data[pos : pos + size], "little")
            pos += size
            record = FieldValue(number, wire_type, value)
        elif wire_type == LENGTH_DELIMITED:
            if (read := _varint_or_cut(data, pos, field_path, partial)) is None:
                return records, True
            length, pos = read
            if pos + length > end:
                if not partial:
                    raise ProtoError(
                        f"malformed proto field {field_path}: length {length} runs past the end of the data "
                        f"({end - pos} bytes left)"
                    )
                records.setdefault(number, []).append(FieldValue(number, wire_type, bytes(data[pos:end]), cut=True))
                return records, True
            record = FieldValue(number, wire_type, bytes(data[pos : pos + length]))
            pos += length
        else:
            raise ProtoError(f"malformed proto field {field_path}: unsupported wire type {wire_type}")
        records.setdefault(number, []).append(record)
    return records, False


def _payload(record: FieldValue) -> bytes:
    """The bytes of a length-delimited record (the wire type was checked by the caller)."""
    assert isinstance(record.value, bytes)
    return record.value


class Message:
    """A decoded message; accessors take the field number and its schema name (for error messages)."""

    def __init__(self, data: bytes | memoryview, path: str, partial: bool = False) -> None:
        self.path = path
        self._records, self.cut = _scan(data, path, partial)

    def has(self, number: int) -> bool:
        return number in self._records

    def _typed(self, number: int, name: str, wire_types: tuple[int, ...]) -> list[FieldValue]:
        found = self._records.get(number, [])
        for record in found:
            if record.wire_type not in wire_types:
                expected = " or ".join(_WIRE_TYPE_NAMES[w] for w in wire_types)
                raise ProtoError(
                    f"malformed proto field {self.path}.{name}: wire type "
                    f"{_WIRE_TYPE_NAMES.get(record.wire_type, record.wire_type)}, expected {expected}"
                )
        return found

    def uint(self, number: int, name: str, default: int = 0) -> int:
        found = self._typed(number, name, (VARINT,))
        return int(found[-1].value) if found else default

    def boolean(self, number: int, name: str) -> bool:
        return self.uint(number, name) != 0

    def double(self, number: int, name: str) -> float:
        found = self._typed(number, name, (FIXED64,))
        return struct.unpack("<d", int(found[-1].value).to_bytes(8, "little"))[0] if found else 0.0

    def float32(self, number: int, name: str) -> float:
        found = self._typed(number, name, (FIXED32,))
        return struct.unpack("<f", int(found[-1].value).to_bytes(4, "little"))[0] if found else 0.0

    def doubles(self, number: int, name: str) -> tuple[float, ...]:
        """A repeated double, packed or not."""
        return self._fixed(number, name, FIXED64, "d", "doubles")

    def floats(self, number: int, name: str) -> tuple[float, ...]:
        """A repeated float, packed or not."""
        return self._fixed(number, name, FIXED32, "f", "floats")

    def _fixed(self, number: int, name: str, wire_type: int, code: str, words: str) -> tuple[float, ...]:
        """A repeated fixed-size number of ``wire_type`` (``struct`` ``code``, 8 or 4 bytes), packed or not."""
        size = struct.calcsize(f"<{code}")
        values: list[float] = []
        for record in self._typed(number, name, (wire_type, LENGTH_DELIMITED)):
            if record.wire_type == wire_type:
                values.append(struct.unpack(f"<{code}", int(record.value).to_bytes(size, "little"))[0])
                continue
            raw = _payload(record)
            if len(raw) % size:
                raise ProtoError(f"malformed proto field {self.path}.{name}: packed {words} of {len(raw)} bytes")
            values.extend(struct.unpack(f"<{len(raw) // size}{code}", raw))
        return tuple(values)

    def uints(self, number: int, name: str) -> tuple[int, ...]:
        """A repeated unsigned varint, packed or not."""
        values: list[int] = []
        for record in self._typed(number, name, (VARINT, LENGTH_DELIMITED)):
            if record.wire_type == VARINT:
                values.append(int(record.value))
                continue
            raw, pos = _payload(record), 0
            while pos < len(raw):
                value, pos = read_varint(raw, pos, f"{self.path}.{name}")
                values.append(value)
        return tuple(values)

    def string(self, number: int, name: str) -> str:
        found = self._typed(number, name, (LENGTH_DELIMITED,))
        if not found:
            return ""
        try:
            return _payload(found[-1]).decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProtoError(f"malformed proto field {self.path}.{name}: not UTF-8 ({error.reason})") from None

    def strings(self, number: int, name: str) -> tuple[str, ...]:
        out = []
        for i, record in enumerate(self._typed(number, name, (LENGTH_DELIMITED,))):
            try:
                out.append(_payload(record).decode("utf-8"))
            except UnicodeDecodeError as error:
                raise ProtoError(f"malformed proto field {self.path}.{name}[{i}]: not UTF-8 ({error.reason})") from None
        return tuple(out)

    def message(self, number: int, name: str) -> Message:
        """The embedded message (empty when absent); repeated occurrences are merged."""
        found = self._typed(number, name, (LENGTH_DELIMITED,))
        data = b"".join(_payload(r) for r in found)
        return Message(data, f"{self.path}.{name}", partial=any(r.cut for r in found))

    def messages(self, number: int, name: str) -> tuple[Message, ...]:
        """A repeated embedded message, one per occurrence."""
        return tuple(
            Message(_payload(r), f"{self.path}.{name}[{i}]", partial=r.cut)
            for i, r in enumerate(self._typed(number, name, (LENGTH_DELIMITED,)))
        )
