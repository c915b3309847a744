"""YOLO26 heads, either head's (its one-to-one and one-to-many parts share them): the last convolutions of the
export, a box map of 4 (reg_max 1, no DFL) and a class map of nc channels per stride. Which head the export
carries is told by its head output (:func:`harness.inputs.onnx_graph.end_to_end`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.families import descriptor
from harness.inputs import onnx_graph
from harness.inputs.onnx_graph import ExportHeads, Graph

if TYPE_CHECKING:
    import onnx


def find_head(model: onnx.ModelProto, family: HeadFamily) -> ExportHeads:
    """The heads of a YOLO26 export carrying the head ``family`` (the one-to-one head exported end to end:
    :attr:`~harness.families.descriptor.FamilyDescriptor.end_to_end`); refused where its head output is the
    other head's."""
    one2one = descriptor(family).end_to_end
    if onnx_graph.end_to_end(model) != one2one:
        output = onnx_graph.full_head_output(model)
        shape = list(onnx_graph.output_shapes(model)[output])
        expected = "end to end, [1, max_det, 6]" if one2one else "[1, 4 + nc, anchors], not end to end"
        raise GraphError(
            f"{model.graph.name or 'graph'!r}: head output {output!r} {shape}, expected the "
            f"{'one-to-one' if one2one else 'one-to-many'} head's: {expected}"
        )
    return ExportHeads(find_yolo26_heads(model), family)


def find_yolo26_heads(model: onnx.ModelProto) -> tuple[HeadTensor, ...]:
    """The raw head tensors of a YOLO26 export (reg_max 1, no DFL), stride ascending, box before class.

    Either head exports alike for this: the one-to-one head end to end (output ``[1, 300, 6]``, its
    tail a top-k) or the one-to-many head (``[1, 4 + nc, anchors]``). The head maps are the outputs of
    the last convolutions, those with no convolution after them on the way to the output (a YOLOv8
    export has one more, its DFL conv, and is refused here); box maps have 4 channels, class maps nc.
    ultralytics: ultralytics/nn/modules/head.py (Detect with reg_max 1: ``dfl`` is an identity).
    """
    graph = Graph.of(model)
    last = onnx_graph.last_convolutions(graph, [o.name for o in model.graph.output])
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
    return onnx_graph.sorted_heads(heads)
