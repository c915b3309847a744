"""Runs an emulated HEF with onnxruntime, a frame or a batch at a time, handing back what a HailoRT host receives.

Emulation, not a device: the quantization is onnxruntime's (uint8 activations, int8 weights), not the
Dataflow Compiler's, and every label says so. The interface is the one a hardware runner offers.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from harness.backends.base import InputSpec, RunnerBase
from harness.backends.emulator.build import EmulatedHef
from harness.core.errors import HarnessError, SpecError
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatType, OutputSpec
from harness.decode.bbox_only import bbox_only_op
from harness.decode.heads import decoder
from harness.families import descriptor
from harness.formats.nms_buffer import encode_nms_by_class
from harness.formats.quant import dequantize

if TYPE_CHECKING:
    import onnxruntime as ort

log = logging.getLogger(__name__)


def nms_op(
    raw: Mapping[str, np.ndarray],
    heads: Mapping[str, OutputSpec],
    config: DecodeConfig,
    spec: OutputSpec,
    family: HeadFamily = HeadFamily.YOLOV8,
) -> np.ndarray:
    """HailoRT's NMS post-process op of ``family`` on one frame's raw heads: the HAILO_NMS_BY_CLASS buffer
    (hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.cpp, yolov5_post_process.cpp,
    yolox_post_process.cpp, ssd_post_process.cpp with ``config.ssd``; held to those ops' own code by
    tests/backends/test_hailort_oracle*.py and, SSD's decoder, by tests/support/hailort_oracle/ssd_nms.cpp)."""
    return encode_nms_by_class(decoder(family)(raw, heads, config), spec, config.input_hw)


class EmulatorRunner(RunnerBase):
    """An emulated HEF as a :class:`~harness.backends.base.Runner`.

    ``infer({input: uint8 (1, H, W, 3)})`` gives per raw head ``(H, W, C)`` uint8 device values or
    float32 dequantized with the head's quant info (HailoRT's rule), or, with NMS, the one
    HAILO_NMS_BY_CLASS float32 buffer of HailoRT's NMS op of the HEF's head family (YOLOv8's, YOLOv5's
    with the HEF's anchors, YOLOX's, or SSD's with the HEF's SSD config) run on the dequantized heads, or,
    with the bbox-only op, its one float32 ``(1, proposals, 4|5 + classes)`` buffer
    (:func:`~harness.decode.bbox_only.bbox_only_op`).
    ``infer_batch({input: uint8 (n, H, W, 3)})`` gives the same for each of ``n`` frames.
    """

    emulated = True

    def __init__(self, hef: EmulatedHef, threads: int | None = None) -> None:
        self.hef = hef
        self.cache_entries = (hef.entry,) if hef.entry is not None else ()
        self._threads = threads
        self._opened: ort.InferenceSession | None = None  # on the first frame: a cached rerun opens none
        self._closed = False
        self._heads = {h.name: h for h in hef.heads}
        self._output_specs = hef.output_specs
        self._op = (
            DecodeConfig(
                input_hw=hef.input_hw,
                score_threshold=hef.options.score_threshold,
                iou_threshold=hef.options.iou_threshold,
                max_per_class=hef.options.max_proposals_per_class,
                mode=NmsMode.HAILORT,
                classes_are_probabilities=True,  # the op takes class values as scores: it has no sigmoid
                # a family with a config option (SSD's) takes its anchors from that config
                anchors=() if descriptor(hef.family).config_option else hef.anchors,
                ssd=hef.options.ssd,
            )
            if hef.options.nms or hef.options.bbox_only
            else None
        )
        log.info("%s: runner ready", self.label)

    @property
    def _session(self) -> ort.InferenceSession:
        """The quantized model's onnxruntime session, opened on first use."""
        if self._closed:
            raise RuntimeError(f"{self.label}: runner used after close")
        if self._opened is None:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.log_severity_level = 3
            if self._threads is not None:
                options.intra_op_num_threads = self._threads
            model = self._verified_model()
            try:
                self._opened = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
            except Exception as error:  # onnxruntime's own error types (InvalidProtobuf, Fail), not importable
                why = " ".join(str(error).split())[:200]
                raise HarnessError(
                    f"emulated HEF {self.hef.quantized_model}: its quantized model cannot be loaded by onnxruntime "
                    f"({why}); refused (move it away from the cache to quantize it again)"
                ) from None
        return self._opened

    def _verified_model(self) -> bytes:
        """The quantized model's bytes, held to the sha256 its cache entry was checked with (the bytes
        checked are the bytes run: a file changed since is refused, not run)."""
        path = self.hef.quantized_model
        try:
            data = path.read_bytes()
        except OSError as error:
            raise HarnessError(f"emulated HEF {path}: cannot be read ({error.strerror or error})") from None
        entry = self.hef.entry
        sha256 = hashlib.sha256(data).hexdigest()
        if entry is not None and sha256 != entry.sha256:
            raise HarnessError(
                f"shared cache entry {path}: changed since it was checked (its sha256 is {sha256[:16]}, it was "
                f"{entry.sha256[:16]}); refused (run again to check it anew)"
            )
        return data

    @property
    def label(self) -> str:
        return self.hef.label

    @property
    def score_ceiling(self) -> float:
        return self.hef.score_ceiling

    @property
    def input_specs(self) -> dict[str, InputSpec]:
        return {self.hef.input.name: self.hef.input}

    @property
    def output_specs(self) -> dict[str, OutputSpec]:
        return dict(self._output_specs)

    def _frames(self, feed: Mapping[str, np.ndarray], batch: int | None) -> np.ndarray:
        """The feed's frames, uint8 ``(n, H, W, 3)``: ``batch`` of them where given, else at least one."""
        spec = self.hef.input
        if set(feed) != {spec.name}:
            raise SpecError(f"{self.label}: feed has inputs {sorted(feed)}, expected {[spec.name]}")
        array = np.asarray(feed[spec.name])
        n = array.shape[0] if array.ndim == len(spec.shape) + 1 else 0
        if array.dtype != np.uint8 or array.shape[1:] != spec.shape or n < 1 or batch not in (None, n):
            expected = str((batch, *spec.shape)) if batch else f"(n, {', '.join(map(str, spec.shape))})"
            raise SpecError(
                f"{self.label}: input {spec.name!r}: {array.dtype} {array.shape}, expected uint8 {expected} "
                "NHWC RGB 0-255 (the /255 normalization is inside the HEF)"
            )
        return array

    def _raw(self, frames: np.ndarray) -> list[dict[str, np.ndarray]]:
        """Each frame's raw head outputs as the device writes them, uint8 ``(H, W, C)``: all frames in
        one onnxruntime call where the graph takes a batch, else one call per frame."""
        session = self._session
        names = list(self._heads)
        # a graph made to take any number of frames leads with a named dim (graph.BATCH), one made for one
        # frame with 1: read from the session, not from graph, whose import of onnx costs 0.6 s of CPU
        takes_batch = not isinstance(session.get_inputs()[0].shape[0], int)
        chunks = [frames] if takes_batch else [frames[i : i + 1] for i in range(len(frames))]
        runs = [session.run(names, {self.hef.input.name: chunk}) for chunk in chunks]
        return [
            {name: np.ascontiguousarray(m[i].transpose(1, 2, 0)) for name, m in zip(names, maps, strict=True)}
            for maps in runs
            for i in range(len(maps[0]))
        ]

    def raw_heads(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One frame's raw head outputs as the device writes them: uint8 ``(H, W, C)``."""
        return self._raw(self._frames(feed, 1))[0]

    def _outputs(self, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One frame's outputs as the host receives them, from its raw heads."""
        if self._op is not None:
            ((name, spec),) = self._output_specs.items()
            if self.hef.options.bbox_only:
                return {name: bbox_only_op(raw, self._heads, self._op, self.hef.family)}
            return {name: nms_op(raw, self._heads, self._op, spec, self.hef.family)}
        if self.hef.options.output_format is not FormatType.FLOAT32:  # the device values, UINT8 or UINT16
            return raw
        return {name: dequantize(array, self._heads[name].quant) for name, array in raw.items()}

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._outputs(self.raw_heads(feed))

    def infer_batch(self, feed: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """``{input: uint8 (n, H, W, 3)}`` -> one output dict per frame, as :meth:`infer` gives it."""
        return [self._outputs(raw) for raw in self._raw(self._frames(feed, None))]

    def close(self) -> None:
        self._closed = True
        self._opened = None
