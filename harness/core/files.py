"""Durable file names: what atomic writes (a temporary file, then a rename) need besides the file;
and JSON sidecars, small files of facts kept beside the files they describe to save reading those."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


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


def write_sidecar(path: Path, document: Mapping[str, Any], what: str, log: logging.Logger) -> None:
    """Keep ``document`` as JSON in ``path``, whole or not at all (a concurrent reader never sees half
    of it). A sidecar only saves work: where it cannot be written the run goes on, and ``what`` is
    logged to ``log`` as not kept (the next run reads it from its source again)."""
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            tmp.write_text(json.dumps(document, sort_keys=True))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as error:
        log.warning("%s %s not kept (%s): the next run reads them from the model again", what, path, error)


def read_sidecar(path: Path, parse: Callable[[Mapping[str, Any]], T], what: str, log: logging.Logger) -> T | None:
    """What ``parse`` makes of the JSON object kept in ``path``; None where there is none, and None,
    logged to ``log`` naming ``what``, where it is unreadable, not a JSON object or refused by ``parse`` (a
    :class:`ValueError` naming the field, or an :class:`OSError` of a file it reads): the caller reads
    it from its source again."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as error:
        log.warning("%s %s unreadable (%s): reading them from the model again", what, path, error)
        return None
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"a JSON {type(data).__name__}, expected an object")
        return parse(data)
    except (OSError, ValueError) as error:  # json.JSONDecodeError is a ValueError; parse may read files too
        log.warning("%s %s not used (%s): reading them from the model again", what, path, error)
        return None
