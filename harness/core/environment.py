"""What the harness runs with: the versions of the packages that shape results, and a digest of its
own code, so that a cache or a report can say exactly which software produced a prediction."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import platform
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
        try:
            found.append((package, importlib.metadata.version(package)))
        except importlib.metadata.PackageNotFoundError:
            continue
    for module, distribution in (("hailo_platform", "hailort"), ("hailo_sdk_client", "hailo_dataflow_compiler")):
        if importlib.util.find_spec(module) is not None:
            try:
                found.append((distribution, importlib.metadata.version(distribution)))
            except importlib.metadata.PackageNotFoundError:
                found.append((distribution, "unknown"))
    return tuple(found)


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
