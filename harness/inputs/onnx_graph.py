"""Find the raw YOLO head tensors in an Ultralytics ONNX export by graph structure; cut there.

An Ultralytics detect export ends in a decode tail: the box maps (4 x reg_max channels per grid) are
reshaped, joined and fed to the DFL ``Softmax``; the class maps (nc channels) are reshaped, joined and
fed to a ``Sigmoid``; the decoded boxes and the class probabilities are concatenated into the full
head output ``[1, 4 + nc, anchors]``. The head tensors are where that tail begins: the last tensors
upstream of the Softmax and of the Sigmoid that are not mere reshuffles (Reshape, Concat, Transpose,
Split, ...). Node names are never relied on, so quantized graphs (``ConvInteger`` + ``Mul`` + ``Add``)
and renamed graphs work alike; that is also where the Hailo parser's end nodes sit
(``/model.22/cv2.0/cv2.0.2/Conv`` ... in a float export).

Around that cut: the model up to the heads (:func:`cut_at_heads`), the decode tail after them
(:func:`decode_tail`), and the tail with onnxruntime's dynamically quantized DFL conv back in
float (:func:`dequantize_decode_tail`).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.core.settings import SsdConfig

if TYPE_CHECKING:  # onnx is imported where a model is read or changed (its import alone takes half a second)
    import onnx

# Ops that only move values around; the tail's tracing walks through them (data input only).
_LAYOUT_OPS = frozenset(
    {"Reshape", "Concat", "Transpose", "Split", "Slice", "Flatten", "Squeeze", "Unsqueeze", "Identity"}
)


@dataclass(frozen=True)
class _Graph:
    """Lookup tables over one (shape-inferred) graph."""

    name: str
    producers: dict[str, onnx.NodeProto]
    nodes: dict[str, onnx.NodeProto]
    shapes: dict[str, tuple[int | None, ...]]
    elem_types: dict[str, int]
    constants: frozenset[str]
    opset: int

    @classmethod
    def of(cls, model: onnx.ModelProto) -> _Graph:
        from onnx import shape_inference

        inferred = shape_inference.infer_shapes(model)
        graph = inferred.graph
        values = [v for v in (*graph.input, *graph.value_info, *graph.output) if v.type.HasField("tensor_type")]
        shapes = {
            v.name: tuple(d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim)
            for v in values
            if v.type.tensor_type.HasField("shape")
        }
        producers = {out: node for node in graph.node for out in node.output if out}
        constants = {i.name for i in graph.initializer} | {
            out for node in graph.node if node.op_type == "Constant" for out in node.output
        }
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        return cls(
            name=graph.name or "graph",
            producers=producers,
            nodes={node.name: node for node in graph.node if node.name},
            shapes=shapes,
            elem_types={v.name: v.type.tensor_type.elem_type for v in values},
            constants=frozenset(constants),
            opset=opset,
        )

    def data_inputs(self, node: onnx.NodeProto) -> list[str]:
        """The inputs a layout op moves values of (all of Concat's; the first of the others)."""
        inputs = list(node.input) if node.op_type == "Concat" else list(node.input[:1])
        return [i for i in inputs if i and i not in self.constants]

    def layout_leaves(self, tensor: str) -> list[str]:
        """Tensors reached upstream of ``tensor`` through layout ops only, in input order."""
        node = self.producers.get(tensor)
        if node is None or node.op_type not in _LAYOUT_OPS:
            return [tensor]
        leaves: list[str] = []
        for inp in self.data_inputs(node):
            leaves.extend(leaf for leaf in self.layout_leaves(inp) if leaf not in leaves)
        return leaves

    def ancestors(self, tensor: str) -> set[str]:
        """Every non-constant tensor ``tensor`` is computed from, itself included."""
        seen: set[str] = set()
        stack = [tensor]
        while stack:
            t = stack.pop()
            if t in seen or t in self.constants:
                continue
            seen.add(t)
            node = self.producers.get(t)
            if node is not None:
                stack.extend(i for i in node.input if i)
        return seen

    def upstream_nodes(self, tensor: str, op_type: str) -> list[onnx.NodeProto]:
        found: dict[str, onnx.NodeProto] = {}
        for t in self.ancestors(tensor):
            node = self.producers.get(t)
            if node is not None and node.op_type == op_type:
                found[node.output[0]] = node
        return list(found.values())

    def static_shape(self, tensor: str) -> tuple[int, ...] | None:
        shape = self.shapes.get(tensor)
        if shape is None or any(d is None or d <= 0 for d in shape):
            return None
        return tuple(int(d) for d in shape)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _DecodeTail:
    """Where the box and class branches enter the decode tail, and the sizes that follow."""

    box_tensors: frozenset[str]  # everything upstream of the DFL Softmax
    class_tensors: frozenset[str]  # everything upstream of the class Sigmoid
    box_leaves: tuple[str, ...]
    class_leaves: tuple[str, ...]
    reg_max: int
    nc: int


def load_model(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """Read an ONNX file; a missing or unparsable file raises :class:`GraphError` naming it."""
    import google.protobuf.message
    import onnx

    try:
        model = onnx.load(os.fspath(path))
    except (OSError, google.protobuf.message.DecodeError) as error:
        raise GraphError(f"ONNX model {os.fspath(path)!r}: cannot be read ({error})") from error
    if not model.HasField("graph"):  # protobuf reads an empty file as an empty message, without an error
        what = "is empty (0 bytes)" if os.path.getsize(path) == 0 else "holds no graph"
        raise GraphError(f"ONNX model {os.fspath(path)!r}: {what}, not an ONNX model; expected an exported .onnx file")
    return model


def _output_shapes(model: onnx.ModelProto) -> dict[str, tuple[int | str, ...]]:
    return {
        o.name: tuple(d.dim_value if d.HasField("dim_value") else d.dim_param for d in o.type.tensor_type.shape.dim)
        for o in model.graph.output
    }


def model_input(model: onnx.ModelProto) -> tuple[str, tuple[int, int]]:
    """The image input: ``(name, (H, W))`` of the one non-initializer input shaped ``[N, C, H, W]``."""
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    found = {
        i.name: tuple(d.dim_value if d.HasField("dim_value") else d.dim_param for d in i.type.tensor_type.shape.dim)
        for i in inputs
    }
    if len(inputs) != 1:
        raise GraphError(f"model inputs: found {found}, expected exactly one image input [N, C, H, W]")
    name, shape = next(iter(found.items()))
    if len(shape) != 4 or not all(isinstance(d, int) and d > 0 for d in shape[2:]):
        raise GraphError(f"model input {name!r}: shape {list(shape)}, expected [N, C, H, W] with fixed H and W")
    return name, (int(shape[2]), int(shape[3]))


def full_head_output(model: onnx.ModelProto) -> str:
    """Name of the full decoded head output ``[1, 4 + nc, anchors]`` (the one rank-3 graph output)."""
    shapes = _output_shapes(model)
    rank3 = [name for name, shape in shapes.items() if len(shape) == 3]
    if len(rank3) != 1:
        raise GraphError(
            f"model outputs: found {shapes}, expected exactly one decoded head output [1, 4 + nc, anchors]"
        )
    return rank3[0]


def _find_tail(graph: _Graph, output: str) -> _DecodeTail:
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


def _head(graph: _Graph, tail: _DecodeTail, tensor: str) -> HeadTensor:
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


def _sorted_heads(heads: Iterable[HeadTensor]) -> tuple[HeadTensor, ...]:
    """Stride ascending (largest grid first), box before class."""
    return tuple(sorted(heads, key=lambda h: (-h.grid[0] * h.grid[1], -h.grid[0], h.role is not HeadRole.BOX)))


def _structural_heads(graph: _Graph, tail: _DecodeTail) -> tuple[HeadTensor, ...]:
    leaves = dict.fromkeys((*tail.box_leaves, *tail.class_leaves))
    heads = _sorted_heads(_head(graph, tail, t) for t in leaves)
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


def _resolve_end_node(graph: _Graph, name: str) -> str | None:
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
    graph = _Graph.of(model)
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
    return _sorted_heads(_head(graph, tail, t) for t in dict.fromkeys(t for t in tensors.values() if t is not None))


def _last_convolutions(graph: _Graph, outputs: Sequence[str]) -> list[onnx.NodeProto]:
    """The convolutions upstream of ``outputs`` with no convolution after them on the way there."""
    upstream = set().union(*(graph.ancestors(o) for o in outputs))
    convs = list(
        {n.output[0]: n for n in graph.producers.values() if n.op_type == "Conv" and n.output[0] in upstream}.values()
    )
    conv_outputs = {n.output[0] for n in convs}
    downstream_of: dict[str, set[str]] = {t: set() for t in conv_outputs}
    for node in convs:  # a conv whose input descends from another conv's output
        for earlier in graph.ancestors(node.input[0]) & conv_outputs:
            downstream_of[earlier].add(node.output[0])
    return [n for n in convs if not downstream_of[n.output[0]]]


def find_yolo26_heads(model: onnx.ModelProto) -> tuple[HeadTensor, ...]:
    """The raw head tensors of a YOLO26 export (reg_max 1, no DFL), stride ascending, box before class.

    Either head exports alike for this: the one-to-one head end to end (output ``[1, 300, 6]``, its
    tail a top-k) or the one-to-many head (``[1, 4 + nc, anchors]``). The head maps are the outputs of
    the last convolutions, those with no convolution after them on the way to the output (a YOLOv8
    export has one more, its DFL conv, and is refused here); box maps have 4 channels, class maps nc.
    ultralytics: ultralytics/nn/modules/head.py (Detect with reg_max 1: ``dfl`` is an identity).
    """
    graph = _Graph.of(model)
    last = _last_convolutions(graph, [o.name for o in model.graph.output])
    shapes = {n.output[0]: graph.static_shape(n.output[0]) for n in last}
    if len(last) != 6 or any(s is None or len(s) != 4 for s in shapes.values()):
        raise GraphError(
            f"{graph.name!r}: last convolutions {[(n.name, shapes[n.output[0]]) for n in last]}, expected the six "
            "head convolutions of a YOLO26 export (a box map of 4 and a class map of nc channels per stride)"
        )
    channels = sorted({s[1] for s in shapes.values() if s is not None})
    if 4 not in channels or len(channels) != 2:
        raise GraphError(
            f"{graph.name!r}: the last convolutions have {channels} channels, expected 4 (box maps, reg_max 1) and nc "
            "(class maps); a class map of 4 channels (nc = 4) cannot be told from a box map"
        )
    heads = []
    for node in last:
        _, c, h, w = shapes[node.output[0]]  # type: ignore[misc]
        heads.append(HeadTensor(node.output[0], node.name, HeadRole.BOX if c == 4 else HeadRole.CLASS, c, (h, w)))
    for grid in sorted({h.grid for h in heads}, reverse=True):  # one box and one class map per stride
        maps = sorted((h for h in heads if h.grid == grid), key=lambda h: -h.channels)
        if sorted(h.role for h in maps) != [HeadRole.BOX, HeadRole.CLASS]:
            raise GraphError(
                f"{graph.name!r}: grid {grid[0]}x{grid[1]} has {len(maps)} maps "
                f"({', '.join(str(h.channels) for h in maps)} channels), expected 2: a box map of 4 and a class map "
                "of nc channels per stride, as a YOLO26 export has"
            )
    return _sorted_heads(heads)


def find_yolov5_heads(model: onnx.ModelProto) -> tuple[HeadTensor, ...]:
    """The raw head maps of a YOLOv5/YOLOv7 export (anchor-based), stride ascending, each with its anchors.

    Its detect head ends in one convolution per stride of ``na x (5 + nc)`` channels, viewed as
    ``[1, na, 5 + nc, H, W]`` on the way to the decoded output ``[1, rows, 5 + nc]`` (per stride, anchor by
    anchor, its cells: x, y, w, h in input pixels, objectness, class scores). The anchors are read by running
    that decode tail on zero logits, where every row holds its cell's centre and its anchor's own size
    (sigmoid 0 = 0.5: ``(2 x 0.5 + cell - 0.5) x stride`` and ``(2 x 0.5) ** 2 x anchor``); a tail that does
    not give them is refused. ultralytics/yolov5: models/yolo.py (``Detect.forward``, ``_make_grid``).
    """
    graph = _Graph.of(model)
    output = full_head_output(model)
    out_shape = graph.static_shape(output)
    last = _last_convolutions(graph, [output])
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    heads = []
    for node in last:
        shape = graph.static_shape(node.output[0])
        views = [graph.static_shape(n.output[0]) for n in consumers.get(node.output[0], []) if n.op_type == "Reshape"]
        view = views[0] if len(views) == 1 else None
        if (
            out_shape is None
            or len(out_shape) != 3
            or shape is None
            or len(shape) != 4
            or view is None
            or len(view) != 5
            or view[2] != out_shape[2]
            or view[1] * view[2] != shape[1]
            or view[2] < 6
        ):
            raise GraphError(
                f"{graph.name!r}: last convolution {node.name!r} {shape} -> {view}, output {output!r} {out_shape}; "
                "expected a YOLOv5 head: per stride a convolution of na x (5 + nc) channels viewed as "
                "[1, na, 5 + nc, H, W], decoded into [1, rows, 5 + nc]"
            )
        heads.append(HeadTensor(node.output[0], node.name, HeadRole.ANCHORED, shape[1], (shape[2], shape[3])))
    return _with_anchors(model, _sorted_heads(heads))


def _with_anchors(model: onnx.ModelProto, heads: tuple[HeadTensor, ...]) -> tuple[HeadTensor, ...]:
    """``heads`` with the anchors their decode tail gives at zero logits (see :func:`find_yolov5_heads`)."""
    import onnxruntime as ort

    _, (_, in_w) = model_input(model)
    tail = decode_tail(model, heads)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(tail.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feed = {i.name: np.zeros([d.dim_value for d in i.type.tensor_type.shape.dim], np.float32) for i in tail.graph.input}
    rows = session.run(None, feed)[0][0]
    found: dict[str, tuple[tuple[float, float], ...]] = {}
    start = 0
    by_stride = {in_w // h.grid[1]: h for h in heads}
    while start < len(rows) and len(found) < len(heads):
        stride = round(2 * float(rows[start, 0]))
        head = by_stride.get(stride)
        if head is None or head.tensor in found:
            break
        cells = head.grid[0] * head.grid[1]
        block = rows[start : start + head.channels // rows.shape[1] * cells]
        na = len(block) // cells
        row, col = np.divmod(np.arange(cells), head.grid[1])
        centres = np.tile(np.stack([col + 0.5, row + 0.5], axis=1) * stride, (na, 1))
        sizes = block[:, 2:4].reshape(na, cells, 2)
        centred = np.allclose(block[:, :2], centres, rtol=1e-5, atol=1e-3)
        if not (centred and np.allclose(sizes, sizes[:, :1], rtol=1e-5)):
            break
        found[head.tensor] = tuple((float(w), float(h)) for w, h in sizes[:, 0])
        start += len(block)
    if len(found) != len(heads) or start != len(rows):
        raise GraphError(
            f"{model.graph.name or 'graph'!r}: its decode tail does not decode as YOLOv5's (at zero logits, rows "
            f"{start} of {len(rows)} hold each cell's centre and its anchor's size); expected "
            "xy = (2 sigmoid + cell - 0.5) x stride and wh = (2 sigmoid) ** 2 x anchor"
        )
    return tuple(replace(h, anchors=found[h.tensor]) for h in heads)


# A YOLOX head's three maps of a stride in the order :func:`find_yolox_heads` gives them: as a level of its
# layout lists them (harness.decode.layout, ``Level.outputs``).
_YOLOX_ROLES = (HeadRole.BOX, HeadRole.CLASS, HeadRole.OBJECTNESS)


def find_yolox_heads(model: onnx.ModelProto) -> tuple[HeadTensor, ...]:
    """The raw head maps of a YOLOX export, stride ascending; per stride box, class, then objectness.

    Its detect head ends, per stride, in three convolutions: the box map (4 channels: ``tx, ty, tw, th``), the
    objectness map (1) and the class map (nc), decoded into ``[1, anchors, 5 + nc]`` (per stride its cells, row
    by row: x, y, w, h in input pixels, objectness, class scores). Those are the last convolutions on the way to
    the output, three per grid. The decode tail is run twice, never trusted by name: on zero logits every row
    must hold its cell's corner ``cell x stride`` and one stride as its size (``(0 + cell) x stride``,
    ``exp(0) x stride``), which an export without its decode tail (``decode_in_inference`` off) does not give;
    then with each map filled with a value of its own, which tells which map is the box, the objectness and the
    class map by the column it lands in (with nc = 1 two maps have one channel). A tail that gives neither is
    refused. Megvii-BaseDetection/YOLOX: yolox/models/yolo_head.py (``forward``, ``decode_outputs``).
    """
    graph = _Graph.of(model)
    output = full_head_output(model)
    out_shape = graph.static_shape(output)
    last = _last_convolutions(graph, [output])
    shapes = {n.output[0]: graph.static_shape(n.output[0]) for n in last}
    nc = out_shape[2] - 5 if out_shape is not None and len(out_shape) == 3 else 0
    grids: dict[tuple[int, int], list[tuple[onnx.NodeProto, int]]] = {}
    for node in last:
        shape = shapes[node.output[0]]
        if shape is None or len(shape) != 4 or shape[0] != 1:
            grids.clear()
            break
        grids.setdefault((shape[2], shape[3]), []).append((node, shape[1]))
    if nc < 1 or not grids or any(sorted(c for _, c in convs) != sorted((4, 1, nc)) for convs in grids.values()):
        raise GraphError(
            f"{graph.name!r}: last convolutions {[(n.name, shapes[n.output[0]]) for n in last]}, output {output!r} "
            f"{out_shape}; expected a YOLOX head: per stride convolutions of 4 (box), 1 (objectness) and nc (class) "
            "channels on one grid, decoded into [1, anchors, 5 + nc]"
        )
    convs = [(node, channels, grid) for grid, found in grids.items() for node, channels in found]
    roles = _yolox_roles(model, graph.name, output, convs)
    heads = [HeadTensor(n.output[0], n.name, roles[n.output[0]], c, grid) for n, c, grid in convs]
    return tuple(sorted(heads, key=lambda h: (-h.grid[0] * h.grid[1], -h.grid[0], _YOLOX_ROLES.index(h.role))))


def _yolox_roles(
    model: onnx.ModelProto, name: str, output: str, convs: list[tuple[onnx.NodeProto, int, tuple[int, int]]]
) -> dict[str, HeadRole]:
    """Each head map's role, read off the decode tail's rows (see :func:`find_yolox_heads`)."""
    import onnxruntime as ort

    _, (_, in_w) = model_input(model)
    tail = _extract(model, [n.output[0] for n, _, _ in convs], [output], "decode tail")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(tail.SerializeToString(), options, providers=["CPUExecutionProvider"])
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in tail.graph.input}
    rows = session.run(None, {t: np.zeros(shape, np.float32) for t, shape in shapes.items()})[0][0]
    # a value of its own per map: 0.1, 0.2, ... (sigmoids 0.525 .. 0.711 apart by 0.02 at least; exps below 2.5)
    probe = {n.output[0]: np.float32(0.1 * (k + 1)) for k, (n, _, _) in enumerate(convs)}
    probed = session.run(None, {t: np.full(shapes[t], probe[t], np.float32) for t in shapes})[0][0]
    by_stride = {in_w // grid[1]: grid for _, _, grid in convs}
    roles: dict[str, HeadRole] = {}
    start = 0
    while start < len(rows) and len(roles) < len(convs):
        grid = by_stride.get(round(float(rows[start, 2])))  # exp(0) x stride
        mine = [(node, channels) for node, channels, g in convs if g == grid]
        if grid is None or any(node.output[0] in roles for node, _ in mine):
            break
        found = _yolox_block(rows[start : start + grid[0] * grid[1]], probed[start], grid, in_w // grid[1], mine, probe)
        if found is None:
            break
        roles.update(found)
        start += grid[0] * grid[1]
    if len(roles) != len(convs) or start != len(rows):
        raise GraphError(
            f"{name!r}: its decode tail does not decode as YOLOX's (rows {start} of {len(rows)} hold, at zero "
            "logits, each cell's corner cell x stride and one stride as its size, and each map's values where "
            "YOLOX puts them); expected rows x, y, w, h, objectness, classes with xy = (t + cell) x stride and "
            "wh = exp(t) x stride, objectness and classes sigmoided (an export with decode_in_inference)"
        )
    return roles


def _yolox_block(
    block: np.ndarray,
    probed: np.ndarray,
    grid: tuple[int, int],
    stride: int,
    convs: list[tuple[onnx.NodeProto, int]],
    probe: dict[str, np.float32],
) -> dict[str, HeadRole] | None:
    """The roles of one grid's three maps, where its rows ``block`` (at zero logits) hold each cell's corner, one
    stride as its size and 0.5 as every score, and its first row ``probed`` (each map at its ``probe`` value)
    puts each map's value where YOLOX puts that of exactly one role; None otherwise."""
    cells = grid[0] * grid[1]
    row, col = np.divmod(np.arange(cells), grid[1])
    at_zero = np.concatenate([[stride] * 2, [0.5] * (block.shape[1] - 4)])
    corners = np.stack([col, row], axis=1) * stride
    if len(block) != cells or not (
        np.allclose(block[:, :2], corners, atol=1e-3) and np.allclose(block[:, 2:], at_zero)
    ):
        return None
    roles = {}
    for node, channels in convs:
        t = probe[node.output[0]]
        side, score = np.exp(t) * stride, 1 / (1 + np.exp(-t))
        fits = {
            HeadRole.BOX: channels == 4 and np.allclose(probed[:4], [t * stride, t * stride, side, side], rtol=1e-5),
            HeadRole.OBJECTNESS: channels == 1 and bool(np.isclose(probed[4], score, rtol=1e-5)),
            HeadRole.CLASS: channels == len(probed) - 5 and np.allclose(probed[5:], score, rtol=1e-5),
        }
        found = [role for role, fit in fits.items() if fit]
        if len(found) != 1:
            return None
        roles[node.output[0]] = found[0]
    return roles if sorted(roles.values()) == sorted(_YOLOX_ROLES) else None


def ssd_outputs(model: onnx.ModelProto) -> tuple[str, str]:
    """The boxes and scores outputs of an SSD export: its two outputs, ``[1, rows, 4]`` and ``[1, rows, nc]``
    with ``nc`` other than 4 (tensorflow/models: research/object_detection/meta_architectures/ssd_meta_arch.py,
    ``raw_detection_boxes``, ``raw_detection_scores``); a :class:`GraphError` otherwise."""
    shapes = _output_shapes(model)
    found = list(shapes.items())
    fixed = all(len(s) == 3 and all(isinstance(d, int) and d > 0 for d in s) for _, s in found)
    if len(found) == 2 and fixed:
        (a, sa), (b, sb) = found
        boxes = [name for name, shape in found if shape[2] == 4]
        if sa[:2] == sb[:2] == (1, sa[1]) and len(boxes) == 1:
            scores = b if boxes[0] == a else a
            return boxes[0], scores
    raise GraphError(
        f"model outputs: found {shapes}; expected an SSD export's two outputs, boxes [1, rows, 4] and scores "
        "[1, rows, nc] (nc other than 4)"
    )


def looks_like_ssd(model: onnx.ModelProto) -> bool:
    """Whether the export's outputs are an SSD export's boxes and scores (:func:`ssd_outputs`)."""
    try:
        ssd_outputs(model)
    except GraphError:
        return False
    return True


def find_ssd_heads(model: onnx.ModelProto, ssd: SsdConfig) -> tuple[HeadTensor, ...]:
    """The raw head maps of an SSD export, per layer (largest grid first) its regression map then its class map.

    Its layers end in two convolutions on one grid: the box encodings (``4 x na`` channels) on the way to the
    boxes output and the class predictions (``na x nc``) on the way to the scores output (:func:`ssd_outputs`);
    those are the last convolutions before the outputs, and which output a map feeds tells its role. The anchors
    and box coding are no fact the graph states: ``ssd`` gives them (an SSD config file), ``na`` per layer, and
    each regression map carries its layer's anchors (fractions of the input). The
    decode tail is then run on its own: at zero codes every row must hold its anchor's box, and with the codes
    0.1, 0.2, 0.3, 0.4 in each anchor's four channels the box the config's coding gives, both as TensorFlow's
    Object Detection API writes it: ``[ymin, xmin, ymax, xmax]`` as fractions of the input, rows cell by cell,
    anchor by anchor (tensorflow/models: research/object_detection/box_coders/faster_rcnn_box_coder.py,
    ``_decode``; predictors/heads/box_head.py). An export or config that does not agree is refused naming both."""
    graph = _Graph.of(model)
    try:
        boxes, scores = ssd_outputs(model)
    except GraphError as error:
        raise GraphError(
            f"{graph.name!r}: an SSD config (--ssd-config) given for an export that is not SSD: {error}"
        ) from None
    box_side, score_side = graph.ancestors(boxes), graph.ancestors(scores)
    last = _last_convolutions(graph, [boxes, scores])
    nc = int(_output_shapes(model)[scores][2])
    grids: dict[tuple[int, int], dict[HeadRole, list[HeadTensor]]] = {}
    for node in last:
        tensor, shape = node.output[0], graph.static_shape(node.output[0])
        feeds = (tensor in box_side, tensor in score_side)
        if shape is None or len(shape) != 4 or shape[0] != 1 or feeds not in ((True, False), (False, True)):
            raise GraphError(
                f"{graph.name!r}: last convolution {node.name!r} {graph.shapes.get(tensor)} feeds "
                f"{[o for o, f in zip((boxes, scores), feeds, strict=True) if f] or 'no output'}; expected an SSD "
                f"head: per layer a convolution [1, 4 x na, H, W] feeding {boxes!r} alone and one [1, na x nc, H, W] "
                f"feeding {scores!r} alone"
            )
        role = HeadRole.ANCHOR_BOXES if feeds[0] else HeadRole.ANCHOR_CLASSES
        head = HeadTensor(tensor, node.name, role, shape[1], (shape[2], shape[3]))
        grids.setdefault(head.grid, {}).setdefault(role, []).append(head)
    ordered = sorted(grids.items(), key=lambda item: (-item[0][0] * item[0][1], -item[0][0]))
    described = [f"{h}x{w}" for (h, w), _ in ordered]
    if len(ordered) != len(ssd.anchors):
        raise GraphError(
            f"{graph.name!r}: {len(ordered)} SSD layer(s) on grids {described}, but the SSD config (--ssd-config) "
            f"gives anchors for {len(ssd.anchors)}; expected one bbox decoder per layer, largest grid first"
        )
    heads: list[HeadTensor] = []
    rows = 0
    for i, ((grid, roles), group) in enumerate(zip(ordered, ssd.anchors, strict=True)):
        na = len(group)
        box, cls = roles.get(HeadRole.ANCHOR_BOXES, []), roles.get(HeadRole.ANCHOR_CLASSES, [])
        if len(box) != 1 or len(cls) != 1 or box[0].channels != 4 * na or cls[0].channels != na * nc:
            found = ", ".join(f"{h.node!r} ({h.channels} ch, {h.role.value})" for h in (*box, *cls))
            raise GraphError(
                f"{graph.name!r}: layer {i} (grid {grid[0]}x{grid[1]}) has {found}; the SSD config (--ssd-config) "
                f"bbox_decoders[{i}] has {na} anchor(s), so expected a box convolution of {4 * na} channels and a "
                f"class convolution of {na} x {nc} = {na * nc}"
            )
        heads += [replace(box[0], anchors=group), cls[0]]
        rows += na * grid[0] * grid[1]
    out_rows = int(_output_shapes(model)[boxes][1])
    if rows != out_rows:
        raise GraphError(
            f"{graph.name!r}: outputs of {out_rows} rows, but the SSD config's anchors over grids {described} give "
            f"{rows}; expected one row per (cell, anchor)"
        )
    _check_ssd_tail(model, graph.name, (boxes, scores), tuple(heads), ssd)
    return tuple(heads)


def _ssd_expected(heads: Sequence[HeadTensor], ssd: SsdConfig, codes: np.ndarray) -> np.ndarray:
    """Per row ``[ymin, xmin, ymax, xmax]`` of anchors coded ``codes`` (4 per anchor, in channel order), as the
    Object Detection API's box coder decodes them with ``ssd``'s anchors and scale factors (float64)."""
    ty, tx, th, tw = (codes[i] for i in ssd.box_indices)
    blocks = []
    for (h, w), group in zip((b.grid for b in heads[::2]), ssd.anchors, strict=True):
        row, col = np.divmod(np.arange(h * w), w)
        sizes = np.array(group, dtype=np.float64)  # (wa, ha)
        xca = np.repeat((col + 0.5) / w, len(group))
        yca = np.repeat((row + 0.5) / h, len(group))
        wa, ha = np.tile(sizes[:, 0], h * w), np.tile(sizes[:, 1], h * w)
        ycenter = ty / ssd.centers_scale_factor * ha + yca
        xcenter = tx / ssd.centers_scale_factor * wa + xca
        half_h = np.exp(th / ssd.bbox_dimensions_scale_factor) * ha / 2
        half_w = np.exp(tw / ssd.bbox_dimensions_scale_factor) * wa / 2
        blocks.append(np.stack([ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w], axis=1))
    return np.concatenate(blocks)


def _ssd_row(heads: Sequence[HeadTensor], ssd: SsdConfig, row: int) -> str:
    """Which layer, cell and anchor an SSD export's output row is (rows cell by cell, anchor by anchor)."""
    for i, (box, group) in enumerate(zip(heads[::2], ssd.anchors, strict=True)):
        count = box.grid[0] * box.grid[1] * len(group)
        if row < count:
            (cell, anchor), w = divmod(row, len(group)), box.grid[1]
            return f"layer {i}, cell row {cell // w} column {cell % w}, anchor {anchor}"
        row -= count
    return "past the last layer"


def _check_ssd_tail(
    model: onnx.ModelProto, name: str, outputs: tuple[str, str], heads: tuple[HeadTensor, ...], ssd: SsdConfig
) -> None:
    """Refuse an SSD export whose decode tail does not decode its head maps as ``ssd`` says (see
    :func:`find_ssd_heads`), naming the first (layer, anchor) that differs."""
    import onnxruntime as ort

    tail = _extract(model, [h.tensor for h in heads], [outputs[0]], "SSD decode tail")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(tail.SerializeToString(), options, providers=["CPUExecutionProvider"])
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in tail.graph.input}
    probe = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    box_maps = {h.tensor for h in heads if h.role is HeadRole.ANCHOR_BOXES}
    for codes in (np.zeros(4, np.float32), probe):
        feed = {t: np.zeros(shape, np.float32) for t, shape in shapes.items()}
        for t in box_maps & set(shapes):  # a box map's channels: anchor by anchor, 4 codes each
            feed[t] = np.broadcast_to(np.tile(codes, shapes[t][1] // 4)[None, :, None, None], shapes[t]).copy()
        got = session.run(None, feed)[0][0].astype(np.float64)
        expected = _ssd_expected(heads, ssd, codes.astype(np.float64))
        wrong = np.flatnonzero(~np.isclose(got, expected, rtol=1e-4, atol=1e-5).all(axis=1))
        if len(wrong):
            at = int(wrong[0])
            raise GraphError(
                f"{name!r}: its decode tail gives row {at} ({_ssd_row(heads, ssd, at)}) the box "
                f"{np.round(got[at], 5).tolist()} at codes {[round(float(c), 3) for c in codes]}, the SSD config "
                f"(--ssd-config) {np.round(expected[at], 5).tolist()}; expected the "
                "config of this export (its anchors per layer, scale factors and ty, tx, th, tw order) and boxes "
                "[ymin, xmin, ymax, xmax] as fractions of the input, rows cell by cell, anchor by anchor (TensorFlow "
                "Object Detection API)"
            )


@dataclass(frozen=True)
class ExportHeads:
    heads: tuple[HeadTensor, ...]
    family: HeadFamily


def export_heads(
    model: onnx.ModelProto, end_nodes: Sequence[str] | None = None, ssd: SsdConfig | None = None
) -> ExportHeads:
    """The raw heads of a detect export and its head family: with ``ssd``, an SSD head (:func:`find_ssd_heads`);
    an export shaped as SSD's (:func:`looks_like_ssd`) is refused without it, naming ``--ssd-config``. Else a
    YOLOv8/YOLO11 decode tail (:func:`find_heads`, which alone takes ``end_nodes``), a YOLO26 head
    (:func:`find_yolo26_heads`), a YOLOv5 or a YOLOX head; the YOLOv8 refusal is the one raised when none is
    found."""
    if ssd is not None:
        if end_nodes is not None:
            raise GraphError(f"end nodes {list(end_nodes)} with an SSD config: an SSD head is found by structure only")
        return ExportHeads(find_ssd_heads(model, ssd), HeadFamily.SSD)
    if looks_like_ssd(model):
        boxes, scores = ssd_outputs(model)
        raise GraphError(
            f"{model.graph.name or 'graph'!r}: outputs {boxes!r} and {scores!r} are an SSD export's boxes and scores; "
            "its anchors and box coding are in no graph: give them in an SSD config file (--ssd-config FILE: "
            "bbox_decoders, centers_scale_factor, bbox_dimensions_scale_factor)"
        )
    try:
        return ExportHeads(find_heads(model, end_nodes), HeadFamily.YOLOV8)
    except GraphError as error:
        if end_nodes is not None:
            raise
        try:
            heads = find_yolo26_heads(model)
        except GraphError:
            try:
                return ExportHeads(find_yolov5_heads(model), HeadFamily.YOLOV5)
            except GraphError:
                try:
                    return ExportHeads(find_yolox_heads(model), HeadFamily.YOLOX)
                except GraphError:
                    raise error from None
    return ExportHeads(heads, HeadFamily.YOLO26_ONE2ONE if end_to_end(model) else HeadFamily.YOLO26_ONE2MANY)


def end_to_end(model: onnx.ModelProto) -> bool:
    """Whether the export's head output is end to end, ``[1, max_det, 6]`` rows (x1, y1, x2, y2, score,
    class in input pixels, ultralytics: ultralytics/nn/modules/head.py ``Detect.postprocess``), not the
    decoded ``[1, 4 + nc, anchors]``."""
    if looks_like_ssd(model):  # boxes and scores of every (cell, anchor)
        return False
    shape = _output_shapes(model)[full_head_output(model)]
    return shape[-1] == 6


def _extract(model: onnx.ModelProto, inputs: list[str], outputs: list[str], what: str) -> onnx.ModelProto:
    import onnx.utils
    from onnx import shape_inference

    part = onnx.utils.Extractor(shape_inference.infer_shapes(model)).extract_model(inputs, outputs)
    known = {i.name for i in part.graph.input} | {i.name for i in part.graph.initializer}
    known |= {out for node in part.graph.node for out in node.output}
    loose = sorted({i for node in part.graph.node for i in node.input if i and i not in known})
    if loose:
        raise GraphError(f"{what}: {outputs} also depend on {loose}, not only on the tensors {inputs}")
    part.metadata_props.extend(model.metadata_props)
    return part


def cut_at_heads(model: onnx.ModelProto, heads: Sequence[HeadTensor]) -> onnx.ModelProto:
    """The model from its image input to the head tensors, which become its only outputs."""
    input_name, _ = model_input(model)
    return _extract(model, [input_name], [h.tensor for h in heads], "cut at the heads")


def head_outputs(model: onnx.ModelProto) -> tuple[str, ...]:
    """The export's decoded outputs: an SSD export's boxes and scores (:func:`ssd_outputs`), else its one full
    head output (:func:`full_head_output`)."""
    return ssd_outputs(model) if looks_like_ssd(model) else (full_head_output(model),)


def decode_tail(model: onnx.ModelProto, heads: Sequence[HeadTensor]) -> onnx.ModelProto:
    """The model's decode tail alone: the head tensors are its inputs, its decoded outputs
    (:func:`head_outputs`) its outputs.

    Run on the cut model's outputs it computes what the full model computes, without running the
    backbone again; it fails if the decoded outputs need more than the heads (an incomplete cut).
    """
    return _extract(model, [h.tensor for h in heads], list(head_outputs(model)), "decode tail")


def _only_consumer(consumers: dict[str, list[int]], nodes: list[onnx.NodeProto], tensor: str, op_type: str) -> int:
    users = consumers.get(tensor, [])
    if len(users) != 1 or nodes[users[0]].op_type != op_type:
        raise GraphError(
            f"decode tail: {tensor!r} is used by {[(nodes[i].op_type, nodes[i].name) for i in users]}, expected one "
            f"{op_type} (onnxruntime's dynamic quantization: DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul)"
        )
    return users[0]


def _initializer(initializers: dict[str, onnx.TensorProto], name: str, what: str, conv: onnx.NodeProto) -> np.ndarray:
    if name not in initializers:
        raise GraphError(f"decode tail: quantized conv {conv.name!r}: {what} {name!r} is not an initializer")
    from onnx import numpy_helper

    return numpy_helper.to_array(initializers[name]).astype(np.float32)


def dequantize_decode_tail(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the convolutions of its decode tail (the DFL) run in float.

    onnxruntime's dynamic quantization turns the DFL's 1x1 conv into ``DynamicQuantizeLinear`` of
    the softmax probabilities, ``ConvInteger``, ``Cast`` and a ``Mul`` by both scales; quantizing
    the probabilities to 8 bits moves the decoded box sides by up to about a sixth of a stride.
    Each such chain after the head tensors becomes one float ``Conv`` with the dequantized weights
    ``(w_q - w_zero_point) * w_scale``; the rest of the graph is untouched. A model without such a
    chain is returned as it is (the same object).
    """
    import onnx
    from onnx import numpy_helper

    graph = _Graph.of(model)
    output = full_head_output(model)
    heads = _structural_heads(graph, _find_tail(graph, output))
    before_heads: set[str] = set()
    for h in heads:
        before_heads |= graph.ancestors(h.tensor)
    tail = graph.ancestors(output) - before_heads
    nodes = list(model.graph.node)
    quantizers = [i for i, n in enumerate(nodes) if n.op_type == "DynamicQuantizeLinear" and n.input[0] in tail]
    if not quantizers:
        return model
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        for name in node.input:
            consumers.setdefault(name, []).append(i)
    initializers = {i.name: i for i in model.graph.initializer}
    replaced: dict[int, onnx.NodeProto | None] = {}
    new_weights = []
    for q in quantizers:
        x, (xq, xs, xzp) = nodes[q].input[0], nodes[q].output
        conv_i = _only_consumer(consumers, nodes, xq, "ConvInteger")
        scales_i = _only_consumer(consumers, nodes, xs, "Mul")
        cast_i = _only_consumer(consumers, nodes, nodes[conv_i].output[0], "Cast")
        rescale_i = _only_consumer(consumers, nodes, nodes[cast_i].output[0], "Mul")
        conv, scales, rescale = nodes[conv_i], nodes[scales_i], nodes[rescale_i]
        if consumers.get(xzp, []) != [conv_i] or set(rescale.input) != {nodes[cast_i].output[0], scales.output[0]}:
            raise GraphError(
                f"decode tail: quantized conv {conv.name!r} does not follow the dynamic quantization pattern"
            )
        (w_scale_name,) = [i for i in scales.input if i != xs]
        w_q = _initializer(initializers, conv.input[1], "weight", conv)
        w_zp = _initializer(initializers, conv.input[3], "weight zero point", conv) if len(conv.input) > 3 else 0
        w_scale = _initializer(initializers, w_scale_name, "weight scale", conv)
        per_channel = (-1, 1, 1, 1) if np.size(w_scale) > 1 else ()
        weight = (w_q - np.reshape(w_zp, per_channel)) * np.reshape(w_scale, per_channel)
        weight_name = f"{conv.name}_dequantized_weight"
        new_weights.append(numpy_helper.from_array(weight.astype(np.float32), weight_name))
        float_conv = onnx.helper.make_node("Conv", [x, weight_name], [rescale.output[0]], name=f"{conv.name}_float")
        float_conv.attribute.extend(conv.attribute)
        replaced.update(dict.fromkeys((q, scales_i, conv_i, cast_i), None))
        replaced[rescale_i] = float_conv  # the last of the chain: everything it needs comes before it
    result = onnx.ModelProto()
    result.CopyFrom(model)
    del result.graph.node[:]
    result.graph.node.extend(replaced.get(i, node) for i, node in enumerate(nodes) if replaced.get(i, node) is not None)
    result.graph.initializer.extend(new_weights)
    return result
