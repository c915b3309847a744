"""Journal files: append-only binary files of checksummed records, written by one process at a time,
that lose no sound record to an interrupted write or to damage, and drop nothing without naming it.

All numbers are little-endian::

    file    = magic  version:u32  record*
    record  = kind:4s  length:u32  crc32(payload):u32  crc32(the 12 bytes before):u32  payload

A format whose ``header_copies`` is 2 begins with its header record (of its first kind) written
twice, each copy checksummed: a flipped bit in one copy costs nothing (the other is read, the damage
named in :attr:`Scan.header_damage`); a file is refused only where both are lost, and
:func:`keep_damaged` then keeps it as ``<name>.damaged-<time>``.

:func:`scan` gives a file's sound records and names each stretch it cannot read (a :class:`Loss`).
A record whose header is sound but whose payload fails its checksum is lost alone; where a header
is damaged, reading resynchronises at the next sound header (a known kind and its own checksum:
a false one is a 1 in 2**32 chance where a kind's four bytes occur by chance). The losses after
the last sound record are the torn tail of an interrupted write (a record cut short, or after a
power loss zero-filled or failing its checksum).

:class:`Writer` opens a file to append to under an exclusive lock (``fcntl.flock``): a second
writer waits for the first, or is refused at once (:attr:`Format.busy`). :meth:`Writer.repair`
cuts a torn tail off in place; where damage lies before it, the file is rewritten (a temporary
file renamed over it) with every sound record, and the file as found is kept beside it as
``<name>.damaged-<time>``: no sound record is ever cut off.
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

from harness.core.confine import check, make_folder
from harness.core.errors import HarnessError
from harness.core.files import fsync_folder

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; one process per journal file there
    fcntl = None  # type: ignore[assignment]

HEADER = struct.Struct("<4sIII")  # kind, payload length, payload crc32, crc32 of these first 12 bytes
MAX_LENGTH = 1 << 30  # the longest payload: a header stating more is damaged
_VERSION = struct.Struct("<I")
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


@dataclass(frozen=True)
class Format:
    """One kind of journal file: ``name`` (messages say "<name> <file>: ..."), its ``magic`` and
    ``version``, the record ``kinds`` it holds (four bytes each), the ``error`` its refusals raise,
    ``advice`` for a file of another format, ``older``: the first bytes of older formats and what
    such a file is, and ``busy``: None where a second writer waits for the first, else what it is
    told when it is refused at once; ``header_copies``: how many copies of the header record (of
    the first kind) begin the file (2: a flipped bit in one costs nothing)."""

    name: str
    magic: bytes
    version: int
    kinds: tuple[bytes, ...]
    error: type[HarnessError]
    advice: str
    older: tuple[tuple[bytes, str], ...] = ()
    busy: str | None = None
    header_copies: int = 1

    @property
    def header(self) -> bytes:
        """The kind of the file's first record (its header)."""
        return self.kinds[0]

    @property
    def preamble(self) -> bytes:
        return self.magic + _VERSION.pack(self.version)

    def fail(self, file: Path, what: str) -> HarnessError:
        return self.error(f"{self.name} {file}: {what}")


def encode_record(kind: bytes, payload: bytes) -> bytes:
    """One framed record: its header, then ``payload``."""
    head = struct.pack("<4sII", kind, len(payload), zlib.crc32(payload))
    return head + _VERSION.pack(zlib.crc32(head)) + payload


@dataclass(frozen=True)
class Record:
    """One sound record: its number in the file (from 1, lost ones counted), where it starts, its
    kind and its payload."""

    number: int
    offset: int
    kind: bytes
    payload: memoryview

    @property
    def end(self) -> int:
        return self.offset + HEADER.size + len(self.payload)


@dataclass(frozen=True)
class Loss:
    """Bytes ``offset`` to ``end`` that hold no sound record; ``what`` names the record and what is
    wrong with it; ``tail``: after the last sound record (an interrupted write); ``payload``: the
    record's unsound payload where its header was sound (the caller may say what it held)."""

    offset: int
    end: int
    what: str
    tail: bool
    payload: bytes | None = None

    def __str__(self) -> str:
        return self.what


@dataclass(frozen=True)
class Scan:
    """A file's sound records and its losses, in file order; ``end``: where its last sound record
    ends (0 where the file holds none, not even a whole preamble); ``size``: the file's length."""

    records: list[Record]
    losses: list[Loss]
    end: int
    size: int
    header_damage: tuple[Loss, ...] = ()

    @property
    def needs_rewrite(self) -> bool:
        """Whether making the file sound to append to rewrites it (damage before its tail, or a
        header copy lost), rather than cutting its tail alone."""
        return bool(self.damaged or self.header_damage)

    @property
    def damaged(self) -> list[Loss]:
        """The losses before the last sound record: damage, not an interrupted write."""
        return [loss for loss in self.losses if not loss.tail]


def scan(data: bytes, fmt: Format, file: Path) -> Scan:
    """The records of a file's bytes. A file of another format is refused (``fmt.error``); an empty
    one, or one holding the start of a preamble alone (a new file's interrupted first write), has none."""
    preamble = fmt.preamble
    if len(data) < len(preamble) and preamble.startswith(data):
        said = f"holds only the first {len(data)} of a new file's {len(preamble)} preamble bytes"
        return Scan([], [Loss(0, len(data), said, True)] if data else [], 0, len(data))
    flipped = _one_bit_off(data[: len(preamble)], fmt)
    found = _records(data, len(preamble), fmt)
    if flipped is not None and found.records:  # a preamble one bit off, read as this format's where records follow
        found = _fold_header(found, len(preamble), fmt, file)
        older = any(data.startswith(prefix) for prefix, _ in fmt.older)
        if older and (found.header_damage or found.records[0].kind != fmt.header):
            flipped = None  # an older format's file as likely as a flipped bit: its header copies do not tell
    else:
        flipped = None
    if flipped is None:
        _check_preamble(data[:64], fmt, file)
        return _fold_header(found, len(preamble), fmt, file)
    return replace(found, header_damage=(Loss(0, len(preamble), flipped, False), *found.header_damage))


def _one_bit_off(head: bytes, fmt: Format) -> str | None:
    """Where a format writes its header twice, a preamble one bit off its own is read as its own,
    the damage named (an older format's preamble only where both header copies are sound and the
    same, which no older file holds); else None."""
    preamble = fmt.preamble
    if fmt.header_copies < 2 or len(head) != len(preamble) or head == preamble:
        return None
    bits = sum(bin(a ^ b).count("1") for a, b in zip(head, preamble, strict=True))
    if bits != 1:
        return None
    at = next(i for i, (a, b) in enumerate(zip(head, preamble, strict=True)) if a != b)
    return f"preamble: one bit flipped in byte {at} ({head!r}, expected {preamble!r}); read as this format"


def _fold_header(found: Scan, start: int, fmt: Format, file: Path) -> Scan:
    """A scan of a format whose header is written twice, with its copies folded into one record
    (numbered 1, the first sound copy) and the loss of a copy moved to :attr:`Scan.header_damage`;
    unchanged where the format has one copy or no sound header record opens the file."""
    records = found.records
    if fmt.header_copies < 2 or not records or records[0].kind != fmt.header:
        return found
    first = records[0]
    slot = first.end - first.offset  # every copy is the same record, so the same length
    if first.offset == start:
        region = start + fmt.header_copies * slot
    elif (first.offset - start) % slot == 0 and first.offset - start < fmt.header_copies * slot:
        region = start + fmt.header_copies * slot  # an earlier copy lost, its slot intact
    else:
        return found  # the header's first copy lost with more than its own bytes: not folded
    copies = [r for r in records if r.kind == fmt.header and r.end <= region]
    if any(bytes(c.payload) != bytes(first.payload) for c in copies[1:]):
        raise fmt.fail(
            file,
            f"its {len(copies)} header copies differ (each sound): the header was edited, not damaged; "
            f"neither is read ({fmt.advice})",
        )
    inside = [loss for loss in found.losses if loss.end <= region]
    if not inside and len(copies) == fmt.header_copies:
        return replace(found, records=[replace(first, number=1), *records[len(copies) :]])
    damage = tuple(
        Loss(loss.offset, loss.end, f"header copy at byte {loss.offset}: {loss.what.split(': ', 1)[-1]}", loss.tail)
        for loss in inside
    )
    missing = fmt.header_copies - len(copies) - len(damage)
    # a copy cut off with nothing after it (a new file's interrupted write)
    if missing > 0 and not any(loss.offset < region for loss in found.losses):
        damage += (Loss(first.end, first.end, f"{missing} header copy(ies) missing after byte {first.end}", True),)
    losses = [loss for loss in found.losses if loss.end > region]
    return replace(
        found, records=[replace(first, number=1), *records[len(copies) :]], losses=losses, header_damage=damage
    )


def _check_preamble(head: bytes, fmt: Format, file: Path) -> None:
    """Refuse a file whose first bytes (``head``) are not this format's preamble, naming what it is."""
    preamble = fmt.preamble
    if head.startswith(preamble):
        return
    older = [what for prefix, what in fmt.older if head.startswith(prefix)]
    article = "an" if fmt.name[0] in "aeiou" else "a"
    if older:
        said = f"{older[0]}; this harness reads format {fmt.version}"
    elif head.startswith(fmt.magic) and len(head) >= len(preamble):
        (version,) = _VERSION.unpack_from(head, len(fmt.magic))
        said = f"{article} {fmt.name} of format {version}; this harness reads format {fmt.version}"
    else:
        said = f"starts with {head[:16]!r}, expected {article} {fmt.name} ({fmt.magic!r}, format {fmt.version})"
    raise fmt.fail(file, f"{said} ({fmt.advice})")


def _header(data: bytes, at: int, fmt: Format) -> tuple[bytes, int, int] | str:
    """The kind, payload length and payload checksum of a sound header at ``at``, else what is wrong."""
    if len(data) - at < HEADER.size:
        return f"cut short ({len(data) - at} of its header's {HEADER.size} bytes)"
    kind, length, crc, head_crc = HEADER.unpack_from(data, at)
    if zlib.crc32(data[at : at + 12]) != head_crc:
        return f"header damaged (kind {kind!r}, header checksum mismatch)"
    if kind not in fmt.kinds:
        return f"header of an unknown kind {kind!r}, expected one of {list(fmt.kinds)}"
    if length > MAX_LENGTH:
        return f"header states {length} bytes, more than a record holds ({MAX_LENGTH})"
    return kind, length, crc


def _next_header(data: bytes, start: int, fmt: Format) -> int:
    """Where the next sound header from ``start`` begins (the file's length where none does)."""
    at = start
    while True:
        hits = [i for kind in fmt.kinds if (i := data.find(kind, at)) >= 0]
        if not hits:
            return len(data)
        at = min(hits)
        if not isinstance(_header(data, at, fmt), str):
            return at
        at += 1


def _records(data: bytes, start: int, fmt: Format) -> Scan:
    view, size, at = memoryview(data), len(data), start
    records: list[Record] = []
    found: list[tuple[int, int, str, bytes | None]] = []  # offset, end, what, payload
    while at < size:
        number = max(1, len(records) + len(found) + 2 - fmt.header_copies)  # the header's copies are record 1
        where = f"record {number} at byte {at}"
        head = _header(data, at, fmt)
        if not isinstance(head, str):
            kind, length, crc = head
            end = at + HEADER.size + length
            if end <= size:
                payload = view[at + HEADER.size : end]
                if zlib.crc32(payload) == crc:
                    records.append(Record(number, at, kind, payload))
                else:
                    found.append((at, end, f"{where}: its {length} bytes fail their checksum", bytes(payload)))
                at = end
                continue
        following = _next_header(data, at + 1, fmt)
        if data.count(0, at, following) == following - at:
            what = f"{where}: {following - at} bytes of zeros"
            what += " (never written)" if following == size else f" up to the next sound record at byte {following}"
        else:
            if isinstance(head, str):
                what = f"{where}: {head}"
            elif following == size:
                what = f"{where}: cut short ({size - at - HEADER.size} of its {head[1]} bytes)"
            else:
                what = f"{where}: header states {head[1]} bytes, running past the next sound record"
            if following < size:
                what += f"; {following - at} bytes lost up to the next sound record at byte {following}"
        found.append((at, following, what, None))
        at = following
    end = records[-1].end if records else start
    losses = [Loss(offset, stop, what, offset >= end, payload) for offset, stop, what, payload in found]
    return Scan(records, losses, end, size)


def read(file: Path, fmt: Format) -> Scan:
    """A file's records as it stands (no lock is taken: a writer may be appending to it)."""
    try:
        data = file.read_bytes()
    except OSError as error:
        raise fmt.fail(file, f"cannot be read ({error.strerror or error})") from error
    return scan(data, fmt, file)


def read_record(file: Path, offset: int, fmt: Format) -> bytes:
    """The payload of the record at ``offset``, read again from the file and checked, else ``fmt.error``."""
    try:
        with open(file, "rb") as fh:
            first = fh.read(64)
            if _one_bit_off(first[: len(fmt.preamble)], fmt) is None:
                _check_preamble(first, fmt, file)
            fh.seek(offset)
            raw = fh.read(HEADER.size)
            head = _header(raw, 0, fmt)
            if isinstance(head, str):
                raise fmt.fail(file, f"record at byte {offset}: {head}")
            _, length, crc = head
            payload = fh.read(length)
    except OSError as error:
        raise fmt.fail(file, f"cannot be read ({error.strerror or error})") from error
    if len(payload) < length or zlib.crc32(payload) != crc:
        raise fmt.fail(file, f"record at byte {offset}: cut short or failing its checksum since the file was opened")
    return payload


class Writer:
    """A journal file opened to append to, locked for this process (see the module); :meth:`read`
    gives its records, then :meth:`start` (a file with none) or :meth:`repair` makes it sound to
    append to."""

    def __init__(self, file: Path, fmt: Format) -> None:
        self.file, self.format = file, fmt
        check(file)
        try:
            make_folder(file.parent)
        except OSError as error:
            raise fmt.fail(file, f"cannot be created ({error.strerror or error})") from error
        self._fd: int | None = _open_locked(file, fmt)
        self._end = 0
        self._unsynced = False
        self._data = b""
        self._found: Scan | None = None

    @property
    def closed(self) -> bool:
        return self._fd is None

    def read(self) -> Scan:
        """The file's records and losses as this writer found it."""
        fd = self._open()
        try:
            size = os.fstat(fd).st_size
            os.lseek(fd, 0, os.SEEK_SET)
            chunks, left = [], size
            while left > 0 and (chunk := os.read(fd, left)):
                chunks.append(chunk)
                left -= len(chunk)
        except OSError as error:
            raise self.format.fail(self.file, f"cannot be read ({error.strerror or error})") from error
        self._data = b"".join(chunks)
        self._found = scan(self._data, self.format, self.file)
        return self._found

    def start(self, kind: bytes, payload: bytes) -> Path | None:
        """Begin the file afresh with its preamble and a first record (its copies, where the format
        writes its header more than once), for a file holding no sound record: what it held, if
        more than a new file's interrupted first write, is kept as ``<name>.damaged-<time>`` (that
        copy is returned; None: nothing was kept)."""
        found = self._found
        copy = None
        if found is not None and found.size > len(self.format.preamble):
            copy = self._keep(self._data)
        self._truncate(0)
        copies = self.format.header_copies if kind == self.format.header else 1
        self._write(self.format.preamble + encode_record(kind, payload) * copies, sync=True)
        fsync_folder(self.file.parent)
        self._forget()
        return copy

    def _keep(self, data: bytes) -> Path:
        try:
            return keep_damaged(self.file, data)
        except OSError as error:
            raise self.format.fail(self.file, f"cannot be kept as found ({error.strerror or error})") from error

    def repair(self) -> Path | None:
        """Make the file as found sound to append to: its torn tail cut off; where damage lies
        before it, every sound record written into a new file put in its place, and the file as
        found kept beside it (that copy is returned; None: nothing was rewritten)."""
        found = self._found
        if found is None:
            raise self.format.fail(self.file, "repaired before it was read")
        copy = self._rewrite(found) if found.needs_rewrite else None
        if copy is None and found.end < found.size:
            self._truncate(found.end)
        elif copy is None:
            self._end = found.end
        self._forget()
        return copy

    def append(self, kind: bytes, payload: bytes, *, sync: bool) -> None:
        """One record at the end of the file (on disk before this returns where ``sync``); on
        failure the file is cut back to its sound part and ``format.error`` raised."""
        self._write(encode_record(kind, payload), sync)

    def close(self) -> None:
        """Release the file and its lock, what was appended on disk first."""
        if self._fd is not None:
            try:
                if self._unsynced:
                    os.fsync(self._fd)
            finally:
                self._release()

    def _open(self) -> int:
        if self._fd is None:
            raise self.format.fail(self.file, "written after close (or after a failed write)")
        return self._fd

    def _forget(self) -> None:
        self._data, self._found = b"", None

    def _truncate(self, size: int) -> None:
        fd = self._open()
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        except OSError as error:
            raise self.format.fail(self.file, f"cannot be written ({error.strerror or error})") from error
        self._end = size

    def _write(self, data: bytes, sync: bool) -> None:
        fd = self._open()
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        except OSError as error:
            try:
                os.ftruncate(fd, self._end)
            except OSError:
                self._release()  # the file may end in a torn record: nothing more is appended to it
            raise self.format.fail(self.file, f"cannot be written ({error.strerror or error})") from error
        self._end += len(data)
        self._unsynced = not sync

    def _rewrite(self, found: Scan) -> Path:
        """Every sound record into a new file renamed over this one; the file as found kept: its name."""
        fmt = self.format
        sound = fmt.preamble + b"".join(
            encode_record(r.kind, bytes(r.payload)) * (fmt.header_copies if i == 0 and r.kind == fmt.header else 1)
            for i, r in enumerate(found.records)
        )
        temporary = self.file.with_name(f"{self.file.name}.salvaged")
        check(temporary, "salvaging")
        copy = self._keep(self._data)
        try:
            fd = _write_new(temporary, sound, os.O_TRUNC)
        except OSError as error:
            raise self.format.fail(self.file, f"cannot be rewritten ({error.strerror or error})") from error
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)  # a writer waiting on the old file finds this one locked
            os.replace(temporary, self.file)
            fsync_folder(self.file.parent)
        except BaseException as error:
            os.close(fd)
            if isinstance(error, OSError):
                raise self.format.fail(self.file, f"cannot be rewritten ({error.strerror or error})") from error
            raise
        self._release()
        self._fd, self._end = fd, len(sound)
        return copy

    def _release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _open_locked(file: Path, fmt: Format) -> int:
    """The file opened to read and append, created if absent, under this process's exclusive lock."""
    while True:
        try:
            fd = os.open(file, os.O_RDWR | os.O_CREAT | os.O_APPEND | _BINARY, 0o644)
        except OSError as error:
            raise fmt.fail(file, f"cannot be opened ({error.strerror or error})") from error
        if fcntl is None:
            return fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if fmt.busy else 0))
        except BlockingIOError:
            os.close(fd)
            raise fmt.fail(file, fmt.busy or "locked") from None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.fstat(fd).st_ino == os.stat(file).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # rewritten by the writer this one waited for: lock the file now at this name


def keep_damaged(file: Path, data: bytes | None = None) -> Path:
    """Keep ``file`` as found (``data``: its bytes, where already read) beside it as
    ``<name>.damaged-<UTC time>``, a new file written whole; where such a copy of the same bytes is
    already kept, that one is returned and nothing is written."""
    check(file.parent / f"{file.name}.damaged-", "keeping the file as found")
    if data is None:
        data = file.read_bytes()
    for kept in sorted(file.parent.glob(f"{glob_escape(file.name)}.damaged-*")):
        try:
            same = kept.is_file() and not kept.is_symlink() and kept.stat().st_size == len(data)
            if same and kept.read_bytes() == data:
                return kept
        except OSError:
            continue
    copy = _damaged_name(file)
    os.close(_write_new(copy, data, os.O_EXCL))
    fsync_folder(file.parent)
    return copy


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _damaged_name(file: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    copy, n = file.with_name(f"{file.name}.damaged-{stamp}"), 1
    while copy.exists():
        n += 1
        copy = file.with_name(f"{file.name}.damaged-{stamp}-{n}")
    return copy


def _write_new(path: Path, data: bytes, mode: int) -> int:
    """``data`` written and fsynced into ``path`` (created; ``mode``: ``O_EXCL`` or ``O_TRUNC``);
    returns its descriptor, open to read and append."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | mode | _BINARY, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd
