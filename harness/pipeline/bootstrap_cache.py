"""The paired bootstrap beside a job's mAP gates, kept in the cache folder: a rerun whose ground truth,
predictions and settings are all unchanged reads it instead of resampling (80 ms on the demo).

One small JSON file per key, ``<cache dir>/bootstrap/<key>.json``. The key (:func:`bootstrap_key`) is
a sha256 over everything the bootstrap depends on: the ground truth as evaluated (each image's boxes,
class ids and crowd flags, in image order), both paths' predictions (boxes, scores, class ids), the
number of classes, the metric, the resamples and the seed, the package versions (numpy draws the
image sets) and the harness's metric code. The numbers are kept as hexadecimal floats
(:meth:`float.hex`), so a value read back is the computed one to the bit. A file that cannot be read
as this format, or that states another key, is resampled again and replaced; one that cannot be
written costs the next run the resampling, nothing else.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness import __version__
from harness.core.confine import make_folder
from harness.core.detections import Detections
from harness.core.documents import DocumentError, Fields, parse_json, read_bytes
from harness.core.environment import code_digest, environment
from harness.core.files import write_atomic
from harness.core.settings import MetricProtocol
from harness.inputs.dataset import GroundTruth
from harness.verdict.metrics import SET_SCORES
from harness.verdict.metrics.coco import RESAMPLES, SEED, DifferenceInterval, PairedBootstrap, paired_bootstrap

FORMAT = 1
FOLDER = "bootstrap"  # under the run's cache folder
WHAT = "kept paired bootstrap"
# float.hex() of a finite float, an infinity or NaN: what the file keeps each number as
_HEX_FLOAT = re.compile(r"-?(0x[01]\.[0-9a-f]+p[+-]\d+|inf)|nan")
_COUNT = struct.Struct("<q")

log = logging.getLogger(__name__)


def bootstrap_key(
    ground_truth: Sequence[GroundTruth],
    reference: Sequence[Detections],
    candidate: Sequence[Detections],
    n_classes: int,
    metric: MetricProtocol,
    resamples: int,
    seed: int,
) -> str:
    """The sha256 (hex) of everything :func:`~harness.verdict.metrics.coco.paired_bootstrap` of
    ``candidate`` minus ``reference`` depends on (see the module)."""
    head = {
        "format": FORMAT,
        "harness": __version__,
        "metric": metric.value,
        "classes": n_classes,
        "resamples": resamples,
        "seed": seed,
        "environment": dict(environment()),
        "code": code_digest("verdict/metrics"),
    }
    digest = hashlib.sha256(json.dumps(head, sort_keys=True).encode())
    _update(digest, b"truth", [(t.boxes, t.class_ids, t.crowd) for t in ground_truth])
    _update(digest, b"reference", [(d.boxes, d.scores, d.class_ids) for d in reference])
    _update(digest, b"candidate", [(d.boxes, d.scores, d.class_ids) for d in candidate])
    return digest.hexdigest()


def _update(digest: Any, tag: bytes, images: list[tuple[np.ndarray, ...]]) -> None:
    """Add a section: ``tag``, the image count and each image's length, then each field's arrays of every
    image joined, with its dtype (``GroundTruth`` and ``Detections`` fix the dtypes and widths, so the
    lengths say where each image's values lie)."""
    digest.update(tag + _COUNT.pack(len(images)))
    digest.update(np.array([len(fields[0]) for fields in images], dtype="<i8").tobytes())
    for column in zip(*images, strict=True):
        joined = np.ascontiguousarray(np.concatenate(column))
        digest.update(joined.dtype.str.encode() + _COUNT.pack(joined.size))
        digest.update(joined.data)


def kept_bootstrap(
    folder: Path,
    ground_truth: Sequence[GroundTruth],
    reference: Sequence[Detections],
    candidate: Sequence[Detections],
    names: Sequence[str],
    metric: MetricProtocol,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> PairedBootstrap:
    """The paired bootstrap of ``candidate``'s mAPs minus ``reference``'s under ``metric``, read from
    ``folder`` where a run of the same key kept it, else computed and kept there."""
    key = bootstrap_key(ground_truth, reference, candidate, len(names), metric, resamples, seed)
    file = folder / f"{key}.json"
    found = _read(file, key, resamples, seed) if file.exists() else None
    if found is not None:
        return found
    scores = SET_SCORES[metric]
    computed = paired_bootstrap(ground_truth, reference, candidate, names, resamples, seed, scores=scores)
    _write(file, key, computed)
    return computed


def _interval_json(interval: DifferenceInterval) -> dict[str, str]:
    return {"point": interval.point.hex(), "low": interval.low.hex(), "high": interval.high.hex()}


def _write(file: Path, key: str, bootstrap: PairedBootstrap) -> None:
    document = {
        "format": FORMAT,
        "key": key,
        "map50": _interval_json(bootstrap.map50),
        "map50_95": _interval_json(bootstrap.map50_95),
        "resamples": bootstrap.resamples,
        "seed": bootstrap.seed,
    }
    try:
        make_folder(file.parent)
        write_atomic(file, json.dumps(document, sort_keys=True))
    except OSError as error:
        log.warning("%s %s not kept (%s): the next run resamples again", WHAT, file, error)


def _float(fields: Fields, key: str) -> float:
    def hex_float(value: Any) -> bool:
        return isinstance(value, str) and _HEX_FLOAT.fullmatch(value) is not None

    return float.fromhex(fields.value(key, hex_float, "a float as float.hex() writes it"))


def _interval(fields: Fields) -> DifferenceInterval:
    interval = DifferenceInterval(_float(fields, "point"), _float(fields, "low"), _float(fields, "high"))
    fields.done()
    return interval


def _read(file: Path, key: str, resamples: int, seed: int) -> PairedBootstrap | None:
    """The bootstrap kept in ``file`` under ``key`` (of ``resamples`` image sets drawn with ``seed``);
    None, logged, where it cannot be read as one."""
    try:
        fields = Fields(parse_json(read_bytes(file, WHAT), str(file)), str(file))
        fields.value("format", lambda v: v == FORMAT, f"{FORMAT}")
        fields.value("key", lambda v: v == key, f"{key} (the key its name and this run's inputs give)")
        kept = PairedBootstrap(
            _interval(fields.object("map50")),
            _interval(fields.object("map50_95")),
            fields.value("resamples", lambda v: v == resamples, f"{resamples} (this run's resamples)"),
            fields.value("seed", lambda v: v == seed, f"{seed} (this run's seed)"),
        )
        fields.done()
    except (OSError, DocumentError) as error:
        log.warning("%s %s not used (%s): resampled again", WHAT, file, error)
        return None
    return kept
