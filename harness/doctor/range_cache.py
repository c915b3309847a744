"""Activation ranges kept per image (a sealed JSON record each, in the shared cache under ``ranges/``), keyed by
the float graph they were measured in and the image's bytes: a calibration check measures only the images it has
not seen. A record that does not hold (damaged, edited, another graph's) is measured again and replaced."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from harness.backends.emulator.build import EmulatedHef
from harness.backends.emulator.ranges import ImageRanges, RangeGraph
from harness.core import signing
from harness.core.confine import make_folder
from harness.core.environment import code_digest
from harness.core.files import shared_cache, write_atomic

FORMAT = 1
_CODE = ("backends/emulator/ranges.py", "backends/emulator/graph.py", "backends/emulator/calibration.py")


def graph_key(hef: EmulatedHef, graph: RangeGraph, onnx_sha256: str) -> str:
    """What the ranges depend on besides the image: the export, the graph cut from it, its tensors and the code."""
    options = hef.options
    identity = {
        "format": FORMAT,
        "onnx_sha256": onnx_sha256,
        "sigmoid_inside": options.sigmoid_inside,
        "end_nodes": list(options.end_nodes or ()),
        "ssd": options.ssd.digest if options.ssd is not None else None,
        "tensors": list(graph.tensors),
        "code": code_digest(*_CODE),
    }
    return hashlib.sha256(signing.canonical(identity)).hexdigest()


def _read(file: Path, key: str, count: int) -> tuple[list[float], list[float]] | None:
    """The record's lows and highs where it holds for ``key`` and ``count`` tensors, else None."""
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
        stored = document.pop("seal")
        low, high = document["low"], document["high"]
        holds = signing.check_document(document, stored, signing.policy().key).state in (
            signing.SealState.SEALED,
            signing.SealState.SIGNED,
            signing.SealState.UNVERIFIED,
        )
        if not holds or document.get("graph") != key or len(low) != count or len(high) != count:
            return None
        if not all(isinstance(v, (int, float)) for v in (*low, *high)):
            return None
        return [float(v) for v in low], [float(v) for v in high]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def cached_ranges(
    hef: EmulatedHef,
    graph: RangeGraph,
    onnx_sha256: str,
    images: Sequence[Path],
    cache_dir: Path,
    log: Callable[[str], None] = lambda line: None,
) -> ImageRanges:
    """:meth:`RangeGraph.ranges` of ``images``, each image's taken from its record where one holds."""
    key = graph_key(hef, graph, onnx_sha256)
    folder = shared_cache(cache_dir) / "ranges" / key[:16]
    digests = [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in images]
    found = {d: _read(folder / f"{d}.json", key, len(graph.tensors)) for d in set(digests)}
    missing = [(p, d) for p, d in zip(images, digests, strict=True) if found[d] is None]
    if missing:
        log(f"activation ranges: measuring {len(missing)} of {len(images)} images (once: kept after)")
        measured = graph.ranges([p for p, _ in missing])
        make_folder(folder)
        for i, (_, digest) in enumerate(missing):
            values = [float(v) for v in measured.low[i]], [float(v) for v in measured.high[i]]
            found[digest] = values
            record = {"format": FORMAT, "graph": key, "low": values[0], "high": values[1]}
            write_atomic(folder / f"{digest}.json", json.dumps(signing.with_seal(record, signing.policy().key)))
    low = np.array([found[d][0] for d in digests], dtype=np.float64).reshape(len(images), len(graph.tensors))  # type: ignore[index]
    high = np.array([found[d][1] for d in digests], dtype=np.float64).reshape(len(images), len(graph.tensors))  # type: ignore[index]
    return ImageRanges(graph.tensors, dict(graph.roles), tuple(Path(p) for p in images), low, high)
