"""A stand-in for ``hailo_sdk_client`` (the Dataflow Compiler's closed-source Python API), for tests only.

It records every call the harness makes (``CALLS``) and behaves as far as the harness can observe:
translation names the end-node convs ``conv<N>`` under the network's scope with their ONNX node in
``original_names`` and an output layer after each (the HN's keys); ``load_model_script`` reads the
NMS config the script names; ``optimize`` logs through a logger that does not propagate, as the
DFC's own loggers do; ``compile`` returns HEF bytes or fails as ``FAIL_COMPILE`` says; ``save_har``
writes the HN, which ``ClientRunner(har=...)`` reads back for emulation.
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
from onnx import shape_inference

__version__ = "3.33.0+fake"

CALLS: list[tuple[str, dict[str, Any]]] = []
OPTIMIZE_LOG: list[tuple[int, str]] = []  # (level, message) logged during optimize
FAIL_COMPILE: str | None = None  # message of a BackendAllocatorException raised by compile()
HEF_BYTES = b"\x01HEF fake compiled model"
FIRST_CONV = 51  # number of the first end-node conv; the rest follow in end-node order

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
        self._hn: dict[str, Any] | None = json.loads(Path(har).read_text()) if har else None

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
        return self._hn, {}

    def get_hn(self) -> dict[str, Any]:
        CALLS.append(("get_hn", {}))
        if self._hn is None:
            raise RuntimeError("get_hn before translation")
        return json.loads(json.dumps(self._hn))

    def load_model_script(self, script: str, append: bool = False) -> None:
        CALLS.append(("load_model_script", {"script": script, "append": append}))
        path = re.search(r'nms_postprocess\("([^"]+)"', script)
        if path:
            json.loads(Path(path.group(1)).read_text())  # the DFC reads the NMS config here

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

    def save_har(self, path: str) -> None:
        CALLS.append(("save_har", {"path": path}))
        Path(path).write_text(json.dumps(self._hn))

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

    def infer(self, context: InferenceContext, dataset: Any, batch_size: int | None = None) -> list[np.ndarray]:
        data = np.asarray(dataset)
        CALLS.append(("infer", {"context": context, "shape": data.shape, "dtype": data.dtype}))
        assert self._hn is not None
        outputs = [layer for layer in self._hn["layers"].values() if layer["type"] == "output_layer"]
        shapes = [self._hn["layers"][o["input"][0]]["output_shapes"][0][1:] for o in outputs]
        return [np.zeros((len(data), *shape), dtype=np.float32) for shape in shapes]
