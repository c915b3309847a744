"""Failure modes seen in the field, each injectable into a run of the harness' own paths and each
with the diagnosis that must name it; and the doctor, which injects every mode into one model's
run and tells whether a gate caught it and whether the diagnosis named it.

A mode is injected where the field made it: into the emulated HEF (calibration, a sigmoid left
out of the compiled model), into host code around a path (a wrapper changing images before the
path or detections after it, a wrong decoder over raw head outputs), into the dataset or the
evaluation settings, or into the HEF description the static checks read. Nothing in the gates or
the diagnosis knows which mode was injected: the doctor measures every run the same way (gates
against the baselines, the diagnosis over :class:`~harness.diagnosis.Evidence` with the same extra
measurements for all) and only then holds the top finding against the mode's expected name.

Baselines: the golden file of each path where its dataset manifest is the run's (the demo on all
its images); otherwise the clean run of that path on the same images, and the table says so.
Where the emulator refuses a model (e.g. an export whose weights are already quantized), the modes
that need an emulated HEF are reported as not run, and the host-side modes wrap the ONNX path.
"""

from __future__ import annotations

import hashlib
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import yaml

from harness.backends.base import InputSpec, Runner
from harness.backends.emulator import EmulatedHef, EmulatorOptions, EmulatorRunner, build_emulated_hef
from harness.backends.emulator.calibration import CalibrationSource
from harness.backends.onnx.runner import OnnxRunner
from harness.cache import PredictionCache
from harness.conformance import Decoder, run_conformance
from harness.data.dataset import Dataset, DatasetError, load_yolo
from harness.decode.config import DecodeConfig
from harness.decode.yolo import DEFAULT_BOX_CHANNELS, decode
from harness.detect import (
    EMULATED_HAILO,
    ONNX,
    DetectionPath,
    FrameResult,
    NmsBufferPath,
    OnnxPath,
    RawHeadsPath,
    file_sha256,
    prepare,
)
from harness.detections import (
    Detections,
    Letterbox,
    letterbox_boxes,
    unletterbox,
    xyxy_pixels_to_yxyx_normalized,
    yxyx_normalized_to_xyxy_pixels,
)
from harness.diagnosis import Evidence, collect_evidence, diagnose, matched_share
from harness.errors import HarnessError, HeadPairingError, SpecError
from harness.evaluate import evaluate_path
from harness.gates import GateResult, gate_path_agreement, run_gates
from harness.golden import DEFAULT_TOLERANCES, Golden, golden_from_result, golden_path, load_golden
from harness.hef.checks import CheckContext, CheckResult, facts_from_onnx, run_checks
from harness.hef.header import HefHeader
from harness.hef.reader import BboxDecoder, HefInfo, HwArch, NetworkGroupInfo, NmsOpConfig, StreamInfo
from harness.job import DEMO_ONNX, IN_DOMAIN, OFF_DOMAIN, JobConfig, demo_data
from harness.metrics.agreement import agreement
from harness.metrics.coco import DifferenceInterval, paired_bootstrap
from harness.onnx_graph import cut_at_heads, find_heads, load_model, model_input
from harness.preprocess import to_nchw_float
from harness.result import PathResult
from harness.settings import EvalSettings, Preprocess
from harness.specs import FormatOrder, FormatType, OutputSpec, QuantInfo

PROBE_IMAGES = 16  # images the reversed-channel probe runs on
CLEAN_SEEDS = (0, 1, 2, 3, 4)
CLEAN_SHARE = 0.8  # share of the images each clean run samples
# The Model Zoo's YOLOv8 NMS JSON, the usual template, is written for the 80 COCO classes
# mz: hailo_model_zoo/cfg/postprocess_config/yolov8n_nms_config.json ("classes": 80, "regression_length": 16)
NMS_TEMPLATE_CLASSES = 80
WRONG_REGRESSION_LENGTH = 8
WRONG_NMS_SCORE_THRESHOLD = 0.25


# ---------------------------------------------------------------------------------------- host mistakes


def sigmoid_on_probabilities(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder that puts every class output through a sigmoid, whatever it already holds."""
    return decode(outputs, specs, replace(config, classes_are_probabilities=False))


def fcr_read_channel_first(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder that takes FCR outputs for ``[C, H, W]`` in memory (they are ``[H, W, C]``)."""
    fixed = dict(outputs)
    for name, spec in specs.items():
        if spec.format_order is FormatOrder.FCR:
            h, w, c = spec.shape
            fixed[name] = np.asarray(outputs[name]).reshape(c, h, w).transpose(1, 2, 0)
    return decode(fixed, specs, config)


def paired_by_listing_order(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder that pairs the i-th box output with the i-th class output in the order the
    outputs are listed, resampling the class map to its box head's grid."""
    names = list(specs)
    boxes = [n for n in names if specs[n].channels == DEFAULT_BOX_CHANNELS]
    classes = [n for n in names if n not in boxes]
    fixed: dict[str, np.ndarray] = {}
    fixed_specs: dict[str, OutputSpec] = {}
    for box, cls in zip(boxes, classes, strict=True):
        h, w = specs[box].grid
        values = np.asarray(outputs[cls]).reshape(specs[cls].shape)
        sh, sw = values.shape[:2]
        resampled = values[np.arange(h) * sh // h][:, np.arange(w) * sw // w]
        fixed[box], fixed_specs[box] = outputs[box], specs[box]
        fixed[cls] = np.ascontiguousarray(resampled)
        fixed_specs[cls] = replace(specs[cls], shape=(h, w, values.shape[2]))
    return decode(fixed, fixed_specs, config)


def reversed_channels(image: np.ndarray) -> np.ndarray:
    """RGB <-> BGR."""
    return np.ascontiguousarray(image[..., ::-1])


def normalised_again(image: np.ndarray) -> np.ndarray:
    """The host's /255 on top of the HEF's, cast back to the uint8 the input takes: almost black."""
    return (image.astype(np.float32) / np.float32(255)).astype(np.uint8)


def _geometry(settings: EvalSettings, original_hw: tuple[int, int]) -> Letterbox:
    place = Letterbox.resize if settings.preprocess is Preprocess.RESIZE else Letterbox.fit
    return place(original_hw, settings.input_hw)


def records_read_x_first(settings: EvalSettings) -> Callable[[Detections, tuple[int, int]], Detections]:
    """Detections as a host gets them that reads HailoRT NMS records x-first: each record is
    {y_min, x_min, y_max, x_max, score}, normalised to the model input."""

    # hailort: hailort/libhailort/include/hailo/hailort.h, hailo_bbox_float32_t {y_min, x_min, y_max, x_max, score}
    def after(detections: Detections, original_hw: tuple[int, int]) -> Detections:
        box = _geometry(settings, original_hw)
        records = xyxy_pixels_to_yxyx_normalized(letterbox_boxes(detections.boxes, box), settings.input_hw)
        misread = yxyx_normalized_to_xyxy_pixels(records[:, [1, 0, 3, 2]], settings.input_hw)
        return unletterbox(Detections(misread, detections.scores, detections.class_ids), box)

    return after


def sigmoid_on_scores(detections: Detections, original_hw: tuple[int, int]) -> Detections:
    """A host sigmoid over scores that are probabilities already (e.g. an NMS output's)."""
    scores = np.float32(1) / (np.float32(1) + np.exp(-detections.scores))
    return Detections(detections.boxes, scores, detections.class_ids)


# ---------------------------------------------------------------------------------------------- paths


class HostPath:
    """A detection path with host code around it: ``before`` changes each image before the path
    sees it, ``after`` the detections (original-image pixels) it returns. Its cache variant is the
    inner path's plus ``mistake``."""

    def __init__(
        self,
        inner: DetectionPath,
        mistake: str,
        before: Callable[[np.ndarray], np.ndarray] | None = None,
        after: Callable[[Detections, tuple[int, int]], Detections] | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.emulated = inner.emulated
        self.model_path = inner.model_path
        self.model_sha256 = inner.model_sha256
        self.variant = f"{inner.variant}+{mistake}"
        self.settings = inner.settings
        self.input_hw = inner.input_hw
        self.model_names = inner.model_names
        self._before, self._after = before, after

    @property
    def fps(self) -> float | None:
        return self.inner.fps

    def detect(self, image: np.ndarray) -> FrameResult:
        frame = self.inner.detect(self._before(image) if self._before else image)
        if self._after is None:
            return frame
        return FrameResult(self._after(frame.detections, image.shape[:2]), frame.cells)


class DecoderPath:
    """A runner fed like a HEF (one uint8 NHWC 0-255 input) whose raw head outputs a host decoder
    with the harness decoder's signature turns into detections; ``decoder`` is kept for the
    conformance suite."""

    def __init__(
        self,
        runner: Runner,
        settings: EvalSettings,
        model_path: Path,
        decoder: Decoder,
        name: str,
        model_names: Sequence[str],
        variant: str,
    ) -> None:
        (spec,) = runner.input_specs.values()
        if spec.format_order is not FormatOrder.NHWC or spec.format_type is not FormatType.UINT8:
            raise SpecError(
                f"input {spec.name!r}: {spec.format_order.name} {spec.format_type.name}, expected NHWC UINT8"
            )
        self.name = name
        self.emulated = name != ONNX
        self.model_path = model_path
        self.model_sha256 = file_sha256(model_path)
        self.variant = variant
        self.settings = settings
        self.input_hw = settings.input_hw
        self.model_names: tuple[str, ...] | None = tuple(model_names)
        self.decoder = decoder
        self.fps = None  # the catalogue runs emulated paths only
        self._runner = runner
        self._input = spec.name
        self._specs = dict(runner.output_specs)
        self._config = settings.decode_config()

    def detect(self, image: np.ndarray) -> FrameResult:
        canvas, geometry = prepare(image, self.settings)
        outputs = self._runner.infer({self._input: canvas[None]})
        return FrameResult(unletterbox(self.decoder(outputs, self._specs, self._config), geometry))


class ListedRunner:
    """A runner whose outputs are listed in ``order`` (as another compiler run may list them)."""

    def __init__(self, runner: Runner, order: Sequence[str]) -> None:
        specs = runner.output_specs
        if sorted(order) != sorted(specs):
            raise SpecError(f"output order {list(order)}: expected the runner's outputs {sorted(specs)}")
        self._runner, self._order = runner, tuple(order)

    @property
    def input_specs(self) -> Mapping[str, InputSpec]:
        return self._runner.input_specs

    @property
    def output_specs(self) -> dict[str, OutputSpec]:
        specs = self._runner.output_specs
        return {name: specs[name] for name in self._order}

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs = self._runner.infer(feed)
        return {name: outputs[name] for name in self._order}

    def __enter__(self) -> ListedRunner:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


def _head_order(role: str, grid: tuple[int, int], smallest: int) -> FormatOrder:
    """The emulator's host orders for a HEF's heads (the field report's mix): box heads FCR, class
    heads NHWC except on the smallest grid. FCR and NHWC are both [N, H, W, C] on the host
    (hailort: hailort/libhailort/include/hailo/hailort.h, hailo_format_order_t)."""
    return FormatOrder.FCR if role == "box" or grid[0] * grid[1] == smallest else FormatOrder.NHWC


class FloatHeadsRunner:
    """The ONNX cut at its six heads, fed like a HEF (uint8 NHWC 0-255; the /255 is done here), its
    class heads through a sigmoid as a model script compiles it in, float32 channel-last outputs
    listed with the orders the emulator gives a HEF's heads. Not quantized: it stands in for a
    raw-output HEF where the emulator cannot quantize the model."""

    def __init__(self, onnx_path: Path, threads: int | None = None) -> None:
        model = load_model(onnx_path)
        input_name, input_hw = model_input(model)
        heads = find_heads(model)
        self._runner = OnnxRunner(cut_at_heads(model, heads), threads)
        self._input = InputSpec(input_name, (*input_hw, 3), FormatOrder.NHWC, FormatType.UINT8)
        self._classes = {h.tensor for h in heads if h.role == "class"}
        smallest = min(h.grid[0] * h.grid[1] for h in heads)
        self._specs = {
            h.tensor: OutputSpec(
                h.tensor, (*h.grid, h.channels), _head_order(h.role, h.grid, smallest), FormatType.FLOAT32
            )
            for h in heads
        }

    @property
    def input_specs(self) -> dict[str, InputSpec]:
        return {self._input.name: self._input}

    @property
    def output_specs(self) -> dict[str, OutputSpec]:
        return dict(self._specs)

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        raw = self._runner.infer({self._input.name: to_nchw_float(np.asarray(feed[self._input.name]))})
        with np.errstate(over="ignore"):
            return {
                name: (np.float32(1) / (np.float32(1) + np.exp(-raw[name])) if name in self._classes else raw[name])
                for name in self._specs
            }

    def close(self) -> None:
        self._runner.close()

    def __enter__(self) -> FloatHeadsRunner:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# --------------------------------------------------------------------------------- the HEF description

_NOMINAL_BOX = QuantInfo(128.0, 0.1, -12.8, 12.7)
_NOMINAL_CLASS = QuantInfo(0.0, 1 / 255, 0.0, 1.0)
_INPUT_QUANT = QuantInfo(0.0, 1.0, 0.0, 255.0)


def hef_description(onnx: Path, settings: EvalSettings, hef: EmulatedHef | None) -> HefInfo:
    """What a raw-heads HEF with the YOLOv8 NMS op compiled from ``onnx`` declares, as the HEF
    reader gives it: the emulated HEF's heads and quant infos, or, without one, the ONNX's heads
    with nominal quant infos (class outputs post-sigmoid in [0, 1]). NMS settings are the
    evaluation's. Stream, op and field names follow a real NMS HEF's metadata
    (hailort: hailort/libhailort/hef.proto, ProtoHEFNmsOp / ProtoHEFYoloBboxDecoder)."""
    model = load_model(onnx)
    _, (in_h, in_w) = model_input(model)
    heads = find_heads(model)
    quant = hef.quant if hef is not None else {}
    net = Path(onnx).stem
    smallest = min(h.grid[0] * h.grid[1] for h in heads)
    streams = []
    for h in heads:
        q = quant.get(h.tensor, _NOMINAL_BOX if h.role == "box" else _NOMINAL_CLASS)
        order = _head_order(h.role, h.grid, smallest)
        shape = (*h.grid, h.channels)
        streams.append(
            StreamInfo(f"{net}/{h.tensor.lstrip('/')}", shape, shape, order, order, FormatType.UINT8, q, (q,))
        )
    boxes = [h for h in heads if h.role == "box"]
    decoders = tuple(
        BboxDecoder(in_h // b.grid[0], f"{net}/{b.tensor.lstrip('/')}", f"{net}/{c.tensor.lstrip('/')}")
        for b in boxes
        for c in heads
        if c.role == "class" and c.grid == b.grid
    )
    nms = NmsOpConfig(
        name=f"{net}/yolov8_nms_postprocess",
        kind="yolov8",
        output_name=f"{net}/yolov8_nms_postprocess",
        score_threshold=settings.score_threshold,
        iou_threshold=settings.iou_threshold,
        classes=next(h.channels for h in heads if h.role == "class"),
        max_proposals_per_class=settings.max_per_class,
        background_removal=False,
        background_removal_index=0,
        bbox_decoding_only=False,
        image_height=float(in_h),
        image_width=float(in_w),
        regression_length=boxes[0].channels // 4,
        bbox_decoders=decoders,
    )
    shape = (in_h, in_w, 3)
    image = StreamInfo(
        f"{net}/input_layer1",
        shape,
        shape,
        FormatOrder.NHWC,
        FormatOrder.NHWC,
        FormatType.UINT8,
        _INPUT_QUANT,
        (_INPUT_QUANT,),
    )
    group = NetworkGroupInfo(net, (image,), tuple(streams), nms)
    where = hef.label if hef is not None else f"description of a HEF of {Path(onnx).name} (nominal quant infos)"
    return HefInfo(where, HefHeader(2, 0, 0), HwArch.HAILO8, ("HAILO8",), "emulated", False, False, 0, (group,))


def _with_nms(info: HefInfo, **changes: Any) -> HefInfo:
    group = info.network_groups[0]
    assert group.nms is not None
    return replace(info, network_groups=(replace(group, nms=replace(group.nms, **changes)),))


# ------------------------------------------------------------------------------------------- the bench


def subset(dataset: Dataset, indices: Sequence[int]) -> Dataset:
    """The samples at ``indices`` (kept in dataset order), with a manifest of their own."""
    samples = tuple(dataset.samples[i] for i in sorted(set(indices)))
    ids = [s.image_id for s in samples]
    manifest = hashlib.sha256("\0".join([dataset.manifest, *ids]).encode()).hexdigest()
    kept = set(ids)
    missing = tuple(i for i in dataset.missing_labels if i in kept)
    return replace(dataset, samples=samples, missing_labels=missing, unreadable=(), manifest=manifest)


@dataclass(frozen=True)
class Bench:
    """One model on one dataset, with everything a mode is injected into: the clean ONNX reference,
    the clean path under test (the emulated HEF's NMS path, or the ONNX path where the emulator
    refuses the model: ``emulator_refusal``), the emulated HEF and its options, and the baselines."""

    onnx: Path
    dataset: Dataset
    settings: EvalSettings
    model_names: tuple[str, ...]
    cache: PredictionCache
    cache_dir: Path
    calibration: CalibrationSource
    options: EmulatorOptions
    hef: EmulatedHef | None
    emulator_refusal: str
    reference: PathResult
    subject: PathResult
    baselines: Mapping[str, Golden] = field(default_factory=dict)
    baseline_sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def original_hw(self) -> dict[str, tuple[int, int]]:
        return {s.image_id: s.original_hw for s in self.dataset.samples}

    @property
    def off_domain(self) -> Path:
        """The demo's 64 calibration frames that show neither fire nor smoke (generated when first asked for)."""
        return demo_split(self.cache_dir, OFF_DOMAIN)

    def emulated(self, options: EmulatorOptions, calibration: CalibrationSource | None = None) -> EmulatedHef:
        return build_emulated_hef(self.onnx, calibration or self.calibration, options, self.cache_dir / "emulator")

    def nms_path(self, stack: ExitStack, hef: EmulatedHef, settings: EvalSettings | None = None) -> NmsBufferPath:
        runner = stack.enter_context(EmulatorRunner(hef))
        return NmsBufferPath(
            runner, settings or self.settings, self.onnx, EMULATED_HAILO, self.model_names, hef.content_hash
        )

    def subject_path(self, stack: ExitStack, settings: EvalSettings | None = None) -> DetectionPath:
        """The clean path under test, under ``settings`` (default: the bench's)."""
        if self.hef is None:
            return stack.enter_context(OnnxPath(self.onnx, settings or self.settings, self.model_names))
        return self.nms_path(stack, self.hef, settings)

    def raw_path(
        self, stack: ExitStack, decoder: Decoder, listing: Callable[[Runner], Sequence[str]] | None = None
    ) -> DecoderPath:
        """A host decoder over raw head outputs: the emulated raw-output HEF's (sigmoid inside), or the
        ONNX cut at its heads where the emulator refuses the model; ``listing`` re-lists the outputs."""
        runner: Runner
        if self.hef is None:
            runner, name, variant = stack.enter_context(FloatHeadsRunner(self.onnx)), ONNX, "float heads"
        else:
            raw = self.emulated(replace(self.options, nms=False))
            runner, name, variant = stack.enter_context(EmulatorRunner(raw)), EMULATED_HAILO, raw.content_hash
        if listing is not None:
            runner = ListedRunner(runner, listing(runner))
        tag = getattr(decoder, "__name__", "decoder")
        return DecoderPath(runner, self.settings, self.onnx, decoder, name, self.model_names, f"{variant}+{tag}")

    def evaluate(self, path: DetectionPath, dataset: Dataset | None = None) -> PathResult:
        return evaluate_path(path, dataset or self.dataset, self.cache, progress=False)

    def reference_for(self, result: PathResult) -> PathResult:
        """The ONNX reference relabelled with ``result``'s class map (the map changes no prediction)."""
        if result.settings.class_map == self.reference.settings.class_map:
            return self.reference
        with ExitStack() as stack:
            settings = replace(self.settings, class_map=result.settings.class_map)
            return self.evaluate(stack.enter_context(OnnxPath(self.onnx, settings, self.model_names)))

    @property
    def description(self) -> HefInfo:
        """The clean HEF description the static checks read (see :func:`hef_description`)."""
        return hef_description(self.onnx, self.settings, self.hef)

    def checks(self, info: HefInfo) -> tuple[CheckResult, ...]:
        context = CheckContext(info, facts_from_onnx(str(self.onnx)), self.dataset.names, self.settings.score_threshold)
        return run_checks(context)


def demo_split(cache_dir: Path, which: str) -> Path:
    """The demo set's in-domain or off-domain calibration folder (generated into the cache once)."""
    return demo_data(Path(cache_dir)) / "images" / ("calib" if which == IN_DOMAIN else "calib_offdomain")


def _baseline(golden_root: Path, onnx: Path, clean: PathResult, dataset: Dataset) -> tuple[Golden, str]:
    file = golden_path(golden_root, onnx, clean.path, Path(dataset.root).name)
    if file.exists():
        golden = load_golden(file)
        if golden.provenance.dataset_manifest == dataset.manifest:
            return golden, f"golden {file}"
    return golden_from_result(clean), f"clean run of {clean.label} on the same {len(dataset.samples)} images"


def open_bench(
    onnx: Path = DEMO_ONNX,
    dataset: Path | None = None,
    images: int | None = None,
    calibration: str | Path | None = None,
    cache_dir: Path = JobConfig.cache_dir,
    golden_root: Path = JobConfig.golden_root,
    score_threshold: float = JobConfig.score_threshold,
    iou_threshold: float = JobConfig.iou_threshold,
) -> Bench:
    """The bench of ``onnx`` on ``dataset`` (default: the demo validation set), its first ``images``
    images if given. ``calibration``: a folder, or ``in-domain`` / ``off-domain`` (the demo's
    splits); default the demo's in-domain split on the demo set, else the dataset's own images."""
    onnx = Path(onnx)
    full = load_yolo(dataset if dataset is not None else demo_data(cache_dir))
    data = subset(full, range(min(images, len(full.samples)))) if images else full
    if not data.samples:
        raise DatasetError(f"dataset {full.root}: no readable images to run the doctor on")
    source: CalibrationSource
    if calibration is None and dataset is not None:
        source = [s.path for s in full.samples]
    elif calibration is None or str(calibration) in (IN_DOMAIN, OFF_DOMAIN):
        source = demo_split(cache_dir, str(calibration or IN_DOMAIN))
    else:
        source = Path(calibration)
    count = len(source) if isinstance(source, list) else JobConfig.calibration_count
    model = load_model(onnx)
    _, input_hw = model_input(model)
    settings = EvalSettings(input_hw, score_threshold=score_threshold, iou_threshold=iou_threshold)
    options = EmulatorOptions(
        calibration_count=min(count, JobConfig.calibration_count),
        sigmoid_inside=True,
        nms=True,
        score_threshold=score_threshold,
        iou_threshold=iou_threshold,
        max_proposals_per_class=settings.max_per_class,
    )
    cache = PredictionCache(Path(cache_dir) / "predictions")
    with OnnxPath(onnx, settings) as onnx_path:
        if onnx_path.model_names is None:
            raise HarnessError(f"model {onnx}: class names unknown (not in its metadata)")
        names = onnx_path.model_names
        reference = evaluate_path(onnx_path, data, cache, progress=False)
    hef: EmulatedHef | None
    try:
        hef, refusal = build_emulated_hef(onnx, source, options, Path(cache_dir) / "emulator"), ""
    except HarnessError as error:
        hef, refusal = None, str(error)
    bench = Bench(
        onnx=onnx,
        dataset=data,
        settings=settings,
        model_names=names,
        cache=cache,
        cache_dir=Path(cache_dir),
        calibration=source,
        options=options,
        hef=hef,
        emulator_refusal=refusal,
        reference=reference,
        subject=reference,
    )
    if hef is not None:
        with ExitStack() as stack:
            bench = replace(bench, subject=bench.evaluate(bench.nms_path(stack, hef)))
    baselines, sources = {}, {}
    for clean in {reference.path: reference, bench.subject.path: bench.subject}.values():
        baselines[clean.path], sources[clean.path] = _baseline(golden_root, onnx, clean, data)
    return replace(bench, baselines=baselines, baseline_sources=sources)


# -------------------------------------------------------------------------------------------- the modes


@dataclass(frozen=True)
class Injected:
    """What a mode changed: the path to evaluate (and the dataset it sees), or a HEF description
    for the static checks."""

    path: DetectionPath | None = None
    dataset: Dataset | None = None
    description: HefInfo | None = None


Inject = Callable[[Bench, ExitStack], Injected]


@dataclass(frozen=True)
class Mode:
    """One failure mode. ``expected``: the diagnosis that must name it, a rule of
    :data:`harness.diagnosis.RULES`, a static check of :mod:`harness.hef.checks` or a refusal of
    :data:`REFUSALS`; ``detail`` a word the top finding's text must contain as well. ``gap``, when
    set, says why no gate can catch the mode (it is still injected and diagnosed)."""

    name: str
    mistake: str
    injection: str
    expected: str
    inject: Inject
    needs_emulator: bool = False
    detail: str = ""
    gap: str = ""


@dataclass(frozen=True)
class Refusal:
    """An error the harness raises for a mistake it refuses to measure, recognised by its type and a
    phrase of its message."""

    name: str
    error: type[HarnessError]
    phrase: str


REFUSALS: tuple[Refusal, ...] = (
    Refusal("class_names_reordered", DatasetError, "the same names in another order"),
    Refusal("not_raw_heads", HeadPairingError, "is not a raw head map"),
)


def _calibration_off_domain(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.nms_path(stack, bench.emulated(bench.options, bench.off_domain)))


def _nms_without_sigmoid(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.nms_path(stack, bench.emulated(replace(bench.options, sigmoid_inside=False))))


def _host_sigmoid_on_probabilities(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, sigmoid_on_probabilities))


def _host_sigmoid_on_nms_scores(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(HostPath(bench.subject_path(stack), "sigmoid on scores", after=sigmoid_on_scores))


def _raw_decoder_on_nms_buffer(bench: Bench, stack: ExitStack) -> Injected:
    assert bench.hef is not None
    runner = stack.enter_context(EmulatorRunner(bench.hef))
    # the package's own six-head path, as the field's host code kept its raw decoder
    path = RawHeadsPath(runner, bench.settings, bench.onnx, EMULATED_HAILO, bench.model_names, bench.hef.content_hash)
    return Injected(path)


def _records_x_first(bench: Bench, stack: ExitStack) -> Injected:
    inner = bench.subject_path(stack)
    return Injected(HostPath(inner, "records read x-first", after=records_read_x_first(bench.settings)))


def _input_normalised_twice(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(HostPath(bench.subject_path(stack), "input /255 twice", before=normalised_again))


def _bgr_input(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(HostPath(bench.subject_path(stack), "BGR input", before=reversed_channels))


def _resize_not_letterbox(bench: Bench, stack: ExitStack) -> Injected:
    other = Preprocess.LETTERBOX if bench.settings.preprocess is Preprocess.RESIZE else Preprocess.RESIZE
    return Injected(bench.subject_path(stack, replace(bench.settings, preprocess=other)))


def _classes_listed_smallest_grid_first(runner: Runner) -> list[str]:
    specs = runner.output_specs
    boxes = [n for n, s in specs.items() if s.channels == DEFAULT_BOX_CHANNELS]
    classes = sorted((n for n in specs if n not in boxes), key=lambda n: specs[n].grid[0] * specs[n].grid[1])
    return [*boxes, *classes]


def _heads_paired_across_grids(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, paired_by_listing_order, _classes_listed_smallest_grid_first))


def _fcr_read_channel_first(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, fcr_read_channel_first))


def _class_names_swapped(bench: Bench, stack: ExitStack) -> Injected:
    """A copy of the dataset description: the same images and labels, the first two names swapped."""
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hailo-harness-doctor-")))
    names = list(bench.dataset.names)
    names[0], names[1] = names[1], names[0]
    (folder / "val.txt").write_text("".join(f"{s.path.resolve()}\n" for s in bench.dataset.samples), encoding="utf-8")
    root = str(Path(bench.dataset.root).resolve())
    description = {"path": root, "val": str(folder / "val.txt"), "names": dict(enumerate(names))}
    (folder / "data.yaml").write_text(yaml.safe_dump(description, sort_keys=False), encoding="utf-8")
    return Injected(bench.subject_path(stack), load_yolo(folder / "data.yaml"))


def _class_map_wrong(bench: Bench, stack: ExitStack) -> Injected:
    n = len(bench.dataset.names)
    shifted = tuple((i + 1) % len(bench.model_names) for i in range(n))
    return Injected(bench.subject_path(stack, replace(bench.settings, class_map=shifted)))


def _nms_classes_wrong(bench: Bench, stack: ExitStack) -> Injected:
    classes = len(bench.model_names)
    wrong = NMS_TEMPLATE_CLASSES if classes != NMS_TEMPLATE_CLASSES else classes + 1
    return Injected(description=_with_nms(bench.description, classes=wrong))


def _nms_regression_length_wrong(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(description=_with_nms(bench.description, regression_length=WRONG_REGRESSION_LENGTH))


def _nms_score_threshold_differs(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(description=_with_nms(bench.description, score_threshold=WRONG_NMS_SCORE_THRESHOLD))


MODES: tuple[Mode, ...] = (
    Mode(
        "calibration_off_domain",
        "calibrated on 64 images that show none of the classes",
        "emulated HEF quantized on the demo's 64 off-domain calibration frames",
        "score_cap",
        _calibration_off_domain,
        needs_emulator=True,
    ),
    Mode(
        "nms_without_sigmoid",
        "NMS HEF compiled without the sigmoid on the class convs",
        "emulated HEF with HailoRT's NMS op and class logits (sigmoid_inside=False, nms=True)",
        "sigmoid_missing",
        _nms_without_sigmoid,
        needs_emulator=True,
    ),
    Mode(
        "host_sigmoid_on_probabilities",
        "host sigmoid over raw class outputs that are post-sigmoid already",
        "host decoder forcing a sigmoid over the raw-output HEF's post-sigmoid class heads",
        "sigmoid_applied_twice",
        _host_sigmoid_on_probabilities,
    ),
    Mode(
        "host_sigmoid_on_nms_scores",
        "host sigmoid over the NMS output's scores",
        "wrapper applying a sigmoid to every detection score of the path under test",
        "sigmoid_applied_twice",
        _host_sigmoid_on_nms_scores,
    ),
    Mode(
        "raw_decoder_on_nms_buffer",
        "the raw six-output decoder run over a HAILO_NMS_BY_CLASS buffer",
        "the harness' raw-heads path over the emulated NMS HEF's one output",
        "not_raw_heads",
        _raw_decoder_on_nms_buffer,
        needs_emulator=True,
    ),
    Mode(
        "nms_records_read_x_first",
        "NMS records read x-first (they are y_min, x_min, y_max, x_max)",
        "wrapper re-reading each box as an x-first record in the model input",
        "yx_swapped",
        _records_x_first,
    ),
    Mode(
        "input_normalised_twice",
        "the host divides by 255 on top of the HEF's normalization layer",
        "wrapper feeding uint8(image / 255)",
        "input_normalised_twice",
        _input_normalised_twice,
    ),
    Mode(
        "bgr_input",
        "BGR frames fed where the model expects RGB",
        "wrapper reversing the colour channels of each image",
        "channels_swapped",
        _bgr_input,
    ),
    Mode(
        "resize_not_letterbox",
        "plain resize in the path under test, letterbox in the reference",
        "path under test with settings preprocess=resize",
        "settings_differ",
        _resize_not_letterbox,
        detail="preprocess",
    ),
    Mode(
        "heads_paired_across_grids",
        "box and class heads paired by listing order across grids",
        "host decoder pairing heads in listing order, outputs listed class heads smallest grid first",
        "heads_paired_across_grids",
        _heads_paired_across_grids,
    ),
    Mode(
        "fcr_read_channel_first",
        "FCR head outputs read channel-first",
        "host decoder reshaping FCR outputs as [C, H, W]",
        "fcr_read_channel_first",
        _fcr_read_channel_first,
    ),
    Mode(
        "class_names_swapped",
        "the dataset names its classes in another order than the model",
        "dataset copy (same images and labels) with the first two class names swapped",
        "class_names_reordered",
        _class_names_swapped,
    ),
    Mode(
        "class_map_wrong",
        "an explicit class map that pairs each dataset class with the wrong model class",
        "settings class_map mapping dataset class i to model class i + 1",
        "dataset_class_order",
        _class_map_wrong,
    ),
    Mode(
        "nms_classes_wrong",
        "NMS config with the wrong class count",
        f"HEF description with the NMS op's classes set to the template's {NMS_TEMPLATE_CLASSES}",
        "nms_classes_vs_onnx",
        _nms_classes_wrong,
    ),
    Mode(
        "nms_regression_length_wrong",
        "NMS config with the wrong regression length",
        f"HEF description with the NMS op's regression_length {WRONG_REGRESSION_LENGTH}",
        "regression_length",
        _nms_regression_length_wrong,
    ),
    Mode(
        "nms_score_threshold_differs",
        "the HEF's NMS score threshold differs from the evaluation's",
        f"HEF description with the NMS op's score_threshold {WRONG_NMS_SCORE_THRESHOLD}",
        "score_threshold",
        _nms_score_threshold_differs,
    ),
)

MODES_BY_NAME: Mapping[str, Mode] = {m.name: m for m in MODES}


def inject(mode: Mode | str, bench: Bench, stack: ExitStack) -> Injected:
    """``mode`` injected into ``bench``; runners and temporary files live as long as ``stack``."""
    mode = MODES_BY_NAME[mode] if isinstance(mode, str) else mode
    if mode.needs_emulator and bench.hef is None:
        raise HarnessError(f"mode {mode.name}: needs an emulated HEF; the emulator refuses {bench.onnx.name}")
    return mode.inject(bench, stack)


# ------------------------------------------------------------------------------------------- evidence


def _truth(result: PathResult, dataset: Dataset) -> list[Detections]:
    mapping = np.asarray(result.settings.class_map, dtype=np.int64)
    out = []
    for sample in dataset.samples:
        truth = sample.ground_truth.mapped(mapping)
        out.append(Detections(truth.boxes, np.ones(len(truth), np.float32), truth.class_ids))
    return out


def doctor_evidence(
    bench: Bench, result: PathResult, reference: PathResult, probe: DetectionPath | None = None
) -> Evidence:
    """What the diagnosis is given for every run alike: :func:`~harness.diagnosis.collect_evidence`
    against the reference (where it is comparable), the settings that differ from it, agreement
    with the ground truth and, for a ``probe`` path (a run whose gates failed), the matched share
    with red and blue exchanged on the first :data:`PROBE_IMAGES` images and the conformance of its
    host decoder, if it has one."""
    comparable = not reference.settings.differences(result.settings) and reference.image_ids == result.image_ids
    evidence = collect_evidence(result, reference if comparable else None, bench.original_hw)
    truth = agreement(_truth(result, bench.dataset), result.predictions)
    evidence = replace(
        evidence,
        settings_differences="; ".join(reference.settings.differences(result.settings)),
        truth_matched=truth.matched,
        truth_class_flipped=truth.class_flipped,
    )
    if probe is None:
        return evidence
    if comparable:
        few = subset(bench.dataset, range(min(PROBE_IMAGES, len(bench.dataset.samples))))
        swapped = bench.evaluate(HostPath(probe, "probe: channels reversed", before=reversed_channels), few)
        counts = agreement(reference.predictions[: len(few.samples)], swapped.predictions)
        evidence = replace(evidence, reversed_channels_matched_share=matched_share(counts))
    decoder = getattr(probe, "decoder", None)
    if decoder is not None:
        failures = [f for f in run_conformance(decoder).values() if f]
        evidence = replace(evidence, decoder_conformance=failures[0] if failures else "")
    return evidence


# --------------------------------------------------------------------------------------------- doctor


@dataclass(frozen=True)
class DoctorRow:
    """One mode (or clean control) run against the bench. ``gate_failed`` is None when it did not
    run; ``gate`` names the first failed gate (or check, or the refusal) and what it said;
    ``diagnosis`` is the top finding's name (``none`` when no rule holds); ``correct`` says the
    diagnosis is the expected one."""

    mode: str
    expected: str
    injected: bool
    how: str
    gate_failed: bool | None
    gate: str
    diagnosis: str
    cause: str
    correct: bool | None
    gap: str = ""


@dataclass(frozen=True)
class CleanRun:
    """The clean path under test against the ONNX reference on a sample of the images: passes when
    the agreement gate passes, the paired bootstrap interval of mAP@0.5 (path minus reference)
    contains 0 or lies within the allowed drop, and no rule of the diagnosis holds."""

    seed: int
    n_images: int
    matched_share: float
    map50_difference: DifferenceInterval
    findings: tuple[str, ...]
    passed: bool


@dataclass(frozen=True)
class DoctorTable:
    model: str
    dataset: str
    n_images: int
    hailo_path: str
    baselines: Mapping[str, str]
    controls: tuple[DoctorRow, ...]
    rows: tuple[DoctorRow, ...]
    clean_runs: tuple[CleanRun, ...] = field(default=())

    @property
    def problems(self) -> list[str]:
        """Every way the doctor found the harness wanting: a clean control or clean run that
        fails, an injected mode not caught (without a known gap) or not named."""
        found = [f"clean control {r.mode}: {r.gate}" for r in self.controls if r.gate_failed]
        found += [f"clean run seed {c.seed} fails" for c in self.clean_runs if not c.passed]
        for r in self.rows:
            if not r.injected:
                continue
            if not r.gate_failed and not r.gap:
                found.append(f"{r.mode}: no gate failed")
            if not r.correct:
                found.append(f"{r.mode}: diagnosed {r.diagnosis}, expected {r.expected}")
        return found


def _first_failure(gates: Sequence[GateResult]) -> str:
    failed = [g for g in gates if not g.passed]
    if not failed:
        return ""
    lines = failed[0].message.splitlines()
    return f"{failed[0].name}: {lines[1].strip() if len(lines) > 1 else lines[0]}"


def _row(mode: Mode, how: str, gate_failed: bool, gate: str, name: str, text: str) -> DoctorRow:
    """A run's row: ``name`` and ``text`` are its top diagnosis (``none``, ``""`` when nothing holds)."""
    correct = name == mode.expected and mode.detail in text
    return DoctorRow(mode.name, mode.expected, True, how, gate_failed, gate, name, text, correct, mode.gap)


def _path_row(bench: Bench, mode: Mode, how: str, path: DetectionPath, result: PathResult) -> DoctorRow:
    """``result`` of ``path`` held to its baseline and the reference, then diagnosed."""
    reference = bench.reference_for(result)
    gates = run_gates(result, bench.baselines[result.path], reference, None, bench.original_hw)
    failed = any(not g.passed for g in gates)
    findings = diagnose(doctor_evidence(bench, result, reference, path if failed else None))
    if not findings:
        return _row(mode, how, failed, _first_failure(gates), "none", "")
    top = findings[0]
    return _row(mode, how, failed, _first_failure(gates), top.name, f"{top.cause} ({top.evidence})")


def _checks_row(mode: Mode, how: str, failing: Sequence[CheckResult]) -> DoctorRow:
    if not failing:
        return _row(mode, how, False, "", "none", "")
    top = failing[0]
    return _row(mode, how, True, f"test_hef_static[{top.name}]: {top.message}", top.name, top.message)


def _refusal_name(error: HarnessError) -> str:
    for refusal in REFUSALS:
        if isinstance(error, refusal.error) and refusal.phrase in str(error):
            return refusal.name
    return "refused"


def run_mode(bench: Bench, mode: Mode) -> DoctorRow:
    """Inject ``mode`` into ``bench``, run its gates (or static checks) and its diagnosis. Static
    checks that fail on the injected HEF description but pass on the clean one are what the
    injection broke; an error the harness raises is the run refused, named by :data:`REFUSALS`."""
    if mode.needs_emulator and bench.hef is None:
        why = f"not run: needs an emulated HEF; {bench.emulator_refusal}"
        return DoctorRow(mode.name, mode.expected, False, why, None, "", "", "", None, mode.gap)
    with ExitStack() as stack:
        try:
            injected = inject(mode, bench, stack)
            if injected.description is not None:
                clean = {r.name for r in bench.checks(bench.description) if r.passed is False}
                failing = [r for r in bench.checks(injected.description) if r.passed is False and r.name not in clean]
                return _checks_row(mode, mode.injection, failing)
            assert injected.path is not None
            result = bench.evaluate(injected.path, injected.dataset)
        except HarnessError as error:
            return _row(mode, mode.injection, True, f"refused: {error}", _refusal_name(error), str(error))
        return _path_row(bench, mode, mode.injection, injected.path, result)


_CLEAN = Mode("clean", "none", "", "none", lambda bench, stack: Injected())


def controls(bench: Bench) -> tuple[DoctorRow, ...]:
    """The clean runs the modes are measured against, held to the same gates and checks: no gate
    may fail and no rule may hold."""
    with ExitStack() as stack:
        clean = _path_row(bench, _CLEAN, f"clean {bench.subject.label}", bench.subject_path(stack), bench.subject)
        raw = bench.raw_path(stack, decode)
        heads = _path_row(
            bench,
            replace(_CLEAN, name="clean_raw_heads"),
            "raw head outputs, harness decoder",
            raw,
            bench.evaluate(raw),
        )
    failing = [r for r in bench.checks(bench.description) if r.passed is False]
    static = _checks_row(replace(_CLEAN, name="clean_hef_description"), "static checks, clean HEF description", failing)
    return clean, heads, static


def clean_runs(bench: Bench, seeds: Sequence[int] = CLEAN_SEEDS, share: float = CLEAN_SHARE) -> tuple[CleanRun, ...]:
    """The clean path under test held against the ONNX reference on ``share`` of the images drawn
    with each seed (predictions from the cache: nothing is inferred again). Baselines are not used:
    they hold all the images, and a sample is another manifest."""
    if bench.hef is None:
        return ()
    drop = DEFAULT_TOLERANCES.map50_drop
    names = [c.name for c in bench.reference.metrics.per_class]
    out = []
    for seed in seeds:
        n = max(1, round(share * len(bench.dataset.samples)))
        picked = np.random.default_rng(seed).choice(len(bench.dataset.samples), n, replace=False)
        sample = subset(bench.dataset, picked.tolist())
        with ExitStack() as stack:
            reference = bench.evaluate(
                stack.enter_context(OnnxPath(bench.onnx, bench.settings, bench.model_names)), sample
            )
            hailo = bench.evaluate(bench.subject_path(stack), sample)
        gate = gate_path_agreement(reference, hailo)
        truths = [s.ground_truth.mapped(np.asarray(reference.settings.class_map)) for s in sample.samples]
        interval = paired_bootstrap(truths, reference.predictions, hailo.predictions, names).map50
        within = (interval.low <= 0 <= interval.high) or interval.low >= -drop
        findings = tuple(f.name for f in diagnose(collect_evidence(hailo, reference)))
        share_seen = gate.observed if gate.observed is not None else math.nan
        out.append(CleanRun(seed, n, share_seen, interval, findings, gate.passed and within and not findings))
    return tuple(out)


def run_doctor(
    onnx: Path = DEMO_ONNX,
    dataset: Path | None = None,
    images: int | None = None,
    modes: Sequence[Mode] = MODES,
    calibration: str | Path | None = None,
    cache_dir: Path = JobConfig.cache_dir,
    golden_root: Path = JobConfig.golden_root,
    seeds: Sequence[int] = CLEAN_SEEDS,
) -> DoctorTable:
    """Every mode of ``modes`` injected into ``onnx`` on ``dataset`` (default: the demo), after the
    clean controls and the clean runs on ``seeds``; see :func:`open_bench` for the arguments."""
    bench = open_bench(onnx, dataset, images, calibration, cache_dir, golden_root)
    hailo = bench.hef.label if bench.hef is not None else f"none: {bench.emulator_refusal}"
    return DoctorTable(
        model=str(onnx),
        dataset=str(bench.dataset.root),
        n_images=len(bench.dataset.samples),
        hailo_path=hailo,
        baselines=dict(bench.baseline_sources),
        controls=controls(bench),
        rows=tuple(run_mode(bench, mode) for mode in modes),
        clean_runs=clean_runs(bench, seeds),
    )


# ---------------------------------------------------------------------------------------------- output


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def table_lines(table: DoctorTable) -> list[str]:
    """The doctor table as text: controls, modes, clean runs, and what is wrong, if anything."""
    lines = [
        f"model: {table.model}",
        f"dataset: {table.dataset} ({table.n_images} images)",
        f"Hailo path: {table.hailo_path}",
        *(f"baseline {path}: {source}" for path, source in table.baselines.items()),
        "",
    ]
    header = ("mode", "injected", "gate failed", "top diagnosis", "expected", "correct")
    body = [
        (r.mode, "yes" if r.injected else "no", _yes(r.gate_failed), r.diagnosis or "-", r.expected, _yes(r.correct))
        for r in (*table.controls, *table.rows)
    ]
    widths = [max(len(str(row[i])) for row in (header, *body)) for i in range(len(header))]
    for row in (header, tuple("-" * w for w in widths), *body):
        lines.append("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    lines.append("")
    for r in (*table.controls, *table.rows):
        lines.append(f"{r.mode}: {r.how}")
        if r.gate:
            lines.append(f"    gate: {r.gate.splitlines()[0]}")
        if r.cause:
            lines.append(f"    diagnosis: {r.cause.splitlines()[0]}")
        if r.gap:
            lines.append(f"    known gap: {r.gap}")
    if table.clean_runs:
        lines.append("")
        for c in table.clean_runs:
            iv = c.map50_difference
            lines.append(
                f"clean run seed {c.seed}: {c.n_images} images, agreement {c.matched_share:.1%}, mAP@0.5 difference "
                f"{iv.point:+.4f} [{iv.low:+.4f}, {iv.high:+.4f}], findings {list(c.findings)}: "
                f"{'PASS' if c.passed else 'FAIL'}"
            )
    problems = table.problems
    lines.append("")
    lines.extend(f"PROBLEM: {p}" for p in problems)
    ran = [r for r in table.rows if r.injected]
    caught = sum(bool(r.gate_failed) for r in ran)
    named = sum(bool(r.correct) for r in ran)
    lines.append(
        f"{'HEALTHY' if not problems else 'UNHEALTHY'}: {caught} of {len(ran)} injected modes caught by a gate, "
        f"{named} of {len(ran)} named correctly, {len(table.rows) - len(ran)} not run; "
        f"{sum(c.passed for c in table.clean_runs)} of {len(table.clean_runs)} clean runs pass"
    )
    return lines


def table_dict(table: DoctorTable) -> dict[str, Any]:
    """The doctor table as JSON-ready data (NaN as None)."""

    def number(value: float) -> float | None:
        return None if math.isnan(value) else round(value, 6)

    def row(r: DoctorRow) -> dict[str, Any]:
        return {
            "mode": r.mode,
            "expected": r.expected,
            "injected": r.injected,
            "how": r.how,
            "gate_failed": r.gate_failed,
            "gate": r.gate,
            "diagnosis": r.diagnosis,
            "cause": r.cause,
            "correct": r.correct,
            "gap": r.gap,
        }

    return {
        "model": table.model,
        "dataset": table.dataset,
        "n_images": table.n_images,
        "hailo_path": table.hailo_path,
        "baselines": dict(table.baselines),
        "controls": [row(r) for r in table.controls],
        "modes": [row(r) for r in table.rows],
        "clean_runs": [
            {
                "seed": c.seed,
                "n_images": c.n_images,
                "matched_share": number(c.matched_share),
                "map50_difference": {
                    "point": number(c.map50_difference.point),
                    "low": number(c.map50_difference.low),
                    "high": number(c.map50_difference.high),
                },
                "findings": list(c.findings),
                "passed": c.passed,
            }
            for c in table.clean_runs
        ],
        "problems": table.problems,
    }
