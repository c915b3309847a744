"""Journal files: every sound record kept whatever happened to the others, every lost one named,
one writer at a time."""

from __future__ import annotations

import dataclasses
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import HarnessError
from harness.core.journal import HEADER, MAX_LENGTH, Format, Writer, encode_record, read, scan

FORMAT = Format(
    name="test journal",
    magic=b"TESTJRNL",
    version=3,
    kinds=(b"HEAD", b"ITEM"),
    error=HarnessError,
    advice="delete it",
    older=((b"old journal\n", "a journal of format 1"),),
)
BUSY = dataclasses.replace(FORMAT, busy="another process is recording into it")
FILE = Path("j.bin")


def _payload(i: int) -> bytes:
    return bytes((i * 7 + k) % 251 for k in range(50 + 13 * i))


def _journal(n: int) -> tuple[bytes, list[int]]:
    """A head record and ``n - 1`` items; the bytes and where each record starts (then the end)."""
    data, starts = bytearray(FORMAT.preamble), []
    for i in range(n):
        starts.append(len(data))
        data += encode_record(b"HEAD" if i == 0 else b"ITEM", _payload(i))
    return bytes(data), [*starts, len(data)]


def _payloads(found) -> list[bytes]:
    return [bytes(r.payload) for r in found.records]


def test_a_flipped_byte_in_a_middle_record_loses_only_that_record_and_names_it():
    data, starts = _journal(10)
    damaged = bytearray(data)
    damaged[starts[4] + HEADER.size + 20] ^= 0xFF
    found = scan(bytes(damaged), FORMAT, FILE)
    assert _payloads(found) == [_payload(i) for i in range(10) if i != 4]
    assert [r.number for r in found.records] == [1, 2, 3, 4, 6, 7, 8, 9, 10]
    (loss,) = found.losses
    assert (loss.offset, loss.end, loss.tail) == (starts[4], starts[5], False)
    assert str(loss) == f"record 5 at byte {starts[4]}: its {len(_payload(4))} bytes fail their checksum"
    assert found.damaged == [loss] and found.end == len(data)


def test_a_damaged_header_in_the_middle_resynchronises_at_the_next_sound_record():
    data, starts = _journal(10)
    damaged = bytearray(data)
    damaged[starts[4] + 5] ^= 0x40  # its length: read as it stands it would swallow the records after it
    found = scan(bytes(damaged), FORMAT, FILE)
    assert _payloads(found) == [_payload(i) for i in range(10) if i != 4]
    (loss,) = found.losses
    assert (loss.offset, loss.end) == (starts[4], starts[5])
    assert "record 5 at byte" in str(loss) and "header damaged (kind b'ITEM', header checksum mismatch)" in str(loss)
    assert str(loss).endswith(f"{starts[5] - starts[4]} bytes lost up to the next sound record at byte {starts[5]}")


def _headed(kind: bytes, length: int, payload: bytes) -> bytes:
    """A record whose header states ``length`` (whatever the payload's), its header checksum sound."""
    head = struct.pack("<4sII", kind, length, zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head)) + payload


@pytest.mark.parametrize(
    ("length", "words"),
    [
        (0xFFFFFFFF, f"header states 4294967295 bytes, more than a record holds ({MAX_LENGTH})"),
        (10_000, "header states 10000 bytes, running past the next sound record"),
    ],
)
def test_an_impossible_length_under_a_sound_header_loses_only_that_record(length, words):
    data, starts = _journal(6)
    bad = _headed(b"ITEM", length, b"x" * 40)
    found = scan(data[: starts[3]] + bad + data[starts[3] :], FORMAT, FILE)
    assert _payloads(found) == [_payload(i) for i in range(6)]
    (loss,) = found.losses
    assert (loss.offset, loss.end, loss.tail) == (starts[3], starts[3] + len(bad), False)
    assert str(loss).startswith(f"record 4 at byte {starts[3]}: {words}")


def test_a_record_of_an_unknown_kind_is_a_loss_named_by_its_kind():
    data, starts = _journal(3)
    found = scan(data[: starts[1]] + encode_record(b"WHAT", b"payload") + data[starts[1] :], FORMAT, FILE)
    assert _payloads(found) == [_payload(i) for i in range(3)]
    assert "header of an unknown kind b'WHAT', expected one of [b'HEAD', b'ITEM']" in str(found.losses[0])


@given(data=st.data())
def test_a_flipped_bit_anywhere_after_the_preamble_costs_the_record_it_hit_alone(data):
    journal, starts = _journal(8)
    bit = data.draw(st.integers(8 * starts[0], 8 * len(journal) - 1), label="bit")
    flipped = bytearray(journal)
    flipped[bit // 8] ^= 1 << (bit % 8)
    hit = next(i for i in range(8) if bit // 8 < starts[i + 1])
    found = scan(bytes(flipped), FORMAT, FILE)
    assert _payloads(found) == [_payload(i) for i in range(8) if i != hit]
    (loss,) = found.losses
    assert (loss.offset, loss.end, loss.tail) == (starts[hit], starts[hit + 1], hit == 7)


@given(cut=st.integers(0, 400))
def test_a_file_cut_anywhere_keeps_every_whole_record_and_names_the_torn_one(cut):
    journal, starts = _journal(5)
    cut = min(cut, len(journal))
    found = scan(journal[:cut], FORMAT, FILE)
    whole = sum(end <= cut for end in starts[1:])
    assert _payloads(found) == [_payload(i) for i in range(whole)]
    assert found.end == (starts[whole] if cut >= starts[0] else 0)  # where appending resumes
    torn = cut not in starts and cut != 0
    assert [loss.tail for loss in found.losses] == ([True] if torn else [])


def test_a_torn_last_record_is_cut_off_in_place_and_reported(tmp_path):
    journal, starts = _journal(5)
    file = tmp_path / "j.bin"
    file.write_bytes(journal[:-9])
    writer = Writer(file, FORMAT)
    found = writer.read()
    (loss,) = found.losses
    length = len(_payload(4))
    assert loss.tail and str(loss) == f"record 5 at byte {starts[4]}: cut short ({length - 9} of its {length} bytes)"
    assert writer.repair() is None
    writer.append(b"ITEM", _payload(4), sync=True)
    writer.close()
    assert file.read_bytes() == journal and list(tmp_path.iterdir()) == [file]


@pytest.mark.parametrize("zeros", [5, 16, 4096])
def test_a_zero_filled_tail_is_cut_off_as_an_interrupted_write(tmp_path, zeros):
    journal, _ = _journal(4)
    file = tmp_path / "j.bin"
    file.write_bytes(journal + bytes(zeros))
    writer = Writer(file, FORMAT)
    (loss,) = writer.read().losses
    assert loss.tail and str(loss).endswith(f"{zeros} bytes of zeros (never written)")
    writer.repair()
    writer.close()
    assert file.read_bytes() == journal


def test_damage_before_the_tail_is_salvaged_into_a_rewritten_file_and_the_file_as_found_is_kept(tmp_path):
    journal, starts = _journal(100)
    damaged = bytearray(journal)
    damaged[starts[5] + HEADER.size + 3] ^= 0x01  # frame 5 of 100
    file = tmp_path / "j.bin"
    file.write_bytes(bytes(damaged) + journal[starts[99] : starts[99] + 30])  # and a torn write after the last
    writer = Writer(file, FORMAT)
    found = writer.read()
    assert len(found.records) == 99 and [loss.tail for loss in found.losses] == [False, True]
    copy = writer.repair()
    writer.append(b"ITEM", b"after", sync=True)
    writer.close()
    assert copy is not None and copy.name.startswith("j.bin.damaged-") and copy.parent == tmp_path
    assert copy.read_bytes() == bytes(damaged) + journal[starts[99] : starts[99] + 30]  # the file as found
    again = read(file, FORMAT)
    assert not again.losses
    assert _payloads(again) == [_payload(i) for i in range(100) if i != 5] + [b"after"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([file.name, copy.name])  # no temporary left


_OTHER_WRITER = """
import sys
from pathlib import Path
from harness.core.errors import HarnessError
from harness.core.journal import Format, Writer
busy = sys.argv[2] or None
fmt = Format("test journal", b"TESTJRNL", 3, (b"HEAD", b"ITEM"), HarnessError, "delete it", busy=busy)
writer = Writer(Path(sys.argv[1]), fmt)
found = writer.read()
print(len(found.records), len(found.losses))
writer.close()
"""


def _other_writer(file: Path, fmt: Format) -> subprocess.Popen[str]:
    """Another process opening ``file`` to write (``fmt``: whether it waits or is refused): it prints
    how many records and losses it found."""
    command = [sys.executable, "-c", _OTHER_WRITER, str(file), fmt.busy or ""]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_second_writer_is_refused_at_once_naming_the_file_while_the_first_holds_it(tmp_path):
    file = tmp_path / "j.bin"
    first = Writer(file, BUSY)
    first.read()
    first.start(b"HEAD", b"first")
    other = _other_writer(file, BUSY)
    out, err = other.communicate(timeout=60)
    assert other.returncode == 1 and out == ""
    assert f"test journal {file}: another process is recording into it" in err.splitlines()[-1]
    first.close()
    freed = _other_writer(file, BUSY)
    assert freed.communicate(timeout=60)[0].split() == ["1", "0"]


def test_a_waiting_writer_locks_the_rewritten_file_not_the_one_it_replaced(tmp_path):
    journal, starts = _journal(6)
    damaged = bytearray(journal)
    damaged[starts[2] + HEADER.size] ^= 0x01
    file = tmp_path / "j.bin"
    file.write_bytes(bytes(damaged))
    first = Writer(file, FORMAT)
    first.read()
    waiting = _other_writer(file, FORMAT)
    with pytest.raises(subprocess.TimeoutExpired):
        waiting.wait(timeout=1.0)  # blocked on the lock while this process repairs
    assert first.repair() is not None
    first.append(b"ITEM", b"appended by the first", sync=True)
    first.close()
    out, err = waiting.communicate(timeout=60)
    assert out.split() == ["6", "0"], err  # the sound file, with the first writer's record


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"old journal\nrest", r"a journal of format 1; this harness reads format 3 \(delete it\)"),
        (b"TESTJRNL\x07\x00\x00\x00", r"a test journal of format 7; this harness reads format 3 \(delete it\)"),
        (b"\x89PNG\r\n\x1a\n and more", r"starts with b'\\x89PNG.*expected a test journal \(b'TESTJRNL', format 3\)"),
    ],
)
def test_a_file_of_another_format_is_refused_naming_what_it_is_and_left_alone(tmp_path, content, words):
    file = tmp_path / "j.bin"
    file.write_bytes(content)
    with pytest.raises(HarnessError, match=rf"test journal {file}: {words}"):
        Writer(file, FORMAT).read()
    assert file.read_bytes() == content


def test_a_new_files_interrupted_first_write_holds_no_record_and_is_named():
    found = scan(FORMAT.preamble[:5], FORMAT, FILE)
    assert not found.records and found.end == 0
    assert [str(loss) for loss in found.losses] == ["holds only the first 5 of a new file's 12 preamble bytes"]
    assert scan(b"", FORMAT, FILE).losses == []


TWICE = dataclasses.replace(FORMAT, header_copies=2)


def _twice(n: int) -> tuple[bytes, list[int]]:
    """A journal of ``TWICE``: the head record twice, then ``n - 1`` items; the bytes and where each
    record starts (then the end)."""
    data, starts = bytearray(TWICE.preamble), []
    for i in [0, 0, *range(1, n)]:
        starts.append(len(data))
        data += encode_record(b"HEAD" if i == 0 else b"ITEM", _payload(i))
    return bytes(data), [*starts, len(data)]


@given(data=st.data())
def test_a_flipped_bit_in_the_preamble_or_either_header_copy_costs_nothing_and_is_named(data):
    journal, starts = _twice(6)
    bit = data.draw(st.integers(0, 8 * starts[2] - 1), label="bit")
    flipped = bytearray(journal)
    flipped[bit // 8] ^= 1 << (bit % 8)
    found = scan(bytes(flipped), TWICE, FILE)
    assert _payloads(found) == [_payload(i) for i in range(6)] and not found.losses
    assert found.records[0].number == 1 and [r.number for r in found.records[1:]] == [2, 3, 4, 5, 6]
    (damage,) = found.header_damage
    assert str(damage).startswith("preamble: one bit" if bit // 8 < starts[0] else "header copy at byte")


@given(data=st.data())
def test_a_flipped_bit_in_a_record_after_the_header_copies_costs_that_record_alone(data):
    journal, starts = _twice(6)
    bit = data.draw(st.integers(8 * starts[2], 8 * len(journal) - 1), label="bit")
    flipped = bytearray(journal)
    flipped[bit // 8] ^= 1 << (bit % 8)
    hit = next(i for i in range(1, 6) if bit // 8 < starts[i + 2])
    found = scan(bytes(flipped), TWICE, FILE)
    assert _payloads(found) == [_payload(i) for i in range(6) if i != hit] and not found.header_damage
    (loss,) = found.losses
    assert f"record {hit + 1} at byte {starts[hit + 1]}" in str(loss)


def test_a_damaged_header_copy_is_rewritten_from_the_other_and_the_file_as_found_kept(tmp_path):
    journal, starts = _twice(4)
    damaged = bytearray(journal)
    damaged[starts[0] + HEADER.size + 5] ^= 0x10  # the first copy's payload
    file = tmp_path / "j.bin"
    file.write_bytes(bytes(damaged))
    writer = Writer(file, TWICE)
    found = writer.read()
    assert _payloads(found) == [_payload(i) for i in range(4)] and found.needs_rewrite
    copy = writer.repair()
    writer.close()
    assert copy is not None and copy.name.startswith("j.bin.damaged-") and copy.read_bytes() == bytes(damaged)
    assert file.read_bytes() == journal  # both copies sound again


def test_header_copies_that_differ_though_each_is_sound_are_refused_as_an_edit():
    journal, starts = _twice(3)
    edited = journal[: starts[1]] + encode_record(b"HEAD", _payload(0)[::-1]) + journal[starts[2] :]
    with pytest.raises(HarnessError, match="its 2 header copies differ"):
        scan(edited, TWICE, FILE)


def test_both_header_copies_lost_leave_no_header_to_read():
    journal, starts = _twice(3)
    damaged = bytearray(journal)
    damaged[starts[0] + HEADER.size + 1] ^= 1
    damaged[starts[1] + HEADER.size + 1] ^= 1
    found = scan(bytes(damaged), TWICE, FILE)
    assert found.records[0].kind == b"ITEM" and len(found.losses) == 2


def test_starting_over_a_file_that_held_more_than_a_preamble_keeps_it_as_found(tmp_path):
    file = tmp_path / "j.bin"
    file.write_bytes(TWICE.preamble + b"\x00garbage, no record at all")
    writer = Writer(file, TWICE)
    assert not writer.read().records
    copy = writer.start(b"HEAD", _payload(0))
    writer.close()
    assert copy is not None and copy.read_bytes() == TWICE.preamble + b"\x00garbage, no record at all"
    assert file.read_bytes() == TWICE.preamble + encode_record(b"HEAD", _payload(0)) * 2


def test_a_version_bit_flipped_into_an_older_formats_is_told_from_an_older_file_by_its_header_copies():
    older_preamble = TWICE.magic + struct.pack("<I", 2)  # one bit from format 3's
    fmt = dataclasses.replace(TWICE, older=((older_preamble, "a journal of format 2"),))
    journal, _ = _twice(3)
    flipped = older_preamble + journal[len(older_preamble) :]
    found = scan(flipped, fmt, FILE)
    assert _payloads(found) == [_payload(i) for i in range(3)]
    assert str(found.header_damage[0]).startswith("preamble: one bit flipped in byte 8")
    old = older_preamble + encode_record(b"HEAD", _payload(0)) + encode_record(b"ITEM", _payload(1))
    with pytest.raises(HarnessError, match="a journal of format 2; this harness reads format 3"):
        scan(old, fmt, FILE)
