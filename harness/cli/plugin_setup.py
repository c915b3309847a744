"""Whether pytest's rootdir and ini file were chosen from a path option's value.

pytest chooses its rootdir and ini file from the command line's paths before it loads the plugin
that declares ``--hef``, so it reads the value of ``--hef PATH`` (never of ``--hef=PATH``) as a test
path. No public API chooses them again: from pytest's public answer (``Config.rootpath``,
``Config.inipath``) this module proves that the value changed nothing, or refuses the run saying to
write ``--hef=PATH``. The proof is conservative: a run it cannot prove is refused, never misrooted.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path

import pytest


def refuse_moved_setup(config: pytest.Config, parser: pytest.Parser, path_flags: frozenset[str]) -> None:
    """A usage error naming the options to write as ``--name=PATH`` when a path option's value, read by
    pytest as a test path, may have chosen the rootdir or ini file."""
    args = [*shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *config.invocation_params.args]
    here = config.invocation_params.dir
    spaced = [(flag, value) for flag, value in pairwise(args) if flag in path_flags]
    read = [(flag, value) for flag, value in spaced if _exists(_absolute(here, value))]
    if not read:
        return  # pytest skips paths that do not exist
    known = parser.parse_known_args(args)
    if known.inifilename and (known.rootdir or Path(known.inifilename).is_file()):
        return  # -c FILE (with --rootdir, any -c) fixes both
    start = _common_ancestor(here, [_absolute(here, a.split("::")[0]) for a in known.file_or_dir])
    if _unmoved(config, start, [_absolute(here, value) for _, value in read], ini_given=bool(known.inifilename)):
        return
    written = " ".join(f"{flag}={value}" for flag, value in read)
    raise pytest.UsageError(
        f"{' '.join(f'{f} {v}' for f, v in read)}: pytest chose its rootdir ({config.rootpath}) and config file "
        f"({config.inipath}) reading the value as a test path, before this plugin declared the option; "
        f"write {written}"
    )


def _unmoved(config: pytest.Config, start: Path, values: list[Path], *, ini_given: bool) -> bool:
    """pytest's search starts at ``start`` without the values: an ini file found there is found with
    them too; values inside ``start`` only start the upward search lower, which matters only where it
    stopped below ``start``."""
    if config.inipath is not None and not ini_given and config.inipath.parent == start:
        return True
    chosen = config.inipath.parent if config.inipath is not None and not ini_given else config.rootpath
    inside = all(_folder(v).is_relative_to(start) for v in values)
    return inside and not (chosen != start and chosen.is_relative_to(start))


def _absolute(here: Path, arg: str) -> Path:
    return Path(os.path.abspath(here / arg))


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long, say: pytest skips it as it skips a missing path
        return False


def _folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent


def _common_ancestor(here: Path, paths: Iterable[Path]) -> Path:
    """The folder pytest starts its search at: the existing paths' common folder, else ``here``."""
    existing = [_folder(p) for p in paths if _exists(p)]
    return Path(os.path.commonpath(existing)) if existing else here
