"""onnxruntime runners: a model cut at its heads, handing back what a Hailo host would receive; the
decode tail alone, run on those heads; and the full model. The tail's and the full model's decoded
head output ``(4 + nc, anchors)`` is the reference for any decoder (an SSD export's: its boxes and
scores side by side, ``(rows, 4 + nc)``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnxruntime as ort

from harness.backends.base import InputSpec, RunnerBase
from harness.core.errors import GraphError, SpecError
from harness.core.head_family import HeadRole
from harness.core.settings import SsdConfig
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.decode.layout import layout_of_tensors
from harness.families import descriptor
from harness.inputs.onnx_graph import cut_at_heads, export_heads, head_outputs_of, load_model, model_input
from harness.inputs.preprocess import to_nchw_float

if TYPE_CHECKING:
    import onnx

    ModelSource = onnx.ModelProto | str | os.PathLike[str]


class _Session:
    """One CPU onnxruntime session; every input a float ``[1, ...]`` tensor of fixed shape. Given a file,
    onnxruntime reads it itself (the same graph as from the bytes onnx reads; neither onnx, whose import
    costs 0.6 s of CPU with ml_dtypes 0.7, nor a second parse of the model), and the file is read with onnx
    only where that fails, so that a refusal is worded as before, or where :attr:`model` is asked for."""

    def __init__(self, model: ModelSource, threads: int | None) -> None:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if threads is not None:
            options.intra_op_num_threads = threads
        self._file = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
        self._model: onnx.ModelProto | None = None if isinstance(model, (str, os.PathLike)) else model
        session = None
        if self._file is not None:
            try:
                session = ort.InferenceSession(self._file, options, providers=["CPUExecutionProvider"])
            except Exception:  # onnxruntime's own errors: read as before, whose refusals name the file
                self._model = load_model(self._file)
        if session is None:
            session = ort.InferenceSession(self.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        self._session: ort.InferenceSession | None = session
        self.inputs: dict[str, tuple[int, ...]] = {}
        for inp in self._session.get_inputs():
            shape = tuple(inp.shape)
            if not shape or shape[0] != 1 or not all(isinstance(d, int) for d in shape) or inp.type != "tensor(float)":
                raise GraphError(f"model input {inp.name!r}: {inp.type} {list(shape)}, expected float [1, ...] fixed")
            self.inputs[inp.name] = tuple(int(d) for d in shape)
        self.outputs: dict[str, tuple[int | str | None, ...]] = {
            out.name: tuple(out.shape) for out in self._session.get_outputs()
        }
        self._decoded: tuple[str, ...] | None = None  # the decoded outputs' names, read when first asked

    @property
    def model(self) -> onnx.ModelProto:
        """The model as onnx reads it (read from its file on first use where onnxruntime read the file)."""
        if self._model is None:
            assert self._file is not None
            self._model = load_model(self._file)
        return self._model

    def head_outputs(self) -> tuple[str, ...]:
        """The model's decoded outputs (:func:`~harness.inputs.onnx_graph.head_outputs`), from the graph
        outputs' declared shapes as onnxruntime reports them (an unnamed free dim ``""``, as onnx reads it)."""
        shapes = {name: tuple("" if d is None else d for d in shape) for name, shape in self.outputs.items()}
        return head_outputs_of(shapes)

    def decoded(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        """The model's decoded output (:func:`~harness.inputs.onnx_graph.head_outputs`) for ``feed``, batch
        first; an SSD export's boxes ``(n, rows, 4)`` and scores ``(n, rows, nc)`` joined as ``(n, rows, 4 + nc)``."""
        if self._decoded is None:
            self._decoded = self.head_outputs()
        names = self._decoded
        outputs = self.run(feed)
        return outputs[names[0]] if len(names) == 1 else np.concatenate([outputs[n] for n in names], axis=-1)

    def run(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._session is None:
            raise RuntimeError("onnxruntime session used after close")
        if set(feed) != set(self.inputs):
            raise SpecError(f"feed: inputs {sorted(feed)}, expected {sorted(self.inputs)}")
        arrays = {}
        for name, expected in self.inputs.items():
            array = np.asarray(feed[name])
            if array.shape != expected or array.dtype != np.float32:
                raise SpecError(f"input {name!r}: {array.dtype} {array.shape}, expected float32 {expected}")
            arrays[name] = array
        names = list(self.outputs)
        return dict(zip(names, self._session.run(names, arrays), strict=True))

    def image_input(self) -> InputSpec:
        if len(self.inputs) != 1 or len(next(iter(self.inputs.values()))) != 4:
            raise GraphError(f"model inputs {self.inputs}: expected one image input [1, C, H, W]")
        name, shape = next(iter(self.inputs.items()))
        return InputSpec(name, shape[1:], FormatOrder.NCHW, FormatType.FLOAT32)

    def close(self) -> None:
        self._session = None


class _Closing(RunnerBase):
    """Closing the session on ``close`` or at the end of a ``with`` block."""

    _session: _Session

    @property
    def label(self) -> str:
        return f"{type(self).__name__} in onnxruntime {ort.__version__}"

    def close(self) -> None:
        self._session.close()


class _HeldSpecs:
    """A runner of one input (``_input``) whose outputs' specs (``_specs``) are fixed when it opens."""

    _input: InputSpec
    _specs: dict[str, OutputSpec]

    @property
    def input_specs(self) -> dict[str, InputSpec]:
        return {self._input.name: self._input}

    @property
    def output_specs(self) -> dict[str, OutputSpec]:
        return dict(self._specs)


class OnnxRunner(_HeldSpecs, _Closing):
    """Runs a model whose outputs are raw maps ``[1, C, H, W]`` (one cut by
    :func:`harness.inputs.onnx_graph.cut_at_heads`) and hands each back channel-last, ``(H, W, C)`` float32,
    described as an NHWC FLOAT32 :class:`OutputSpec` like a Hailo host output."""

    def __init__(self, model: ModelSource, threads: int | None = None) -> None:
        self._session = _Session(model, threads)
        self._input = self._session.image_input()
        specs = {}
        for name, shape in self._session.outputs.items():
            if len(shape) != 4 or shape[0] != 1 or not all(isinstance(d, int) for d in shape[1:]):
                raise GraphError(f"model output {name!r}: shape {list(shape)}, expected a raw map [1, C, H, W]")
            _, c, h, w = (int(d) for d in shape)  # type: ignore[arg-type]
            # Channel-last, as HailoRT hands NHWC/NHCW device outputs to the host
            # hailort: hailort/libhailort/src/hailort_defaults.cpp (DEFAULT_FORMAT_ORDER_MAP)
            specs[name] = OutputSpec(name, (h, w, c), FormatOrder.NHWC, FormatType.FLOAT32)
        self._specs = specs

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One frame: ``{input: (1, C, H, W) float32}`` -> ``{output: (H, W, C) float32}``."""
        raw = self._session.run(feed)
        return {name: np.ascontiguousarray(raw[name][0].transpose(1, 2, 0)) for name in self._specs}


class DecodeTailRunner(_Closing):
    """Runs a decode tail (:func:`harness.inputs.onnx_graph.decode_tail`) on head maps given channel-last,
    as :class:`OnnxRunner` hands them back, and returns the frame's decoded head output
    ``(4 + nc, anchors)``: xywh in input pixels, then class probabilities, anchors stride-ascending (an SSD
    export's: ``(rows, 4 + nc)``, its boxes and scores side by side)."""

    def __init__(self, tail: ModelSource, threads: int | None = None) -> None:
        self._session = _Session(tail, threads)
        self.output_name = " + ".join(self._session.head_outputs())

    def infer(self, heads: Mapping[str, np.ndarray]) -> np.ndarray:
        nchw = {name: np.asarray(array).transpose(2, 0, 1)[None] for name, array in heads.items()}
        return self._session.decoded(nchw)[0]


class FullHeadRunner(_Closing):
    """Runs a full Ultralytics export: ``{input: (1, C, H, W) float32}`` -> its decoded head output of
    the frame, ``(4 + nc, anchors)`` (an SSD export's boxes and scores side by side, ``(rows, 4 + nc)``), the
    same as :class:`DecodeTailRunner` on the cut heads."""

    def __init__(self, model: ModelSource, threads: int | None = None) -> None:
        self._session = _Session(model, threads)
        self._input = self._session.image_input()
        self.output_name = " + ".join(self._session.head_outputs())

    @property
    def input_specs(self) -> dict[str, InputSpec]:
        return {self._input.name: self._input}

    def infer(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        return self._session.decoded(feed)[0]

    def infer_batch(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """``{input: (n, C, H, W) float32}`` -> each frame's decoded head output, one frame per run: an
        Ultralytics export is traced at batch 1 unless exported dynamic (ultralytics:
        ultralytics/engine/exporter.py, ``dynamic``), and its reshapes keep that batch."""
        count = len(next(iter(feed.values())))
        return [self.infer({name: array[i : i + 1] for name, array in feed.items()}) for i in range(count)]


def head_format_order(role: HeadRole, grid: tuple[int, int], smallest: int) -> FormatOrder:
    """The emulator's host orders for a HEF's heads (the field report's mix): box heads FCR, class
    heads NHWC except on the smallest grid. FCR and NHWC are both [N, H, W, C] on the host
    (hailort: hailort/libhailort/include/hailo/hailort.h, hailo_format_order_t)."""
    return FormatOrder.FCR if role is HeadRole.BOX or grid[0] * grid[1] == smallest else FormatOrder.NHWC


class FloatHeadsRunner(_HeldSpecs, RunnerBase):
    """The ONNX cut at its heads, fed like a HEF (uint8 NHWC 0-255; the /255 is done here), its score
    maps through a sigmoid as a model script compiles it in (YOLOv8's class maps, YOLOX's objectness and
    class maps, YOLOv5's anchored maps whole, an SSD head's class maps; a YOLO26 HEF keeps its class logits),
    float32 channel-last outputs listed with the orders the emulator gives a HEF's heads. Not quantized: it
    stands in for a raw-output HEF where the emulator cannot quantize the model. ``ssd``: an SSD export's
    config, with which alone its heads are found."""

    def __init__(self, onnx_path: Path, threads: int | None = None, ssd: SsdConfig | None = None) -> None:
        model = load_model(onnx_path)
        input_name, input_hw = model_input(model)
        found = export_heads(model, ssd=ssd)
        layout = layout_of_tensors(found.heads, input_hw)
        self._runner = OnnxRunner(cut_at_heads(model, found.heads), threads)
        self._input = InputSpec(input_name, (*input_hw, 3), FormatOrder.NHWC, FormatType.UINT8)
        inside = not descriptor(found.family).host_postprocess
        # the score maps: class maps, YOLOX's objectness maps, YOLOv5's anchored maps whole
        scores = (
            *layout.of_role(HeadRole.CLASS),
            *layout.of_role(HeadRole.OBJECTNESS),
            *layout.of_role(HeadRole.ANCHORED),
            *layout.of_role(HeadRole.ANCHOR_CLASSES),
        )
        self._classes = {o.name for o in scores} if inside else set()
        smallest = min(level.cells for level in layout.levels)
        self._specs = {
            o.name: OutputSpec(
                o.name, (*o.grid, o.channels), head_format_order(o.role, o.grid, smallest), FormatType.FLOAT32
            )
            for o in layout.outputs
        }

    @property
    def label(self) -> str:
        return f"the float ONNX cut at its heads in onnxruntime {ort.__version__}"

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        raw = self._runner.infer({self._input.name: to_nchw_float(np.asarray(feed[self._input.name]))})
        with np.errstate(over="ignore"):
            return {
                name: (np.float32(1) / (np.float32(1) + np.exp(-raw[name])) if name in self._classes else raw[name])
                for name in self._specs
            }

    def close(self) -> None:
        self._runner.close()
