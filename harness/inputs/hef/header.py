"""The HEF file header (versions 0 to 3), the size it declares and the checksum it carries.

Layout (hailort: hailort/libhailort/src/hef/hef_internal.hpp, ``hef__header_t``), big-endian:
``u32 magic 0x01484546, u32 version, u32 hef_proto_size`` and then per version

- v0: ``u32 reserved, u8[16] md5``                                   (32-byte header)
- v1: ``u32 crc32, u64 ccws_size, u32 reserved``                     (28)
- v2: ``u64 xxh3_64, u64 ccws_size, u64 reserved, u64 reserved``     (44)
- v3: ``u64 xxh3_64, u64 ccws_size_with_padding, u32 padding_size, u64 additional_info_size,
  u64 proto_xxh3_64, u64 reserved``                                  (56)

The body (everything after the header) is the protobuf message of ``hef_proto_size`` bytes, then
(v3: padding and) the config words, then (v3) additional info. What is checked
(hailort: hailort/libhailort/src/hef/hef.cpp, ``parse_hef_file`` and ``validate_hef_header``):
v0 the MD5 of the body, which is the proto alone; v1 the zlib CRC32 of the body; v2 the xxh3-64 of
the body; v3 the xxh3-64 of the body and, when non-zero, the xxh3-64 of the proto alone.
"""

from __future__ import annotations

import enum
import hashlib
import struct
import zlib
from dataclasses import dataclass

import xxhash

from harness.core.errors import HEF_CORRUPTED as CORRUPTED
from harness.core.errors import HEF_FILE_OPERATION_FAILURE as FILE_OPERATION_FAILURE
from harness.core.errors import HEF_NOT_SUPPORTED as NOT_SUPPORTED
from harness.core.errors import HefError

MAGIC = 0x01484546
_COMMON = struct.Struct(">III")
_DISTINCT = {
    0: struct.Struct(">I16s"),
    1: struct.Struct(">IQI"),
    2: struct.Struct(">QQQQ"),
    3: struct.Struct(">QQIQQQ"),
}
HEADER_SIZES = {version: _COMMON.size + layout.size for version, layout in _DISTINCT.items()}


class ChecksumKind(enum.Enum):
    MD5 = "md5"
    CRC32 = "crc32"
    XXH3_64 = "xxh3-64"


_KIND_BY_VERSION = {0: ChecksumKind.MD5, 1: ChecksumKind.CRC32, 2: ChecksumKind.XXH3_64, 3: ChecksumKind.XXH3_64}


@dataclass(frozen=True)
class HefHeader:
    """One HEF header; sizes in bytes, checksums as unsigned integers (MD5 as its 128-bit value)."""

    version: int
    proto_size: int
    checksum: int
    ccws_size: int = 0
    padding_size: int = 0
    additional_info_size: int = 0
    proto_checksum: int = 0

    @property
    def size(self) -> int:
        return HEADER_SIZES[self.version]

    @property
    def checksum_kind(self) -> ChecksumKind:
        return _KIND_BY_VERSION[self.version]

    @property
    def declared_file_size(self) -> int:
        """Header + proto + config words (+ v3 padding and additional info)."""
        return self.size + self.proto_size + self.padding_size + self.ccws_size + self.additional_info_size


def parse_header(data: bytes, source: str) -> HefHeader:
    """The header at the start of ``data``; ``source`` names the file in errors. The checks come in
    HailoRT's order, each refusal with its status (hailort: hailort/libhailort/src/hef/hef.cpp,
    parse_hef_header_before_distinct, then the version switch, then validate_hef_header): a file too
    short for its header fails HailoRT's read."""
    if len(data) < _COMMON.size:
        found = f"first bytes {data[:4].hex()}" if data else "an empty file"
        raise HefError(
            f"{source}: truncated: file has {len(data)} bytes ({found}), a HEF header needs at least {_COMMON.size}",
            FILE_OPERATION_FAILURE,
        )
    magic, version, proto_size = _COMMON.unpack_from(data)
    if magic != MAGIC and (version not in _DISTINCT or len(data) >= HEADER_SIZES[version]):
        raise HefError(
            f"{source}: not a HEF (no magic): first bytes {data[:4].hex()}, expected 01484546", NOT_SUPPORTED
        )
    if version not in _DISTINCT:
        raise HefError(f"{source}: unsupported HEF header version {version}, expected one of 0, 1, 2, 3", NOT_SUPPORTED)
    if len(data) < HEADER_SIZES[version]:
        raise HefError(
            f"{source}: truncated: file has {len(data)} bytes, the v{version} header needs {HEADER_SIZES[version]}",
            FILE_OPERATION_FAILURE,
        )
    fields = _DISTINCT[version].unpack_from(data, _COMMON.size)
    if version == 0:
        return HefHeader(version, proto_size, checksum=int.from_bytes(fields[1], "big"))
    if version in (1, 2):
        return HefHeader(version, proto_size, checksum=fields[0], ccws_size=fields[1])
    checksum, ccws_with_padding, padding, additional, proto_checksum, _ = fields
    if ccws_with_padding < padding:
        raise HefError(
            f"{source}: malformed v3 header: ccws_size_with_padding {ccws_with_padding} is smaller than "
            f"padding size {padding}",
            CORRUPTED,
        )
    return HefHeader(
        version,
        proto_size,
        checksum=checksum,
        ccws_size=ccws_with_padding - padding,
        padding_size=padding,
        additional_info_size=additional,
        proto_checksum=proto_checksum,
    )


def check_size(header: HefHeader, file_size: int, source: str) -> None:
    """Refuse a file shorter (truncated) or longer than its header declares."""
    declared = header.declared_file_size
    if file_size < declared:
        raise HefError(f"{source}: truncated: header declares {declared} bytes, file has {file_size}", CORRUPTED)
    if file_size > declared:
        raise HefError(f"{source}: size mismatch: header declares {declared} bytes, file has {file_size}", CORRUPTED)


def _digest(kind: ChecksumKind, data: bytes) -> int:
    if kind is ChecksumKind.MD5:
        return int.from_bytes(hashlib.md5(data).digest(), "big")
    if kind is ChecksumKind.CRC32:
        return zlib.crc32(data)
    return xxhash.xxh3_64_intdigest(data)


def _hex(kind: ChecksumKind, value: int) -> str:
    return f"{value:0{32 if kind is ChecksumKind.MD5 else 16 if kind is ChecksumKind.XXH3_64 else 8}x}"


def verify_checksum(header: HefHeader, data: bytes, source: str) -> None:
    """Check the header's checksum(s) against the file ``data`` (whole file, already size-checked)."""
    kind = header.checksum_kind
    body = data[header.size :]
    actual = _digest(kind, body)
    if actual != header.checksum:
        raise HefError(
            f"{source}: checksum mismatch: {kind.value} of the {len(body)} bytes after the header is "
            f"{_hex(kind, actual)}, header expects {_hex(kind, header.checksum)}",
            CORRUPTED,
        )
    if header.proto_checksum:
        actual = _digest(kind, body[: header.proto_size])
        if actual != header.proto_checksum:
            raise HefError(
                f"{source}: checksum mismatch: {kind.value} of the {header.proto_size}-byte proto is "
                f"{_hex(kind, actual)}, header expects {_hex(kind, header.proto_checksum)}",
                CORRUPTED,
            )
