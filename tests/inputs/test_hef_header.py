"""HEF header: versions 0..3, declared vs actual size, checksums (real fixtures, read once per module)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import HefError
from harness.inputs.hef.header import ChecksumKind, check_size, parse_header, verify_checksum

INTACT = {
    "hailo8_mnist_cnn.hef": (0, ChecksumKind.MD5, 32),
    "hailo8_arcface_mobilefacenet.hef": (1, ChecksumKind.CRC32, 28),
    "hailo10h_lightface_slim.hef": (3, ChecksumKind.XXH3_64, 56),
}
TRUNCATED = "hailo8l_yolov8s_nms_truncated.hef"


@pytest.fixture(scope="module")
def files(shared_fixtures: Path) -> dict[str, bytes]:
    out = {name: (shared_fixtures / "hef" / name).read_bytes() for name in INTACT}
    out[TRUNCATED] = (shared_fixtures / "hef_bad" / TRUNCATED).read_bytes()
    out["not_a_hef.hef"] = (shared_fixtures / "hef_bad" / "not_a_hef.hef").read_bytes()
    return out


@pytest.mark.parametrize("name", sorted(INTACT))
def test_intact_header_declares_the_file_size_and_its_checksum_matches(files: dict[str, bytes], name: str) -> None:
    data = files[name]
    header = parse_header(data, name)
    version, kind, size = INTACT[name]
    assert (header.version, header.checksum_kind, header.size) == (version, kind, size)
    assert header.declared_file_size == len(data)
    check_size(header, len(data), name)
    verify_checksum(header, data, name)


def test_v3_header_reads_padding_additional_info_and_proto_checksum(files: dict[str, bytes]) -> None:
    header = parse_header(files["hailo10h_lightface_slim.hef"], "lightface")
    assert (header.proto_size, header.padding_size, header.additional_info_size) == (11831, 401, 80)
    assert header.ccws_size == 618817 - 401
    assert header.proto_checksum == 0x94F5106C01A779E3


def test_truncated_file_is_refused_with_declared_and_actual_size(files: dict[str, bytes]) -> None:
    data = files[TRUNCATED]
    header = parse_header(data, TRUNCATED)
    assert header.version == 2
    assert (header.proto_size, header.ccws_size) == (3320294, 27920480)
    with pytest.raises(HefError, match=r"truncated: header declares 31240818 bytes, file has 2883584"):
        check_size(header, len(data), TRUNCATED)


def test_longer_file_than_declared_is_refused(files: dict[str, bytes]) -> None:
    data = files["hailo8_mnist_cnn.hef"] + b"\0"
    with pytest.raises(HefError, match=r"size mismatch: header declares 130423 bytes, file has 130424"):
        check_size(parse_header(data, "mnist"), len(data), "mnist")


def test_text_file_is_not_a_hef(files: dict[str, bytes]) -> None:
    with pytest.raises(HefError, match=r"not_a_hef.hef: not a HEF \(no magic\)"):
        parse_header(files["not_a_hef.hef"], "not_a_hef.hef")


def test_a_file_shorter_than_any_header_fails_as_hailorts_read_does() -> None:
    with pytest.raises(HefError, match=r"empty.hef: truncated: file has 0 bytes \(an empty file\)") as caught:
        parse_header(b"", "empty.hef")
    assert caught.value.status == "HAILO_FILE_OPERATION_FAILURE"


def test_unknown_header_version_is_unsupported(files: dict[str, bytes]) -> None:
    data = bytearray(files["hailo8_mnist_cnn.hef"][:64])
    data[4:8] = struct.pack(">I", 7)
    with pytest.raises(HefError, match=r"unsupported HEF header version 7"):
        parse_header(bytes(data), "v7.hef")


def test_file_shorter_than_its_header_is_truncated(files: dict[str, bytes]) -> None:
    with pytest.raises(HefError, match=r"truncated: file has 30 bytes, the v3 header needs 56"):
        parse_header(files["hailo10h_lightface_slim.hef"][:30], "short.hef")


@pytest.mark.parametrize("name", sorted(INTACT))
def test_one_corrupted_body_byte_gives_a_checksum_mismatch_naming_both_values(
    files: dict[str, bytes], name: str
) -> None:
    data = bytearray(files[name])
    header = parse_header(bytes(data), name)
    position = header.size + header.proto_size // 2
    data[position] ^= 0x01
    with pytest.raises(HefError, match=r"checksum mismatch: .* is [0-9a-f]+, header expects [0-9a-f]+") as error:
        verify_checksum(header, bytes(data), name)
    assert header.checksum_kind.value in str(error.value)


def test_v3_proto_checksum_is_checked_when_the_body_checksum_agrees(files: dict[str, bytes]) -> None:
    data = bytearray(files["hailo10h_lightface_slim.hef"])
    data[40:48] = b"\0" * 7 + b"\1"  # a wrong, non-zero proto_xxh3_64
    header = parse_header(bytes(data), "lightface")
    with pytest.raises(HefError, match=r"of the 11831-byte proto is 94f5106c01a779e3, header expects 0000000000000001"):
        verify_checksum(header, bytes(data), "lightface")


@given(st.binary(max_size=80))
def test_header_parser_raises_only_hef_errors_on_any_bytes(data: bytes) -> None:
    try:
        header = parse_header(data, "random")
    except HefError:
        return
    assert header.size <= len(data)
    assert header.declared_file_size >= header.size


@given(name=st.sampled_from(sorted(INTACT)), cut=st.integers(min_value=0, max_value=4096))
def test_file_cut_anywhere_is_refused_with_a_hef_error(files: dict[str, bytes], name: str, cut: int) -> None:
    data = files[name][:cut]
    with pytest.raises(HefError, match=r"truncated|not a HEF"):
        check_size(parse_header(data, name), len(data), name)
