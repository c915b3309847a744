"""Entries of the shared cache (:func:`harness.core.files.shared_cache`): what is costly to make (an
emulated HEF, the demo set) in a folder that several projects, CI jobs and test workers share, and that
anyone who can write to it may change.

Each entry says what it was built from in a record kept beside it: the inputs its key stands for and
the sha256 of its content, sealed with :mod:`harness.core.signing` (an HMAC with the release key where
``HARNESS_SIGNING_KEY`` is set, a sha256 otherwise). A reader holds the entry to its record and the
record to what the run asks for; an entry that does not hold is never used: it is set aside as
``<name>.damaged-<UTC time>`` (kept, never deleted) and made anew, under a lock so that two workers do
not make it at once, or, where it cannot be made anew here (a read-only cache), refused in one line.

A writer of the shared cache without the key can still make a record that holds by digest alone (a
``sealed`` entry, named so in the report); only ``--require-signed`` (with the key) refuses to use it.
"""

from __future__ import annotations

import contextlib
import enum
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.core import signing
from harness.core.errors import HarnessError
from harness.core.files import SHARED_CACHE_VARIABLE

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; two workers may then both make an entry (each whole)
    fcntl = None  # type: ignore[assignment]

SEAL = "seal"  # the record's key that holds its seal
DAMAGED = ".damaged-"


class EntryState(enum.Enum):
    """How an entry a run used stands."""

    SIGNED = "signed"  # its record's HMAC holds under the key in hand
    SEALED = "sealed"  # its record's digest holds; written without a key
    UNVERIFIED = "unverified"  # signed, no key here to check the signature; its digest holds
    BUILT = "built"  # made by this run (there was none)
    REBUILT = "rebuilt"  # made anew by this run, the entry found kept aside


@dataclass(frozen=True)
class EntryUse:
    """One shared-cache entry a run used: the cache folder, the entry's name in it, the sha256 of its
    content, how it stands and, for a rebuilt one, why and where the one found was kept."""

    folder: str
    name: str
    sha256: str
    state: EntryState
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "folder": self.folder,
            "name": self.name,
            "sha256": self.sha256,
            "state": self.state.value,
            "detail": self.detail,
        }

    @property
    def text(self) -> str:
        words = f"{self.name} in {self.folder} (sha256 {self.sha256[:16]}), {self.state.value}"
        return f"{words}: {self.detail}" if self.detail else words


def seal_record(body: Mapping[str, Any], key: bytes | None) -> dict[str, Any]:
    """``body`` with its seal (under :data:`SEAL`), ready to be written."""
    return signing.with_seal(body, key, SEAL)


def record_seal(record: Mapping[str, Any], key: bytes | None) -> signing.SealCheck:
    """How ``record`` stands against the seal it holds."""
    stored = record.get(SEAL)
    body = {k: v for k, v in record.items() if k != SEAL}
    if stored is not None and (not isinstance(stored, dict) or set(stored) != signing.SEAL_KEYS):
        return signing.SealCheck(signing.SealState.UNSEALED, f"its seal is not one (keys {sorted(stored or {})})")
    return signing.check_document(body, stored, key)


def untrusted(check: signing.SealCheck, rules: signing.SigningPolicy) -> str | None:
    """Why an entry whose record stands as ``check`` is not to be used (None: it may be): a seal that
    does not hold, or under ``--require-signed`` anything not signed with the key in hand."""
    if not check.trusted:
        return f"its record is {check.state.value}: {check.detail}"
    if rules.require_signed and check.state is not signing.SealState.SIGNED:
        why = check.detail if rules.key else f"{check.detail}; and {signing.KEY_VARIABLE} is not set"
        return f"its record is not signed with the release key ({why}), and signatures are required"
    return None


def signable(entry: Path, rules: signing.SigningPolicy) -> None:
    """Refuse, in one line naming ``entry``, to make or use shared-cache entries where signatures are
    required and no key is in hand: none could be signed, and each run would make them anew."""
    if rules.require_signed and rules.key is None:
        raise HarnessError(
            f"shared cache entry {entry}: signatures are required (--require-signed) and {signing.KEY_VARIABLE} "
            "is not set, so no entry can be signed; refused (set the key, or run without --require-signed)"
        )


def state_of(check: signing.SealCheck) -> EntryState:
    """The state of a used entry whose record stands as ``check`` (a trusted one)."""
    return {
        signing.SealState.SIGNED: EntryState.SIGNED,
        signing.SealState.UNVERIFIED: EntryState.UNVERIFIED,
    }.get(check.state, EntryState.SEALED)


def set_aside(path: Path, now: datetime | None = None) -> Path | None:
    """``path`` (a file or a folder) renamed ``<name>.damaged-<UTC time>`` beside it, never over
    another; None where it is gone already (another worker set it aside). An :class:`OSError` where it
    cannot be renamed."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}{DAMAGED}{stamp}")
    n = 1
    while target.exists() or target.is_symlink():
        target = path.with_name(f"{path.name}{DAMAGED}{stamp}-{n}")
        n += 1
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    return target


@contextlib.contextmanager
def entry_lock(folder: Path, name: str) -> Iterator[None]:
    """An exclusive lock on the entry ``name`` of ``folder`` (the file ``.<name>.lock`` beside it),
    held while the entry is checked again and made anew; an :class:`OSError` where the folder cannot
    hold one (read-only)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def refused(entry: Path, problem: str | None, error: OSError) -> HarnessError:
    """The one line for an entry that cannot be used and cannot be made anew here."""
    found = f"{problem}; " if problem else ""
    return HarnessError(
        f"shared cache entry {entry}: {found}it cannot be made anew here ({error.strerror or error}); refused "
        f"(move it away, or point {SHARED_CACHE_VARIABLE} at a folder this run can write)"
    )
