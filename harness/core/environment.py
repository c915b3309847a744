"""What the harness runs with: the versions of the packages that shape results, and a digest of its
own code, so that a cache or a report can say exactly which software produced a prediction."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import platform
import re
import sys
from pathlib import Path

_PACKAGES = ("numpy", "onnx", "onnxruntime", "pycocotools")
_ROOT = Path(__file__).resolve().parents[1]  # the harness package


@functools.cache
def environment() -> tuple[tuple[str, str], ...]:
    """Python and the versions of the packages that shape results; HailoRT's and the Dataflow
    Compiler's where they are installed (found by their distributions, without importing them).
    Read once per process: every cache key and every result's provenance asks for it."""
    found = [("python", platform.python_version())]
    for package in _PACKAGES:
        version = distribution_version(package)
        if version is not None:
            found.append((package, version))
    for module, distribution in (("hailo_platform", "hailort"), ("hailo_sdk_client", "hailo_dataflow_compiler")):
        if importlib.util.find_spec(module) is not None:
            found.append((distribution, distribution_version(distribution) or "unknown"))
    return tuple(found)


def distribution_version(name: str) -> str | None:
    """The version ``importlib.metadata.version(name)`` gives (None where no distribution is found),
    read the way it reads it in the common case: the first ``*.dist-info`` or ``*.egg-info`` on
    ``sys.path`` whose name normalizes to ``name``'s, its ``METADATA``'s ``Version`` header. Where the
    first match is anything else (an egg, a zip, no ``Version``), importlib.metadata answers: importing
    it (email, zipfile, csv) would cost a run 20 ms."""
    wanted = _normalized(name)
    for entry in sys.path:
        try:
            children = os.listdir(entry or ".")
        except OSError:  # not a folder: a zip importlib.metadata reads, or nothing
            if os.path.exists(entry):
                return _read_by_importlib(name)
            continue
        if os.path.basename(entry).lower().endswith(".egg"):
            return _read_by_importlib(name)
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            if _normalized(low.rpartition(".")[0].partition("-")[0]) == wanted:  # as importlib.metadata's Lookup
                return _metadata_version(os.path.join(entry or ".", child)) or _read_by_importlib(name)
    return None


def _normalized(name: str) -> str:
    """importlib.metadata's ``Prepared.normalize``: PEP 503 with dashes as underscores."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _metadata_version(info: str) -> str | None:
    """The ``Version`` header of a ``.dist-info`` folder's ``METADATA`` (the headers end at the first
    blank line); None where there is none to read."""
    try:
        with open(os.path.join(info, "METADATA"), encoding="utf-8") as file:
            for line in file:
                if not line.strip():
                    return None
                key, colon, value = line.partition(":")
                if colon and key.strip().lower() == "version":
                    return value.strip()
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _read_by_importlib(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def code_digest(*parts: str) -> str:
    """sha256 over the source of the harness modules or subpackages ``parts`` (``"decode"``,
    ``"pipeline/detect.py"``), file by file in path order: any edit to that code changes it."""
    digest = hashlib.sha256()
    for part in parts:
        target = _ROOT / part
        files = sorted(target.rglob("*.py")) if target.is_dir() else [target]
        for file in files:
            digest.update(file.relative_to(_ROOT).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()
