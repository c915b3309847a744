"""A blessing's journal: the model folder's lock, the committed set's journal of (temporary,
baseline) files, and the recovery that finishes a blessing a kill interrupted after its commit
or removes the temporary files of one interrupted before it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.core.confine import check
from harness.core.documents import DocumentError, parse_json
from harness.core.files import fsync_folder
from harness.verdict.golden import HISTORY, GoldenError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]


JOURNAL = ".blessing.json"


def recover(folder: Path) -> None:
    """Finish a blessing a kill interrupted after its journal was committed, and remove the
    temporary files of one interrupted before it: afterwards ``folder`` holds one whole set. Takes
    the folder's lock only when there is something to do (a reader's common case costs two globs)."""
    if folder.is_dir() and ((folder / JOURNAL).exists() or _strays(folder)):
        with locked(folder):
            recover_locked(folder)


def recover_locked(folder: Path) -> None:
    journal = folder / JOURNAL
    if journal.exists():
        for target, tmp in committed_pairs(folder):
            if tmp.exists():
                check(target, "finishing a blessing")
                os.replace(tmp, write_target(target))
        fsync_folder(folder)
        journal.unlink()
    for stray in _strays(folder):
        remove(stray)


def committed_pairs(folder: Path) -> list[tuple[Path, Path]]:
    """The committed blessing's (baseline or history file, its temporary file) pairs, absolute paths;
    none where no blessing is pending. Each pair must be one this module writes: a file in ``folder``
    (or its history) and a temporary file of its name beside the file it stands for (a symlink's
    target)."""
    journal = folder / JOURNAL
    if not journal.exists():
        return []
    try:
        entries = parse_json(journal.read_bytes(), str(journal))
    except DocumentError as error:
        raise GoldenError(f"{error}; expected the journal of an interrupted blessing (remove it to drop it)") from None
    pairs = []
    for entry in entries if isinstance(entries, list) else [entries]:
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(p, str) for p in entry)):
            raise GoldenError(f"{journal}: entry {entry!r:.80}, expected [temporary file, baseline file]")
        tmp, target, home = Path(entry[0]), Path(entry[1]), Path(os.path.abspath(folder))
        inside = target.is_absolute() and (target.parent == home or target.parent.parent == home / HISTORY)
        beside = tmp.parent == Path(os.path.abspath(write_target(target).parent))
        if not inside or not beside or not tmp.name.startswith(f".{target.name}."):
            raise GoldenError(f"{journal}: entry {entry!r:.120}, expected a blessing's own temporary and baseline file")
        pairs.append((target, tmp))
    return pairs


def write_target(target: Path) -> Path:
    """Where a write to ``target`` goes: a symlink's target (a linked baseline stays linked)."""
    return Path(os.path.realpath(target)) if target.is_symlink() else target


def _strays(folder: Path) -> list[Path]:
    """Temporary files of a blessing (the journal's own included) beside the baselines or their history."""
    return [*folder.glob(".*.tmp"), *folder.glob(f"{HISTORY}/*/.*.tmp")]


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """The model folder's blessing lock, taken on the folder itself so that nothing is left in it
    (advisory; none where the platform has no flock)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
