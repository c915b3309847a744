"""The float graph a HEF is compiled from: the ONNX cut at its six heads, with a HEF's input contract in
front and, optionally, the sigmoid a model script adds to the class convs.

A HEF takes raw uint8 RGB 0-255 NHWC frames; the ``normalization([0,0,0],[255,255,255])`` of the
Model Zoo's model scripts is compiled in (mz: hailo_model_zoo/cfg/alls/generic/yolov8n.alls). Here
that is ``Cast`` to float, ``Div`` by 255 and ``Transpose`` NHWC -> NCHW inside the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily
from harness.inputs.onnx_graph import HeadTensor, cut_at_heads, export_heads, model_input

# Ops of an already quantized graph (onnxruntime dynamic or static quantization): quantizing it again
# would quantize dequantized values, not the model as the Dataflow Compiler sees a float export.
_QUANTIZED_OPS = frozenset(
    {"ConvInteger", "MatMulInteger", "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "QLinearConv"}
)


@dataclass(frozen=True)
class HefGraph:
    """The float model: input ``input_name`` uint8 ``(1, H, W, 3)``; one output per head, named as the
    head tensor, ``[1, C, H, W]`` float (class heads after their sigmoid when it is inside)."""

    model: onnx.ModelProto
    heads: tuple[HeadTensor, ...]
    family: HeadFamily
    input_name: str
    input_hw: tuple[int, int]


def _reject_quantized(model: onnx.ModelProto, source: str) -> None:
    found = sorted({n.op_type for n in model.graph.node if n.op_type in _QUANTIZED_OPS})
    if found:
        raise GraphError(
            f"ONNX model {source!r}: up to its heads it holds quantized ops {found}, expected a float export "
            "(the emulator quantizes the float model itself, as the Dataflow Compiler does)"
        )


def _uint8_nhwc_input(model: onnx.ModelProto, name: str, hw: tuple[int, int]) -> None:
    """Replace the float NCHW input ``name`` by a uint8 NHWC one of the same name, /255 inside."""
    graph = model.graph
    channels = next(
        i.type.tensor_type.shape.dim[1].dim_value for i in graph.input if i.name == name
    )  # model_input checked the rank
    if channels != 3:
        raise GraphError(f"model input {name!r}: {channels} channels, expected 3 (RGB)")
    nchw = f"{name}_nchw"
    for node in graph.node:
        node.input[:] = [nchw if i == name else i for i in node.input]
    kept = [i for i in graph.input if i.name != name]
    del graph.input[:]
    graph.input.extend([helper.make_tensor_value_info(name, TensorProto.UINT8, [1, *hw, 3]), *kept])
    scale = f"{name}_normalization_255"
    graph.initializer.append(numpy_helper.from_array(np.array(255, dtype=np.float32), scale))
    front = [
        helper.make_node("Cast", [name], [f"{name}_float"], to=TensorProto.FLOAT, name=f"{name}_cast"),
        helper.make_node("Div", [f"{name}_float", scale], [f"{name}_normalized"], name=f"{name}_normalization"),
        helper.make_node("Transpose", [f"{name}_normalized"], [nchw], perm=[0, 3, 1, 2], name=f"{name}_nhwc_to_nchw"),
    ]
    for node in reversed(front):
        graph.node.insert(0, node)


def _sigmoid_on_class_heads(model: onnx.ModelProto, heads: Sequence[HeadTensor]) -> None:
    """Each class head tensor ``t`` becomes ``Sigmoid(t_logits)``: the output keeps the head's name."""
    graph = model.graph
    for head in heads:
        if head.role != "class":
            continue
        logits = f"{head.tensor}_logits"
        for node in graph.node:
            node.output[:] = [logits if o == head.tensor else o for o in node.output]
            node.input[:] = [logits if i == head.tensor else i for i in node.input]
        graph.node.append(helper.make_node("Sigmoid", [logits], [head.tensor], name=f"{head.node}_sigmoid"))
    kept = [v for v in graph.value_info if v.name not in {h.tensor for h in heads}]
    del graph.value_info[:]
    graph.value_info.extend(kept)


def hef_graph(model: onnx.ModelProto, source: str, end_nodes: Sequence[str] | None, sigmoid_inside: bool) -> HefGraph:
    """The float model of ``model`` (read from ``source``, named in errors) a HEF is compiled from."""
    input_name, input_hw = model_input(model)
    found = export_heads(model, end_nodes)
    heads = found.heads
    cut = cut_at_heads(model, heads)
    _reject_quantized(cut, source)
    _uint8_nhwc_input(cut, input_name, input_hw)
    if sigmoid_inside:
        _sigmoid_on_class_heads(cut, heads)
    onnx.checker.check_model(cut)
    return HefGraph(cut, heads, found.family, input_name, input_hw)
