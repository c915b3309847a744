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
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from harness import __version__
from harness.backends.base import Runner
from harness.backends.emulator import EmulatedHef, EmulatorOptions, EmulatorRunner, build_emulated_hef, check_export
from harness.backends.emulator.build import export_check
from harness.backends.replay import Recording, RecordingRunner, ReplayRunner, StoreError, read_recording
from harness.core import defaults
from harness.core.errors import HarnessError, HefError
from harness.core.head_family import HeadFamily
from harness.core.path_names import HAILO
from harness.core.settings import EvalSettings
from harness.core.specs import OutputSpec
from harness.inputs.calibration import CalibrationSource
from harness.inputs.dataset import Dataset, class_map, load_coco, load_images, load_yolo, require_evaluable
from harness.inputs.demo import IN_DOMAIN, OFF_DOMAIN, demo_data, demo_root, demo_split
from harness.inputs.export_facts import ExportFacts, export_facts, record_passed, ultralytics_facts
from harness.pipeline.cache import PredictionCache
from harness.pipeline.detect import DecoderPath, DetectionPath, OnnxPath, file_sha256, runner_path
from harness.pipeline.evaluate import evaluate_path
from harness.pipeline.spec import (
    REFERENCE,
    Backend,
    CompiledThresholds,
    JobConfig,
    PathSpec,
    SettingsSpec,
    thresholds_note,
)
from harness.verdict.result import PathResult

if TYPE_CHECKING:
    from harness.conformance.suite import Decoder


@dataclass(frozen=True)
class RunContext:
    """What every path of one run shares: the model's export (its class names, input size and head
    family), the dataset, the settings completed for both, the prediction cache (None: infer
    everything) and the cache folder, where progress lines go, and how many images a path infers
    together. ``facts``: the export's, as the paths need them before inferring (read from the
    model where None)."""

    onnx: Path
    dataset: Dataset
    settings: EvalSettings
    names: tuple[str, ...]
    family: HeadFamily
    cache_dir: Path
    cache: PredictionCache | None
    thresholds: str  # where the settings' thresholds come from, in words
    progress: bool | None = None
    log: Callable[[str], None] = print
    batch: int = defaults.BATCH
    facts: ExportFacts | None = None

    @property
    def is_demo(self) -> bool:
        return Path(self.dataset.root).resolve() == demo_root(self.cache_dir).resolve()

    def evaluate(self, path: DetectionPath, dataset: Dataset | None = None, cached: bool = True) -> PathResult:
        """``path`` over the dataset, with a line before and after it (and a bar on a terminal);
        ``cached``: predictions from and into the prediction cache."""
        dataset = dataset or self.dataset
        self.log(f"{path.name}: predicting {len(dataset.samples)} images")
        start = time.monotonic()
        result = evaluate_path(path, dataset, self.cache if cached else None, self.progress, batch=self.batch)
        hits = result.provenance.from_cache
        said = f", {hits} from the prediction cache" if hits else ""
        self.log(f"{path.name}: {len(dataset.samples)} images in {time.monotonic() - start:.1f} s{said}")
        return result


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
    return load_yolo(source if source is not None else demo_data(cache_dir, log), split)


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
) -> RunContext:
    """The run of ``onnx`` on ``dataset``: class names from the export's metadata, matched to the
    dataset's by name (``settings.map_class`` maps the ones named differently), thresholds not given
    taken from the NMS compiled into the first of ``paths`` whose model has one (:class:`SettingsSpec`). A
    dataset with more unreadable images than ``max_unreadable`` allows, or without one labelled
    object, is refused."""
    require_evaluable(dataset, max_unreadable)
    onnx, settings = Path(onnx), settings or SettingsSpec()
    facts = model_facts(onnx, cache_dir if use_cache else None)  # --no-cache: nothing kept
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
    family = facts.family or _heads_refused(onnx)
    return RunContext(
        onnx, dataset, resolved, names, family, Path(cache_dir), cache, note, progress, log, batch, facts=facts
    )


def model_facts(model: Path, cache_dir: Path | None) -> ExportFacts:
    """The facts of the model a run evaluates: its ONNX export's (kept in the cache folder: a rerun loads
    no model), or, given a HEF (or its folder) that Ultralytics exported, what the export's files say."""
    if model.is_dir() or model.suffix == ".hef":
        from harness.inputs.hef.ultralytics import export_of, hef_of

        export = export_of(hef_of(model))
        if export is None:
            raise HarnessError(f"{model}: a HEF without its Ultralytics export's metadata.yaml, expected --onnx M.onnx")
        return ultralytics_facts(export)
    return export_facts(model, cache_dir)


def _heads_refused(onnx: Path) -> HeadFamily:
    """The error :func:`~harness.inputs.onnx_graph.export_heads` names for an export whose heads its
    facts say were not found."""
    from harness.inputs.onnx_graph import export_heads, load_model

    return export_heads(load_model(onnx)).family  # raises: its facts were read by the same code


def compiled_thresholds(spec: PathSpec, log: Callable[[str], None] = print) -> CompiledThresholds | None:
    """The NMS thresholds compiled into ``spec``'s model: a HEF's NMS op, the NMS config beside a
    HAR, the settings a replayed NMS buffer was recorded under; None where the path has none (the
    float export, an emulated HEF: its NMS takes the run's thresholds) or where the harness cannot
    read its HEF (``log`` is told: HailoRT may still run it)."""
    if spec.backend is Backend.HAILORT and spec.hef is not None:
        from harness.inputs.hef.reader import read_hef

        try:
            groups = read_hef(spec.hef).network_groups
        except HefError as error:
            log(f"thresholds: cannot read the NMS compiled into {spec.hef} ({error}); the defaults apply")
            return None
        nms = groups[0].nms if groups else None
        if nms is None or nms.bbox_decoding_only:
            return None
        return CompiledThresholds(nms.score_threshold, nms.iou_threshold, f"NMS op compiled into {spec.hef}")
    if spec.backend is Backend.DFC and spec.har is not None:
        from harness.backends.dfc import compiled_nms_thresholds  # each backend imported where it is used

        found = compiled_nms_thresholds(spec.har)
        return CompiledThresholds(*found, f"NMS config beside {spec.har}") if found else None
    if spec.backend is Backend.REPLAY and spec.replay is not None:
        recording = read_recording(spec.replay)
        shaping = recording.shaping
        if not any(o.is_nms for o in recording.outputs) or "score_threshold" not in shaping:
            return None
        score, iou = float(shaping["score_threshold"]), float(shaping["iou_threshold"])
        return CompiledThresholds(score, iou, f"NMS buffer recorded in {spec.replay}")
    return None


def calibration_source(spec: PathSpec, run: RunContext) -> tuple[CalibrationSource, int]:
    """The emulator's calibration images and how many of them: a folder, the demo set's named
    split, or by default the demo's in-domain frames on the demo set and the evaluated images
    themselves on any other (all of them where there are fewer than the count)."""
    if spec.calibration in (IN_DOMAIN, OFF_DOMAIN) or (spec.calibration is None and run.is_demo):
        return demo_split(run.cache_dir, spec.calibration or IN_DOMAIN), spec.calibration_count
    if spec.calibration is None:
        images = [s.path for s in run.dataset.samples]
        return images, min(spec.calibration_count, len(images))
    folder = Path(spec.calibration)
    if not folder.is_dir():
        raise HarnessError(f"--calibration {folder}: not a folder of images (or {IN_DOMAIN!r} / {OFF_DOMAIN!r})")
    return folder, spec.calibration_count


def calibration_note(spec: PathSpec, run: RunContext) -> str:
    """What the path was calibrated on, in words, for the report (and what the DFC would make of it)."""
    if spec.backend is Backend.EMULATOR:
        source, count = calibration_source(spec, run)
        if isinstance(source, list):
            note = f"the first {count} of the evaluated images (the emulator's quantization ranges)"
        else:
            named = (
                spec.calibration if spec.calibration in (IN_DOMAIN, OFF_DOMAIN) else IN_DOMAIN if run.is_demo else None
            )
            where = f"the demo set's {named} frames" if named else "the folder"
            note = f"{count} images of {where} `{source}` (the emulator's quantization ranges)"
        from harness.backends.dfc import calibration_shortfall

        shortfall = calibration_shortfall(count)
        return f"{note}; a HEF compiled from them: {shortfall}" if shortfall else note
    if spec.backend is Backend.DFC:
        return f"the calibration compiled into {spec.har} (a HAR does not record its images)"
    if spec.backend is Backend.HAILORT:
        from harness.inputs.hef.ultralytics import export_of

        export = export_of(spec.hef) if spec.hef is not None else None
        said = f"; its Ultralytics export says {export.calibration}" if export and export.calibration else ""
        return f"the calibration compiled into {spec.hef} (a HEF does not record its images{said})"
    return "none (the float export)"


def emulated_hef(spec: PathSpec, run: RunContext) -> EmulatedHef:
    """The emulated HEF of ``spec`` (cached by content in the run's cache folder). The class sigmoid
    and HailoRT's NMS op go in as asked where the head family's HEF has them at all: a YOLO26 HEF
    has neither (:class:`~harness.core.head_family.HeadFamily`)."""
    source, count = calibration_source(spec, run)
    host = run.family.host_postprocess
    options = EmulatorOptions(
        calibration_count=count,
        sigmoid_inside=spec.sigmoid_inside and not host,
        nms=spec.hef_nms and not host,
        score_threshold=run.settings.score_threshold,
        iou_threshold=run.settings.iou_threshold,
        max_proposals_per_class=run.settings.max_per_class,
    )
    sha256 = run.facts.sha256 if run.facts is not None else None
    return build_emulated_hef(
        run.onnx, source, options, run.cache_dir / "emulator", progress=run.log, onnx_sha256=sha256
    )


def preflight(config: JobConfig) -> None:
    """Refuse a job before anything runs where it can be known without the data: each path's options,
    a replayed store of another model, and an export the emulator cannot take (one clear error, not
    one failure per gate)."""
    for spec in (REFERENCE, *config.stages, config.hailo):
        spec.validate()
        spec.check_files()
    if config.hailo.backend is Backend.REPLAY and config.hailo.replay is not None:
        _check_replayed_model(config.hailo, read_recording(config.hailo.replay), config.onnx)
    if config.hailo.backend is Backend.EMULATOR:
        options = EmulatorOptions(sigmoid_inside=config.hailo.sigmoid_inside)
        facts = export_facts(config.onnx, config.cache_dir)  # the export checked once per content
        passed = export_check(options)
        if passed not in facts.passed:
            check_export(config.onnx, options)
            record_passed(facts, passed, config.cache_dir)


def check(spec: PathSpec, settings: EvalSettings) -> None:
    """Refuse ``spec`` before anything runs: options its backend does not take or lacks, and a HAR
    whose compiled NMS thresholds are not the evaluation's (every stage would differ by them alone)."""
    spec.validate()
    spec.check_files()
    if spec.backend is Backend.DFC and spec.har is not None:
        from harness.backends.dfc import check_compiled_thresholds

        check_compiled_thresholds(spec.har, settings.score_threshold, settings.iou_threshold)


@dataclass(frozen=True)
class OpenRunner:
    """A backend's runner fed like a HEF, the model file it runs and what else fixes its outputs
    (the cache variant)."""

    runner: Runner
    model_file: Path
    variant: str


@contextmanager
def open_path(spec: PathSpec, run: RunContext, settings: EvalSettings | None = None) -> Iterator[DetectionPath]:
    """``spec`` as an open detection path of ``run`` (under ``settings``, default the run's); its
    runner is closed afterwards."""
    settings = settings or run.settings
    if spec.backend is Backend.ONNX and spec.decoder is None:
        check(spec, settings)
        with OnnxPath(run.onnx, settings, run.names, facts=run.facts) as path:
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
        opened = _open_runner(spec, run, settings, stack)
        if spec.record is not None:
            recording = _recording(spec, opened, settings, run.onnx)
            recorder = stack.enter_context(RecordingRunner(opened.runner, spec.record, recording))
            run.log(f"{spec.path_name}: recording its outputs into {spec.record}")
            opened = OpenRunner(recorder, opened.model_file, opened.variant)
        yield opened


def _open_runner(spec: PathSpec, run: RunContext, settings: EvalSettings, stack: ExitStack) -> OpenRunner:
    if spec.backend is Backend.ONNX:
        from harness.backends.onnx.runner import FloatHeadsRunner  # onnx and onnxruntime: where they run

        return OpenRunner(stack.enter_context(FloatHeadsRunner(run.onnx)), run.onnx, "float heads")
    if spec.backend is Backend.EMULATOR:
        hef = emulated_hef(spec, run)
        run.log(f"Hailo path: {hef.label}")
        return OpenRunner(stack.enter_context(EmulatorRunner(hef)), run.onnx, hef.content_hash)
    if spec.backend is Backend.HAILORT:
        assert spec.hef is not None
        devices = spec.hailo_devices or None
        from harness.backends.hailort import HailoRTRunner

        device = stack.enter_context(HailoRTRunner(spec.hef, format_type=spec.hailo_format, device_ids=devices))
        run.log(f"Hailo path: {device.label}")
        # the two formats dequantize in different places: cached apart
        return OpenRunner(device, spec.hef, spec.hailo_format.name.lower())
    if spec.backend is Backend.REPLAY:
        assert spec.replay is not None
        replay = stack.enter_context(ReplayRunner(spec.replay))
        _check_replay(spec, replay.recording, settings, run.onnx)
        run.log(f"Hailo path: {replay.label}")
        return OpenRunner(replay, spec.replay, "")
    assert spec.har is not None
    from harness.backends.dfc import HarRunner

    har = stack.enter_context(HarRunner(spec.har, spec.stage, settings.input_hw))
    run.log(f"stage {spec.stage.value}: {har.label}")
    return OpenRunner(har, spec.har, "")


def _shaping(settings: EvalSettings, outputs: Iterable[OutputSpec]) -> dict[str, object]:
    """The settings that shape a runner's outputs: the input's size and fit, and the thresholds of an
    NMS compiled into the model (an emulated HEF's are the run's)."""
    shaping: dict[str, object] = {"input_hw": list(settings.input_hw), "preprocess": settings.preprocess.value}
    if any(o.is_nms for o in outputs):
        shaping |= {k: getattr(settings, k) for k in ("score_threshold", "iou_threshold", "max_per_class")}
    return shaping


def _recording(spec: PathSpec, opened: OpenRunner, settings: EvalSettings, export: Path) -> Recording:
    runner = opened.runner
    return Recording(
        path=spec.path_name,
        emulated=spec.path_name != HAILO,
        runtime=runner.label,
        model_file=str(opened.model_file),
        model_sha256=file_sha256(opened.model_file),
        export_file=str(export),
        export_sha256=file_sha256(export),
        inputs=tuple(runner.input_specs.values()),
        outputs=tuple(runner.output_specs.values()),
        shaping=_shaping(settings, runner.output_specs.values()),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        harness_version=__version__,
    )


def _check_replay(spec: PathSpec, recording: Recording, settings: EvalSettings, export: Path) -> None:
    """Refuse a store that does not belong to this run, naming the field: another model (see
    :func:`_check_replayed_model`), or settings that shape the outputs otherwise."""
    _check_replayed_model(spec, recording, export)
    expected = _shaping(settings, recording.outputs)
    differ = {k: (v, expected.get(k)) for k, v in recording.shaping.items() if expected.get(k) != v}
    if differ:
        said = "; ".join(f"{k} recorded {was}, this run {now}" for k, (was, now) in differ.items())
        raise StoreError(f"--replay {spec.replay}: recorded under other settings that shape its outputs: {said}")


def _check_replayed_model(spec: PathSpec, recording: Recording, export: Path) -> None:
    """Refuse a store recorded from another model than this run's: the HEF where ``--hef`` is
    given, else the run's ``export`` (the one the recording run was given), naming both and their
    sha256s."""
    recorded = f"recorded from {recording.model_file} (sha256 {recording.model_sha256[:16]})"
    if recording.export_sha256 != recording.model_sha256:
        recorded += f" in a run of {recording.export_file} (sha256 {recording.export_sha256[:16]})"
    if spec.hef is not None:
        model, wanted, this = spec.hef, recording.model_sha256, ", not from --hef"
    else:
        model, wanted, this = export, recording.export_sha256, "; this run's model is"
    sha256 = file_sha256(model)
    if sha256 != wanted:
        raise StoreError(
            f"--replay {spec.replay}: {recorded}{this} {model} (sha256 {sha256[:16]}): a store serves only the "
            "model it was recorded from; record this one into a new store (--record NEW.rec)"
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
        return DecoderPath(opened.runner, settings, opened.model_file, spec.decoder, name, run.names, variant)
    return runner_path(opened.runner, settings, opened.model_file, name, run.names, opened.variant, run.family)


def evaluate(spec: PathSpec, run: RunContext, dataset: Dataset | None = None) -> PathResult:
    """``spec`` evaluated on the run's dataset (or ``dataset``, a part of it); a recording path
    infers every image (the prediction cache would leave the store without them)."""
    with open_path(spec, run) as path:
        return run.evaluate(path, dataset, cached=spec.record is None)
