"""An ONNX export's graph, read by structure: its image input, its decoded outputs, the raw head tensors where
its decode tail begins (:func:`export_heads`: each registered family's finder, its part of room ``onnx``,
tried in turn), and the cuts there.

Around that cut: the model up to the heads (:func:`cut_at_heads`), the decode tail after them
(:func:`decode_tail`), and the tail with onnxruntime's dynamically quantized DFL conv back in
float (:func:`dequantize_decode_tail`). Node names are never relied on.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.core.settings import SsdConfig
from harness.families import REGISTERED, FamilyDescriptor, part

if TYPE_CHECKING:  # onnx is imported where a model is read or changed (its import alone takes half a second)
    import onnx
    import onnxruntime

# Ops that only move values around; the tail's tracing walks through them (data input only).
_LAYOUT_OPS = frozenset(
    {"Reshape", "Concat", "Transpose", "Split", "Slice", "Flatten", "Squeeze", "Unsqueeze", "Identity"}
)


@dataclass(frozen=True)
class Graph:
    """Lookup tables over one (shape-inferred) graph."""

    name: str
    producers: dict[str, onnx.NodeProto]
    nodes: dict[str, onnx.NodeProto]
    shapes: dict[str, tuple[int | None, ...]]
    elem_types: dict[str, int]
    constants: frozenset[str]
    opset: int

    @classmethod
    def of(cls, model: onnx.ModelProto) -> Graph:
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


# Ops of an already quantized graph (onnxruntime dynamic or static quantization, Ultralytics' int8=True): the
# Dataflow Compiler takes a float export and quantizes it itself, as the emulator does.
QUANTIZED_OPS = frozenset(
    {"ConvInteger", "MatMulInteger", "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "QLinearConv"}
)


def quantized_ops(model: onnx.ModelProto, source: str, where: str = "") -> str:
    """What is wrong with ``model`` (from ``source``) as a compiler's input where it holds quantized ops (``where``:
    which part of it), else ``""``."""
    found = sorted({n.op_type for n in model.graph.node if n.op_type in QUANTIZED_OPS})
    if not found:
        return ""
    return (
        f"ONNX model {source!r}: {where}holds quantized ops {found}, expected a float export (export without "
        "int8=True: the Dataflow Compiler, and the emulator in its place, quantize the float model themselves)"
    )


def reject_quantized(model: onnx.ModelProto, source: str, where: str = "") -> None:
    """A :class:`GraphError` where ``model`` holds quantized ops (:func:`quantized_ops`)."""
    wrong = quantized_ops(model, source, where)
    if wrong:
        raise GraphError(wrong)


def consumers(model: onnx.ModelProto) -> dict[str, list[onnx.NodeProto]]:
    """Per tensor of ``model``'s graph, the nodes that read it, in graph order."""
    found: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for name in node.input:
            found.setdefault(name, []).append(node)
    return found


def output_shapes(model: onnx.ModelProto) -> dict[str, tuple[int | str, ...]]:
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
    return _full_head_output(output_shapes(model))


def _full_head_output(shapes: Mapping[str, tuple[int | str, ...]]) -> str:
    rank3 = [name for name, shape in shapes.items() if len(shape) == 3]
    if len(rank3) != 1:
        raise GraphError(
            f"model outputs: found {shapes}, expected exactly one decoded head output [1, 4 + nc, anchors]"
        )
    return rank3[0]


def sorted_heads(heads: Iterable[HeadTensor]) -> tuple[HeadTensor, ...]:
    """Stride ascending (largest grid first), box before class."""
    return tuple(sorted(heads, key=lambda h: (-h.grid[0] * h.grid[1], -h.grid[0], h.role is not HeadRole.BOX)))


def last_convolutions(graph: Graph, outputs: Sequence[str]) -> list[onnx.NodeProto]:
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


def ssd_outputs(model: onnx.ModelProto) -> tuple[str, str]:
    """The boxes and scores outputs of an SSD export: its two outputs, ``[1, rows, 4]`` and ``[1, rows, nc]``
    with ``nc`` other than 4 (tensorflow/models: research/object_detection/meta_architectures/ssd_meta_arch.py,
    ``raw_detection_boxes``, ``raw_detection_scores``); a :class:`GraphError` otherwise."""
    return _ssd_outputs(output_shapes(model))


def _ssd_outputs(shapes: Mapping[str, tuple[int | str, ...]]) -> tuple[str, str]:
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


@dataclass(frozen=True)
class HeadSearch:
    """What a head search is given besides the model. ``end_nodes``: the nodes (or tensors) to cut at, read by
    the finders of the families cut there alone
    (:attr:`~harness.families.descriptor.FamilyDescriptor.cut_at_end_nodes`); ``ssd``: an SSD config, which binds
    the search to the families that take a config
    (:attr:`~harness.families.descriptor.FamilyDescriptor.config_option`)."""

    end_nodes: Sequence[str] | None = None
    ssd: SsdConfig | None = None


@dataclass(frozen=True)
class ExportHeads:
    """An export's raw head maps and the family whose finder found them."""

    heads: tuple[HeadTensor, ...]
    family: HeadFamily


class HeadFinder(Protocol):
    """A family's head finder: its part of room ``onnx`` (``harness/families/<family>/onnx.py``)."""

    def find(self, model: onnx.ModelProto, search: HeadSearch) -> ExportHeads:
        """The export's heads, found as this family's; a :class:`GraphError` saying why the export is not
        this family's (its refusal)."""
        ...


def _finder(family: FamilyDescriptor) -> HeadFinder:
    return cast(HeadFinder, part(family.family, "onnx"))


def _searched(search: HeadSearch) -> tuple[FamilyDescriptor, ...]:
    """The families a search tries, in the registry's order: where it gives an SSD config, those that take a
    config; where it gives end nodes, those whose finder takes them; else every one."""
    if search.ssd is not None:
        return tuple(d for d in REGISTERED if d.config_option)
    if search.end_nodes is not None:
        return tuple(d for d in REGISTERED if d.cut_at_end_nodes)
    return REGISTERED


def export_heads(
    model: onnx.ModelProto, end_nodes: Sequence[str] | None = None, ssd: SsdConfig | None = None
) -> ExportHeads:
    """The raw heads of a detect export and its head family: the first family (:func:`_searched`, in the
    registry's order) whose finder finds them. Where none does, a :class:`GraphError` giving each finder's
    refusal in turn, on one line (a search of one family: its refusal as it is)."""
    search = HeadSearch(end_nodes, ssd)
    refusals: list[tuple[FamilyDescriptor, GraphError]] = []
    for family in _searched(search):
        try:
            return _finder(family).find(model, search)
        except GraphError as error:
            refusals.append((family, error))
    if len(refusals) == 1:
        raise refusals[0][1]
    raise GraphError(
        f"{model.graph.name or 'graph'!r}: no head family's heads found, each family's finder refusing it: "
        + "; ".join(f"[{family.display}] {error}" for family, error in refusals)
    )


def end_to_end(model: onnx.ModelProto) -> bool:
    """Whether the export's head output is end to end, ``[1, max_det, 6]`` rows (x1, y1, x2, y2, score,
    class in input pixels, ultralytics: ultralytics/nn/modules/head.py ``Detect.postprocess``), not the
    decoded ``[1, 4 + nc, anchors]``."""
    if looks_like_ssd(model):  # boxes and scores of every (cell, anchor)
        return False
    shape = output_shapes(model)[full_head_output(model)]
    return shape[-1] == 6


def extract(model: onnx.ModelProto, inputs: list[str], outputs: list[str], what: str) -> onnx.ModelProto:
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
    return extract(model, [input_name], [h.tensor for h in heads], "cut at the heads")


def head_outputs(model: onnx.ModelProto) -> tuple[str, ...]:
    """The export's decoded outputs: an SSD export's boxes and scores (:func:`ssd_outputs`), else its one full
    head output (:func:`full_head_output`)."""
    return head_outputs_of(output_shapes(model))


def head_outputs_of(shapes: Mapping[str, tuple[int | str, ...]]) -> tuple[str, ...]:
    """:func:`head_outputs` from the graph outputs' shapes alone, ``{name: dims}`` in graph order (a fixed
    dim an int, any other its name or ``""``), as :func:`output_shapes` reads them: what a runtime that
    read the file itself reports is enough."""
    try:
        return _ssd_outputs(shapes)
    except GraphError:
        return (_full_head_output(shapes),)


def decode_tail(model: onnx.ModelProto, heads: Sequence[HeadTensor]) -> onnx.ModelProto:
    """The model's decode tail alone: the head tensors are its inputs, its decoded outputs
    (:func:`head_outputs`) its outputs.

    Run on the cut model's outputs it computes what the full model computes, without running the
    backbone again; it fails if the decoded outputs need more than the heads (an incomplete cut).
    """
    return extract(model, [h.tensor for h in heads], list(head_outputs(model)), "decode tail")


def tail_session(tail: onnx.ModelProto) -> onnxruntime.InferenceSession:
    """An onnxruntime session (CPU, its log quiet) running ``tail``, a part of a model (:func:`extract`)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(tail.SerializeToString(), options, providers=["CPUExecutionProvider"])


def finder_code() -> tuple[str, ...]:
    """The modules :func:`export_heads` reads a graph with (this one, the registry and every family's finder),
    as :func:`harness.core.environment.code_digest` takes them: an edit to any reads the heads again."""
    root = Path(__file__).resolve().parents[1]
    finders = sorted(p.relative_to(root).as_posix() for p in (root / "families").rglob("onnx.py"))
    return ("inputs/onnx_graph.py", "families/__init__.py", *finders)


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


def dequantize_decode_tail(model: onnx.ModelProto, heads: Sequence[HeadTensor] | None = None) -> onnx.ModelProto:
    """The model with the convolutions of its decode tail (a YOLOv8/YOLO11 export's DFL) run in float;
    ``heads``: where the tail begins, found by :func:`export_heads` where not given.

    onnxruntime's dynamic quantization turns the DFL's 1x1 conv into ``DynamicQuantizeLinear`` of
    the softmax probabilities, ``ConvInteger``, ``Cast`` and a ``Mul`` by both scales; quantizing
    the probabilities to 8 bits moves the decoded box sides by up to about a sixth of a stride.
    Each such chain after the head tensors becomes one float ``Conv`` with the dequantized weights
    ``(w_q - w_zero_point) * w_scale``; the rest of the graph is untouched. A model without such a
    chain is returned as it is (the same object).
    """
    import onnx
    from onnx import numpy_helper

    graph = Graph.of(model)
    before_heads: set[str] = set()
    for h in export_heads(model).heads if heads is None else heads:
        before_heads |= graph.ancestors(h.tensor)
    tail = set().union(*(graph.ancestors(o) for o in head_outputs(model))) - before_heads
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
