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
share of boxes and the mean absolute score drift, schema 2), so that a blessed run passes its
agreement gate when run again. A schema 1 baseline (written before) has none: its agreement gate
holds the default floor, and says so.

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
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import re
import shlex
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.core import signing
from harness.core.confine import check, make_folder
from harness.core.documents import DocumentError, Fields, parse_json
from harness.core.errors import HarnessError
from harness.core.files import fsync_folder
from harness.core.settings import EvalSettings
from harness.verdict import history_chain
from harness.verdict.changes import read_made_from
from harness.verdict.diagnosis import matched_share
from harness.verdict.history import HISTORY_KINDS, Blessing, read_blessing, read_release, read_seal
from harness.verdict.metrics.agreement import agreement
from harness.verdict.metrics.coco import ClassMetrics, CocoMetrics
from harness.verdict.metrics.distribution import SCORE_BIN_EDGES, BoxCounts, ScoreDistribution
from harness.verdict.result import PathResult, Provenance

try:
    import fcntl
except ImportError:  # Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]

SCHEMA_VERSION = 5
# 1: before the agreement was blessed (no ``agreement``, no its tolerances); 2: before ``release`` and ``history``;
# 3: before ``seal``, ``history_tip`` and the history entries' ``previous`` and ``seal``; 4: before
# ``provenance.made_from`` and the history entries' ``made_from`` (harness.verdict.changes; optional when read)
_READ_VERSIONS = (1, 2, 3, 4, SCHEMA_VERSION)
UPDATE_FLAG = "--update-golden"  # `hailo-harness run ... --update-golden`, `pytest ... --update-golden`
_DECIMALS = 6
_HISTORY = "history"
_JOURNAL = ".blessing.json"
_BIN_KEYS = tuple(f"{lo:.2f}-{hi:.2f}" for lo, hi in itertools.pairwise(SCORE_BIN_EDGES))
_NAME = re.compile(r"^[\w.+-]+$")  # letters and digits of any script
_MAX_NAME = 200  # bytes of a baseline's file name: its history copies add to it below the usual 255
# A baseline keeps _DECIMALS decimals: a value measured again may lie this far on the wrong side of its
# rounded baseline, which a gate with a tolerance of 0 must still pass.
ROUNDING = 0.5 * 10**-_DECIMALS


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
_AGREEMENT_TOLERANCES = ("agreement_drop", "score_drift_rise")  # new in schema 2


@dataclass(frozen=True)
class BlessedAgreement:
    """A path's agreement with the reference path on the blessed run (see
    :func:`harness.verdict.metrics.agreement.agreement`): ``matched_share`` of all distinct boxes,
    ``score_drift`` the mean absolute score change of the matched ones."""

    matched_share: float
    score_drift: float


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


# Labelled objects below which a mAP measures too little to hold a model to (one object more or less
# found moves it by 10 % or more).
MIN_OBJECTS = 10
ACCEPT_WEAK_FLAG = "--accept-weak-baseline"


@dataclass(frozen=True)
class Weakness:
    """Why a baseline's gates ``kinds`` hold a run to nothing, or to too little: ``code`` is kept in a
    baseline blessed with :data:`ACCEPT_WEAK_FLAG`, ``text`` says it."""

    code: str
    kinds: tuple[str, ...]
    text: str


WEAKNESSES = (
    "map50_cannot_fail",
    "map50_95_cannot_fail",
    "saturation_cannot_fail",
    "box_count_cannot_fail",
    "no_detections",
    "few_objects",
    "agreement_cannot_fail",
    "score_drift_cannot_fail",
    "few_boxes",
)


def weaknesses(golden: Golden) -> tuple[Weakness, ...]:
    """The gates of ``golden`` that can never fail or measure too little: a mAP drop as large as the
    mAP itself (a mAP of 0 included), a saturation tolerance that covers every share from 0 to 1, a
    box count tolerance that lets a run without a box pass, a baseline run without a detection, a
    box count tolerance narrower than one box of the baseline's (too few boxes to measure a change),
    or fewer than :data:`MIN_OBJECTS` labelled objects.

    Each test is the gate's own comparison, its rounding allowance (:data:`ROUNDING`) included, made
    with the worst result there is (a mAP of 0, no box, every score saturated or none): a baseline
    none of them flags has a result that fails each of its gates."""
    found = []
    t = golden.tolerances
    if golden.labelled:
        for metric, kind, label in (("map50", "map", "mAP@0.5"), ("map50_95", "map50_95", "mAP@0.5:0.95")):
            base, drop = getattr(golden.metrics, metric), getattr(t, f"{metric}_drop")
            if not base - drop - ROUNDING > 0:  # a mAP of 0 passes (a NaN baseline holds nothing either)
                text = (
                    f"{metric}_drop {drop:g} {_at_least(drop, base)} baseline {metric} {base:g}: "
                    f"the {label} gate can never fail"
                )
                found.append(Weakness(f"{metric}_cannot_fail", (kind,), text))
        objects = sum(c.n_ground_truth for c in golden.metrics.per_class)
        if objects < MIN_OBJECTS:
            text = f"{objects} labelled objects, fewer than {MIN_OBJECTS}: too few to measure a mAP"
            found.append(Weakness("few_objects", ("map", "map50_95"), text))
    saturation = golden.scores.saturation
    if t.saturation_abs + ROUNDING >= max(saturation, 1 - saturation):  # a share of 0 and one of 1 both pass
        text = (
            f"saturation_abs {t.saturation_abs:g} around baseline saturation {saturation:g} covers every share "
            "from 0 to 1: the score saturation gate can never fail"
        )
        found.append(Weakness("saturation_cannot_fail", ("score_saturation",), text))
    counts, rel = golden.box_counts, t.box_count_rel
    if rel >= 1 or (counts.total > 0 and counts.mean * (1 - rel) <= ROUNDING):  # a run without a box passes
        text = f"box_count_rel {rel:g} >= 1: a run without a single box passes the box count gate"
        if rel < 1:
            text = (
                f"box_count_rel {rel:g} of baseline mean {counts.mean:g} boxes per image lies within the "
                "baseline's rounding of it: a run without a single box passes the box count gate"
            )
        found.append(Weakness("box_count_cannot_fail", ("box_count",), text))
    elif 0 < rel * counts.total < 1:
        # The gate counts in steps of one box: a tolerance of less than one of the baseline's boxes
        # fails a run that finds one box more or less. A tolerance of 0 asks for the very count, knowingly.
        text = (
            f"{counts.total} boxes in the baseline run: box_count_rel {rel:g} of them is less than one box, so the "
            "box count gate cannot tell a regression from one box more or less; too few boxes to measure a change"
        )
        found.append(Weakness("few_boxes", ("box_count",), text))
    if golden.agreement is not None:
        share, drift = golden.agreement.matched_share, golden.agreement.score_drift
        if t.agreement_drop + ROUNDING >= share:  # a run that matches no box passes
            text = (
                f"agreement_drop {t.agreement_drop:g} {_at_least(t.agreement_drop, share)} blessed matched share "
                f"{share:g}: the path agreement gate passes a run that matches no box"
            )
            found.append(Weakness("agreement_cannot_fail", ("path_agreement",), text))
        if drift + t.score_drift_rise + ROUNDING >= 1:  # a drift of every score by 1 passes
            text = (
                f"blessed score drift {drift:g} + score_drift_rise {t.score_drift_rise:g} >= 1: the path agreement "
                "gate passes any score drift"
            )
            found.append(Weakness("score_drift_cannot_fail", ("path_agreement",), text))
    if golden.box_counts.total == 0:
        text = "the baseline run made no detection: its box count and score gates hold a run to nothing found"
        found.append(Weakness("no_detections", ("box_count", "score_saturation"), text))
    return tuple(found)


def _at_least(tolerance: float, base: float) -> str:
    """How a tolerance that leaves nothing of its baseline compares to it, in words."""
    return ">=" if tolerance >= base else "within the baseline's rounding of"


def _refusal(found: Sequence[Weakness]) -> str:
    return (
        "; ".join(w.text for w in found)
        + f"; a baseline that cannot fail is kept only when blessed knowingly with {UPDATE_FLAG} {ACCEPT_WEAK_FLAG}"
        " (the report then says so)"
    )


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


def golden_from_result(
    result: PathResult,
    tolerances: Tolerances = DEFAULT_TOLERANCES,
    accept_weak: bool = False,
    reference: PathResult | None = None,
    release: str | None = None,
) -> Golden:
    """The baseline that ``result`` would write: its metrics, settings and provenance, and its
    agreement with ``reference`` where it is held to one (on the same images, under the same
    settings); ``accept_weak`` (:data:`ACCEPT_WEAK_FLAG`): its weaknesses are blessed knowingly,
    else refused when written; ``release``: the release it signs off (``--release``). Its history is
    the one of the baseline it replaces, added when written (:func:`bless`)."""
    golden = Golden(
        model=Path(result.provenance.model_path).stem,
        path=result.path,
        dataset=dataset_name(result),
        emulated=result.emulated,
        metrics=result.metrics,
        box_counts=result.box_counts,
        scores=result.scores,
        tolerances=tolerances,
        settings=result.settings,
        provenance=result.provenance,
        labelled=result.labelled,
        agreement=blessed_agreement(reference, result),
        release=release,
    )
    return replace(golden, accepted_weak=tuple(w.code for w in weaknesses(golden))) if accept_weak else golden


def blessed_agreement(reference: PathResult | None, result: PathResult) -> BlessedAgreement | None:
    """``result``'s agreement with ``reference`` as a baseline keeps it; None without a reference or
    where the two cannot be compared (other images or settings: the agreement gate fails on that)."""
    if reference is None or reference.image_ids != result.image_ids or reference.settings.differences(result.settings):
        return None
    counts = agreement(reference.predictions, result.predictions)
    return BlessedAgreement(matched_share(counts), counts.mean_abs_score_drift)


def own_blessing(golden: Golden) -> Blessing:
    """``golden`` as an entry of its history: its release, date, export, images, protocol and the
    value each of its gates holds a run to (as written: rounded to the baseline's decimals)."""
    found = {"score_saturation": golden.scores.saturation, "box_count": golden.box_counts.mean}
    if golden.labelled:
        found.update(map=golden.metrics.map50, map50_95=golden.metrics.map50_95)
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
        values=tuple((k, round(float(found[k]), _DECIMALS)) for k in HISTORY_KINDS if _is_finite(found.get(k))),
        made_from=p.made_from,
    )


def blessed_history(golden: Golden) -> tuple[Blessing, ...]:
    """Every blessing of ``golden``'s baseline, oldest first, ending with ``golden`` itself: what the
    reports show (a baseline of schema 1 or 2 has only itself)."""
    return (*golden.history, own_blessing(golden))


def _carried(previous: Golden | GoldenError | None, golden: Golden, key: bytes | None) -> tuple[Blessing, ...]:
    """The history ``golden`` is written with over ``previous``: the previous baseline's history as
    read, and itself chained to it (sealed with ``key`` where ``previous`` held its seal,
    :func:`harness.verdict.history_chain.appended`); ``golden``'s own where there is none of the same
    baseline to carry (none yet, unreadable, another model's, dataset's or path's) or where it is
    ``golden`` again (a baseline written back)."""
    if not isinstance(previous, Golden) or (previous.model, previous.dataset, previous.path) != (
        golden.model,
        golden.dataset,
        golden.path,
    ):
        return golden.history
    if own_blessing(previous) == own_blessing(golden):
        return previous.history
    vouched = previous.seal is not None and previous.seal.trusted
    return history_chain.appended(previous.history, own_blessing(previous), key, vouched)


def missing_golden_message(
    file: str | os.PathLike[str], invocation: Sequence[str], report: str | os.PathLike[str] | None = None
) -> str:
    """What a gate says when ``file`` does not exist: the command that creates it is the run's own
    command line (``invocation``, e.g. ``["hailo-harness", "run", ...]`` or ``["pytest", ...]``)
    with ``--update-golden`` added; ``report``: the run's report to review first."""
    command = shlex.join([*invocation, UPDATE_FLAG])
    review = f"review this run's report {report}" if report is not None else "review this run's report"
    return f"no baseline at {file}; {review}, then create the baseline with: {command}"


def load_golden(file: str | os.PathLike[str]) -> Golden:
    file = Path(file)
    try:
        recover(file.parent)  # a blessing interrupted after its commit is finished first
    except OSError:
        # A folder this reader cannot write (read-only, full): the committed set is read through
        # its journal, as the recovery would have left it.
        pending = dict(_journal(file.parent)).get(Path(os.path.abspath(file)))
        if pending is not None and pending.exists():
            return _load(pending)
    return _load(file)


def _load(file: Path, enforce: bool = True) -> Golden:
    """``file`` read; ``enforce``: its seal held to the signing policy (a blessing reading the baseline
    it replaces does not: it keeps it as it is)."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise GoldenError(f"{file}: no such baseline file") from error
    except (OSError, UnicodeDecodeError) as error:
        raise GoldenError(f"{file}: cannot be read ({error})") from error
    try:
        data = parse_json(text, str(file))
    except DocumentError as error:
        raise GoldenError(str(error)) from None
    return _Reader(file, enforce).golden(data)


def write_golden(file: str | os.PathLike[str], golden: Golden) -> str:
    """Write one baseline (see :func:`bless`) and say what changed."""
    (summary,) = bless([(Path(file), golden)])
    return summary


def bless(entries: Sequence[tuple[Path, Golden]], token: str | None = None) -> tuple[str, ...]:
    """Write a run's baselines (one model folder) all or nothing, and say what changed in each.

    Every document is checked against the schema first (e.g. a mAP that is NaN, no ground truth, is
    refused naming the file and field). Under the folder's lock, each baseline and each history copy
    of the one it replaces is written to a temporary file beside it and synced; a journal listing
    them is committed (one atomic rename); then each is renamed into place and the journal removed.
    A kill before the journal leaves the old set, a kill after it the new one, completed by the next
    reader or writer (:func:`recover`), and no temporary file survives that. ``token`` (one per
    test run, shared by its pytest-xdist workers): a set already blessed under it is not written
    again."""
    rules = signing.policy()
    if rules.require_signed and rules.key is None:
        raise GoldenError(
            f"--update-golden under --require-signed: {signing.KEY_VARIABLE} is not set, so the baselines would "
            "be unsigned; bless where the release key is"
        )
    documents = [(Path(file), _document(golden)) for file, golden in entries]
    for file, document in documents:
        _Reader(file, False).golden(json.loads(json.dumps(document)))  # what could not be read back is not written
    folders = {file.parent for file, _ in documents}
    if len(folders) != 1:
        raise GoldenError(f"baselines {[str(f) for f, _ in documents]}: one set lies in one model folder")
    (folder,) = folders
    committed = False
    try:
        make_folder(folder)
        with _locked(folder):
            _recover_locked(folder)
            # Outside the baselines' folder, so that it never shows in their review diff; one per folder.
            marker = (
                Path(tempfile.gettempdir())
                / f"hailo-harness-blessed-{hashlib.sha256(bytes(folder.resolve())).hexdigest()[:16]}"
            )
            if token is not None and marker.is_file() and marker.read_text(encoding="utf-8") == token:
                return tuple(f"{file}: blessed by another worker of this test run" for file, _ in documents)
            steps: list[tuple[Path, Path]] = []
            summaries = []
            try:
                for (file, _), (_, golden) in zip(documents, entries, strict=True):
                    previous_bytes, previous, history = _previous(file)
                    document = _sealed(replace(golden, history=_carried(previous, golden, rules.key)), rules.key)
                    _Reader(file, False).golden(json.loads(json.dumps(document)))  # its history read back too
                    if previous_bytes is not None:
                        assert history is not None
                        make_folder(history.parent)
                        write = functools.partial(_write_bytes, previous_bytes)
                        steps.append((_write_temporary(history, write, True), history))
                        summaries.append(_changed_summary(file, previous, document, history))
                    else:
                        summaries.append(_created_summary(file, document))
                    steps.append((_write_temporary(file, functools.partial(_dump, document)), file))
                journal = [[os.path.abspath(tmp), os.path.abspath(target)] for tmp, target in steps]
                written = _write_temporary(folder / _JOURNAL, lambda fh: json.dump(journal, fh))
                os.replace(written, folder / _JOURNAL)
                committed = True
                fsync_folder(folder)
            except BaseException:
                if not committed:
                    for tmp, _ in steps:
                        _remove(tmp)
                raise
            _recover_locked(folder)
            if token is not None:
                os.replace(_write_temporary(marker, lambda fh: fh.write(token)), marker)
    except OSError as error:
        where = error.filename or folder
        if committed:
            raise GoldenError(
                f"baselines in {folder}: the new set is committed, but {where} could not be put in place "
                f"({error.strerror or error}); the next run that reads or blesses them finishes it"
            ) from None
        raise GoldenError(
            f"baselines in {folder} not written: {where}: {error.strerror or error}; the previous baselines are "
            "kept unchanged"
        ) from None
    return tuple(summaries)


def recover(folder: Path) -> None:
    """Finish a blessing a kill interrupted after its journal was committed, and remove the
    temporary files of one interrupted before it: afterwards ``folder`` holds one whole set. Takes
    the folder's lock only when there is something to do (a reader's common case costs two globs)."""
    if folder.is_dir() and ((folder / _JOURNAL).exists() or _strays(folder)):
        with _locked(folder):
            _recover_locked(folder)


def _recover_locked(folder: Path) -> None:
    journal = folder / _JOURNAL
    if journal.exists():
        for target, tmp in _journal(folder):
            if tmp.exists():
                check(target, "finishing a blessing")
                os.replace(tmp, _real(target))
        fsync_folder(folder)
        journal.unlink()
    for stray in _strays(folder):
        _remove(stray)


def _journal(folder: Path) -> list[tuple[Path, Path]]:
    """The committed blessing's (baseline or history file, its temporary file) pairs, absolute paths;
    none where no blessing is pending. Each pair must be one this module writes: a file in ``folder``
    (or its history) and a temporary file of its name beside the file it stands for (a symlink's
    target)."""
    journal = folder / _JOURNAL
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
        inside = target.is_absolute() and (target.parent == home or target.parent.parent == home / _HISTORY)
        beside = tmp.parent == Path(os.path.abspath(_real(target).parent))
        if not inside or not beside or not tmp.name.startswith(f".{target.name}."):
            raise GoldenError(f"{journal}: entry {entry!r:.120}, expected a blessing's own temporary and baseline file")
        pairs.append((target, tmp))
    return pairs


def _real(target: Path) -> Path:
    """Where a write to ``target`` goes: a symlink's target (a linked baseline stays linked)."""
    return Path(os.path.realpath(target)) if target.is_symlink() else target


def _strays(folder: Path) -> list[Path]:
    """Temporary files of a blessing (the journal's own included) beside the baselines or their history."""
    return [*folder.glob(".*.tmp"), *folder.glob(f"{_HISTORY}/*/.*.tmp")]


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The model folder's blessing lock, taken on the folder itself so that nothing is left in it
    (advisory; none where the platform has no flock)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# --- writing ---------------------------------------------------------------------------------


def _sealed(golden: Golden, key: bytes | None) -> dict[str, Any]:
    """``golden``'s document with its seal: the sha256 of the rest, and its HMAC with ``key``."""
    return signing.with_seal(_document(golden), key)


def _document(golden: Golden) -> dict[str, Any]:
    m = golden.metrics
    return {
        "schema_version": SCHEMA_VERSION,
        "model": golden.model,
        "path": golden.path,
        "dataset": golden.dataset,
        "emulated": golden.emulated,
        "labelled": golden.labelled,
        **({"accepted_weak": list(golden.accepted_weak)} if golden.accepted_weak else {}),
        "release": golden.release,
        "history": [{**history_chain.entry_document(b), "seal": b.seal} for b in golden.history],
        "history_tip": history_chain.tip(golden.history),
        **(
            {
                "agreement": {
                    "matched_share": _number(golden.agreement.matched_share),
                    "score_drift": _number(golden.agreement.score_drift),
                }
            }
            if golden.agreement is not None
            else {}
        ),
        "metrics": {
            "map50": _number(m.map50),
            "map50_95": _number(m.map50_95),
            "score_threshold": m.score_threshold,
            "n_images": m.n_images,
            "per_class": [
                {
                    "name": c.name,
                    "n_ground_truth": c.n_ground_truth,
                    "n_predictions": c.n_predictions,
                    "ap50": _number(c.ap50),
                    "ap50_95": _number(c.ap50_95),
                    "precision": _number(c.precision),
                    "recall": _number(c.recall),
                }
                for c in m.per_class
            ],
            "box_counts": {
                "mean": _number(golden.box_counts.mean),
                "p95": _number(golden.box_counts.p95),
                "max": golden.box_counts.max,
                "total": golden.box_counts.total,
            },
            "saturation": _number(golden.scores.saturation),
            "score_histogram": {
                **dict(zip(_BIN_KEYS, golden.scores.histogram, strict=True)),
                "below_zero": golden.scores.below_zero,
                "above_one": golden.scores.above_one,
            },
        },
        "tolerances": {
            "map50_drop": golden.tolerances.map50_drop,
            "map50_95_drop": golden.tolerances.map50_95_drop,
            "box_count_rel": golden.tolerances.box_count_rel,
            "saturation_abs": golden.tolerances.saturation_abs,
            "agreement_drop": golden.tolerances.agreement_drop,
            "score_drift_rise": golden.tolerances.score_drift_rise,
        },
        "settings": golden.settings.to_dict(),
        "provenance": {
            "model_path": golden.provenance.model_path,
            "model_sha256": golden.provenance.model_sha256,
            "dataset": golden.provenance.dataset,
            "dataset_manifest": golden.provenance.dataset_manifest,
            "harness_version": golden.provenance.harness_version,
            "created": golden.provenance.created,
            "environment": dict(golden.provenance.environment),
            **({"made_from": dict(golden.provenance.made_from)} if golden.provenance.made_from else {}),
        },
    }


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(float(value), _DECIMALS)


def _dump(document: Mapping[str, Any], fh: Any) -> None:
    json.dump(document, fh, indent=2, sort_keys=True, allow_nan=False)
    fh.write("\n")


def _write_bytes(data: bytes, fh: Any) -> None:
    fh.write(data)


def _write_temporary(target: Path, write: Callable[[Any], object], binary: bool = False) -> Path:
    """A fully written and flushed temporary file beside where ``target`` is written (a symlink's
    target), with ``target``'s mode (a new file's: 0o666 less the umask); removed again if writing
    fails."""
    check(target, "blessing")
    real = _real(target)
    fd, name = tempfile.mkstemp(dir=real.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        os.fchmod(fd, _mode(real))
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _remove(tmp)
        raise
    return tmp


def _mode(file: Path) -> int:
    """The permission bits a rewrite of ``file`` keeps: its own, or a new file's (0o666 less the umask)."""
    try:
        return file.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _previous(file: Path) -> tuple[bytes | None, Golden | GoldenError | None, Path | None]:
    """The current baseline's bytes, its parsed form (or why it cannot be parsed) and where it goes."""
    if not file.exists():
        return None, None, None
    text = file.read_bytes()
    folder = file.parent / _HISTORY / file.stem
    try:
        old: Golden | GoldenError = _load(file, False)  # under the blessing's lock: no recovery here
    except GoldenError as error:
        stamp = datetime.fromtimestamp(file.stat().st_mtime, timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        return text, error, _free(folder, f"{stamp}-unreadable")
    assert isinstance(old, Golden)
    stamp = _parse_created(old.provenance.created).strftime("%Y%m%dT%H%M%SZ")
    return text, old, _free(folder, f"{stamp}-{old.provenance.model_sha256[:12]}")


def _free(folder: Path, stem: str) -> Path:
    """``folder/<stem>.json``, or ``<stem>-2.json``, ... when a kept baseline has that name already."""
    candidate, n = folder / f"{stem}.json", 1
    while candidate.exists():
        n += 1
        candidate = folder / f"{stem}-{n}.json"
    return candidate


_HEADLINE = (
    "metrics.map50",
    "metrics.map50_95",
    "metrics.box_counts.mean",
    "metrics.box_counts.p95",
    "metrics.box_counts.max",
    "metrics.saturation",
    "agreement.matched_share",
    "agreement.score_drift",
)


def _created_summary(file: Path, document: Mapping[str, Any]) -> str:
    leaves = _leaves(document)
    lines = [f"created baseline {file}"]
    lines += [f"  {key}: {_show(leaves[key])}" for key in _HEADLINE if key in leaves]
    lines += [f"  {key}: {_show(value)}" for key, value in leaves.items() if key.startswith("tolerances.")]
    return "\n".join(lines)


def _changed_summary(
    file: Path, previous: Golden | GoldenError | None, document: Mapping[str, Any], history: Path | None
) -> str:
    head = f"updated baseline {file} (the previous one is kept as {history})"
    if isinstance(previous, GoldenError):
        return f"{head}\n  the previous baseline was unreadable ({previous}); every value is new"
    assert previous is not None
    replaced = _document(previous)
    old, new = _leaves(_unhistoried(replaced)), _leaves(_unhistoried(document))
    ordered = [*(k for k in _HEADLINE if k in new), *sorted((old.keys() | new.keys()) - set(_HEADLINE))]
    changed = [key for key in ordered if old.get(key, "absent") != new.get(key, "absent")]
    lines = [head]
    for key in changed:
        before, after = old.get(key, "absent"), new.get(key, "absent")
        delta = ""
        if _is_number(before) and _is_number(after):
            delta = f" ({after - before:+.6g})"
        lines.append(f"  {key}: {_show(before)} -> {_show(after)}{delta}")
    lines.append(f"  {len(new) - len(changed)} values unchanged" if changed else "  no value changed")
    if len(document["history"]) > len(replaced["history"]):
        earlier = len(document["history"])
        lines.append(f"  history: {earlier} earlier blessing{'s' * (earlier > 1)}, the replaced one added last")
    return "\n".join(lines)


def _unhistoried(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` without its history and seals (said in a line of its own, not value by value)."""
    return {key: value for key, value in document.items() if key not in ("history", "history_tip", "seal")}


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> leaf value; per-class entries are keyed by class name."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_leaves(value, f"{prefix}{key}."))
        return out
    if isinstance(node, list) and node and all(isinstance(v, dict) and "name" in v for v in node):
        out = {}
        for entry in node:
            out.update(_leaves({k: v for k, v in entry.items() if k != "name"}, f"{prefix}{entry['name']}."))
        return out
    return {prefix[:-1]: node}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    """A number that is neither NaN nor infinite (JSON from Python may spell them NaN, Infinity)."""
    return _is_number(value) and math.isfinite(value)


def _is_share(value: Any) -> bool:
    return _is_finite(value) and 0 <= value <= 1


def _show(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


# --- reading ---------------------------------------------------------------------------------


def _parse_created(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


class _Reader:
    """Reads a baseline document strictly (:mod:`harness.core.documents`): every error names the
    file, the field and what was expected; no key is read twice or left unread."""

    def __init__(self, file: Path, enforce: bool = True) -> None:
        """``enforce``: the seal held to the signing policy, an unsealed or edited file's
        ``accepted_weak`` void and its history compared with the baselines it replaced (what any
        reader but a blessing, reading what it replaces, does)."""
        self.file, self.enforce = file, enforce

    def golden(self, data: Any) -> Golden:
        rules = signing.policy()
        try:
            golden = self._golden(Fields(data, str(self.file)), data, rules)
        except DocumentError as error:
            raise GoldenError(str(error)) from None
        if self.enforce and rules.require_signed and golden.history_problems:
            raise GoldenError(f"{self.file}: {golden.history_note}; refused under --require-signed")
        return golden

    def _golden(self, top: Fields, data: Any, rules: signing.SigningPolicy) -> Golden:
        version = top.value("schema_version", _is_count, "an integer >= 0")
        if version not in _READ_VERSIONS:
            top.fail("schema_version", version, f"one of {list(_READ_VERSIONS)} (the schemas this harness reads)")
        sealed = version >= 4
        stored = read_seal(top) if sealed else None
        content = {key: value for key, value in data.items() if key != "seal"}
        seal = signing.check_document(content, stored, rules.key)
        if self.enforce:
            try:
                signing.enforce(f"baseline {self.file}", seal, rules)
            except HarnessError as error:
                raise GoldenError(str(error)) from None
        # Baselines written before label-free runs are labelled.
        labelled = top.boolean("labelled", True)
        metrics = top.object("metrics")
        counts = metrics.object("box_counts")
        total = counts.value("total", _is_count, "an integer >= 0")
        box_counts = BoxCounts(
            mean=float(counts.value("mean", _is_non_negative, "a finite number >= 0")),
            p95=float(counts.value("p95", _is_non_negative, "a finite number >= 0")),
            max=counts.value("max", _is_count, "an integer >= 0"),
            total=total,
        )
        counts.done()
        tolerances = top.object("tolerances")
        # Each tolerance bounds a share or a relative change: above 1 it holds nothing (see weaknesses).
        # A schema 1 baseline has no agreement tolerances (it blessed no agreement): the defaults stand.
        names = [f.name for f in fields(Tolerances) if version > 1 or f.name not in _AGREEMENT_TOLERANCES]
        limits = Tolerances(**{n: float(tolerances.value(n, _is_share, "a number from 0 to 1")) for n in names})
        tolerances.done()
        blessed = self.agreement(top.object("agreement")) if version > 1 and top.has("agreement") else None
        accepted = tuple(top.value("accepted_weak", _is_codes, f"a list of {sorted(WEAKNESSES)}", []))
        golden = Golden(
            model=top.string("model"),
            path=top.string("path"),
            dataset=top.string("dataset"),
            emulated=top.boolean("emulated"),
            metrics=self.coco(metrics, labelled),
            box_counts=box_counts,
            scores=self.scores(metrics, total),
            tolerances=limits,
            settings=EvalSettings.from_dict(top.raw("settings"), str(self.file)),
            provenance=self.provenance(top.object("provenance")),
            labelled=labelled,
            accepted_weak=accepted,
            agreement=blessed,
        )
        if version >= 3:
            history = tuple(
                read_blessing(e, golden.model, golden.dataset, golden.path, sealed) for e in top.objects("history")
            )
            golden = replace(golden, release=read_release(top), history=history)
        history_tip = (
            top.value("history_tip", _is_digest_or_null, "a sha256 (64 hex digits) or null") if sealed else None
        )
        metrics.done()
        top.done()
        golden = replace(golden, seal=seal)
        if self.enforce:
            kept = self._kept if golden.history else None
            found = history_chain.problems(
                golden.history, history_tip, sealed, golden.provenance.created, rules.key, kept=kept
            )
            golden = replace(golden, history_problems=found)
            # With the release key in hand only a signature vouches that a weakness was blessed knowingly:
            # a digest without one anybody can compute.
            unsigned = rules.key is not None and seal.state is signing.SealState.SEALED
            if (not seal.trusted or unsigned) and accepted:
                said = "sealed without the release key, which is set here" if unsigned else f"an {seal.state.value}"
                void = f"its accepted_weak {list(accepted)} is void: the file is {said} ({seal.detail})"
                golden = replace(golden, accepted_weak=())
                unaccepted = list(weaknesses(golden))
                if unaccepted:
                    raise GoldenError(f"{self.file}: {void}; {_refusal(unaccepted)}")
        unaccepted = [w for w in weaknesses(golden) if w.code not in golden.accepted_weak]
        if unaccepted:
            raise GoldenError(f"{self.file}: {_refusal(unaccepted)}")
        return golden

    def _kept(self, blessing: Blessing) -> str | None:
        """Why ``blessing``'s values differ from the baseline it stands for, where a blessing kept that
        file (``history/<name>/<created>-<sha>.json``); None where they agree or none is kept."""
        stamp = _parse_created(blessing.created).strftime("%Y%m%dT%H%M%SZ")
        folder = self.file.parent / _HISTORY / self.file.stem
        copies = sorted(folder.glob(f"{stamp}-{blessing.model_sha256[:12]}*.json"))
        said = []
        for copy in copies:
            try:
                kept = own_blessing(_Reader(copy, False).golden(parse_json(copy.read_bytes(), str(copy))))
            except (GoldenError, DocumentError, OSError):
                continue  # not the copy of this blessing (or not one that can be read): nothing to compare
            if kept == blessing:
                return None
            ours, theirs = dict(blessing.values), dict(kept.values)
            moved = [f"{k} {ours.get(k)} (kept {theirs.get(k)})" for k in HISTORY_KINDS if ours.get(k) != theirs.get(k)]
            other = [f for f in _ENTRY_FIELDS if getattr(blessing, f) != getattr(kept, f)]
            said.append(f"{', '.join([*moved, *other])} differ from the replaced baseline kept as {copy.name}")
        return "; ".join(said) or None

    def coco(self, metrics: Fields, labelled: bool = True) -> CocoMetrics:
        per_class = []
        for entry in metrics.objects("per_class"):
            per_class.append(
                ClassMetrics(
                    name=entry.string("name"),
                    n_ground_truth=entry.value("n_ground_truth", _is_count, "an integer >= 0"),
                    n_predictions=entry.value("n_predictions", _is_count, "an integer >= 0"),
                    **{k: _nan(entry.value(k, _is_share_or_null, "a share in [0, 1] or null")) for k in _CLASS_NUMBERS},
                )
            )
            entry.done()
        # A labelled baseline without a measured mAP holds nothing: refused, never a pass. A
        # label-free one has none to hold (its runs have no mAP gates).
        check, kind = (_is_share, "a share in [0, 1]") if labelled else (_is_share_or_null, "a share in [0, 1] or null")
        return CocoMetrics(
            map50=_nan(metrics.value("map50", check, kind)),
            map50_95=_nan(metrics.value("map50_95", check, kind)),
            score_threshold=float(metrics.value("score_threshold", _is_share, "a share in [0, 1]")),
            n_images=metrics.value("n_images", _is_count, "an integer >= 0"),
            per_class=tuple(per_class),
        )

    def agreement(self, data: Fields) -> BlessedAgreement:
        blessed = BlessedAgreement(
            matched_share=float(data.value("matched_share", _is_share, "a share in [0, 1]")),
            score_drift=float(data.value("score_drift", _is_share, "a number from 0 to 1")),
        )
        data.done()
        return blessed

    def scores(self, metrics: Fields, total: int) -> ScoreDistribution:
        histogram = metrics.object("score_histogram")
        counts = tuple(histogram.value(key, _is_count, "an integer >= 0") for key in _BIN_KEYS)
        below = histogram.value("below_zero", _is_count, "an integer >= 0")
        above = histogram.value("above_one", _is_count, "an integer >= 0")
        histogram.done()
        saturation = float(metrics.value("saturation", _is_share, "a share in [0, 1]"))
        return ScoreDistribution(total, saturation, counts, below, above)

    def provenance(self, data: Fields) -> Provenance:
        environment = data.object("environment")
        versions = tuple(sorted((str(k), v) for k, v in environment.items()))
        for key, value in versions:
            if not isinstance(value, str):
                environment.fail(key, value, "a version string")
        created = data.string("created")
        try:
            _parse_created(created)
        except ValueError:
            data.fail("created", created, "an ISO 8601 time, e.g. 2025-01-02T03:04:05Z")
        provenance = Provenance(
            model_path=data.string("model_path"),
            model_sha256=data.string("model_sha256"),
            dataset=data.string("dataset"),
            dataset_manifest=data.string("dataset_manifest"),
            harness_version=data.string("harness_version"),
            created=created,
            environment=versions,
            made_from=read_made_from(data),
        )
        data.done()
        return provenance


def _nan(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_non_negative(value: Any) -> bool:
    return _is_finite(value) and value >= 0


def _is_share_or_null(value: Any) -> bool:
    return value is None or _is_share(value)


_ENTRY_FIELDS = ("release", "dataset_manifest", "metric")  # an entry's fields its kept file's name does not fix


def _is_digest_or_null(value: Any) -> bool:
    return value is None or (isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None)


def _is_codes(value: Any) -> bool:
    return isinstance(value, list) and all(v in WEAKNESSES for v in value) and len(set(value)) == len(value)


_CLASS_NUMBERS = ("ap50", "ap50_95", "precision", "recall")
