"""A stand-in for ``hailo_sdk_client`` (the Dataflow Compiler's closed-source Python API), for tests only.

It records every call the harness makes (``CALLS``) and behaves as far as the harness can observe:
translation names the end-node convs ``conv<N>`` under the network's scope with their ONNX node in
``original_names`` and an output layer ``output_layer<i>`` after each (the HN's keys);
``load_model_script`` reads the NMS config the script names and refuses, as the DFC does, a command
naming a layer the network does not have (``AllocatorScriptParserException``, the DFC's error for a
model script it cannot apply); ``optimize`` logs through a logger that does not propagate, as the
DFC's own loggers do; ``compile`` returns HEF bytes or fails as ``FAIL_COMPILE`` says; ``save_har``
writes the HN, which ``ClientRunner(har=...)`` reads back for emulation.

Emulation computes real outputs, in the DFC's output order (the end nodes'): the ONNX cut at the end
nodes, fed the NHWC 0-255 frames through the script's ``normalization(mean, std)`` (none without
one), a sigmoid on the convs the script names, NHWC float. SDK_QUANTIZED then clips each output
to the range ``optimize`` saw on the calibration frames and rounds it to 256 levels, as an 8-bit
output would be, or to 65536 where the script sets it (its output layer or its conv) to
``precision_mode=a16_w16``. With an
``nms_postprocess`` in the script the outputs go through HailoRT-style NMS into one
``(N, classes, 5, max_proposals)`` array, as the Model Zoo reads the emulator's NMS output.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import shape_inference

from harness.core.settings import DecodeConfig
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec
from harness.families.yolov8.decode import decode

from support.encoders import encode_tf_nms

__version__ = "3.33.0+fake"

CALLS: list[tuple[str, dict[str, Any]]] = []
OPTIMIZE_LOG: list[tuple[int, str]] = []  # (level, message) logged during optimize
FAIL_COMPILE: str | None = None  # message of a BackendAllocatorException raised by compile()
HEF_BYTES = b"\x01HEF fake compiled model"
FIRST_CONV = 51  # number of the first end-node conv; the rest follow in end-node order
LEVELS = 255  # quantization steps of an 8-bit output
LEVELS_16 = 65535  # of a 16-bit output

_log = logging.getLogger("hailo_sdk_client.fake")
_log.setLevel(logging.INFO)
_log.propagate = False
_log.addHandler(logging.NullHandler())


def reset() -> None:
    global FAIL_COMPILE
    CALLS.clear()
    OPTIMIZE_LOG.clear()
    FAIL_COMPILE = None


class BackendAllocatorException(Exception):
    pass


class AllocatorScriptParserException(Exception):
    pass


class InferenceContext(enum.Enum):
    SDK_NATIVE = "native"
    SDK_FP_OPTIMIZED = "fp_optimized"
    SDK_QUANTIZED = "quantized"
    SDK_HAILO_HW = "hw"


def _node_shapes(path: str) -> dict[str, tuple[int, ...]]:
    """Node name -> shape of its first output, from onnx's shape inference."""
    graph = shape_inference.infer_shapes(onnx.load(path)).graph
    shapes = {
        v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
        for v in (*graph.value_info, *graph.output)
        if v.type.HasField("tensor_type")
    }
    return {n.name: shapes[n.output[0]] for n in graph.node if n.output and n.output[0] in shapes}


class ClientRunner:
    def __init__(self, hw_arch: str | None = None, har: str | None = None) -> None:
        CALLS.append(("ClientRunner", {"hw_arch": hw_arch, "har": har}))
        saved = json.loads(Path(har).read_text()) if har else {}
        self._hn: dict[str, Any] | None = saved.get("hn")
        self._emulation: dict[str, Any] = saved.get("emulation", {})
        self._session: ort.InferenceSession | None = None  # the cut model, made at the first emulation

    def translate_onnx_model(
        self,
        model: str,
        net_name: str,
        start_node_names: list[str] | None = None,
        end_node_names: list[str] | None = None,
        net_input_shapes: dict[str, list[int]] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        CALLS.append(
            (
                "translate_onnx_model",
                {
                    "model": model,
                    "net_name": net_name,
                    "start_node_names": start_node_names,
                    "end_node_names": end_node_names,
                    "net_input_shapes": net_input_shapes,
                },
            )
        )
        shapes = _node_shapes(model)
        layers: dict[str, Any] = {f"{net_name}/input_layer1": {"type": "input_layer", "output": [f"{net_name}/conv1"]}}
        layers[f"{net_name}/conv1"] = {
            "type": "conv",
            "output": [],
            "output_shapes": [[-1, 8, 8, 16]],
            "original_names": ["/model.0/conv/Conv"],
        }
        for i, node in enumerate(end_node_names or []):
            _, c, h, w = shapes[node]
            conv, out = f"{net_name}/conv{FIRST_CONV + i}", f"{net_name}/output_layer{i + 1}"
            layers[conv] = {
                "type": "conv",
                "input": [f"{net_name}/conv1"],
                "output": [out],
                "output_shapes": [[-1, h, w, c]],
                "original_names": [node],
            }
            layers[out] = {"type": "output_layer", "input": [conv], "output": [], "original_names": ["out"]}
        self._hn = {"name": net_name, "layers": layers}
        self._emulation = {
            "onnx": model,
            "end_nodes": list(end_node_names or []),
            "normalization": None,
            "sigmoid": [],
            "nms": None,
            "a16": [],
        }
        return self._hn, {}

    def get_hn(self) -> dict[str, Any]:
        CALLS.append(("get_hn", {}))
        if self._hn is None:
            raise RuntimeError("get_hn before translation")
        return json.loads(json.dumps(self._hn))

    def load_model_script(self, script: str, append: bool = False) -> None:
        CALLS.append(("load_model_script", {"script": script, "append": append}))
        assert self._hn is not None, "load_model_script before translation"
        known = {name.rsplit("/", 1)[-1] for name in self._hn["layers"]}
        sigmoid = re.findall(r"change_output_activation\(([\w/]+), sigmoid\)", script)
        wide = [
            layer.strip().rsplit("/", 1)[-1]
            for layers, mode in re.findall(r"quantization_param\(\[?([^\]()]*?)\]?,\s*precision_mode=(\w+)\)", script)
            for layer in layers.split(",")
            if mode == "a16_w16"
        ]
        unknown = sorted({layer.rsplit("/", 1)[-1] for layer in sigmoid + wide} - known)
        if unknown:
            raise AllocatorScriptParserException(f"layers {unknown} are not in the network {self._hn['name']}")
        self._emulation["a16"] = wide
        path = re.search(r'nms_postprocess\("([^"]+)"', script)
        if path:
            self._emulation["nms"] = json.loads(Path(path.group(1)).read_text())  # the DFC reads it here
        norm = re.search(r"normalization\(\[([^\]]*)\],\s*\[([^\]]*)\]\)", script)
        if norm:
            self._emulation["normalization"] = [[float(v) for v in g.split(",")] for g in norm.groups()]
        self._emulation["sigmoid"] = sigmoid

    def optimize(self, calib_data: Any) -> None:
        array = np.asarray(calib_data)
        CALLS.append(
            (
                "optimize",
                {"shape": array.shape, "dtype": array.dtype, "min": float(array.min()), "max": float(array.max())},
            )
        )
        _log.info("Starting Model Optimization")
        for level, message in OPTIMIZE_LOG:
            _log.log(level, message)
        heads = self._heads(array)
        self._emulation["ranges"] = [[float(h.min()), float(h.max())] for h in heads]

    def save_har(self, path: str) -> None:
        CALLS.append(("save_har", {"path": path}))
        Path(path).write_text(json.dumps({"hn": self._hn, "emulation": self._emulation}))

    def compile(self) -> bytes:
        CALLS.append(("compile", {}))
        if FAIL_COMPILE is not None:
            _log.error("Failed to produce compiled graph")
            raise BackendAllocatorException(FAIL_COMPILE)
        return HEF_BYTES

    @contextlib.contextmanager
    def infer_context(self, target: InferenceContext) -> Iterator[InferenceContext]:
        CALLS.append(("infer_context", {"target": target}))
        yield target

    def _heads(self, data: np.ndarray) -> list[np.ndarray]:
        """The float outputs of the end nodes, NHWC, with the script's sigmoids."""
        if self._session is None:
            model = onnx.load(self._emulation["onnx"])
            ends = {n.name: n.output[0] for n in model.graph.node}
            outputs = [ends[name] for name in self._emulation["end_nodes"]]
            del model.graph.output[:]
            model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(o) for o in outputs)
            self._session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        session = self._session
        name, outputs = session.get_inputs()[0].name, [o.name for o in session.get_outputs()]
        frames = data.astype(np.float32)
        if self._emulation["normalization"] is not None:
            mean, std = (np.float32(v) for v in self._emulation["normalization"])
            frames = (frames - mean) / std
        frames = frames.transpose(0, 3, 1, 2)
        per_frame = [session.run(outputs, {name: frame[None]}) for frame in frames]  # the export has batch 1
        heads = [np.concatenate(h).transpose(0, 2, 3, 1) for h in zip(*per_frame, strict=True)]
        assert self._hn is not None
        convs = [n for n, layer in self._hn["layers"].items() if layer["type"] == "conv" and layer["output"]]
        sigmoid = {f"{self._hn['name']}/{name}" if "/" not in name else name for name in self._emulation["sigmoid"]}
        with np.errstate(over="ignore"):  # exp of large logits: the sigmoid is 0 there all the same
            return [1 / (1 + np.exp(-h)) if conv in sigmoid else h for conv, h in zip(convs, heads, strict=True)]

    def _nms(self, heads: list[np.ndarray], input_hw: tuple[int, int]) -> np.ndarray:
        config = self._emulation["nms"]
        classes, max_proposals = config["classes"], config["max_proposals_per_class"]
        specs = {
            f"o{i}": OutputSpec(f"o{i}", h.shape[1:], FormatOrder.NHWC, FormatType.FLOAT32) for i, h in enumerate(heads)
        }
        nms_spec = OutputSpec(
            "nms",
            (classes, 5, max_proposals),
            FormatOrder.NMS_BY_CLASS,
            FormatType.FLOAT32,
            nms=NmsShape(classes, max_proposals),
        )
        decode_config = DecodeConfig(
            input_hw=input_hw,
            score_threshold=config["nms_scores_th"],
            iou_threshold=config["nms_iou_th"],
            max_per_class=max_proposals,
            classes_are_probabilities=True,
        )
        frames = []
        for i in range(len(heads[0])):
            dets = decode({f"o{k}": h[i] for k, h in enumerate(heads)}, specs, decode_config)
            frames.append(encode_tf_nms(dets, nms_spec, input_hw))
        return np.stack(frames)

    def infer(self, context: InferenceContext, dataset: Any, batch_size: int | None = None) -> list[np.ndarray]:
        data = np.asarray(dataset)
        CALLS.append(("infer", {"context": context, "shape": data.shape, "dtype": data.dtype}))
        heads = self._heads(data)
        if context is InferenceContext.SDK_QUANTIZED:
            assert self._hn is not None
            outputs = [(n, layer) for n, layer in self._hn["layers"].items() if layer["type"] == "output_layer"]
            wide = set(self._emulation["a16"])
            levels = [
                LEVELS_16 if {n.rsplit("/", 1)[-1], layer["input"][0].rsplit("/", 1)[-1]} & wide else LEVELS
                for n, layer in outputs
            ]
            quantized = []
            for h, (low, high), steps in zip(heads, self._emulation["ranges"], levels, strict=True):
                step = (high - low) / steps or 1.0
                quantized.append((np.rint((np.clip(h, low, high) - low) / step) * step + low).astype(np.float32))
            heads = quantized
        if self._emulation["nms"] is not None:
            return [self._nms(heads, data.shape[1:3])]
        return [h.astype(np.float32) for h in heads]
