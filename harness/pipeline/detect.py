"""Detection paths: one model, one backend, one decoder, from an original image to detections on it.

A path takes a uint8 ``(H, W, 3)`` RGB image, prepares it as its model expects (letterbox with 114
or plain resize, per :class:`~harness.core.settings.EvalSettings`), runs the model, decodes, and hands
back detections in ORIGINAL-image pixels (clipped to the image) with model class ids. The paths here
also take a batch (:meth:`OnnxPath.detect_batch`): each image prepared alone, the batch inferred in one
runner call where the runner takes one, each frame decoded alone; the same detections as one by one.

- :class:`OnnxPath`: the reference, the full ONNX export (float NCHW input in ``[0, 1]``) and the
  harness NMS over its own decoded head output ``[1, 4 + nc, anchors]``, or the export's own rows
  ``[1, max_det, 6]`` where it is end to end (YOLO26's one-to-one head), or an SSD export's boxes and scores.
- :class:`RawHeadsPath`: any runner with a uint8 NHWC 0-255 input (the HEF contract) whose outputs
  are the raw heads; decoded by the harness's decoder of the model's head family
  (:mod:`harness.decode.heads`: the family's decode part).
- :class:`NmsBufferPath`: any such runner whose one output is a HailoRT NMS buffer; decoded by
  :func:`harness.formats.nms_buffer.decode_nms`.
- :class:`BboxOnlyPath`: any such runner whose one output is a HailoRT bbox-only buffer (YOLOv8's or
  YOLOv5's NMS op compiled ``bbox_decoding_only``); the host's NMS by
  :func:`harness.decode.bbox_only.decode_bbox_only` with the settings' thresholds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from harness.backends.base import InputSpec, Runner, SourcedRunner, SubmittingRunner, infer_frames
from harness.core.closing import Closing
from harness.core.detections import Detections, Letterbox, unletterbox
from harness.core.environment import environment
from harness.core.errors import HarnessError, SpecError
from harness.core.head_family import HeadFamily
from harness.core.path_names import DEVICE_PATHS, EMULATED_HAILO, HAILO, ONNX
from harness.core.settings import DecodeConfig, EvalSettings, SsdConfig
from harness.core.shared_entry import EntryUse
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.core.stage_clock import Stage, stage
from harness.decode.bbox_only import decode_bbox_only
from harness.decode.heads import Anchors, decoder, family_anchors, family_decode, head_layout
from harness.decode.layout import HeadLayout
from harness.decode.maps import classes_are_probabilities
from harness.decode.nms import above, nms
from harness.families import descriptor
from harness.formats.bbox_only import LEADING_FIELDS, frame_shape
from harness.formats.nms_buffer import decode_nms
from harness.formats.quant import dequantize
from harness.inputs.export_facts import ExportFacts, export_facts, file_sha256
from harness.inputs.preprocess import fit, geometry, to_nchw_float
from harness.verdict.metrics.distribution import CellsAboveThreshold, cells_above_threshold

if TYPE_CHECKING:
    from harness.backends.onnx.runner import FullHeadRunner
    from harness.conformance.misreadings import DecodedFrame
    from harness.conformance.suite import Decoder


@dataclass(frozen=True)
class FrameResult:
    """One image through a path: ``detections`` in original-image pixels with model class ids;
    ``cells``: how many raw class-output cells passed the score threshold (raw-head paths only)."""

    detections: Detections
    cells: CellsAboveThreshold | None = None


class DetectionPath(Protocol):
    """``name`` is ``onnx``, ``hailo`` or one of the emulated paths (:data:`DEVICE_PATHS`); ``emulated``
    is True unless the path ran on Hailo hardware. ``model_sha256`` is the model file's; ``variant``
    names whatever else fixes the outputs (e.g. the emulator's calibration set), ``""`` if nothing.
    ``model_names`` are the model's class names in class-id order, if known. ``fps``: frames per
    second measured on Hailo hardware so far, None for every other path and before any frame."""

    name: str
    emulated: bool
    model_file: Path
    model_sha256: str
    variant: str
    settings: EvalSettings
    input_hw: tuple[int, int]
    model_names: tuple[str, ...] | None
    runtime: str  # what runs the model, e.g. "onnxruntime 1.20.1" or a HailoRT runner's device and version
    # The highest score its class outputs can represent where the runner knows it (an emulated HEF), else None.
    score_ceiling: float | None

    @property
    def fps(self) -> float | None: ...

    def detect(self, image: np.ndarray) -> FrameResult: ...


@runtime_checkable
class BatchDetectionPath(Protocol):
    """What a :class:`DetectionPath` that also takes a batch offers besides: one :class:`FrameResult`
    per image, as :meth:`detect` gives it (its one member is what ``isinstance`` checks)."""

    def detect_batch(self, images: Sequence[np.ndarray]) -> list[FrameResult]: ...


@runtime_checkable
class SourcedPath(Protocol):
    """What a path whose runner keeps outputs by the image file an input was made from offers besides
    (a recorder, a replay: :class:`~harness.backends.base.SourcedRunner`): a batch with each image's
    file sha256, and a frame served by that sha256 alone, the file unread (None where it is not)."""

    def detect_sourced(self, images: Sequence[np.ndarray], sources: Sequence[str]) -> list[FrameResult]: ...

    def served(self, source: str, original_hw: tuple[int, int]) -> FrameResult | None: ...


def detect_frames(
    path: DetectionPath, images: Iterable[np.ndarray], sources: Sequence[str] | None = None
) -> Iterator[FrameResult]:
    """Each image's frame: all in one batch where ``path`` takes batches, else each image taken and
    detected as the one before is handed on. ``sources``: each image file's sha256, for a path that
    keeps outputs by it."""
    if sources is not None and isinstance(path, SourcedPath):
        yield from path.detect_sourced(list(images), sources)
    elif isinstance(path, BatchDetectionPath):
        yield from path.detect_batch(list(images))
    else:
        for image in images:
            yield path.detect(image)


Collect = Callable[[], Iterable[FrameResult]]


def keeps_in_flight(path: DetectionPath) -> bool:
    """Whether ``path`` hands batches to a device that works while the host prepares and decodes others."""
    return isinstance(path, _RunnerPath) and path.submits


def submit_frames(path: DetectionPath, images: Iterable[np.ndarray], sources: Sequence[str] | None = None) -> Collect:
    """The frames :func:`detect_frames` gives, from a call: where ``path`` keeps batches in flight the images
    are prepared and handed to the device now, and the call waits for their outputs and decodes them; else
    the call detects them as :func:`detect_frames` does (a path taking one image at a time hands each frame
    on as it is made, so that an interrupted batch keeps the frames made before)."""
    if isinstance(path, _RunnerPath) and path.submits:
        return path.submit(list(images))
    return lambda: detect_frames(path, images, sources)


def prepare(image: np.ndarray, settings: EvalSettings) -> tuple[np.ndarray, Letterbox]:
    """uint8 ``(H, W, 3)`` -> the uint8 model-input image and where the original sits in it."""
    return fit(image, settings.preprocess, settings.input_hw)


def _names(model_names: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if model_names is None else tuple(model_names)


class OnnxPath(Closing):
    """The reference path: a full Ultralytics ONNX export run by onnxruntime, NMS by the harness
    (``settings.nms_mode``) over the model's decoded head output, or an end-to-end export's own rows
    kept above the score threshold (ultralytics: ultralytics/utils/nms.py keeps an end-to-end
    prediction whose score is above ``conf``). ``model_names`` default to the export's metadata.
    ``facts``: the export's (:func:`~harness.inputs.export_facts.export_facts`), read from the model
    where not given. The onnxruntime session opens on the first frame inferred: a path whose every
    prediction is cached loads no model. The export's decoded head output is read as its family's decode
    part reads it (``export_rows``); an SSD export's with the SSD config its facts were found with, which
    its ``variant`` names (another config: other predictions)."""

    name = ONNX
    emulated = False
    variant = ""
    fps = None
    score_ceiling: float | None = None  # float scores: no cap

    def __init__(
        self,
        onnx_path: str | os.PathLike[str],
        settings: EvalSettings,
        model_names: Sequence[str] | None = None,
        threads: int | None = None,
        facts: ExportFacts | None = None,
    ) -> None:
        self.model_file = Path(onnx_path)
        facts = facts or export_facts(self.model_file)
        input_hw = facts.input_hw
        if tuple(settings.input_hw) != input_hw:
            raise HarnessError(
                f"{self.model_file}: settings input_hw {tuple(settings.input_hw)}, expected the model input {input_hw}"
            )
        self.model_sha256 = facts.sha256
        self.settings = settings
        self.input_hw = input_hw
        self.model_names = _names(model_names) or facts.names
        self.runtime = f"onnxruntime {dict(environment())['onnxruntime']} on the CPU"
        self._input_name = facts.input_name
        self._config = settings.decode_config(classes_are_probabilities=True, ssd=facts.ssd)
        # an export whose heads were not found: read as Ultralytics' decoded head output, (4 + nc, anchors)
        self._export_rows = family_decode(facts.family or HeadFamily.YOLOV8).export_rows
        self.variant = ssd_variant("", facts.ssd)
        self._end_to_end = facts.end_to_end
        self._threads = threads
        self._session: FullHeadRunner | None = None
        self._closed = False

    @property
    def _runner(self) -> FullHeadRunner:
        """The export's onnxruntime session, opened on first use."""
        if self._closed:
            raise RuntimeError(f"{self.model_file}: onnxruntime session used after close")
        if self._session is None:
            from harness.backends.onnx.runner import FullHeadRunner

            self._session = FullHeadRunner(self.model_file, self._threads)
        return self._session

    def detect(self, image: np.ndarray) -> FrameResult:
        return self.detect_batch([image])[0]

    def detect_batch(self, images: Sequence[np.ndarray]) -> list[FrameResult]:
        with stage(Stage.PREPROCESS):
            prepared = [prepare(image, self.settings) for image in images]
            batch = to_nchw_float(np.stack([canvas for canvas, _ in prepared]))
        with stage(Stage.INFERENCE):
            heads = self._runner.infer_batch({self._input_name: batch})
        with stage(Stage.DECODE):
            return [self._decode(head, geometry) for head, (_, geometry) in zip(heads, prepared, strict=True)]

    def _decode(self, head: np.ndarray, geometry: Letterbox) -> FrameResult:
        """One frame's head output, ``(max_det, 6)`` end to end, else as its family's export writes it
        (``(4 + nc, anchors)``, ``(rows, 5 + nc)``, ...), as detections on its image."""
        if self._end_to_end:
            rows = head[above(head[:, 4], self.settings.score_threshold)]
            kept = Detections(rows[:, :4], rows[:, 4], rows[:, 5].astype(np.int64))
            return FrameResult(unletterbox(kept, geometry))
        boxes, scores = self._export_rows(head, self._config)
        return FrameResult(unletterbox(nms(boxes, scores, self._config), geometry))

    def close(self) -> None:
        self._closed = True
        if self._session is not None:
            self._session.close()


def ssd_variant(variant: str, ssd: SsdConfig | None) -> str:
    """A path's variant with the SSD config its outputs are decoded with, by digest (none: as it is)."""
    if ssd is None:
        return variant
    return f"{variant}+" * bool(variant) + f"ssd config {ssd.digest[:16]}"


def _image_input(specs: Mapping[str, InputSpec], input_hw: tuple[int, int]) -> str:
    """The one input, uint8 NHWC ``input_hw + (3,)``: raw 0-255 RGB, the /255 being inside the HEF
    (hailo_model_zoo: cfg/alls/generic/yolov8n.alls, ``normalization([0,0,0],[255,255,255])``)."""
    expected = f"one uint8 NHWC input of shape {(*input_hw, 3)}"
    if len(specs) != 1:
        raise SpecError(f"runner inputs {sorted(specs)}: expected {expected}")
    spec = next(iter(specs.values()))
    if spec.format_order is not FormatOrder.NHWC or spec.format_type is not FormatType.UINT8:
        raise SpecError(
            f"input {spec.name!r}: {spec.format_order.name} {spec.format_type.name}, expected NHWC UINT8 (0-255)"
        )
    if tuple(spec.shape) != (*input_hw, 3):
        raise SpecError(f"input {spec.name!r}: shape {spec.shape}, expected {(*input_hw, 3)} (settings input_hw)")
    return spec.name


class _RunnerPath:
    """What the raw-head and NMS-buffer paths share: a runner fed like a HEF, and their identity.
    Each subclass checks in :meth:`_check_outputs` that the runner's outputs are what it decodes."""

    path_names: tuple[str, ...] = DEVICE_PATHS

    def __init__(
        self,
        runner: Runner,
        settings: EvalSettings,
        model_file: str | os.PathLike[str],
        name: str = EMULATED_HAILO,
        model_names: Sequence[str] | None = None,
        variant: str = "",
        family: HeadFamily = HeadFamily.YOLOV8,
        anchors: Anchors = (),
        model_sha256: str = "",
        ssd: SsdConfig | None = None,
    ) -> None:
        if name not in self.path_names:
            raise HarnessError(
                f"path name {name!r}: expected one of {list(self.path_names)} for a runner fed like a HEF"
            )
        self.name = name
        self.emulated = name != HAILO
        self.model_file = Path(model_file)
        self.model_sha256 = model_sha256 or file_sha256(self.model_file)
        self.variant = ssd_variant(variant, ssd)
        self.settings = settings
        self.input_hw = settings.input_hw
        self.model_names = _names(model_names)
        self.family = family
        self.anchors = anchors
        self.ssd = ssd
        self._runner = runner
        self.runtime = runner.label
        self.score_ceiling: float | None = getattr(runner, "score_ceiling", None)
        self.cache_entries: tuple[EntryUse, ...] = getattr(runner, "cache_entries", ())
        self.made_from: tuple[tuple[str, str], ...] = getattr(runner, "made_from", ())
        self._input_name = _image_input(runner.input_specs, settings.input_hw)
        self._specs: dict[str, OutputSpec] = dict(runner.output_specs)
        self._check_outputs()

    def _check_outputs(self) -> None:
        raise NotImplementedError

    @property
    def fps(self) -> float | None:
        """The device's measured frames per second (a runner that measures it: HailoRT's)."""
        return None if self.emulated else getattr(self._runner, "fps", None)

    def _decode(self, outputs: dict[str, np.ndarray], geometry: Letterbox) -> FrameResult:
        """One frame's runner outputs as detections on its image."""
        raise NotImplementedError

    def detect(self, image: np.ndarray) -> FrameResult:
        return self.detect_batch([image])[0]

    def detect_batch(self, images: Sequence[np.ndarray]) -> list[FrameResult]:
        return self._detect(images, None)

    def detect_sourced(self, images: Sequence[np.ndarray], sources: Sequence[str]) -> list[FrameResult]:
        return self._detect(images, sources)

    def served(self, source: str, original_hw: tuple[int, int]) -> FrameResult | None:
        if not isinstance(self._runner, SourcedRunner):
            return None
        with stage(Stage.INFERENCE):
            outputs = self._runner.served(source)
        if outputs is None:
            return None
        with stage(Stage.DECODE):
            return self._decode(outputs, geometry(self.settings.preprocess, original_hw, self.input_hw))

    @property
    def submits(self) -> bool:
        """Whether its runner keeps batches in flight (:class:`~harness.backends.base.SubmittingRunner`)."""
        return isinstance(self._runner, SubmittingRunner)

    def submit(self, images: Sequence[np.ndarray]) -> Collect:
        """``images`` prepared and handed to the device now; the call returned waits for them and decodes."""
        with stage(Stage.PREPROCESS):
            prepared = [prepare(image, self.settings) for image in images]
        runner = self._runner
        assert isinstance(runner, SubmittingRunner)
        with stage(Stage.INFERENCE):
            waiting = runner.submit_batch({self._input_name: np.stack([canvas for canvas, _ in prepared])})

        def collect() -> list[FrameResult]:
            with stage(Stage.INFERENCE):
                outputs = waiting()
            with stage(Stage.DECODE):
                return [self._decode(frame, fitted) for frame, (_, fitted) in zip(outputs, prepared, strict=True)]

        return collect

    def _detect(self, images: Sequence[np.ndarray], sources: Sequence[str] | None) -> list[FrameResult]:
        with stage(Stage.PREPROCESS):
            prepared = [prepare(image, self.settings) for image in images]
        with stage(Stage.INFERENCE):
            feed = {self._input_name: np.stack([canvas for canvas, _ in prepared])}
            outputs = infer_frames(self._runner, feed, sources)
        with stage(Stage.DECODE):
            return [self._decode(frame, fitted) for frame, (_, fitted) in zip(outputs, prepared, strict=True)]


def _class_probabilities(
    outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig, family: HeadFamily
) -> list[np.ndarray]:
    """Every cell's class probabilities, ``(cells, nc)`` per class output of ``heads`` (``family``'s), as the
    decoders score them: dequantized, and through a float32 sigmoid unless the outputs already hold
    probabilities; of an anchored family, its decoder's scores of every (cell, anchor) (YOLOv5/YOLOv7's
    objectness x class, SSD's classes but the background)."""
    if descriptor(family).anchored:
        return [family_decode(family).candidates(outputs, heads, config)[1]]
    values = []
    for level in heads.levels:
        spec = level.classes.host_spec
        raw = np.asarray(outputs[spec.name]).reshape(-1, spec.channels)
        values.append((spec, dequantize(raw, spec.quant) if spec.is_quantized else raw.astype(np.float32)))
    probabilities = config.classes_are_probabilities
    if probabilities is None:
        probabilities = all(classes_are_probabilities(spec, v) for spec, v in values)
    if probabilities:
        return [v for _, v in values]
    with np.errstate(over="ignore"):
        return [np.float32(1) / (np.float32(1) + np.exp(-v)) for _, v in values]


class RawHeadsPath(_RunnerPath):
    """A runner fed uint8 NHWC 0-255 whose outputs are the raw heads (UINT8/UINT16 with quant
    infos, or FLOAT32; NHWC or FCR, both dense channel-last on the host), decoded by the harness.
    Also counts the class-output cells at or above the score threshold."""

    # FCR and NHWC are both [N, H, W, C] on the host side
    # hailort: hailort/libhailort/include/hailo/hailort.h (hailo_format_order_t)

    def _check_outputs(self) -> None:
        self._config = self.settings.decode_config(anchors=self.anchors, ssd=self.ssd)
        self._decode_heads = decoder(self.family)
        # fails now, naming the outputs, if they are not the family's heads
        anchors = family_anchors(self.family, self._config)
        self._layout = head_layout(self.family, self._specs, self._config.input_hw, anchors)

    def _decode(self, outputs: dict[str, np.ndarray], geometry: Letterbox) -> FrameResult:
        detections = self._decode_heads(outputs, self._specs, self._config)
        scores = _class_probabilities(outputs, self._layout, self._config, self.family)
        cells = cells_above_threshold(scores, self.settings.score_threshold)
        return FrameResult(unletterbox(detections, geometry), cells)


class NmsBufferPath(_RunnerPath):
    """A runner fed uint8 NHWC 0-255 whose one output is a HailoRT NMS buffer (BY_CLASS or BY_SCORE,
    in any host form :func:`~harness.formats.nms_buffer.decode_nms` reads). The buffer holds what
    the NMS compiled into the model kept; no threshold is applied again here."""

    def _check_outputs(self) -> None:
        found = {n: s.format_order.name for n, s in self._specs.items()}
        buffers = [
            s for s in self._specs.values() if s.format_order in (FormatOrder.NMS_BY_CLASS, FormatOrder.NMS_BY_SCORE)
        ]
        if len(self._specs) != 1 or len(buffers) != 1:
            raise SpecError(f"runner outputs {found}: expected exactly one, of order NMS_BY_CLASS or NMS_BY_SCORE")
        self._spec = buffers[0]

    def _decode(self, outputs: dict[str, np.ndarray], geometry: Letterbox) -> FrameResult:
        if self._spec.name not in outputs:
            raise SpecError(f"output {self._spec.name!r}: missing from the runner's outputs ({sorted(outputs)})")
        detections = decode_nms(outputs[self._spec.name], self._spec, self.input_hw)
        return FrameResult(unletterbox(detections, geometry))


class BboxOnlyPath(_RunnerPath):
    """A runner fed uint8 NHWC 0-255 whose one output is HailoRT's bbox-only buffer of the model's head
    family (FLOAT32 NHWC ``(1, proposals, 4|5 + classes)``: every proposal's box and class values, the
    NMS op compiled ``bbox_decoding_only``). The host runs the NMS the settings ask for, with their
    thresholds (:func:`~harness.decode.bbox_only.decode_bbox_only`); the class values are taken as
    probabilities, as the op writes them from post-sigmoid heads."""

    def _check_outputs(self) -> None:
        found = {n: (s.format_order.name, s.format_type.name, s.shape) for n, s in self._specs.items()}
        if len(self._specs) != 1:
            raise SpecError(f"runner outputs {found}: expected exactly one, HailoRT's bbox-only buffer")
        (self._spec,) = self._specs.values()
        frame_shape(self._spec, self.family)  # fails now, naming the output, if it is not the family's buffer
        self._config = self.settings.decode_config(classes_are_probabilities=True)

    def _decode(self, outputs: dict[str, np.ndarray], geometry: Letterbox) -> FrameResult:
        if self._spec.name not in outputs:
            raise SpecError(f"output {self._spec.name!r}: missing from the runner's outputs ({sorted(outputs)})")
        detections = decode_bbox_only(outputs[self._spec.name], self._spec, self._config, self.family)
        return FrameResult(unletterbox(detections, geometry))


def is_bbox_only(specs: Mapping[str, OutputSpec], family: HeadFamily) -> bool:
    """Whether ``specs`` are a bbox-only op's one output for ``family``: a single FLOAT32 NHWC output of
    shape ``(1, proposals, leading fields + classes)`` (:mod:`harness.formats.bbox_only`). YOLOv8's raw
    heads are two maps per stride; only a YOLOv5 export of one stride whose grid is one row high would
    have raw heads of that form."""
    if len(specs) != 1 or family not in LEADING_FIELDS:
        return False
    (spec,) = specs.values()
    return (
        spec.format_order is FormatOrder.NHWC
        and spec.format_type is FormatType.FLOAT32
        and len(spec.shape) == 3
        and spec.shape[0] == 1
        and spec.shape[2] > len(LEADING_FIELDS[family])
    )


def runner_path(
    runner: Runner,
    settings: EvalSettings,
    model_file: str | os.PathLike[str],
    name: str,
    model_names: Sequence[str] | None = None,
    variant: str = "",
    family: HeadFamily = HeadFamily.YOLOV8,
    anchors: Anchors = (),
    model_sha256: str = "",
    ssd: SsdConfig | None = None,
) -> RawHeadsPath | NmsBufferPath | BboxOnlyPath:
    """The path a runner fed like a HEF calls for: its NMS output decoded, its bbox-only output through the
    host's NMS (:func:`is_bbox_only`), or its raw heads (of ``family``, with its ``anchors`` where it is
    anchor-based, an SSD head with its config ``ssd``)."""
    specs = runner.output_specs
    kind: type[RawHeadsPath | NmsBufferPath | BboxOnlyPath] = RawHeadsPath
    if any(spec.is_nms for spec in specs.values()):
        kind = NmsBufferPath
    elif is_bbox_only(specs, family):
        kind = BboxOnlyPath
    return kind(runner, settings, model_file, name, model_names, variant, family, anchors, model_sha256, ssd)


class DecoderPath(_RunnerPath):
    """A runner fed like a HEF whose raw head outputs a host decoder with the harness decoder's
    signature (``decoder(outputs, specs, config) -> Detections``) turns into detections: a user's
    own decoder, or one of the doctor's host mistakes. ``decoder`` is kept for the conformance suite.
    The runner's outputs are not checked: whatever the decoder makes of them is what is measured.
    ``onnx`` names the ONNX cut at its heads in a runner fed like a HEF; ``anchors`` reach the decoder in
    its config (``DecodeConfig.anchors``) for an anchor-based head. ``family``: the head family the model's
    outputs are, whose reference decoder a mistake of ``decoder`` is reproduced with
    (:meth:`decoded_frames`, :func:`~harness.conformance.misreadings.reproduce_path`)."""

    path_names = (*DEVICE_PATHS, ONNX)

    def __init__(
        self,
        runner: Runner,
        settings: EvalSettings,
        model_file: str | os.PathLike[str],
        decoder: Decoder,
        name: str,
        model_names: Sequence[str] | None,
        variant: str,
        anchors: Anchors = (),
        model_sha256: str = "",
        ssd: SsdConfig | None = None,
        family: HeadFamily = HeadFamily.YOLOV8,
    ) -> None:
        self.decoder = decoder
        super().__init__(
            runner,
            settings,
            model_file,
            name,
            model_names,
            variant,
            family=family,
            anchors=anchors,
            model_sha256=model_sha256,
            ssd=ssd,
        )
        self.emulated = name not in (HAILO, ONNX)

    def _check_outputs(self) -> None:
        self._config = self.settings.decode_config(anchors=self.anchors, ssd=self.ssd)

    @property
    def output_specs(self) -> dict[str, OutputSpec]:
        """The runner's output specs, as the decoder is given them."""
        return dict(self._specs)

    @property
    def decode_config(self) -> DecodeConfig:
        """The config the decoder is given."""
        return self._config

    def _decode(self, outputs: dict[str, np.ndarray], geometry: Letterbox) -> FrameResult:
        return FrameResult(unletterbox(self.decoder(outputs, self._specs, self._config), geometry))

    def decoded_frames(self, images: Sequence[np.ndarray], config: DecodeConfig | None = None) -> list[DecodedFrame]:
        """Each image's runner outputs, as the decoder is given them, and what it returns from them (in
        model-input pixels) under ``config`` (default: the path's): what a mistake is reproduced from. The runner
        runs them again (the prediction cache keeps detections, not outputs)."""
        from harness.conformance.misreadings import DecodedFrame  # the doctor's alone: a run does not load it

        prepared = [prepare(image, self.settings)[0] for image in images]
        frames = infer_frames(self._runner, {self._input_name: np.stack(prepared)})
        chosen = config or self._config
        return [DecodedFrame(frame, self.decoder(frame, self._specs, chosen)) for frame in frames]
