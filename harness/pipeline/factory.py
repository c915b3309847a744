"""The one place detection paths are built: a :class:`~harness.pipeline.spec.PathSpec` and the run
it belongs to (:class:`RunContext`: the model, the dataset, the settings, the caches) -> an open
:class:`~harness.pipeline.detect.DetectionPath`. The job, ``eval``, the doctor and the Python API
all come here."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from harness import __version__
from harness.core import defaults
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily
from harness.core.path_names import PathKind
from harness.core.settings import EvalSettings, SsdConfig
from harness.core.stage_clock import Stage, clocked
from harness.inputs.dataset import Dataset, class_map, left_out_note, require_evaluable
from harness.inputs.dataset_coco import load_coco
from harness.inputs.dataset_images import load_images
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import demo_root, demo_set
from harness.inputs.export_facts import ExportFacts, export_facts, ultralytics_facts
from harness.pipeline.backends import describe
from harness.pipeline.backends.descriptor import CompiledThresholds, OpenRunner
from harness.pipeline.backends.emulator import calibration_source as calibration_source
from harness.pipeline.backends.emulator import emulated_hef as emulated_hef
from harness.pipeline.backends.replay import shaping
from harness.pipeline.cache import PredictionCache
from harness.pipeline.detect import DecoderPath, DetectionPath, file_sha256, runner_path
from harness.pipeline.evaluate import evaluate_path
from harness.pipeline.spec import REFERENCE, JobConfig, PathSpec, SettingsSpec, thresholds_note
from harness.verdict.result import PathResult

if TYPE_CHECKING:
    from harness.backends.replay import Recording
    from harness.conformance.suite import Decoder


@dataclass(frozen=True)
class RunContext:
    """What every path of one run shares: the model's export (its class names, input size and head
    family), the dataset, the settings completed for both, the prediction cache (None: infer
    everything) and the cache folder, where progress lines go, and how many images a path infers
    together. ``facts``: the export's, read once for the whole run."""

    onnx: Path
    dataset: Dataset
    settings: EvalSettings
    names: tuple[str, ...]
    family: HeadFamily
    facts: ExportFacts
    cache_dir: Path
    cache: PredictionCache | None
    thresholds: str  # where the settings' thresholds come from, in words
    progress: bool | None = None
    log: Callable[[str], None] = print
    batch: int = defaults.BATCH

    @property
    def is_demo(self) -> bool:
        return Path(self.dataset.root).resolve() == demo_root(self.cache_dir).resolve()

    def evaluate_path(
        self,
        path: DetectionPath,
        dataset: Dataset | None = None,
        cached: bool = True,
        kind: PathKind | None = None,
        recorded: PathKind | None = None,
    ) -> PathResult:
        """``path`` over the dataset, with a line before and after it (and a bar on a terminal);
        ``cached``: predictions from and into the prediction cache; ``kind`` and ``recorded``: what
        made its outputs (see :func:`~harness.pipeline.evaluate.evaluate_path`)."""
        dataset = dataset or self.dataset
        self.log(f"{path.name}: predicting {len(dataset.samples)} images")
        start = time.monotonic()
        cache = self.cache if cached else None
        result = evaluate_path(path, dataset, cache, self.progress, batch=self.batch, kind=kind, recorded=recorded)
        hits = result.provenance.from_cache
        said = f", {hits} from the prediction cache" if hits else ""
        self.log(f"{path.name}: {len(dataset.samples)} images in {time.monotonic() - start:.1f} s{said}")
        return result


@clocked(Stage.DATASET)
def load_dataset(
    source: str | os.PathLike[str] | None,
    split: str = defaults.SPLIT,
    cache_dir: Path = defaults.CACHE_DIR,
    images: str | os.PathLike[str] | None = None,
    log: Callable[[str], None] | None = None,
) -> Dataset:
    """A YOLO dataset (yaml or folder), or a COCO JSON with its ``images`` folder; ``images`` alone:
    a folder of images without labels (a label-free run); neither: the demo validation set,
    generated into the cache (``log`` is told when it is)."""
    if source is not None and Path(source).suffix.lower() == ".json":
        if images is None:
            raise HarnessError(f"--dataset {source}: a COCO annotations file needs --images DIR (its image folder)")
        if split != defaults.SPLIT:
            raise HarnessError(f"--split {split}: a COCO annotations file holds one split; give that split's file")
        return load_coco(source, images)
    if images is not None:
        if source is not None:
            raise HarnessError(f"--images {images}: belongs to a COCO --dataset annotations.json, not to {source}")
        return load_images(images)
    if source is not None:
        return load_yolo(source, split)
    folder, entry = demo_set(cache_dir, log)
    return dataclasses.replace(load_yolo(folder, split), cache_entry=entry)


def prepare_run(
    onnx: str | os.PathLike[str],
    dataset: Dataset,
    settings: SettingsSpec | None = None,
    cache_dir: Path = defaults.CACHE_DIR,
    *,
    use_cache: bool = True,
    progress: bool | None = None,
    log: Callable[[str], None] = print,
    max_unreadable: float = defaults.MAX_UNREADABLE,
    paths: Sequence[PathSpec] = (),
    batch: int = defaults.BATCH,
    facts: ExportFacts | None = None,
) -> RunContext:
    """The run of ``onnx`` on ``dataset``: class names from the export's metadata, matched to the
    dataset's by name (``settings.map_class`` maps the ones named differently), thresholds not given
    taken from the NMS compiled into the first of ``paths`` whose model has one (:class:`SettingsSpec`). A
    dataset with more unreadable images than ``max_unreadable`` allows, or without one labelled
    object, is refused. ``facts``: the export's, where the caller has read them (:func:`preflight`),
    else read here."""
    require_evaluable(dataset, max_unreadable)
    onnx, settings = Path(onnx), settings or SettingsSpec()
    if facts is None or facts.ssd != settings.ssd:  # an SSD export's heads: found with the run's config
        facts = model_facts(onnx, cache_dir, keep=use_cache, ssd=settings.ssd)  # --no-cache: nothing is kept
    input_hw, names = facts.input_hw, facts.names
    if names is None:
        raise HarnessError(f"--onnx {str(onnx)!r}: no class names in its metadata ('names'), expected an export")
    if not dataset.labelled:  # images without labels: their classes are the model's
        dataset = dataclasses.replace(dataset, names=names)
    mapping = class_map(dataset.names, names, dict(settings.map_class) or None)  # refused now, not per path
    # Without an explicit map the evaluation matches the names again for each dataset it is given.
    given = tuple(int(i) for i in mapping) if settings.map_class else ()
    cache = PredictionCache(Path(cache_dir) / "predictions") if use_cache else None
    compiled = next(filter(None, (compiled_thresholds(p, log) for p in paths)), None)
    resolved = settings.resolve(input_hw, given, compiled)
    note = thresholds_note(settings, resolved, compiled)
    if compiled is not None:
        log(f"thresholds: {note}")
    left_out = left_out_note(dataset, resolved.class_map)
    if left_out:  # said once for every surface: run, eval, the plugin's job and the doctor
        log(left_out)
    family = facts.family or facts.require_heads()[0]
    return RunContext(onnx, dataset, resolved, names, family, facts, Path(cache_dir), cache, note, progress, log, batch)


@clocked(Stage.EXPORT_FACTS)
def model_facts(model: Path, cache_dir: Path | None, keep: bool = True, ssd: SsdConfig | None = None) -> ExportFacts:
    """The facts of the model a run evaluates: its ONNX export's (kept in the cache folder: a rerun loads
    no model; an SSD export's heads found with ``ssd``, its config), or, given a HEF (or its folder) that
    Ultralytics exported, what the export's files say."""
    if model.is_dir() or model.suffix == ".hef":
        from harness.inputs.hef.ultralytics import export_of, hef_of

        export = export_of(hef_of(model))
        if export is None:
            raise HarnessError(f"{model}: a HEF without its Ultralytics export's metadata.yaml, expected --onnx M.onnx")
        if ssd is not None:
            raise HarnessError(f"--ssd-config: {model} is an Ultralytics export, expected an SSD export's ONNX")
        return ultralytics_facts(export)
    return export_facts(model, cache_dir, keep, ssd)


def compiled_thresholds(spec: PathSpec, log: Callable[[str], None] = print) -> CompiledThresholds | None:
    """The NMS thresholds compiled into ``spec``'s model: a HEF's NMS op, the NMS config beside a
    HAR, the settings a replayed NMS buffer was recorded under; None where the path has none (the
    float export, an emulated HEF: its NMS takes the run's thresholds) or where the harness cannot
    read its HEF (``log`` is told: HailoRT may still run it)."""
    return describe(spec.backend).compiled(spec, log)


def calibration_note(spec: PathSpec, run: RunContext) -> str:
    """What the path was calibrated on, in words, for the report (and what the DFC would make of it)."""
    return describe(spec.backend).calibration(spec, run)


def preflight(config: JobConfig) -> ExportFacts | None:
    """Refuse a job before anything runs where it can be known without the data: each path's options,
    and what the Hailo path's backend refuses beforehand (a replayed store of another model, an export
    the emulator cannot take): one clear error, not one failure per gate. The export's facts where the
    backend read them (hand them to :func:`prepare_run`), else None."""
    for spec in (REFERENCE, *config.stages, config.hailo):
        spec.check_files()
    hailo = describe(config.hailo.backend).preflight
    return None if hailo is None else hailo(config.hailo, config.onnx, config.cache_dir, config.settings.ssd)


def check(spec: PathSpec, settings: EvalSettings) -> None:
    """Refuse ``spec`` before anything runs: options its backend does not take or lacks, and what its
    backend refuses under ``settings`` (a HAR whose compiled NMS thresholds are not the evaluation's)."""
    spec.check_files()
    checked = describe(spec.backend).check
    if checked is not None:
        checked(spec, settings)


@contextmanager
def open_path(spec: PathSpec, run: RunContext, settings: EvalSettings | None = None) -> Iterator[DetectionPath]:
    """``spec`` as an open detection path of ``run`` (under ``settings``, default the run's); its
    runner is closed afterwards."""
    settings = settings or run.settings
    own_path = describe(spec.backend).own_path
    if own_path is not None and spec.decoder is None:
        check(spec, settings)
        with own_path(run, settings) as path:
            yield path
        return
    with open_runner(spec, run, settings) as opened:
        yield path_over(opened, spec, run, settings)


@contextmanager
def open_runner(spec: PathSpec, run: RunContext, settings: EvalSettings | None = None) -> Iterator[OpenRunner]:
    """The runner of ``spec`` fed like a HEF (the float export: cut at its heads), recording its
    outputs into ``spec.record`` if asked; closed afterwards."""
    settings = settings or run.settings
    check(spec, settings)
    with ExitStack() as stack:
        opened = describe(spec.backend).open(spec, run, settings, stack)
        if spec.record is not None:
            from harness.backends.replay import RecordingRunner  # only a recording run writes a store

            recording = _recording(spec, opened, settings, run.onnx)
            recorder = stack.enter_context(RecordingRunner(opened.runner, spec.record, recording))
            run.log(f"{spec.path_name}: recording its outputs into {spec.record}")
            opened = OpenRunner(recorder, opened.model_file, opened.variant, opened.model_sha256)
        yield opened


def _recording(spec: PathSpec, opened: OpenRunner, settings: EvalSettings, export: Path) -> Recording:
    from harness.backends.replay import Recording

    runner = opened.runner
    return Recording(
        path=spec.path_name,
        emulated=spec.kind is not PathKind.DEVICE,
        runtime=runner.label,
        model_file=str(opened.model_file),
        model_sha256=opened.model_sha256 or file_sha256(opened.model_file),
        export_file=str(export),
        export_sha256=file_sha256(export),
        inputs=tuple(runner.input_specs.values()),
        outputs=tuple(runner.output_specs.values()),
        shaping=shaping(settings, runner.output_specs.values()),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        harness_version=__version__,
    )


def _decoder_tag(decoder: Decoder) -> str:
    """A host decoder's name and a digest of its module's source: an edit to it is another cache entry."""
    name = getattr(decoder, "__name__", "decoder")
    try:
        source = inspect.getsourcefile(decoder)
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16] if source else "unknown"
    except (TypeError, OSError):
        digest = "unknown"
    return f"{name}@{digest}"


def path_over(
    opened: OpenRunner, spec: PathSpec, run: RunContext, settings: EvalSettings | None = None
) -> DetectionPath:
    """The detection path over an open runner: ``spec.decoder`` over its outputs, else the harness's
    decoding of its NMS buffer or its raw heads."""
    settings, name = settings or run.settings, spec.path_name
    if spec.decoder is not None:
        variant = f"{opened.variant}+{_decoder_tag(spec.decoder)}"
        return DecoderPath(
            opened.runner,
            settings,
            opened.model_file,
            spec.decoder,
            name,
            run.names,
            variant,
            run.facts.anchors,
            model_sha256=opened.model_sha256,
            ssd=run.facts.ssd,
            family=run.family,
        )
    return runner_path(
        opened.runner,
        settings,
        opened.model_file,
        name,
        run.names,
        opened.variant,
        run.family,
        run.facts.anchors,
        model_sha256=opened.model_sha256,
        ssd=run.facts.ssd,
    )


def evaluate_spec(spec: PathSpec, run: RunContext, dataset: Dataset | None = None) -> PathResult:
    """``spec`` evaluated on the run's dataset (or ``dataset``, a part of it); a recording path
    infers every image (the prediction cache would leave the store without them)."""
    with open_path(spec, run) as path:
        return run.evaluate_path(path, dataset, spec.record is None, spec.kind, spec.recorded_kind)
