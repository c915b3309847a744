"""A job spread over runners: ``--shard K/N`` infers the K-th of N shares of the dataset's images
into a store, and ``hailo-harness merge`` joins the stores of all N and gates and reports the union
once, through the job's own verdict (:func:`~harness.pipeline.job.judge_job`): the same metrics,
gates and reports as one run over every image, to the bit.

Every runner takes its share without talking to the others: the readable images sorted by name
(their id, the path relative to the dataset root), every N-th from the K-th. A store is a folder
(the shard run's ``--report`` folder)::

    shard.json                  the manifest: shard K/N, the job's options, the export's and each
                                path's model sha256, the dataset's manifest, the resolved settings,
                                where the thresholds and the calibration came from, per path what ran it
    predictions/<path>-<key>.bin  each path's predictions of the share: a prediction cache file
                                (harness.pipeline.cache), float32 boxes and scores as inferred

    predictions/.hailo-harness-shard  the marker: the folder is a shard's store

``shard.json`` is written last: a folder without it is a shard that did not finish. It is sealed
(:mod:`harness.core.sealed`; format 1, unsealed, is still read). A shard run replaces only what a
shard run wrote into its folder and refuses a folder holding anything else. A shard gates nothing
(a share's mAP is not the set's); the merge refuses, before any image is read, stores that are not
one job's: any difference in the manifests (harness version, model, HEF, dataset, settings,
thresholds and calibration notes, kept options, each path's model and origin) or in the keys of
their predictions (the harness's detection code, its version, the package versions), predictions
made by other code than the merging harness's, and a shard missing or given twice; one line names
each difference: the store's file, the field and both values.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from harness import __version__
from harness.core.documents import Fields, read_json
from harness.core.errors import HarnessError
from harness.core.files import write_atomic
from harness.core.journal import read
from harness.core.path_names import PathKind
from harness.core.sealed import checked, sealed, stored_seal
from harness.core.settings import EvalSettings
from harness.core.shared_entry import EntryState, EntryUse
from harness.core.signing import SealCheck, policy
from harness.inputs.dataset import Sample
from harness.inputs.demo import demo_root
from harness.inputs.export_facts import file_sha256
from harness.pipeline.cache import (
    BATCH_RECORD,
    JOURNAL,
    KEY_RECORD,
    PredictionCache,
    decode_batch,
)
from harness.pipeline.detect import FrameResult
from harness.pipeline.factory import RunContext, calibration_note, load_dataset, open_path, prepare_run
from harness.pipeline.job import JobResult, judge_job, prepare_job, report_folder
from harness.pipeline.options import (
    DATASET_OPTIONS,
    MERGE_OPTIONS,
    OPTIONS,
    PATH_OPTIONS,
    SETTINGS_OPTIONS,
    job_config,
)
from harness.pipeline.shard_identity import agree
from harness.pipeline.shard_share import Shard
from harness.pipeline.spec import REFERENCE, JobConfig, PathSpec
from harness.verdict.changes import made_from_document, read_made_from
from harness.verdict.result import PathResult

FORMAT = 2  # 2: sealed (core.signing); 1, unsealed, still read
READS = (1, FORMAT)
MANIFEST = "shard.json"
PREDICTIONS = "predictions"
# Written into predictions/ before any prediction: the folder is a shard's store, and its prediction
# files (``<path>-<key digest>.bin``, :mod:`harness.pipeline.cache`) are replaced when a shard runs again.
MARKER = ".hailo-harness-shard"
_OWN_FILE = re.compile(r"[A-Za-z0-9_.+-]+-[0-9a-f]{24}\.bin(\.damaged-[0-9-]+)?")
# The job's options a shard keeps for the merge: what fixes the predictions and where the files are;
# not where this runner writes, its device or its recording, nor how the merge blesses.
KEPT_OPTIONS = (
    *(name for name in PATH_OPTIONS if name not in ("record", "hailo_device")),
    *DATASET_OPTIONS,
    *SETTINGS_OPTIONS,
    "stage_drop",  # the floor of a HAR's stage gate, which the merge gates
)


def _entry(f: Fields) -> EntryUse:
    """One shared-cache entry a stored path ran, as :meth:`EntryUse.to_json` wrote it."""
    states = [s.value for s in EntryState]
    entry = EntryUse(
        folder=f.string("folder"),
        name=f.string("name", nonempty=True),
        sha256=f.value("sha256", lambda v: isinstance(v, str) and len(v) == 64, "64 hex digits"),
        state=EntryState(f.value("state", lambda v: v in states, f"one of {states}")),
        detail=f.string("detail", ""),
    )
    f.done()
    return entry


@dataclass
class StoredPath:
    """One path of a shard as its store names it: what ran it and the file holding its predictions.
    Over the union of the stores it is the :class:`~harness.pipeline.detect.DetectionPath` the merge
    evaluates (every frame from the stores; it infers nothing)."""

    name: str
    kind: PathKind
    recorded: PathKind | None
    model_file: Path
    model_sha256: str
    variant: str
    runtime: str
    score_ceiling: float | None
    fps: float | None
    file: str  # under the store's predictions/
    settings: EvalSettings
    model_names: tuple[str, ...] | None = None
    # the shared-cache entries its runner built and ran (an emulated HEF), as the run's provenance names them: what a
    # merge's results record they were made from (harness.pipeline.made_from); optional when read (format 2 before)
    cache_entries: tuple[EntryUse, ...] = ()
    # what only its runner knew (a device's id and firmware); optional when read, as cache_entries
    made_from: tuple[tuple[str, str], ...] = ()
    emulated: bool = field(init=False)
    input_hw: tuple[int, int] = field(init=False)

    def __post_init__(self) -> None:
        self.emulated = self.kind is not PathKind.DEVICE
        self.input_hw = self.settings.input_hw

    def detect(self, image: np.ndarray) -> FrameResult:
        raise HarnessError(f"{self.name}: an image in no shard's store (the merge infers nothing)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind.value,
            "recorded": None if self.recorded is None else self.recorded.value,
            "model_file": str(self.model_file),
            "model_sha256": self.model_sha256,
            "variant": self.variant,
            "runtime": self.runtime,
            "score_ceiling": self.score_ceiling,
            "fps": self.fps,
            "file": self.file,
            **({"cache_entries": [e.to_json() for e in self.cache_entries]} if self.cache_entries else {}),
            **({"made_from": made_from_document(self.made_from)} if self.made_from else {}),
        }

    @classmethod
    def read(cls, f: Fields, settings: EvalSettings) -> StoredPath:
        kinds = [k.value for k in PathKind]
        recorded = f.value("recorded", lambda v: v is None or v in kinds, f"null or one of {kinds}")

        path = cls(
            name=f.string("name", nonempty=True),
            kind=PathKind(f.value("kind", lambda v: v in kinds, f"one of {kinds}")),
            recorded=None if recorded is None else PathKind(recorded),
            model_file=Path(f.string("model_file", nonempty=True)),
            model_sha256=f.string("model_sha256", nonempty=True),
            variant=f.string("variant"),
            runtime=f.string("runtime"),
            score_ceiling=f.number("score_ceiling", nullable=True),
            fps=f.number("fps", lo=0, nullable=True),
            file=f.value("file", _plain_name, "a file name under predictions/"),
            settings=settings,
            cache_entries=tuple(_entry(e) for e in f.objects("cache_entries", [])),
            made_from=read_made_from(f),
        )
        f.done()
        return path


def _plain_name(value: Any) -> bool:
    return isinstance(value, str) and value not in ("", ".", "..") and "/" not in value and "\\" not in value


@dataclass(frozen=True)
class ShardManifest:
    """A store's ``shard.json``, read strictly (see the module)."""

    store: Path
    shard: Shard
    options: dict[str, Any]  # the kept options, as text (lists of texts for repeated ones), bools for flags
    model_sha256: str  # the export's
    hef_sha256: str | None  # the --hef's, where given
    dataset_manifest: str
    dataset_images: int
    settings: EvalSettings
    thresholds: str
    calibration: str
    paths: tuple[StoredPath, ...]
    harness_version: str = __version__
    seal: SealCheck | None = None  # how the manifest read stood against its seal (None: written here)

    @property
    def file(self) -> Path:
        return self.store / MANIFEST

    def predictions(self, path: StoredPath) -> Path:
        """The prediction file of one of its paths."""
        return self.store / PREDICTIONS / path.file

    def to_json(self) -> str:
        document = {
            "format": FORMAT,
            "shard": str(self.shard),
            "harness_version": self.harness_version,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "options": self.options,
            "model_sha256": self.model_sha256,
            "hef_sha256": self.hef_sha256,
            "dataset": {"manifest": self.dataset_manifest, "images": self.dataset_images},
            "settings": self.settings.to_dict(),
            "thresholds": self.thresholds,
            "calibration": self.calibration,
            "paths": [p.to_dict() for p in self.paths],
        }
        return json.dumps(sealed(document), indent=1) + "\n"

    @classmethod
    def read(cls, store: Path) -> ShardManifest:
        file = store / MANIFEST
        if not file.is_file():
            raise HarnessError(
                f"{file}: not found; expected the {MANIFEST} a shard run (--shard K/N) writes last into its --report "
                "folder (a store without it did not finish: run that shard again)"
            )
        document = read_json(file, "shard manifest")
        f = Fields(document, str(file))
        version = f.integer("format")
        if version not in READS:
            raise HarnessError(
                f"{file}: format {version}, expected one of {list(READS)} (run the shard again with this harness)"
            )
        stored = stored_seal(f) if version >= 2 else None
        seal = checked(str(file), {k: v for k, v in document.items() if k != "seal"}, stored)
        text = f.string("shard")
        try:
            shard = Shard.parse(text)
        except ValueError as error:
            raise HarnessError(f"{file}: shard {text!r}: {error}") from None
        harness_version = f.string("harness_version")
        f.string("created")
        options = dict(f.object("options").items())
        dataset = f.object("dataset")
        manifest, images = dataset.string("manifest", nonempty=True), dataset.integer("images", lo=1)
        dataset.done()
        settings = EvalSettings.from_dict(f.raw("settings"), str(file))
        read_manifest = cls(
            store=store,
            shard=shard,
            options=options,
            model_sha256=f.string("model_sha256", nonempty=True),
            hef_sha256=f.value("hef_sha256", lambda v: v is None or isinstance(v, str), "a sha256 or null"),
            dataset_manifest=manifest,
            dataset_images=images,
            settings=settings,
            thresholds=f.string("thresholds"),
            calibration=f.string("calibration"),
            paths=tuple(StoredPath.read(p, settings) for p in f.objects("paths")),
            harness_version=harness_version,
            seal=seal,
        )
        f.done()
        return read_manifest


def _text(value: Any) -> Any:
    """An option's value as the text that gives it again (``bool`` kept, for flags and toggles)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return "=".join(value)  # --map-class DATASET=MODEL
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)


def kept_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The options a shard keeps for the merge (:data:`KEPT_OPTIONS`), as texts; the unset left out."""
    kept: dict[str, Any] = {}
    for name in KEPT_OPTIONS:
        value = values.get(name)
        if value is None or value == []:
            continue
        kept[name] = [_text(v) for v in value] if OPTIONS[name].kind == "repeat" else _text(value)
    return kept


def option_values(options: Mapping[str, Any], source: Path) -> dict[str, Any]:
    """Option values again from their kept texts; an option this harness does not know, or a text it
    refuses, is refused naming ``source``."""
    values: dict[str, Any] = {}
    for name, text in options.items():
        option = OPTIONS.get(name) if name in KEPT_OPTIONS else None
        if option is None:
            raise HarnessError(f"{source}: options.{name}: not an option a shard keeps, expected one of {KEPT_OPTIONS}")
        try:
            if option.kind in ("flag", "toggle"):
                if not isinstance(text, bool):
                    raise HarnessError(f"{option.flag} {text!r}: expected true or false")
                values[name] = text
            elif option.kind == "repeat":
                if not (isinstance(text, list) and all(isinstance(t, str) for t in text)):
                    raise HarnessError(f"{option.flag} {text!r}: expected a list of texts")
                values[name] = [option.value(t) for t in text]
            elif isinstance(text, str):
                values[name] = option.value(text)
            else:
                raise HarnessError(f"{option.flag} {text!r}: expected a text")
        except HarnessError as error:
            raise HarnessError(f"{source}: options.{name}: {error}") from None
    return values


@dataclass(frozen=True)
class ShardResult:
    manifest: ShardManifest
    images: int  # in this shard's share

    def lines(self) -> list[str]:
        m = self.manifest
        paths = " and ".join(p.name for p in m.paths)
        return [
            f"shard {m.shard}: {self.images} of {m.dataset_images} images, {paths}, stored in {m.store}",
            "a shard gates nothing (a share's mAP is not the set's): "
            f"hailo-harness merge STORE... joins all {m.shard.count} and gates the union",
        ]


def run_shard(
    config: JobConfig, shard: Shard, values: Mapping[str, Any], log: Callable[[str], None] = print
) -> ShardResult:
    """The job's paths on ``shard``'s share of the images, their predictions and the manifest written
    into ``config.report_dir`` (the store; its predictions written anew). The run is the whole job's
    (the emulator calibrates as the job would), only the images inferred are the share; ``values``:
    the job's options, kept for the merge."""
    store = config.report_dir
    own_files = _own_store(store, config.cache_dir)  # refused before any image is read
    policy()  # and a signing key too short to seal the manifest
    run, specs = prepare_job(config, log)
    share = shard.share(run.dataset.samples)
    part = dataclasses.replace(run.dataset, samples=share)
    _clear_store(store, own_files)
    cache = PredictionCache(store / PREDICTIONS)
    own = dataclasses.replace(run, cache=cache)
    log(f"shard {shard}: {len(share)} of {len(run.dataset.samples)} images")
    paths = []
    for spec in specs:
        with open_path(spec, own) as path:
            own.evaluate_path(path, part, True, spec.kind, spec.recorded_kind)
            paths.append(
                StoredPath(
                    name=path.name,
                    kind=spec.kind,
                    recorded=spec.recorded_kind,
                    model_file=Path(path.model_file),
                    model_sha256=path.model_sha256,
                    variant=path.variant,
                    runtime=path.runtime,
                    score_ceiling=path.score_ceiling,
                    fps=path.fps,
                    file=cache.file_for(path).name,
                    settings=run.settings,
                    cache_entries=tuple(e for e in getattr(path, "cache_entries", ()) if e != run.dataset.cache_entry),
                    made_from=tuple(getattr(path, "made_from", ())),
                )
            )
    manifest = ShardManifest(
        store=store,
        shard=shard,
        options=kept_options(values),
        model_sha256=file_sha256(config.onnx),
        hef_sha256=None if config.hailo.hef is None else file_sha256(config.hailo.hef),
        dataset_manifest=run.dataset.manifest,
        dataset_images=len(run.dataset.samples),
        settings=run.settings,
        thresholds=run.thresholds,
        calibration=calibration_note(config.hailo, run),
        paths=tuple(paths),
    )
    write_atomic(manifest.file, manifest.to_json())
    return ShardResult(manifest, len(share))


def _own_store(store: Path, cache_dir: Path) -> list[Path]:
    """The files a shard run wrote into ``store`` before (its manifest, and under predictions/ its
    marker and the prediction files it wrote), which this run replaces; refused, in one line, where
    the folder holds anything else: a run deletes nothing it did not write."""
    predictions = store / PREDICTIONS
    if predictions.resolve() == (cache_dir / PREDICTIONS).resolve():
        raise HarnessError(
            f"--report {store}: its {PREDICTIONS}/ is the prediction cache of --cache {cache_dir}; "
            "expected a folder of the shard's own (e.g. shard-1)"
        )
    own: list[Path] = []
    listed: set[str] = set()
    manifest = store / MANIFEST
    if manifest.exists() or manifest.is_symlink():
        try:
            listed = {p.file for p in ShardManifest.read(store).paths}
        except HarnessError as error:
            raise HarnessError(
                f"--report {store}: {MANIFEST} is not a shard manifest this harness wrote ({error}); it is kept: "
                "expected a folder of the shard's own"
            ) from None
        own.append(manifest)
    if not (predictions.exists() or predictions.is_symlink()):
        return own
    if predictions.is_symlink() or not predictions.is_dir():
        raise HarnessError(f"--report {store}: {predictions} is not a folder; expected the shard's own folder")
    marked = (predictions / MARKER).is_file()
    for entry in sorted(predictions.iterdir()):
        ours = entry.name == MARKER or entry.name in listed or (marked and _OWN_FILE.fullmatch(entry.name))
        if not ours or entry.is_symlink() or not entry.is_file():
            raise HarnessError(
                f"--report {store}: {entry} was not written by a shard run (it is kept); expected a folder of the "
                "shard's own, whose predictions/ holds only what a shard run wrote there"
            )
        if entry.name != MARKER:
            own.append(entry)
    return own


def _clear_store(store: Path, own: Sequence[Path]) -> None:
    """``own`` (see :func:`_own_store`) removed, the store's predictions/ made and marked as a shard's."""
    for file in own:
        file.unlink(missing_ok=True)
    predictions = store / PREDICTIONS
    predictions.mkdir(parents=True, exist_ok=True)
    marker = predictions / MARKER
    if not marker.exists():
        write_atomic(
            marker,
            "hailo-harness: a shard's store (run --shard K/N); the prediction files here are replaced when the shard "
            "runs again\n",
        )


def _frames(manifest: ShardManifest, path: StoredPath, share: Sequence[Sample]) -> dict[str, FrameResult]:
    """The frames of ``path`` in ``manifest``'s store, checked to be exactly the shard's share."""
    file = manifest.predictions(path)
    if not file.is_file():
        raise HarnessError(f"{manifest.file}: paths[{path.name}].file: {file} not found (run that shard again)")
    scan = read(file, JOURNAL)
    if scan.losses:
        raise HarnessError(f"{file}: {scan.losses[0]} (damaged; run shard {manifest.shard} again)")
    records = scan.records
    if not records or records[0].kind != KEY_RECORD or any(r.kind != BATCH_RECORD for r in records[1:]):
        raise HarnessError(
            f"{file}: expected a key record and batches of predictions (run shard {manifest.shard} again)"
        )
    frames: dict[str, FrameResult] = {}
    for record in records[1:]:
        try:
            entries = decode_batch(record.payload, path.settings.score_threshold)
        except (ValueError, UnicodeDecodeError) as error:
            raise HarnessError(f"{file}: record {record.number}: {error} (run shard {manifest.shard} again)") from None
        frames.update((e.image_sha256, e.frame) for e in entries)
    expected = {s.sha256 for s in share}
    if set(frames) != expected:
        lacking = [s.image_id for s in share if s.sha256 not in frames]
        said = f"lacks {len(lacking)} of its share (first {lacking[0]!r})" if lacking else "holds images not its share"
        raise HarnessError(
            f"{file}: shard {manifest.shard} {said}; expected exactly its {len(share)} images (run it again)"
        )
    return frames


def _fps(paths: Sequence[StoredPath], images: Sequence[int]) -> float | None:
    """One device's frames per second over the shards: every image over the seconds they took together."""
    if any(p.fps is None for p in paths):
        return None
    return sum(images) / sum(n / p.fps for n, p in zip(images, paths, strict=True) if p.fps)


def _merged(
    run: RunContext, spec: PathSpec, manifests: Sequence[ShardManifest], shares: Sequence[tuple[Sample, ...]], at: int
) -> PathResult:
    """The path at position ``at`` of every store, evaluated over the union of their frames as a run
    evaluates a path (its frames served from a prediction cache of the union)."""
    stored = [m.paths[at] for m in manifests]
    union: dict[str, FrameResult] = {}
    for m, path, share in zip(manifests, stored, shares, strict=True):
        union.update(_frames(m, path, share))
    runtimes = sorted({p.runtime for p in stored})
    facts = [dict(p.made_from) for p in stored]  # each fact as every shard's runner had it: the devices, their firmware
    keys = dict.fromkeys(k for f in facts for k in f)
    path = dataclasses.replace(
        stored[0],
        runtime="; ".join(runtimes),
        made_from=tuple((k, "; ".join(sorted({f[k] for f in facts if k in f}))) for k in keys),
        fps=_fps(stored, [len(s) for s in shares]),
        model_names=run.names,
        settings=run.settings,
    )
    with tempfile.TemporaryDirectory(prefix="hailo-harness-merge-") as folder:
        cache = PredictionCache(Path(folder))
        with cache.open(path) as file:
            for sample in run.dataset.samples:
                file.put(sample.sha256, sample.image_id, union[sample.sha256])
        merged = dataclasses.replace(run, cache=cache)
        return merged.evaluate_path(path, None, True, spec.kind, stored[0].recorded)


def merge_job(
    stores: Sequence[Path], values: Mapping[str, Any], invocation: tuple[str, ...], log: Callable[[str], None] = print
) -> JobResult:
    """The stores of every shard of one job joined: refused where they disagree (see :func:`.shard_identity.agree`),
    else the job's verdict on the union (:func:`~harness.pipeline.job.judge_job`), with the first
    store's options and ``values`` for where to gate and report (:data:`MERGE_OPTIONS`)."""
    manifests = sorted((ShardManifest.read(Path(s)) for s in stores), key=lambda m: m.shard.index)
    agree(manifests)
    first = manifests[0]
    options = option_values(first.options, first.file)
    config = job_config({**options, **{k: values.get(k) for k in MERGE_OPTIONS}}, invocation, progress=False)
    # everything the stores and the files here can be held to before any image is read
    model = file_sha256(config.onnx)
    if model != first.model_sha256:
        raise HarnessError(
            f"{first.file}: model_sha256 {first.model_sha256!r}, but {config.onnx} here is {model!r}; "
            "expected the shards' export"
        )
    specs = (REFERENCE, *config.stages, config.hailo)
    names = [s.path_name for s in specs]
    if [p.name for p in first.paths] != names:
        raise HarnessError(f"{first.file}: paths {[p.name for p in first.paths]}, expected the job's {names}")
    demo = demo_root(config.cache_dir)
    if config.dataset is None and config.images is None and not (demo / ".complete").is_file():
        raise HarnessError(
            f"--cache {config.cache_dir}: the shards ran on the demo set, which is not in it ({demo} not found); "
            "expected --cache to name the cache folder the shards ran with (a merge makes no data)"
        )
    dataset = load_dataset(config.dataset, config.split, config.cache_dir, config.images, log)
    if dataset.manifest != first.dataset_manifest:
        raise HarnessError(
            f"{first.file}: dataset.manifest {first.dataset_manifest!r}, but {config.dataset_name} here is "
            f"{dataset.manifest!r} (changed since the shards ran); expected the shards' dataset"
        )
    # The shards' resolved thresholds, given: the merge needs neither the HEF nor a replayed store.
    given = dataclasses.replace(
        config.settings, score_threshold=first.settings.score_threshold, iou_threshold=first.settings.iou_threshold
    )
    run = prepare_run(
        config.onnx,
        dataset,
        given,
        config.cache_dir,
        progress=False,
        log=log,
        max_unreadable=config.max_unreadable,
        batch=config.batch,
    )
    run = dataclasses.replace(run, thresholds=first.thresholds)
    if run.settings != first.settings:
        raise HarnessError(
            f"{first.file}: settings {first.settings.to_dict()} differ from the merge's {run.settings.to_dict()}; "
            "expected the shards' settings"
        )
    shares = [m.shard.share(run.dataset.samples) for m in manifests]
    report_folder(config.report_dir)
    seals = sorted({m.seal.state.value for m in manifests if m.seal is not None})
    log(f"merge: {len(manifests)} shards of {len(run.dataset.samples)} images (manifests {', '.join(seals)})")
    results = tuple(_merged(run, spec, manifests, shares, at) for at, spec in enumerate(specs))
    return judge_job(config, run, results, first.calibration, log)
