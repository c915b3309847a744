"""A YOLOv10 export (its one-to-one head exported end to end) made from the shipped YOLO11n demo, for tests.

:func:`yolov10_export`: the demo's head convolutions, DFL and class sigmoid as they are (a v10Detect head's
one-to-one branch is Detect's: box maps of 4 x 16 DFL bins, class maps), its boxes joined as ``dist2bbox`` joins
them end to end (x1y1, x2y2, not centre and size), then ``Detect.postprocess``: the top-k anchors by their best
class score, the top-k (anchor, class) pairs among them, rows ``[1, max_det, 6]`` (x1, y1, x2, y2, score, class).

ultralytics: ultralytics/nn/modules/head.py (``v10Detect``; ``Detect.decode_bboxes``: ``xywh=... not
self.end2end``; ``Detect.postprocess``, ``Detect.get_topk_index``), ultralytics/utils/tal.py (``dist2bbox``).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from harness.inputs.onnx_graph import Graph, full_head_output


def _as_xyxy(model: onnx.ModelProto) -> None:
    """Join the box Concat of the decode tail from ``dist2bbox``'s x1y1 and x2y2 (``xywh=False``) in place of the
    centre ``(x1y1 + x2y2) / 2`` and the size ``x2y2 - x1y1``, and drop the two."""
    graph = Graph.of(model)
    for node in model.graph.node:
        if node.op_type != "Concat" or len(node.input) != 2:
            continue
        centre, size = (graph.producers.get(t) for t in node.input)
        if centre is None or size is None or (centre.op_type, size.op_type) != ("Div", "Sub"):
            continue
        total = graph.producers[centre.input[0]]
        x1y1, x2y2 = total.input
        if total.op_type == "Add" and list(size.input) == [x2y2, x1y1]:
            node.input[:] = [x1y1, x2y2]
            for dead in (centre, size, total):
                model.graph.node.remove(dead)
            used = {i for n in model.graph.node for i in n.input}
            for unused in [i for i in model.graph.initializer if i.name not in used]:
                model.graph.initializer.remove(unused)
            return
    raise ValueError("no dist2bbox centre/size Concat found in the demo's decode tail")


def yolov10_export(yolo11: onnx.ModelProto, max_det: int = 300) -> onnx.ModelProto:
    model = onnx.ModelProto()
    model.CopyFrom(yolo11)
    _as_xyxy(model)
    decoded = full_head_output(model)
    _, channels, anchors = (d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim)
    nc, k = channels - 4, min(max_det, anchors)

    def const(name: str, values: list[int]) -> str:
        model.graph.initializer.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    node = helper.make_node
    model.graph.node.extend(
        [
            node("Transpose", [decoded], ["rows"], perm=[0, 2, 1]),
            node("Slice", ["rows", const("zero", [0]), const("four", [4]), const("last", [2])], ["boxes"]),
            node("Slice", ["rows", "four", const("end", [4 + nc]), "last"], ["scores"]),
            node("ReduceMax", ["scores"], ["best"], axes=[-1], keepdims=0),
            node("TopK", ["best", const("k", [k])], ["best_k", "anchor_k"], axis=-1),
            node("Unsqueeze", ["anchor_k", const("minus_one", [-1])], ["anchor_k1"]),
            node("Expand", ["anchor_k1", const("k_by_nc", [1, k, nc])], ["anchor_k_nc"]),
            node("GatherElements", ["scores", "anchor_k_nc"], ["scores_k"], axis=1),
            node("Reshape", ["scores_k", const("flat", [1, -1])], ["pairs"]),
            node("TopK", ["pairs", "k"], ["top", "pair"], axis=-1),
            node("Mod", ["pair", const("nc", [nc])], ["label"]),
            node("Div", ["pair", "nc"], ["rank"]),
            node("GatherElements", ["anchor_k", "rank"], ["anchor"], axis=1),
            node("Unsqueeze", ["anchor", "minus_one"], ["anchor1"]),
            node("Expand", ["anchor1", const("k_by_4", [1, k, 4])], ["anchor4"]),
            node("GatherElements", ["boxes", "anchor4"], ["box"], axis=1),
            node("Unsqueeze", ["top", "minus_one"], ["score"]),
            node("Unsqueeze", ["label", "minus_one"], ["label1"]),
            node("Cast", ["label1"], ["class"], to=TensorProto.FLOAT),
            node("Concat", ["box", "score", "class"], ["detections"], axis=-1),
        ]
    )
    del model.graph.output[:]
    model.graph.output.append(helper.make_tensor_value_info("detections", TensorProto.FLOAT, [1, k, 6]))
    return model
