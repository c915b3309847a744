"""The path arguments the benchmarks share: a folder that must already exist and take writes, or a
checkout to time beside this one. A bad one is refused in one line naming the option and the path,
exit 2, before anything runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def refuse(tool: str, line: str) -> None:
    """Print ``tool: line`` on stderr and exit 2 (bad input)."""
    print(f"{tool}: {line}", file=sys.stderr)
    raise SystemExit(2)


def writable_folder(tool: str, option: str, path: Path) -> Path:
    """``path`` when it is a folder that exists and takes new files; refused in one line otherwise."""
    if not path.exists():
        refuse(tool, f"{option} {path}: no such folder (expected an existing folder to work in)")
    if not path.is_dir():
        refuse(tool, f"{option} {path}: not a folder (expected an existing folder to work in)")
    if not os.access(path, os.W_OK | os.X_OK):
        refuse(tool, f"{option} {path}: not writable (expected a folder this user can write in)")
    return path


def checkout(tool: str, option: str, path: Path) -> Path:
    """``path`` resolved when it holds a ``harness`` package (a checkout's root); refused in one line otherwise."""
    if not (path / "harness" / "__init__.py").is_file():
        refuse(tool, f"{option} {path}: no harness/__init__.py there (expected a checkout's root)")
    return path.resolve()
