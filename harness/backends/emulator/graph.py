"""The float graph a HEF is compiled from: the ONNX cut at its heads, with a HEF's input contract in
front and, optionally, the sigmoid a model script adds to the class convs (to all of an anchored map's).

A HEF takes raw uint8 RGB 0-255 NHWC frames; the ``normalization([0,0,0],[255,255,255])`` of the
Model Zoo's model scripts is compiled in (mz: hailo_model_zoo/cfg/alls/generic/yolov8n.alls). Here
that is ``Cast`` to float, ``Div`` by 255 and ``Transpose`` NHWC -> NCHW inside the graph.

:func:`batched` lets the graph take a batch of frames where the export allows it: its leading dimension is
then :data:`BATCH`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.core.settings import SsdConfig
from harness.inputs.onnx_graph import cut_at_heads, export_heads, model_input, reject_quantized

log = logging.getLogger(__name__)

BATCH = "batch"  # the symbolic leading dimension of a graph that takes any number of frames


@dataclass(frozen=True)
class HefGraph:
    """The float model: input ``input_name`` uint8 ``(N, H, W, 3)``; one output per head, named as the
    head tensor, ``[N, C, H, W]`` float (class heads and anchored maps after their sigmoid when it is inside). ``N`` is
    1, or :data:`BATCH` once :func:`batched` lets the graph take any number of frames."""

    model: onnx.ModelProto
    heads: tuple[HeadTensor, ...]
    family: HeadFamily
    input_name: str
    input_hw: tuple[int, int]


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


def _reshape_shapes(model: onnx.ModelProto) -> dict[str, tuple[onnx.TensorProto, onnx.NodeProto]]:
    """Each ``Reshape`` whose target shape is a constant (an initializer or a ``Constant`` node): the
    tensor holding that shape, by the Reshape's output."""
    graph = model.graph
    constants = {i.name: i for i in graph.initializer}
    constants |= {n.output[0]: n.attribute[0].t for n in graph.node if n.op_type == "Constant" and n.attribute}
    return {
        node.output[0]: (constants[node.input[1]], node)
        for node in graph.node
        if node.op_type == "Reshape" and node.input[1] in constants
    }


def _leading_ones(model: onnx.ModelProto) -> set[str]:
    """The tensors of the model, at the batch of 1 it is traced at, whose leading dimension is 1."""
    inferred = shape_inference.infer_shapes(model).graph
    return {
        value.name
        for value in (*inferred.input, *inferred.value_info, *inferred.output)
        if value.type.tensor_type.shape.dim and value.type.tensor_type.shape.dim[0].dim_value == 1
    }


def _takes_a_batch(model: onnx.ModelProto, name: str) -> bool:
    """Whether two frames in one run give what each gives alone (a float graph: to rounding)."""
    value = next(i for i in model.graph.input if i.name == name)
    frame = [d.dim_value for d in value.type.tensor_type.shape.dim[1:]]
    dtype = helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
    frames = np.random.default_rng(0).integers(0, 256, (2, *frame)).astype(dtype)
    import onnxruntime as ort  # only where a graph is batched: checking an export needs none

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        both = session.run(None, {name: frames})
        alone = [session.run(None, {name: frames[i : i + 1]}) for i in range(2)]
    except Exception as error:  # onnxruntime's error types share no base of their own: any refusal counts
        log.info("emulated HEF graph: one frame at a time (two frames in one run: %s)", str(error).splitlines()[0])
        return False
    same = all(
        batched.shape[0] == 2 and all(np.allclose(batched[i], alone[i][k][0], rtol=1e-3, atol=1e-4) for i in range(2))
        for k, batched in enumerate(both)
    )
    if not same:
        log.info("emulated HEF graph: one frame at a time (two frames in one run mix)")
    return same


def _batch_dimension(model: onnx.ModelProto, name: str, outputs: Sequence[str]) -> onnx.ModelProto:
    """The model taking any number of frames where it can: the input ``name`` and the ``outputs``
    lead with :data:`BATCH`, and each ``Reshape`` to a constant shape led by 1 of a tensor led by 1
    copies that dimension from its input instead (0: onnx: docs/Operators.md, Reshape, ``allowzero``
    0), the batch where the tensor carries it. An Ultralytics export is traced at batch 1, its
    attention blocks' reshapes included (ultralytics: ultralytics/nn/modules/block.py,
    ``Attention.forward``). The model as it is (batch 1) where two frames in one run do not give
    what each gives alone."""
    ones = _leading_ones(model)
    batched = onnx.ModelProto()
    batched.CopyFrom(model)
    graph = batched.graph
    del graph.value_info[:]
    for value in (*graph.input, *graph.output):
        if value.name == name or value.name in outputs:
            value.type.tensor_type.shape.dim[0].dim_param = BATCH
    for tensor, node in _reshape_shapes(batched).values():
        shape = numpy_helper.to_array(tensor).copy()
        allows_zero = any(a.name == "allowzero" and a.i for a in node.attribute)
        if shape.ndim == 1 and shape.size and shape[0] == 1 and node.input[0] in ones and not allows_zero:
            shape[0] = 0
            tensor.CopyFrom(numpy_helper.from_array(shape, tensor.name))
    return batched if _takes_a_batch(batched, name) else model


# The heads whose sigmoid a HEF compiles in: YOLOv8's class maps (mz: hailo_model_zoo/cfg/alls/generic/yolov8n.alls,
# change_output_activation), and every channel of YOLOv5's anchored maps, which HailoRT's YOLOv5 op reads as
# probabilities (hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp, ``dequantize_and_sigmoid``, and
# nms_post_process.hpp, ``should_sigmoid`` false), and an SSD head's class maps, which HailoRT's SSD op reads as
# scores, applying no activation (hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp,
# ``extract_bbox_classes``).
_SIGMOID_ROLES = frozenset({HeadRole.CLASS, HeadRole.ANCHORED, HeadRole.OBJECTNESS, HeadRole.ANCHOR_CLASSES})


def _sigmoid_on_score_heads(model: onnx.ModelProto, heads: Sequence[HeadTensor]) -> None:
    """Each class head and anchored map tensor ``t`` becomes ``Sigmoid(t_logits)``: the output keeps the head's name."""
    graph = model.graph
    for head in heads:
        if head.role not in _SIGMOID_ROLES:
            continue
        logits = f"{head.tensor}_logits"
        for node in graph.node:
            node.output[:] = [logits if o == head.tensor else o for o in node.output]
            node.input[:] = [logits if i == head.tensor else i for i in node.input]
        graph.node.append(helper.make_node("Sigmoid", [logits], [head.tensor], name=f"{head.node}_sigmoid"))
    kept = [v for v in graph.value_info if v.name not in {h.tensor for h in heads}]
    del graph.value_info[:]
    graph.value_info.extend(kept)


def hef_graph(
    model: onnx.ModelProto,
    source: str,
    end_nodes: Sequence[str] | None,
    sigmoid_inside: bool,
    ssd: SsdConfig | None = None,
) -> HefGraph:
    """The float model of ``model`` (read from ``source``, named in errors) a HEF is compiled from (an SSD
    export's heads found with its config ``ssd``)."""
    input_name, input_hw = model_input(model)
    found = export_heads(model, end_nodes, ssd)
    heads = found.heads
    cut = cut_at_heads(model, heads)
    reject_quantized(cut, source, "up to its heads it ")
    _uint8_nhwc_input(cut, input_name, input_hw)
    if sigmoid_inside:
        _sigmoid_on_score_heads(cut, heads)
    onnx.checker.check_model(cut)
    return HefGraph(cut, heads, found.family, input_name, input_hw)


def batched(graph: HefGraph) -> HefGraph:
    """``graph`` taking any number of frames where two frames in one run give what each gives alone
    (see :func:`_batch_dimension`), else as it is."""
    model = _batch_dimension(graph.model, graph.input_name, [h.tensor for h in graph.heads])
    return replace(graph, model=model)
