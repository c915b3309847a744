"""YOLOv8/YOLO11 heads found by the export's decode tail.

An Ultralytics detect export ends in a decode tail: the box maps (4 x reg_max channels per grid) are
reshaped, joined and fed to the DFL ``Softmax``; the class maps (nc channels) are reshaped, joined and
fed to a ``Sigmoid``; the decoded boxes and the class probabilities are concatenated into the full
head output ``[1, 4 + nc, anchors]``. The head tensors are where that tail begins: the last tensors
upstream of the Softmax and of the Sigmoid that are not mere reshuffles (Reshape, Concat, Transpose,
Split, ...). Node names are never relied on, so quantized graphs (``ConvInteger`` + ``Mul`` + ``Add``)
and renamed graphs work alike; that is also where the Hailo parser's end nodes sit
(``/model.22/cv2.0/cv2.0.2/Conv`` ... in a float export).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.inputs.onnx_graph import ExportHeads, Graph, HeadSearch, full_head_output, sorted_heads

if TYPE_CHECKING:
    import onnx


def find(model: onnx.ModelProto, search: HeadSearch) -> ExportHeads:
    """The heads of a YOLOv8/YOLO11 export (:func:`find_heads`, at ``search.end_nodes`` where given)."""
    return ExportHeads(find_heads(model, search.end_nodes), HeadFamily.YOLOV8)


@dataclass(frozen=True)
class _DecodeTail:
    """Where the box and class branches enter the decode tail, and the sizes that follow."""

    box_tensors: frozenset[str]  # everything upstream of the DFL Softmax
    class_tensors: frozenset[str]  # everything upstream of the class Sigmoid
    box_leaves: tuple[str, ...]
    class_leaves: tuple[str, ...]
    reg_max: int
    nc: int


def _find_tail(graph: Graph, output: str) -> _DecodeTail:
    shape = graph.static_shape(output)
    if shape is None or len(shape) != 3 or shape[1] <= 4:
        raise GraphError(
            f"full head output {output!r}: shape {graph.shapes.get(output)}, expected [1, 4 + nc, anchors]"
        )
    nc = shape[1] - 4

    joined = [graph.producers.get(t) for t in graph.layout_leaves(output)]
    sigmoids = [n for n in joined if n is not None and n.op_type == "Sigmoid"]
    if len(sigmoids) != 1:
        ops = [n.op_type if n is not None else "graph input" for n in joined]
        raise GraphError(
            f"full head output {output!r}: joins tensors made by {ops}, expected exactly one class Sigmoid among them"
        )
    upstream = graph.upstream_nodes(output, "Softmax")
    # The DFL Softmax is the last one; attention blocks in the backbone (YOLO11's C2PSA) come before it.
    softmaxes = [s for s in upstream if not any(s.output[0] in graph.ancestors(t.input[0]) for t in upstream)]
    if len(softmaxes) != 1:
        raise GraphError(
            f"full head output {output!r}: Softmax nodes upstream {[n.name for n in upstream]}, "
            "expected exactly one last one (the DFL)"
        )
    softmax = softmaxes[0]
    bins_shape = graph.static_shape(softmax.input[0])
    default_axis = -1 if graph.opset >= 13 else 1
    axis = next((a.i for a in softmax.attribute if a.name == "axis"), default_axis)
    if bins_shape is None:
        raise GraphError(f"DFL Softmax {softmax.name!r}: input shape unknown, cannot tell reg_max")
    reg_max = bins_shape[axis]
    return _DecodeTail(
        box_tensors=frozenset(graph.ancestors(softmax.input[0])),
        class_tensors=frozenset(graph.ancestors(sigmoids[0].input[0])),
        box_leaves=tuple(graph.layout_leaves(softmax.input[0])),
        class_leaves=tuple(graph.layout_leaves(sigmoids[0].input[0])),
        reg_max=reg_max,
        nc=nc,
    )


def _head(graph: Graph, tail: _DecodeTail, tensor: str) -> HeadTensor:
    shape = graph.static_shape(tensor)
    if shape is None or len(shape) != 4 or shape[0] != 1:
        raise GraphError(f"head tensor {tensor!r}: shape {graph.shapes.get(tensor)}, expected [1, C, H, W]")
    import onnx

    elem_type = graph.elem_types.get(tensor, onnx.TensorProto.UNDEFINED)
    if elem_type != onnx.TensorProto.FLOAT:
        raise GraphError(
            f"head tensor {tensor!r}: element type {onnx.TensorProto.DataType.Name(elem_type)}, expected FLOAT "
            "(in a dynamically quantized graph the float head map is the output of the Add after ConvInteger)"
        )
    channels = shape[1]
    in_box, in_class = tensor in tail.box_tensors, tensor in tail.class_tensors
    box_channels = 4 * tail.reg_max
    if in_box and not in_class:
        role = HeadRole.BOX
    elif in_class and not in_box:
        role = HeadRole.CLASS
    elif in_box and channels == box_channels != tail.nc:
        role = HeadRole.BOX  # a map feeding both branches (per-scale channel concat): tell by its channel count
    elif in_box and channels == tail.nc != box_channels:
        role = HeadRole.CLASS
    else:
        where = (
            "both the DFL Softmax and the class Sigmoid" if in_box else "neither the DFL Softmax nor the class Sigmoid"
        )
        raise GraphError(
            f"head tensor {tensor!r}: feeds {where} and has {channels} channels "
            f"(box maps have 4 x reg_max = {box_channels}, class maps nc = {tail.nc}); cannot tell its role"
        )
    node = graph.producers.get(tensor)
    return HeadTensor(tensor, node.name if node is not None else tensor, role, channels, (shape[2], shape[3]))


def _structural_heads(graph: Graph, tail: _DecodeTail) -> tuple[HeadTensor, ...]:
    leaves = dict.fromkeys((*tail.box_leaves, *tail.class_leaves))
    heads = sorted_heads(_head(graph, tail, t) for t in leaves)
    boxes = [h for h in heads if h.role is HeadRole.BOX]
    classes = [h for h in heads if h.role is HeadRole.CLASS]
    box_grids = sorted(h.grid for h in boxes)
    class_grids = sorted(h.grid for h in classes)
    if not boxes or box_grids != class_grids or len(set(box_grids)) != len(box_grids):
        raise GraphError(
            f"decode tail: box maps on grids {box_grids} and class maps on grids {class_grids}, "
            "expected one box and one class map per grid"
        )
    wrong = [h for h in heads if h.channels != (4 * tail.reg_max if h.role is HeadRole.BOX else tail.nc)]
    if wrong:
        raise GraphError(
            f"decode tail: head maps {[(h.tensor, h.role.value, h.channels) for h in wrong]} do not have "
            f"4 x reg_max = {4 * tail.reg_max} (box) or nc = {tail.nc} (class) channels"
        )
    return heads


def heads_of_decoded(model: onnx.ModelProto, decoded: str) -> tuple[HeadTensor, ...]:
    """The raw head tensors of an export whose decoded ``[1, 4 + nc, anchors]`` tensor is ``decoded`` (not
    necessarily its output: an end-to-end export selects its rows from it), found by structure as
    :func:`find_heads` finds them upstream of the full head output."""
    graph = Graph.of(model)
    return _structural_heads(graph, _find_tail(graph, decoded))


def _resolve_end_node(graph: Graph, name: str) -> str | None:
    """A node name -> its (first) output tensor; a tensor name made by a node -> itself."""
    if name in graph.nodes:
        return graph.nodes[name].output[0]
    if name in graph.producers:
        return name
    return None


def find_heads(model: onnx.ModelProto, end_nodes: Sequence[str] | None = None) -> tuple[HeadTensor, ...]:
    """The raw head tensors, stride ascending, box before class per grid.

    Found from the structure of the decode tail, or, with ``end_nodes``, the nodes (or tensors) given
    there, each mapped to its output tensor; their roles still come from which branch of the tail
    they feed.
    """
    graph = Graph.of(model)
    tail = _find_tail(graph, full_head_output(model))
    if end_nodes is None:
        return _structural_heads(graph, tail)
    tensors = {name: _resolve_end_node(graph, name) for name in end_nodes}
    missing = [name for name, tensor in tensors.items() if tensor is None]
    if missing:
        try:
            candidates = [h.node for h in _structural_heads(graph, tail)]
        except GraphError:
            candidates = []
        similar = sorted({m for name in missing for m in difflib.get_close_matches(name, graph.nodes, n=3, cutoff=0.6)})
        raise GraphError(
            f"end nodes not found in {graph.name!r}: {missing}; head nodes found by structure: {candidates}; "
            f"similar node names: {similar}"
        )
    return sorted_heads(_head(graph, tail, t) for t in dict.fromkeys(t for t in tensors.values() if t is not None))
