"""Per image, the lowest and highest value of each tensor an emulated HEF quantizes, in its float graph: what a
calibration set sets each tensor's quantization range from (MinMax calibration: the range is the lowest and
highest value the calibration images reach; onnxruntime: onnxruntime/python/tools/quantization/calibrate.py,
``MinMaxCalibrater``), so the images a range misses can be told before any compile."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from harness.backends.emulator.build import EmulatedHef, float_graph
from harness.backends.emulator.calibration import CalibrationFrames
from harness.core.errors import HarnessError
from harness.core.head_family import HeadRole

_LOW, _HIGH = "/hailo_harness_range_low", "/hailo_harness_range_high"


@dataclass(frozen=True)
class ImageRanges:
    """``low[i, t]`` and ``high[i, t]``: the lowest and highest value of ``tensors[t]`` on image ``images[i]``;
    ``roles``: the head role of each tensor that is a head output (the rest are layers inside the graph)."""

    tensors: tuple[str, ...]
    roles: dict[str, HeadRole]
    images: tuple[Path, ...]
    low: np.ndarray
    high: np.ndarray

    def union(self, rows: np.ndarray | Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The range over the images at ``rows`` (all of them by default), per tensor."""
        low, high = (self.low, self.high) if rows is None else (self.low[rows], self.high[rows])
        return low.min(axis=0), high.max(axis=0)


def quantized_tensors(hef: EmulatedHef) -> tuple[str, ...]:
    """The float tensors whose range the quantization of ``hef`` calibrated: each ``QuantizeLinear``'s input that
    the float graph has too (the head outputs among them), in graph order."""
    quantized = onnx.load(os.fspath(hef.quantized_model), load_external_data=False)
    seen: dict[str, None] = {}
    for node in quantized.graph.node:
        if node.op_type == "QuantizeLinear":
            seen.setdefault(node.input[0].removesuffix("_QuantizeLinear_Input"), None)
    return tuple(seen)


def _with_range_outputs(model: onnx.ModelProto, tensors: Sequence[str]) -> onnx.ModelProto:
    """``model`` whose outputs are, per tensor, its lowest and highest value (a ReduceMin and a ReduceMax over all
    its axes)."""
    ranged = onnx.ModelProto()
    ranged.CopyFrom(model)
    del ranged.graph.output[:]
    for tensor in tensors:
        for op, suffix in (("ReduceMin", _LOW), ("ReduceMax", _HIGH)):
            ranged.graph.node.append(helper.make_node(op, [tensor], [tensor + suffix], keepdims=0))
            ranged.graph.output.append(helper.make_tensor_value_info(tensor + suffix, TensorProto.FLOAT, []))
    return ranged


class RangeGraph:
    """The float graph ``hef`` was quantized from, made to give per image the range of each tensor its quantization
    calibrated (``tensors``; ``roles``: the head role of those that are head outputs)."""

    def __init__(self, hef: EmulatedHef) -> None:
        graph = float_graph(hef.source, hef.options)
        present = {o for node in graph.model.graph.node for o in node.output}
        self.tensors = tuple(t for t in quantized_tensors(hef) if t in present)
        self.roles = {h.tensor: h.role for h in graph.heads if h.tensor in self.tensors}
        self.label = hef.label
        self._input = (graph.input_name, graph.input_hw)
        self._model = graph.model
        self._names = [t + s for t in self.tensors for s in (_LOW, _HIGH)]

    @functools.cached_property
    def _session(self) -> Any:
        """The onnxruntime session of the graph with its range outputs, made when ranges are first measured (a
        check whose every image's ranges are kept makes none)."""
        import onnxruntime as ort

        model = _with_range_outputs(self._model, self.tensors)
        return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])

    def ranges(self, images: Sequence[str | os.PathLike[str]]) -> ImageRanges:
        """Per image of ``images`` (letterboxed as calibration and evaluation prepare them), each tensor's range."""
        paths = tuple(Path(p) for p in images)
        if not paths:
            raise HarnessError(f"activation ranges of {self.label}: no images given, expected at least one")
        frames = CalibrationFrames(paths, *self._input)
        rows = []
        while (feed := frames.get_next()) is not None:
            rows.append(np.asarray(self._session.run(self._names, feed), dtype=np.float64))
        values = np.stack(rows).reshape(len(paths), len(self.tensors), 2)
        return ImageRanges(self.tensors, dict(self.roles), paths, values[:, :, 0], values[:, :, 1])
