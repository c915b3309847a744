"""Golden baselines: what a known good run of one model on one path and dataset measured, with the
tolerances a later run is held to.

Layout under the baseline root (``golden/`` in a project)::

    golden/<model stem>/<dataset>--<path>.json                         the baseline
    golden/<model stem>/history/<dataset>--<path>/<created>-<sha>.json  each baseline it replaced

``<model stem>`` is the model file's name without its suffix (``fire_smoke_yolo11n.hef`` and
``fire_smoke_yolo11n.onnx`` share ``golden/fire_smoke_yolo11n/``); ``<created>`` is the replaced
baseline's creation time (UTC, ``20250102T030405Z``) and ``<sha>`` the first 12 hex digits of its
model's sha256.

A baseline is plain JSON, 2-space indent, keys sorted, one value per line, so that a review diff
shows each changed number on its own line. Metric values are rounded to 6 decimals; NaN (an AP of a
class without ground truth) is ``null``. Tolerances are one-sided for mAP (the largest allowed
drop) and two-sided for boxes per image (relative) and score saturation (absolute).

A Hailo path's baseline also keeps its agreement with the reference path (``agreement``: the matched
share of boxes and the mean absolute score drift, schema 2; the matched scores' scale, schema 6), so
that a blessed run passes its agreement gate when run again. A schema 1 baseline (written before) has
none: its agreement gate holds the floor derived from the two paths, and says so; a baseline of
schema 2 to 5 blessed no scale: its matched scores are held to the reference's own scale.

A baseline also names the release it signs off (``release``: ``--release v1.3``, or null) and keeps
its blessed history (``history``, schema 3, :mod:`harness.verdict.history`): when a blessing replaces
a baseline, the replaced one's release, date, model sha256 and gated values are appended to it, so
that a review diff shows the old values moving into the history, one field per line. The history is
shown in the reports, never gated on. A baseline of schema 1 or 2 has none: its history begins with it.

A baseline is sealed when blessed (``seal``, schema 4, :mod:`harness.core.signing`): the sha256 of
its canonical content, and an HMAC-SHA256 with the release key (``HARNESS_SIGNING_KEY``) where one is
set; its history is a hash chain (``history_tip``, :mod:`harness.verdict.history_chain`). A baseline
whose seal does not hold (``unsigned edit``) or that has none (``unsealed``: written by hand or
before seals) keeps its gates, but its ``accepted_weak`` is void: a weakness nobody blessed with the
harness is refused as any other. A signature that does not hold (``tampered``) is refused, and so is
anything not signed with the key in hand under ``--require-signed``.

What a baseline holds and where it lies are here; the rest by concern beside it:
:mod:`harness.verdict.golden_weakness` (gates that cannot fail), :mod:`harness.verdict.golden_reading`
(the strict reader, :func:`~harness.verdict.golden_reading.load_golden`),
:mod:`harness.verdict.golden_writing` (the document and what changed),
:mod:`harness.verdict.golden_blessing` (:func:`~harness.verdict.golden_blessing.bless`: all or nothing)
and :mod:`harness.verdict.golden_journal` (its journal, lock and recovery).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.core import signing
from harness.core.errors import HarnessError
from harness.core.settings import EvalSettings
from harness.verdict import history_chain
from harness.verdict.history import HISTORY_KINDS, Blessing
from harness.verdict.metrics.coco import CocoMetrics
from harness.verdict.metrics.distribution import SCORE_BIN_EDGES, BoxCounts, ScoreDistribution
from harness.verdict.result import PathResult, Provenance

SCHEMA_VERSION = 6
UPDATE_FLAG = "--update-golden"  # `hailo-harness run ... --update-golden`, `pytest ... --update-golden`
DECIMALS = 6
HISTORY = "history"
BIN_KEYS = tuple(f"{lo:.2f}-{hi:.2f}" for lo, hi in itertools.pairwise(SCORE_BIN_EDGES))
_NAME = re.compile(r"^[\w.+-]+$")  # letters and digits of any script
_MAX_NAME = 200  # bytes of a baseline's file name: its history copies add to it below the usual 255
# A baseline keeps DECIMALS decimals: a value measured again may lie this far on the wrong side of its
# rounded baseline, which a gate with a tolerance of 0 must still pass.
ROUNDING = 0.5 * 10**-DECIMALS


class GoldenError(HarnessError):
    """A baseline file that cannot be read, or a name that cannot form a baseline path."""


@dataclass(frozen=True)
class Tolerances:
    """``map50_drop``/``map50_95_drop``: the largest allowed fall of the mAP below its baseline (a
    rise always passes). ``box_count_rel``: the largest allowed change of the mean boxes per image,
    relative to the baseline mean.
    ``saturation_abs``: the largest allowed change of the share of scores >= 0.99.
    ``agreement_drop``: the largest allowed fall of the matched share of boxes below the blessed one;
    ``score_drift_rise``: the largest allowed rise of the mean absolute score drift above the blessed
    one (both against the reference path, schema 2)."""

    map50_drop: float = 0.02
    map50_95_drop: float = 0.02
    box_count_rel: float = 0.25
    saturation_abs: float = 0.05
    agreement_drop: float = 0.05
    score_drift_rise: float = 0.05


DEFAULT_TOLERANCES = Tolerances()


@dataclass(frozen=True)
class BlessedAgreement:
    """A path's agreement with the reference path on the blessed run (see
    :func:`harness.verdict.metrics.agreement.agreement`): ``matched_share`` of all distinct boxes,
    ``score_drift`` the mean absolute score change of the matched ones, ``score_scale`` the spread of
    their scores over the reference's (:class:`~harness.verdict.metrics.agreement.ScoreScale`; None: not
    measured on the blessed run, too few matched boxes, or a baseline written before schema 6)."""

    matched_share: float
    score_drift: float
    score_scale: float | None = None


@dataclass(frozen=True)
class Golden:
    model: str
    path: str
    dataset: str
    emulated: bool
    metrics: CocoMetrics
    box_counts: BoxCounts
    scores: ScoreDistribution
    tolerances: Tolerances
    settings: EvalSettings
    provenance: Provenance
    labelled: bool = True  # False: measured on images without labels (no mAP: only its label-free gates)
    accepted_weak: tuple[str, ...] = ()  # the weaknesses blessed knowingly (ACCEPT_WEAK_FLAG), by code
    agreement: BlessedAgreement | None = None  # None: the reference path's own, or a schema 1 baseline
    release: str | None = None  # the release this blessing signs off (--release), None: not named
    history: tuple[Blessing, ...] = ()  # the blessings this baseline replaced, oldest first (schema 3)
    # how the file read stood against its seal (None: not read from a file), and each way its history is
    # not as its blessings wrote it (history_chain.problems)
    seal: signing.SealCheck | None = field(default=None, compare=False)
    history_problems: tuple[str, ...] = field(default=(), compare=False)

    @property
    def seal_note(self) -> str | None:
        """What a verdict says of a baseline file not as a blessing wrote it (None: as written)."""
        if self.seal is None or self.seal.trusted:
            return None
        state, detail = self.seal.state.value, self.seal.detail
        return f"baseline {state}: {detail}; its gates hold as written, its accepted_weak is void"

    @property
    def history_note(self) -> str | None:
        """What a report says of a history edited by hand (None: as its blessings wrote it)."""
        return f"{history_chain.EDITED}: {'; '.join(self.history_problems)}" if self.history_problems else None


def golden_path(
    root: str | os.PathLike[str], model: str | os.PathLike[str], path: str, dataset: str | os.PathLike[str]
) -> Path:
    """``<root>/<model stem>/<dataset name>--<path>.json``; ``model`` is the model file (or its
    name), ``dataset`` the dataset's folder (or its name), e.g. a result's provenance values."""
    stem, dataset = Path(model).stem, Path(dataset).name
    for what, name in (("model stem", stem), ("path", path), ("dataset", dataset)):
        if not _NAME.match(name) or name.startswith(".") or not _utf8(name):
            raise GoldenError(
                f"baseline {what} {name!r}: expected letters, digits and _ . + - (not leading '.'), in UTF-8"
            )
    if len(f"{dataset}--{path}.json".encode()) > _MAX_NAME:
        raise GoldenError(
            f"baseline dataset {dataset!r}: {len(dataset.encode())} bytes make a baseline file name longer than "
            f"{_MAX_NAME} bytes; give the dataset a shorter folder name"
        )
    return Path(root) / stem / f"{dataset}--{path}.json"


def _utf8(name: str) -> bool:
    try:
        name.encode()
    except UnicodeEncodeError:  # the undecodable bytes of a file name (surrogate escapes)
        return False
    return True


def baseline_file(
    roots: Sequence[str | os.PathLike[str]], model: str | os.PathLike[str], path: str, dataset: str | os.PathLike[str]
) -> Path:
    """The baseline read for a path: the first of ``roots`` that holds one (a project's own folder
    first, then read-only ones); the first root's file, where a blessing writes, when none does."""
    files = [golden_path(root, model, path, dataset) for root in roots]
    return next((f for f in files if f.exists()), files[0])


def dataset_name(result: PathResult) -> str:
    """The dataset's name in baseline paths and gate names: the last component of where it was read
    (``/data/fire_smoke_val`` -> ``fire_smoke_val``); which images and labels is the manifest's job."""
    return Path(result.provenance.dataset).name


def gated_values(measured: Golden | PathResult) -> dict[str, float]:
    """By baseline gate kind, the value a baseline gate reads of ``measured`` (a baseline or a run): the mAPs
    where it has labels, the saturation and the boxes per image always."""
    found = {"score_saturation": measured.scores.saturation, "box_count": measured.box_counts.mean}
    if measured.labelled:
        found.update(map=measured.metrics.map50, map50_95=measured.metrics.map50_95)
    return found


def own_blessing(golden: Golden) -> Blessing:
    """``golden`` as an entry of its history: its release, date, export, images, protocol and the
    value each of its gates holds a run to (as written: rounded to the baseline's decimals)."""
    found = gated_values(golden)
    if golden.agreement is not None:
        found["path_agreement"] = golden.agreement.matched_share
    p = golden.provenance
    return Blessing(
        release=golden.release,
        created=p.created,
        model=golden.model,
        dataset=golden.dataset,
        path=golden.path,
        model_sha256=p.model_sha256,
        dataset_manifest=p.dataset_manifest,
        metric=golden.settings.metric.value,
        values=tuple((k, round(float(found[k]), DECIMALS)) for k in HISTORY_KINDS if is_finite(found.get(k))),
        made_from=p.made_from,
    )


def blessed_history(golden: Golden) -> tuple[Blessing, ...]:
    """Every blessing of ``golden``'s baseline, oldest first, ending with ``golden`` itself: what the
    reports show (a baseline of schema 1 or 2 has only itself)."""
    return (*golden.history, own_blessing(golden))


def missing_golden_message(
    file: str | os.PathLike[str], invocation: Sequence[str], report: str | os.PathLike[str] | None = None
) -> str:
    """What a gate says when ``file`` does not exist: the command that creates it is the run's own
    command line (``invocation``, e.g. ``["hailo-harness", "run", ...]`` or ``["pytest", ...]``)
    with ``--update-golden`` added; ``report``: the run's report to review first."""
    command = shlex.join([*invocation, UPDATE_FLAG])
    review = f"review this run's report {report}" if report is not None else "review this run's report"
    return f"no baseline at {file}; {review}, then create the baseline with: {command}"


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_finite(value: Any) -> bool:
    """A number that is neither NaN nor infinite (JSON from Python may spell them NaN, Infinity)."""
    return is_number(value) and math.isfinite(value)


def is_share(value: Any) -> bool:
    return is_finite(value) and 0 <= value <= 1


def parse_created(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
