"""One table of the options every surface takes. ``hailo-harness run``/``eval``/``doctor`` and the
pytest plugin (options and ini keys) read each option's name, help, parsing and default from
:data:`OPTIONS`, and turn the values into a :class:`~harness.pipeline.spec.PathSpec`,
a :class:`~harness.pipeline.spec.SettingsSpec` or a :class:`~harness.pipeline.job.JobConfig` with
the functions below: the same option means the same thing everywhere."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.core import defaults, signing
from harness.core.errors import HarnessError
from harness.core.path_names import EmulationStage
from harness.core.settings import MetricProtocol, NmsMode, Preprocess
from harness.core.specs import OUTPUT_FORMATS
from harness.inputs.demo import DEMO_ONNX, IN_DOMAIN, OFF_DOMAIN
from harness.pipeline.backends import BACKENDS, describe, listed
from harness.pipeline.option_values import (
    class_pair,
    folder,
    hef,
    output_bits,
    positive,
    probability,
    shard,
    ssd_config,
)
from harness.pipeline.spec import Backend, JobConfig, PathSpec, SettingsSpec
from harness.verdict.history import release_name

Kind = Literal["value", "flag", "toggle", "repeat"]


@dataclass(frozen=True)
class Option:
    """``kind``: ``value`` (one value), ``flag`` (off unless given), ``toggle`` (``--x`` / ``--no-x``),
    ``repeat`` (given any number of times; in an ini file or the plugin also comma-separated)."""

    name: str
    help: str
    parse: Callable[[str], Any] = str
    default: Any = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    kind: Kind = "value"

    @property
    def is_path(self) -> bool:
        return self.parse in (Path, folder, hef, ssd_config)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def value(self, text: str) -> Any:
        """The option's value from its text; a clear error naming the option otherwise."""
        if self.choices and text not in self.choices:
            raise HarnessError(f"{self.flag} {text!r}: expected one of {list(self.choices)}")
        try:
            return self.parse(text)
        except ValueError as error:
            reason = str(error) if "expected" in str(error) else f"expected a {self.parse.__name__.strip('_')}"
            raise HarnessError(f"{self.flag} {text!r}: {reason}") from None


def _choices(enum_type: Iterable[Any]) -> tuple[str, ...]:
    return tuple(str(member.value) for member in enum_type)


_OPTIONS = (
    Option(
        "onnx",
        "float Ultralytics export of the model (names the classes; default on the command line: the demo model, "
        "harness/data/demo/fire_smoke_yolo11n_256.onnx; under pytest the evaluation gates run only when it is given)",
        Path,
        metavar="M.onnx",
    ),
    Option(
        "hef",
        "compiled HEF, or the Ultralytics Hailo export folder holding one (its metadata.yaml and "
        "nms_config.json are checked against it): its static checks, and the Hailo path runs it on a device "
        "(--backend hailort)",
        hef,
        metavar="M.hef",
    ),
    Option(
        "har",
        "optimized HAR (hailo-harness compile writes one): the Dataflow Compiler's emulation stages run "
        "(needs hailo_sdk_client)",
        Path,
        metavar="M.har",
    ),
    Option(
        "dataset",
        "labelled dataset: YOLO yaml or folder, or COCO annotations.json with --images (default: the demo val set)",
        Path,
        metavar="D",
    ),
    Option("split", "dataset split", default=defaults.SPLIT),
    Option(
        "images",
        "the image folder of a COCO --dataset annotations.json; without --dataset, images without labels: "
        "the Hailo path is held to the ONNX path and to label-free baselines (no mAP)",
        Path,
        metavar="DIR",
    ),
    Option(
        "max_unreadable",
        "the share of the dataset's images that may be unreadable (left out, and said so) before the run is refused",
        probability,
        defaults.MAX_UNREADABLE,
        metavar="SHARE",
    ),
    Option(
        "backend",
        "; ".join(f"{backend.value}: {descriptor.help}" for backend, descriptor in BACKENDS.items()),
        Backend,
        choices=_choices(Backend),
    ),
    Option(
        "record",
        "write the Hailo path's raw outputs per image to this store file (append-only, resumable), for --replay",
        Path,
        metavar="STORE",
    ),
    Option(
        "replay",
        "serve the Hailo path from a store --record wrote (the same images and preprocessing), e.g. in hosted CI",
        Path,
        metavar="STORE",
    ),
    Option(
        "calibration",
        f"emulator calibration images: a folder, a list file (*.txt, one image path a line, relative to it), "
        f"or {IN_DOMAIN!r} / {OFF_DOMAIN!r} (the demo set's); "
        "default: the demo's in-domain frames on the demo set, else the evaluated images",
        metavar="DIR",
    ),
    Option(
        "calibration_count",
        "calibration images used (the first by name)",
        positive,
        defaults.CALIBRATION_COUNT,
        metavar="N",
    ),
    Option(
        "batch",
        "images inferred together, in one call where the backend takes a batch (the emulator, HailoRT; the "
        "float export runs them one at a time); the detections are the same at any batch",
        positive,
        defaults.BATCH,
        metavar="N",
    ),
    Option(
        "output_bits",
        "emulator: the raw head outputs' bits, 8 or 16 (default: 16 for YOLO26 heads, whose output layers "
        "Ultralytics compiles a16_w16; 8 for YOLOv8/YOLO11)",
        output_bits,
        metavar="{8,16}",
    ),
    Option("sigmoid_inside", "emulator: the class sigmoid compiled into the HEF", default=True, kind="toggle"),
    Option(
        "hef_nms",
        "emulator: HailoRT's NMS op compiled into the HEF (one NMS_BY_CLASS output)",
        default=True,
        kind="toggle",
    ),
    Option(
        "bbox_only",
        "emulator: HailoRT's NMS op compiled bbox_decoding_only in its place: its one output holds every "
        "proposal's box and class values, and the host runs the NMS with the run's thresholds (YOLOv8, YOLOv5)",
        kind="flag",
        default=False,
    ),
    Option(
        "hailo_device",
        "HailoRT device id, e.g. 0000:01:00.0 (repeatable: several make one virtual device, or under pytest-xdist "
        "one each per worker, gwN the N-th; default: any free)",
        metavar="ID",
        kind="repeat",
    ),
    Option(
        "hailo_format",
        "output type asked of HailoRT: float32 (HailoRT dequantizes) or uint8 (the device's own "
        "type, dequantized by the harness from the HEF's quant infos)",
        default="float32",
        choices=tuple(OUTPUT_FORMATS),
    ),
    Option(
        "stage",
        "dfc: the emulator's context, fp_optimized (float, with the model script) or quantized",
        EmulationStage,
        EmulationStage.QUANTIZED,
        choices=_choices(EmulationStage),
    ),
    Option(
        "score_threshold",
        f"score threshold of the evaluation (default: the one compiled into the Hailo path's NMS, where it has "
        f"one, else the --metric's protocol's: {defaults.SCORE_THRESHOLD} under coco, 0.001 under ultralytics; held "
        "against the HEF's)",
        probability,
        metavar="T",
    ),
    Option(
        "iou_threshold",
        f"NMS IoU threshold (default: the one compiled into the Hailo path's NMS, else {defaults.IOU_THRESHOLD})",
        probability,
        metavar="T",
    ),
    Option("max_per_class", "detections kept per class", positive, defaults.MAX_PER_CLASS, metavar="N"),
    Option(
        "max_total",
        f"detections kept per image (default: the --metric's protocol's, {defaults.MAX_TOTAL} under both)",
        positive,
        metavar="N",
    ),
    Option(
        "nms",
        "NMS semantics (default: the --metric's protocol's: hailort under coco, ultralytics under ultralytics)",
        NmsMode,
        choices=_choices(NmsMode),
    ),
    Option(
        "preprocess",
        "image fit (default: the --metric's protocol's: letterbox under coco, ultralytics-val under ultralytics)",
        Preprocess,
        choices=_choices(Preprocess),
    ),
    Option(
        "metric",
        "the protocol the mAPs are measured under: coco (pycocotools' COCOeval, over HailoRT's NMS at the "
        "Hailo path's thresholds) or ultralytics (yolo val's: its NMS, score threshold 0.001 (a Hailo path's "
        "compiled one where it has one), IoU threshold 0.7, at most 300 detections, its letterbox, its matching "
        "and interpolated AP); --nms, --score-threshold, --iou-threshold, --max-total and --preprocess each "
        "override the protocol's; a baseline holds only runs of its own metric",
        MetricProtocol,
        MetricProtocol.COCO,
        choices=_choices(MetricProtocol),
    ),
    Option(
        "ssd_config",
        "an SSD export's anchors and box coding, which no graph holds: a JSON or YAML file in the words of "
        "HailoRT's SSD op (bbox_decoders: per layer, largest grid first, the anchors' w and h as fractions of the "
        "input; centers_scale_factor, bbox_dimensions_scale_factor; optional ty, tx, th, tw, "
        "background_removal_index, normalize_boxes); refused for an export that is not SSD",
        ssd_config,
        metavar="FILE",
    ),
    Option(
        "map_class",
        "map a dataset class name to a model class name (repeatable), or leave its labels out with DATASET= "
        "(e.g. --map-class steam=); without it the names must be equal",
        class_pair,
        metavar="DATASET=MODEL",
        kind="repeat",
    ),
    Option("golden", "golden baselines folder", folder, defaults.GOLDEN_DIR, metavar="DIR"),
    Option(
        "pool",
        "calibration-check: the unlabelled images to recommend calibration images from (default: the evaluated images)",
        Path,
        metavar="DIR",
    ),
    Option(
        "copy_to",
        "calibration-check: a folder to copy the recommended calibration images into (made where missing)",
        folder,
        metavar="DIR",
    ),
    Option("report", "folder for the Markdown / JSON / HTML reports", folder, defaults.REPORT_DIR, metavar="DIR"),
    Option(
        "cache", "cache folder (predictions, emulated HEFs, the demo set)", folder, defaults.CACHE_DIR, metavar="DIR"
    ),
    Option(
        "shard",
        "infer only the K-th of N shares of the images (sorted by name, every N-th), into the --report folder "
        "as a store, and gate nothing: hailo-harness merge joins the N stores and gates the union",
        shard,
        metavar="K/N",
    ),
    Option(
        "stage_drop",
        "with --har: the most mAP@0.5 each DFC stage may lose against the float model before the stage gate "
        f"fails (default {defaults.STAGE_DROP}: a floor of the run, not blessed; the report states it)",
        probability,
        metavar="D",
    ),
    Option("update_golden", "bless this run as the new baseline", kind="flag", default=False),
    Option(
        "pdf",
        "also write report.pdf beside report.html (printed by headless Chromium; refused where it is missing)",
        kind="flag",
        default=False,
    ),
    Option(
        "follow_links",
        "write through symbolic links that lead out of the project and the folders named on the command line "
        "(refused by default, naming the link; also HARNESS_FOLLOW_LINKS=1). CI should leave it off: a pull "
        "request can commit such a link",
        kind="flag",
        default=False,
    ),
    Option(
        "accept_weak_baseline",
        "with --update-golden: bless baselines whose gates cannot fail or measure too little (mAP 0, no "
        "detection, fewer than 10 labelled objects); every gate held to them says so",
        kind="flag",
        default=False,
    ),
    Option(
        "require_signed",
        "refuse every baseline and blessed history not signed with the release key (HARNESS_SIGNING_KEY, "
        "an HMAC-SHA256 over its content): an unsigned, hand-edited or tampered one is refused, exit 2; "
        "a blessing under it needs the key (also HARNESS_REQUIRE_SIGNED=1; see docs/threat-model.md)",
        kind="flag",
        default=False,
    ),
    Option(
        "release",
        "with --update-golden: the release this blessing signs off (e.g. v1.3), kept with the baselines' "
        "blessed history, which the reports show beside each gate",
        release_name,
        metavar="NAME",
    ),
)
OPTIONS: Mapping[str, Option] = {o.name: o for o in _OPTIONS}

# Which surface takes which options.
PATH_OPTIONS = (
    "onnx",
    "hef",
    "har",
    "backend",
    "record",
    "replay",
    "calibration",
    "calibration_count",
    "output_bits",
    "bbox_only",
    "hailo_device",
    "hailo_format",
    "batch",
)
SETTINGS_OPTIONS = (
    "score_threshold",
    "iou_threshold",
    "max_per_class",
    "max_total",
    "nms",
    "preprocess",
    "map_class",
    "metric",
    "ssd_config",
)
DATASET_OPTIONS = ("dataset", "images", "split", "max_unreadable")
JOB_OPTIONS = (
    *PATH_OPTIONS,
    *DATASET_OPTIONS,
    *SETTINGS_OPTIONS,
    "golden",
    "report",
    "cache",
    "shard",
    "stage_drop",
    "update_golden",
    "accept_weak_baseline",
    "release",
    "pdf",
    "require_signed",
    "follow_links",
)
DOCTOR_OPTIONS = (
    "onnx",
    *DATASET_OPTIONS,
    "calibration",
    "bbox_only",
    *SETTINGS_OPTIONS,
    "golden",
    "cache",
    "require_signed",
    "follow_links",
)
CALIBRATION_CHECK_OPTIONS = (
    "onnx",
    *DATASET_OPTIONS,
    "calibration",
    "calibration_count",
    *SETTINGS_OPTIONS,
    "pool",
    "copy_to",
    "report",
    "cache",
    "follow_links",
)
MERGE_OPTIONS = (
    "golden",
    "report",
    "cache",
    "update_golden",
    "accept_weak_baseline",
    "release",
    "require_signed",
    "follow_links",
)
EVAL_OPTIONS = (
    *PATH_OPTIONS,
    *DATASET_OPTIONS,
    *SETTINGS_OPTIONS,
    "sigmoid_inside",
    "hef_nms",
    "stage",
    "shard",
    "follow_links",
)
# Options naming a folder (or a file, whose folder counts) the run writes into: where given, each is
# a folder the writes may go (harness.core.confine), resolved when the run starts.
WRITTEN_FOLDERS = ("golden", "report", "cache", "copy_to")
WRITTEN_FILES = ("record",)


def named_folders(values: Mapping[str, Any]) -> list[Path]:
    """The folders the options name explicitly for the run to write into (a default is no naming)."""
    folders = [
        Path(values[n]) for n in WRITTEN_FOLDERS if values.get(n) is not None and values[n] != OPTIONS[n].default
    ]
    return folders + [Path(values[n]).parent for n in WRITTEN_FILES if values.get(n) is not None]


def from_text(name: str, text: str | None) -> Any:
    """An option's value from a text (a pytest option or ini key); its default when None or empty."""
    option = OPTIONS[name]
    if text is None or text == "":
        return [] if option.kind == "repeat" else option.default
    if option.kind == "repeat":
        return [option.value(part.strip()) for part in text.split(",") if part.strip()]
    if option.kind in ("flag", "toggle"):
        lowered = text.strip().lower()
        if lowered not in ("true", "false", "1", "0", "yes", "no"):
            raise HarnessError(f"{option.flag} {text!r}: expected true or false")
        return lowered in ("true", "1", "yes")
    return option.value(text)


def backend_of(values: Mapping[str, Any], single: bool) -> Backend:
    """The backend asked for, or the one the files imply: ``--hef`` runs on a device. For a single
    path (``eval``) ``--har`` alone means the DFC and nothing means the float export; for a job's
    Hailo path nothing means the emulator (``--har`` there adds the DFC's stages)."""
    if values.get("backend") is not None:
        return Backend(values["backend"])
    if values.get("replay") is not None:
        return Backend.REPLAY
    if values.get("hef") is not None:
        return Backend.HAILORT
    if single:
        return Backend.DFC if values.get("har") is not None else Backend.ONNX
    return Backend.EMULATOR


def _value(values: Mapping[str, Any], name: str) -> Any:
    """An option's value, its table default where it was not given."""
    value = values.get(name)
    return OPTIONS[name].default if value is None else value


def path_spec(values: Mapping[str, Any], single: bool, hef_checked: bool = False) -> PathSpec:
    """The path the options describe (see :func:`backend_of`), checked against its backend by
    :class:`PathSpec` (made, so checked, once). A job's ``--har`` adds stages beside its Hailo path, so only a single
    path takes it; ``hef_checked``: a ``--hef`` beside another backend is read for its static checks
    (the plugin), so the path does not take it."""
    backend = backend_of(values, single)
    takes = describe(backend).takes
    return PathSpec(
        backend=backend,
        hef=None if hef_checked and "hef" not in takes else values.get("hef"),
        har=values.get("har") if single or "har" in takes else None,
        stage=_value(values, "stage"),
        calibration=None if values.get("calibration") is None else str(values["calibration"]),
        calibration_count=_value(values, "calibration_count"),
        sigmoid_inside=_value(values, "sigmoid_inside"),
        hef_nms=_value(values, "hef_nms"),
        bbox_only=bool(_value(values, "bbox_only")),
        hailo_devices=tuple(values.get("hailo_device") or ()),
        output_bits=values.get("output_bits"),
        hailo_format=OUTPUT_FORMATS[_value(values, "hailo_format")],
        record=values.get("record"),
        replay=values.get("replay"),
    )


def settings_spec(values: Mapping[str, Any]) -> SettingsSpec:
    return SettingsSpec(
        score_threshold=values.get("score_threshold"),  # None: the compiled one, else the default
        iou_threshold=values.get("iou_threshold"),
        max_per_class=_value(values, "max_per_class"),
        max_total=values.get("max_total"),  # None, with the NMS and the fit: the metric's protocol's
        nms_mode=None if values.get("nms") is None else NmsMode(values["nms"]),
        preprocess=None if values.get("preprocess") is None else Preprocess(values["preprocess"]),
        map_class=tuple(values.get("map_class") or ()),
        metric=MetricProtocol(_value(values, "metric")),
        ssd=values.get("ssd_config"),
    )


def onnx_of(values: Mapping[str, Any], hef_alone: bool = False) -> Path:
    """The model's export; the demo's only where no other model file is named (a HEF or HAR carries
    no class names: its export gives them). ``hef_alone``: a path that runs the HEF alone (a single
    hailort or replay path) may take an Ultralytics export's files instead; the HEF is returned."""
    if values.get("onnx") is not None:
        return Path(values["onnx"])
    given_hef = values.get("hef")
    if hef_alone and given_hef is not None and values.get("har") is None:
        from harness.inputs.hef.ultralytics import export_of

        if export_of(given_hef) is not None:
            return Path(given_hef)
    given = [OPTIONS[n].flag for n in ("hef", "har") if values.get(n) is not None]
    if given:
        alone = " (or a HEF in its Ultralytics export folder)" if hef_alone and given_hef is not None else ""
        raise HarnessError(
            f"{' and '.join(given)}: needs --onnx M.onnx (the model's export, for its class names){alone}"
        )
    return DEMO_ONNX


def job_config(
    values: Mapping[str, Any], invocation: tuple[str, ...], progress: bool | None = None, hef_checked: bool = False
) -> JobConfig:
    """The job the options describe: the Hailo path (emulator unless ``--backend`` or ``--hef`` say
    otherwise), the HAR's stages, the settings and the folders (``hef_checked``: see :func:`path_spec`)."""
    hailo = path_spec(values, single=False, hef_checked=hef_checked)
    if not describe(hailo.backend).job_path:
        paths = listed([b.value for b, d in BACKENDS.items() if d.job_path])
        raise HarnessError(
            f"--backend {hailo.backend.value}: a job's Hailo path is {paths} (--har adds the DFC's stages)"
        )
    if values.get("shard") is not None and values.get("update_golden"):
        raise HarnessError(
            "--update-golden: a shard blesses nothing (its share is not the set); bless the union with "
            "hailo-harness merge STORE... --update-golden"
        )
    if values.get("accept_weak_baseline") and not values.get("update_golden"):
        raise HarnessError("--accept-weak-baseline: belongs to --update-golden (it says how to bless, not how to gate)")
    if values.get("stage_drop") is not None and values.get("har") is None:
        raise HarnessError("--stage-drop: belongs to --har (it is the floor of the HAR's DFC stages' gate)")
    if values.get("release") is not None and not values.get("update_golden"):
        raise HarnessError("--release: belongs to --update-golden (it names the release a blessing signs off)")
    if values.get("require_signed"):
        signing.require_signed()  # from here on in this process, and in its workers (HARNESS_REQUIRE_SIGNED)
    return JobConfig(
        onnx=onnx_of(values),
        dataset=values.get("dataset"),
        images=values.get("images"),
        split=_value(values, "split"),
        max_unreadable=_value(values, "max_unreadable"),
        hailo=hailo,
        har=values.get("har"),
        settings=settings_spec(values),
        golden_root=_value(values, "golden"),
        report_dir=_value(values, "report"),
        cache_dir=_value(values, "cache"),
        update_golden=bool(values.get("update_golden")),
        accept_weak_baseline=bool(values.get("accept_weak_baseline")),
        release=values.get("release"),
        pdf=bool(values.get("pdf")),
        stage_drop=defaults.STAGE_DROP if values.get("stage_drop") is None else values["stage_drop"],
        batch=_value(values, "batch"),
        invocation=invocation,
        progress=progress,
    )
