"""What a run is asked to do, as data: which detection path (:class:`PathSpec`) under which
settings (:class:`SettingsSpec`). Every surface (the commands, the pytest plugin, the doctor, the
Python API) describes its paths with these and hands them to :mod:`harness.pipeline.factory`;
none builds a runner or checks a backend's options itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core import defaults
from harness.core.errors import HarnessError
from harness.core.path_names import ONNX, EmulationStage, PathKind
from harness.core.settings import EvalSettings, MetricProtocol, NmsMode, Preprocess, SsdConfig
from harness.core.specs import FormatType
from harness.inputs.demo import DEMO_DATASET_NAME, DEMO_ONNX, SHIPPED_GOLDEN
from harness.pipeline.backends import describe, refusal
from harness.pipeline.backends.descriptor import Backend, CompiledThresholds
from harness.verdict.gate_id import GateId, baseline_kinds

if TYPE_CHECKING:
    from harness.conformance.suite import Decoder


@dataclass(frozen=True)
class PathSpec:
    """One detection path of a model (its ONNX export is the run's): a backend and what it needs.

    ``calibration`` (emulator): a folder of images, or ``in-domain`` / ``off-domain`` (the demo
    set's splits); None: the demo's in-domain frames on the demo set, else the dataset's own
    images. ``sigmoid_inside`` / ``hef_nms`` (emulator): the class sigmoid and HailoRT's NMS op
    compiled in, as a HEF from a model script with both; ``bbox_only`` (emulator): that NMS op compiled
    ``bbox_decoding_only`` instead, the NMS left to the host. ``decoder``: a host decoder with the
    harness decoder's signature over the raw head outputs instead of the harness's own decoding.
    ``record``: an output store the path's raw outputs are written to; ``replay`` (backend replay):
    the store to serve them from (with ``hef``: the HEF they must have been recorded from).

    A spec is checked once, when it is made: one of options its backend does not take, or lacks
    options it needs, is never made (a :class:`HarnessError` naming them); what lies on disk is
    checked by :meth:`check_files` before a run.
    """

    backend: Backend = Backend.ONNX
    hef: Path | None = None
    har: Path | None = None
    stage: EmulationStage = EmulationStage.QUANTIZED
    calibration: str | None = None
    calibration_count: int = defaults.CALIBRATION_COUNT
    sigmoid_inside: bool = True
    hef_nms: bool = True
    bbox_only: bool = False
    hailo_devices: tuple[str, ...] = ()
    output_bits: int | None = None  # emulator: the raw head outputs' bits (None: the head family's)
    hailo_format: FormatType = FormatType.FLOAT32
    decoder: Decoder | None = None
    record: Path | None = None
    replay: Path | None = None

    @property
    def path_name(self) -> str:
        """The name results, baselines and gates of this path carry (a replay: the recorded path's)."""
        return describe(self.backend).path_name(self)

    @property
    def kind(self) -> PathKind:
        """What makes this path's outputs (its backend's :class:`~harness.core.path_names.PathKind`)."""
        return describe(self.backend).kind

    @property
    def recorded_kind(self) -> PathKind | None:
        """A replay's: the kind of the path that recorded its outputs, as the store says; else None."""
        recorded = describe(self.backend).recorded
        return recorded(self) if recorded is not None else None

    def __post_init__(self) -> None:
        refused = refusal(self)
        if refused is not None:
            raise HarnessError(refused)

    def check_files(self) -> None:
        """Refuse, naming the option, a model file or store that is not there, or a store to record
        into that is a folder (before any work)."""
        for flag, given in (("--hef", self.hef), ("--har", self.har), ("--replay", self.replay)):
            if given is not None and not Path(given).is_file():
                found = "a folder" if Path(given).is_dir() else "nothing"
                raise HarnessError(f"{flag} {given}: expected a file, found {found}")
        if self.record is not None and self.record.exists() and not self.record.is_file():
            raise HarnessError(f"--record {self.record}: expected a store file, found a folder")


@dataclass(frozen=True)
class SettingsSpec:
    """The evaluation settings a user chose; the model's input size, the class map by name and the
    thresholds compiled into the Hailo path's model complete them into
    :class:`~harness.core.settings.EvalSettings` (see the factory).

    A threshold left None is the compiled one where the Hailo path has an NMS compiled in (its
    buffer holds nothing below it: every path is evaluated there, the commonest false alarm being
    the float model at 0.001 against a HEF at 0.25), else the default."""

    score_threshold: float | None = None
    iou_threshold: float | None = None
    max_per_class: int = defaults.MAX_PER_CLASS
    max_total: int | None = None  # None, with nms_mode and preprocess: the metric's protocol's
    nms_mode: NmsMode | None = None
    preprocess: Preprocess | None = None
    map_class: tuple[tuple[str, str], ...] = ()  # (dataset class name, model class name)
    metric: MetricProtocol = MetricProtocol.COCO
    # An SSD export's anchors and box coding (--ssd-config): with them alone its heads are found and decoded.
    ssd: SsdConfig | None = None

    def __post_init__(self) -> None:
        """One target per dataset class: a class mapped twice is refused naming both (the evaluation
        would keep one of them silently)."""
        seen: dict[str, str] = {}
        for dataset_name, model_name in self.map_class:
            if dataset_name in seen and seen[dataset_name] != model_name:
                first, second = (f"--map-class {dataset_name}={m}" for m in (seen[dataset_name], model_name))
                raise HarnessError(
                    f"{first} and {second}: dataset class {dataset_name!r} mapped twice, expected one "
                    "--map-class per dataset class"
                )
            seen.setdefault(dataset_name, model_name)

    def resolve(
        self, input_hw: tuple[int, int], class_map: tuple[int, ...], compiled: CompiledThresholds | None = None
    ) -> EvalSettings:
        protocol = self.metric.protocol  # what the run leaves open, its metric's protocol fills
        score = _first(self.score_threshold, compiled.score_threshold if compiled else None, protocol.score_threshold)
        iou = _first(self.iou_threshold, compiled.iou_threshold if compiled else None, protocol.iou_threshold)
        return EvalSettings(
            input_hw=input_hw,
            score_threshold=defaults.SCORE_THRESHOLD if score is None else score,
            iou_threshold=defaults.IOU_THRESHOLD if iou is None else iou,
            max_per_class=self.max_per_class,
            max_total=protocol.max_total if self.max_total is None else self.max_total,
            nms_mode=protocol.nms_mode if self.nms_mode is None else self.nms_mode,
            preprocess=protocol.preprocess if self.preprocess is None else self.preprocess,
            class_map=class_map,
            metric=self.metric,
        )


def _first(*values: float | None) -> float | None:
    """The first value given (a threshold of 0 counts)."""
    return next((v for v in values if v is not None), None)


def thresholds_note(settings: SettingsSpec, resolved: EvalSettings, compiled: CompiledThresholds | None) -> str:
    """Where the evaluation's thresholds come from, in words, for the log and the report."""
    taken = [n for n in ("score_threshold", "iou_threshold") if getattr(settings, n) is None]
    values = f"score threshold {resolved.score_threshold:g}, IoU threshold {resolved.iou_threshold:g}"
    if compiled is None:
        source = (
            f"--metric {settings.metric.value}'s protocol"
            if settings.metric.protocol.score_threshold
            else "the defaults"
        )
        return f"{values} ({source if taken else 'as given'})"
    if not taken:
        return (
            f"{values} as given; {compiled.source} keeps score >= {compiled.score_threshold:g}: below it the "
            "Hailo path has nothing to match"
        )
    words = " and ".join(n.replace("_", " ") for n in taken)
    return f"{values}: every path evaluated at the {words} {compiled.source} (give --score-threshold to choose another)"


def golden_roots(golden_root: Path, onnx: Path) -> tuple[Path, ...]:
    """Where a model's baselines are read: the project's folder, then, for the demo model, the
    baselines shipped with the package (a blessing writes to the project's folder only)."""
    return (golden_root, SHIPPED_GOLDEN) if Path(onnx).resolve() == DEMO_ONNX else (golden_root,)


REFERENCE = PathSpec(Backend.ONNX)  # the float export: what every other path is held against


@dataclass(frozen=True)
class JobConfig:
    """A job, as data: the model's export, the labelled set (None: the demo's), the Hailo path,
    an optional optimized HAR whose DFC stages run too, the settings, where baselines, reports
    and caches live, and how many images every path infers together (``batch``)."""

    onnx: Path = DEMO_ONNX
    dataset: Path | None = None
    images: Path | None = None  # the image folder of a COCO dataset
    split: str = defaults.SPLIT
    max_unreadable: float = defaults.MAX_UNREADABLE
    hailo: PathSpec = field(default_factory=lambda: PathSpec(Backend.EMULATOR))
    har: Path | None = None
    settings: SettingsSpec = field(default_factory=SettingsSpec)
    golden_root: Path = defaults.GOLDEN_DIR
    report_dir: Path = defaults.REPORT_DIR
    cache_dir: Path = defaults.CACHE_DIR
    update_golden: bool = False
    accept_weak_baseline: bool = False  # blessing: keep baselines whose gates cannot fail, said by each gate
    release: str | None = None  # blessing: the release it signs off (--release), kept in the blessed history
    pdf: bool = False  # the reports: report.pdf too (--pdf: headless Chromium prints the HTML)
    stage_drop: float = defaults.STAGE_DROP  # the stage gate's floor: the most mAP@0.5 a DFC stage may lose
    batch: int = defaults.BATCH
    bless_token: str | None = None  # one per test run: its pytest-xdist workers bless the baselines once
    invocation: tuple[str, ...] = ("hailo-harness", "run")
    progress: bool | None = None

    @property
    def stages(self) -> tuple[PathSpec, ...]:
        """The HAR's emulation stages, fp_optimized then quantized."""
        if self.har is None:
            return ()
        return tuple(PathSpec(Backend.DFC, har=self.har, stage=stage) for stage in EmulationStage)

    @property
    def labelled(self) -> bool:
        """False for a folder of images without labels (``images`` without ``dataset``)."""
        return not (self.dataset is None and self.images is not None)

    @property
    def baseline_kinds(self) -> tuple[str, ...]:
        return baseline_kinds(self.labelled)

    @property
    def dataset_name(self) -> str:
        if self.images is not None:  # a COCO file's samples are read from its image folder
            return Path(self.images).name
        from harness.inputs.dataset_yolo import dataset_name  # reads a yaml: only when asked

        return dataset_name(self.dataset) if self.dataset is not None else DEMO_DATASET_NAME


def planned_gates(config: JobConfig) -> tuple[GateId, ...]:
    """The gates the job yields, in order, known before it runs (the plugin collects them as items):
    the baseline gates of the ONNX and the Hailo path, their agreement, and the stage gate with a HAR."""
    data, hailo = config.dataset_name, config.hailo.path_name
    ids = [GateId(kind, data, path) for path in (ONNX, hailo) for kind in config.baseline_kinds]
    ids.append(GateId("path_agreement", data, hailo))
    if config.har is not None:
        ids.append(GateId("stages", data))
    return tuple(ids)
