"""Durable files: written whole or not at all (:func:`write_atomic`), what atomic writes need besides
the file (:func:`fsync_folder`); and JSON sidecars, small files of facts kept beside the files they
describe to save reading those."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, TypeVar

from harness.core.confine import check, make_folder
from harness.core.documents import DocumentError, parse_json, read_bytes

T = TypeVar("T")


SHARED_CACHE_VARIABLE = "HARNESS_SHARED_CACHE"


def shared_cache(cache_dir: Path) -> Path:
    """Where what is costly to make and keyed by its content alone is kept (emulated HEFs, the generated
    demo set): the folder ``HARNESS_SHARED_CACHE`` names, where set (one that several projects, CI jobs
    or a test suite's workers share), else the run's ``cache_dir``."""
    shared = os.environ.get(SHARED_CACHE_VARIABLE)
    return Path(shared) if shared else Path(cache_dir)


def fsync_folder(folder: Path) -> None:
    """Make a new file's name durable too (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Replace the file at ``path`` by ``data``, whole or not at all: a temporary file beside it,
    written and fsynced, takes its name by one rename. Where anything fails (a full disk, a read-only
    folder) the temporary is removed, the old file is left as it was and the :class:`OSError` raised
    names ``path``. A symlink stays a symlink (its target is replaced) where it leads within the
    folders the user named (:mod:`harness.core.confine`; else the write is refused, the link left
    as it is); an existing file keeps its
    mode, a new one gets 0o666 less the umask. ``str`` is written as UTF-8, characters UTF-8 cannot
    hold (the undecodable bytes of a non-UTF-8 file name, as :func:`os.fsdecode` gives them) as
    backslash escapes."""
    check(path)
    if isinstance(data, str):
        data = data.encode("utf-8", errors="backslashreplace")
    target = Path(os.path.realpath(path))
    # The target's name cut short, so that a name of up to 255 bytes leaves room for the rest.
    tmp = target.with_name(f".{target.name[:32]}.{os.urandom(6).hex()}.tmp")
    try:
        try:
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as error:
        with contextlib.suppress(OSError):  # none was made where the folder refused it
            tmp.unlink()
        if isinstance(error, OSError) and error.errno is not None:  # named as the caller knows it
            raise OSError(error.errno, error.strerror, os.fspath(path)) from error
        raise
    fsync_folder(target.parent)


def write_sidecar(path: Path, document: Mapping[str, Any], what: str, log: logging.Logger) -> None:
    """Keep ``document`` as JSON in ``path``, whole or not at all (a concurrent reader never sees half
    of it). A sidecar only saves work: where it cannot be written the run goes on, and ``what`` is
    logged to ``log`` as not kept (the next run reads it from its source again)."""
    try:
        make_folder(path.parent)
        write_atomic(path, json.dumps(document, sort_keys=True))
    except OSError as error:
        log.warning("%s %s not kept (%s): the next run reads them from the model again", what, path, error)


def read_sidecar(
    path: Path, parse: Callable[[Mapping[str, Any]], T], keys: Collection[str], what: str, log: logging.Logger
) -> T | None:
    """What ``parse`` makes of the JSON object kept in ``path``, read strictly (see
    :mod:`harness.core.documents`) and holding exactly ``keys``; None where there is none, and None,
    logged to ``log`` naming ``what``, where it is unreadable, not such an object or refused by
    ``parse`` (a :class:`ValueError` naming the field, or an :class:`OSError` of a file it reads):
    the caller reads it from its source again."""
    if not path.exists():
        return None
    try:
        data = parse_json(read_bytes(path, what), str(path))
        if not isinstance(data, dict):
            raise ValueError(f"a JSON {type(data).__name__}, expected an object")
        if set(data) != set(keys):
            raise ValueError(f"keys {sorted(data)}, expected {sorted(keys)}")
        return parse(data)
    except (OSError, ValueError, DocumentError) as error:  # parse may read files too
        log.warning("%s %s not used (%s): reading them from the model again", what, path, error)
        return None
