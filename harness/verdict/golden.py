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
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.core.errors import HarnessError
from harness.core.files import fsync_folder
from harness.core.settings import EvalSettings
from harness.verdict.metrics.coco import ClassMetrics, CocoMetrics
from harness.verdict.metrics.distribution import SCORE_BIN_EDGES, BoxCounts, ScoreDistribution
from harness.verdict.result import PathResult, Provenance

try:
    import fcntl
except ImportError:  # Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]

SCHEMA_VERSION = 1
UPDATE_FLAG = "--update-golden"  # `hailo-harness run ... --update-golden`, `pytest ... --update-golden`
_DECIMALS = 6
_HISTORY = "history"
_JOURNAL = ".blessing.json"
_BIN_KEYS = tuple(f"{lo:.2f}-{hi:.2f}" for lo, hi in itertools.pairwise(SCORE_BIN_EDGES))
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


class GoldenError(HarnessError):
    """A baseline file that cannot be read, or a name that cannot form a baseline path."""


@dataclass(frozen=True)
class Tolerances:
    """``map50_drop``/``map50_95_drop``: the largest allowed fall of the mAP below its baseline (a
    rise always passes). ``box_count_rel``: the largest allowed change of the mean boxes per image,
    relative to the baseline mean (to one box per image where the baseline is below one).
    ``saturation_abs``: the largest allowed change of the share of scores >= 0.99."""

    map50_drop: float = 0.02
    map50_95_drop: float = 0.02
    box_count_rel: float = 0.25
    saturation_abs: float = 0.05


DEFAULT_TOLERANCES = Tolerances()


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


def golden_path(
    root: str | os.PathLike[str], model: str | os.PathLike[str], path: str, dataset: str | os.PathLike[str]
) -> Path:
    """``<root>/<model stem>/<dataset name>--<path>.json``; ``model`` is the model file (or its
    name), ``dataset`` the dataset's folder (or its name), e.g. a result's provenance values."""
    stem, dataset = Path(model).stem, Path(dataset).name
    for what, name in (("model stem", stem), ("path", path), ("dataset", dataset)):
        if not _NAME.match(name) or name.startswith("."):
            raise GoldenError(f"baseline {what} {name!r}: expected letters, digits and _ . + - (not leading '.')")
    return Path(root) / stem / f"{dataset}--{path}.json"


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


def golden_from_result(result: PathResult, tolerances: Tolerances = DEFAULT_TOLERANCES) -> Golden:
    """The baseline that ``result`` would write: its metrics, settings and provenance."""
    return Golden(
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
    )


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
    recover(file.parent)  # a blessing interrupted after its commit is finished first
    return _load(file)


def _load(file: Path) -> Golden:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise GoldenError(f"{file}: no such baseline file") from error
    except (OSError, UnicodeDecodeError) as error:
        raise GoldenError(f"{file}: cannot be read ({error})") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise GoldenError(
            f"{file}: not valid JSON at line {error.lineno} column {error.colno} ({error.msg})"
        ) from error
    return _Reader(file).golden(data)


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
    documents = [(Path(file), _document(golden)) for file, golden in entries]
    for file, document in documents:
        _Reader(file).golden(json.loads(json.dumps(document)))  # what could not be read back is not written
    folders = {file.parent for file, _ in documents}
    if len(folders) != 1:
        raise GoldenError(f"baselines {[str(f) for f, _ in documents]}: one set lies in one model folder")
    (folder,) = folders
    folder.mkdir(parents=True, exist_ok=True)
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
            for file, document in documents:
                previous_bytes, previous, history = _previous(file)
                if previous_bytes is not None:
                    assert history is not None
                    history.parent.mkdir(parents=True, exist_ok=True)
                    steps.append(
                        (_write_temporary(history, functools.partial(_write_bytes, previous_bytes), True), history)
                    )
                    summaries.append(_changed_summary(file, previous, document, history))
                else:
                    summaries.append(_created_summary(file, document))
                steps.append((_write_temporary(file, functools.partial(_dump, document)), file))
            journal = [[str(tmp), str(target)] for tmp, target in steps]
            os.replace(_write_temporary(folder / _JOURNAL, lambda fh: json.dump(journal, fh)), folder / _JOURNAL)
            fsync_folder(folder)
        except BaseException:
            for tmp, _ in steps:
                _remove(tmp)
            raise
        _recover_locked(folder)
        if token is not None:
            os.replace(_write_temporary(marker, lambda fh: fh.write(token)), marker)
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
        for tmp, target in json.loads(journal.read_text(encoding="utf-8")):
            if Path(tmp).exists():
                os.replace(tmp, target)
        fsync_folder(folder)
        journal.unlink()
    for stray in _strays(folder):
        _remove(stray)


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


def _document(golden: Golden) -> dict[str, Any]:
    m = golden.metrics
    return {
        "schema_version": SCHEMA_VERSION,
        "model": golden.model,
        "path": golden.path,
        "dataset": golden.dataset,
        "emulated": golden.emulated,
        "labelled": golden.labelled,
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
    """A fully written and flushed temporary file beside ``target``; removed again if writing fails."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _remove(tmp)
        raise
    return tmp


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
        old: Golden | GoldenError = _load(file)  # under the blessing's lock: no recovery here
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
)


def _created_summary(file: Path, document: Mapping[str, Any]) -> str:
    leaves = _leaves(document)
    lines = [f"created baseline {file}"]
    lines += [f"  {key}: {_show(leaves[key])}" for key in _HEADLINE]
    lines += [f"  {key}: {_show(value)}" for key, value in leaves.items() if key.startswith("tolerances.")]
    return "\n".join(lines)


def _changed_summary(
    file: Path, previous: Golden | GoldenError | None, document: Mapping[str, Any], history: Path | None
) -> str:
    head = f"updated baseline {file} (the previous one is kept as {history})"
    if isinstance(previous, GoldenError):
        return f"{head}\n  the previous baseline was unreadable ({previous}); every value is new"
    assert previous is not None
    old, new = _leaves(_document(previous)), _leaves(document)
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
    return "\n".join(lines)


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
    """Reads a baseline document; every error names the file, the field and what was expected."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def fail(self, field: str, found: Any, expected: str) -> GoldenError:
        return GoldenError(f"{self.file}: field {field} is {found!r:.80}, expected {expected}")

    def take(self, data: Any, field: str, key: str, kind: str) -> Any:
        where = f"{field}.{key}" if field else key
        if not isinstance(data, dict):
            raise self.fail(field or "(top level)", data, "an object")
        if key not in data:
            raise GoldenError(f"{self.file}: field {where} is missing, expected {kind}")
        value = data[key]
        checks: dict[str, Callable[[Any], bool]] = {
            "a finite number": _is_finite,
            "a finite number >= 0": lambda v: _is_finite(v) and v >= 0,
            "a share in [0, 1]": _is_share,
            "a share in [0, 1] or null": lambda v: v is None or _is_share(v),
            "an integer >= 0": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
            "a string": lambda v: isinstance(v, str),
            "true or false": lambda v: isinstance(v, bool),
            "an object": lambda v: isinstance(v, dict),
            "a list": lambda v: isinstance(v, list),
        }
        if not checks[kind](value):
            raise self.fail(where, value, kind)
        return float("nan") if value is None else value

    def golden(self, data: Any) -> Golden:
        version = self.take(data, "", "schema_version", "an integer >= 0")
        if version != SCHEMA_VERSION:
            raise self.fail("schema_version", version, f"{SCHEMA_VERSION} (this harness's baseline schema)")
        metrics = self.take(data, "", "metrics", "an object")
        tolerances = self.take(data, "", "tolerances", "an object")
        self.known(data, "(top level)", {*_TOP_LEVEL, "labelled"})
        labelled = data.get("labelled", True)  # baselines written before label-free runs are labelled
        if not isinstance(labelled, bool):
            raise self.fail("labelled", labelled, "true or false")
        self.known(tolerances, "tolerances", {f.name for f in fields(Tolerances)})
        settings = self.take(data, "", "settings", "an object")
        try:
            eval_settings = EvalSettings.from_dict(settings, source=f"{self.file}: field settings")
        except HarnessError as error:
            raise GoldenError(str(error)) from error
        return Golden(
            model=self.take(data, "", "model", "a string"),
            path=self.take(data, "", "path", "a string"),
            dataset=self.take(data, "", "dataset", "a string"),
            emulated=self.take(data, "", "emulated", "true or false"),
            metrics=self.coco(metrics, labelled),
            box_counts=self.box_counts(self.take(metrics, "metrics", "box_counts", "an object")),
            scores=self.scores(metrics),
            tolerances=Tolerances(
                **{name: self.tolerance(tolerances, name) for name in (f.name for f in fields(Tolerances))}
            ),
            settings=eval_settings,
            provenance=self.provenance(self.take(data, "", "provenance", "an object")),
            labelled=labelled,
        )

    def known(self, data: dict[str, Any], field: str, names: set[str]) -> None:
        """Hand-edited keys that this schema does not read are refused, not silently ignored."""
        unknown = sorted(set(data) - names)
        if unknown:
            raise GoldenError(f"{self.file}: field {field} has unknown keys {unknown}, expected only {sorted(names)}")

    def tolerance(self, tolerances: dict[str, Any], name: str) -> float:
        return float(self.take(tolerances, "tolerances", name, "a finite number >= 0"))

    def coco(self, metrics: dict[str, Any], labelled: bool = True) -> CocoMetrics:
        per_class = []
        for i, entry in enumerate(self.take(metrics, "metrics", "per_class", "a list")):
            field = f"metrics.per_class[{i}]"
            per_class.append(
                ClassMetrics(
                    name=self.take(entry, field, "name", "a string"),
                    n_ground_truth=self.take(entry, field, "n_ground_truth", "an integer >= 0"),
                    n_predictions=self.take(entry, field, "n_predictions", "an integer >= 0"),
                    **{k: float(self.take(entry, field, k, "a share in [0, 1] or null")) for k in _CLASS_NUMBERS},
                )
            )
        return CocoMetrics(
            # A labelled baseline without a measured mAP holds nothing: refused, never a pass. A
            # label-free one has none to hold (its runs have no mAP gates).
            map50=float(self.take(metrics, "metrics", "map50", _MAP_KIND[labelled])),
            map50_95=float(self.take(metrics, "metrics", "map50_95", _MAP_KIND[labelled])),
            score_threshold=float(self.take(metrics, "metrics", "score_threshold", "a share in [0, 1]")),
            n_images=self.take(metrics, "metrics", "n_images", "an integer >= 0"),
            per_class=tuple(per_class),
        )

    def box_counts(self, counts: dict[str, Any]) -> BoxCounts:
        field = "metrics.box_counts"
        return BoxCounts(
            mean=float(self.take(counts, field, "mean", "a finite number >= 0")),
            p95=float(self.take(counts, field, "p95", "a finite number >= 0")),
            max=self.take(counts, field, "max", "an integer >= 0"),
            total=self.take(counts, field, "total", "an integer >= 0"),
        )

    def scores(self, metrics: dict[str, Any]) -> ScoreDistribution:
        histogram = self.take(metrics, "metrics", "score_histogram", "an object")
        field = "metrics.score_histogram"
        expected = {*_BIN_KEYS, "below_zero", "above_one"}
        if set(histogram) != expected:
            raise self.fail(field, sorted(histogram), f"the keys {sorted(expected)}")
        counts = tuple(self.take(histogram, field, key, "an integer >= 0") for key in _BIN_KEYS)
        saturation = float(self.take(metrics, "metrics", "saturation", "a share in [0, 1]"))
        below = self.take(histogram, field, "below_zero", "an integer >= 0")
        above = self.take(histogram, field, "above_one", "an integer >= 0")
        total = self.take(
            self.take(metrics, "metrics", "box_counts", "an object"), "metrics.box_counts", "total", "an integer >= 0"
        )
        return ScoreDistribution(total, saturation, counts, below, above)

    def provenance(self, data: dict[str, Any]) -> Provenance:
        field = "provenance"
        environment = self.take(data, field, "environment", "an object")
        for key, value in environment.items():
            if not isinstance(value, str):
                raise self.fail(f"provenance.environment.{key}", value, "a version string")
        created = self.take(data, field, "created", "a string")
        try:
            _parse_created(created)
        except ValueError as error:
            raise self.fail("provenance.created", created, "an ISO 8601 time, e.g. 2025-01-02T03:04:05Z") from error
        return Provenance(
            model_path=self.take(data, field, "model_path", "a string"),
            model_sha256=self.take(data, field, "model_sha256", "a string"),
            dataset=self.take(data, field, "dataset", "a string"),
            dataset_manifest=self.take(data, field, "dataset_manifest", "a string"),
            harness_version=self.take(data, field, "harness_version", "a string"),
            created=created,
            environment=tuple(sorted(environment.items())),
        )


_CLASS_NUMBERS = ("ap50", "ap50_95", "precision", "recall")
_MAP_KIND = {True: "a share in [0, 1]", False: "a share in [0, 1] or null"}
_TOP_LEVEL = (
    "schema_version",
    "model",
    "path",
    "dataset",
    "emulated",
    "metrics",
    "tolerances",
    "settings",
    "provenance",
)
