"""YOLOv10 heads found in an end-to-end export: its head output ``[1, max_det, 6]`` is a top-k of a decoded
``[1, 4 + nc, anchors]`` tensor, which joins the DFL boxes and the sigmoided class scores as a YOLOv8/YOLO11
export's head output does (:func:`~harness.families.yolov8.onnx.heads_of_decoded` finds the heads upstream of it).
Told apart from YOLO26's one-to-one head (box maps of 4, no DFL Softmax) by that Softmax, and from a YOLOv8/YOLO11
export (its decoded tensor the output) by the top-k.

ultralytics: ultralytics/nn/modules/head.py (``Detect.forward``: ``_inference`` of the one-to-one head, then
``postprocess`` of its transpose).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily
from harness.families.yolov8.onnx import heads_of_decoded
from harness.inputs.onnx_graph import ExportHeads, Graph, end_to_end, full_head_output, output_shapes

if TYPE_CHECKING:
    import onnx

    from harness.inputs.onnx_graph import HeadSearch


def find(model: onnx.ModelProto, search: HeadSearch) -> ExportHeads:
    """The heads of a YOLOv10 export (its one-to-one head exported end to end)."""
    name = model.graph.name or "graph"
    if not end_to_end(model):
        output = full_head_output(model)
        raise GraphError(
            f"{name!r}: head output {output!r} {list(output_shapes(model)[output])}, expected YOLOv10's end to end, "
            "[1, max_det, 6]"
        )
    return ExportHeads(heads_of_decoded(model, _decoded(model, name)), HeadFamily.YOLOV10)


def _decoded(model: onnx.ModelProto, name: str) -> str:
    """The decoded ``[1, 4 + nc, anchors]`` tensor the top-k selects from: upstream of a ``TopK``, the one
    rank-3 ``Concat`` joining a class ``Sigmoid``'s scores (the boxes and the class probabilities)."""
    graph = Graph.of(model)
    output = full_head_output(model)
    upstream = graph.ancestors(output)
    nodes = [n for n in graph.producers.values() if n.output[0] in upstream or n.output[0] == output]
    if not any(n.op_type == "TopK" for n in nodes):
        raise GraphError(f"{name!r}: no TopK upstream of head output {output!r}, expected YOLOv10's top-k")
    joins = [
        n.output[0]
        for n in nodes
        if n.op_type == "Concat"
        and len(shape := graph.static_shape(n.output[0]) or ()) == 3
        and shape[1] > 4
        and any(
            (p := graph.producers.get(t)) is not None and p.op_type == "Sigmoid"
            for t in graph.layout_leaves(n.output[0])
        )
    ]
    if len(joins) != 1:
        raise GraphError(
            f"{name!r}: {len(joins)} tensors upstream of head output {output!r} join class Sigmoid scores into "
            f"[1, 4 + nc, anchors] ({joins}), expected one: YOLOv10's decoded boxes and class probabilities"
        )
    return joins[0]
