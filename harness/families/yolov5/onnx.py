"""YOLOv5/YOLOv7 heads: per stride the last convolution, viewed as ``[1, na, 5 + nc, H, W]``, each with the
anchors its decode tail multiplies."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.inputs import onnx_graph
from harness.inputs.onnx_graph import ExportHeads, Graph, HeadSearch

if TYPE_CHECKING:
    import onnx


def find(model: onnx.ModelProto, search: HeadSearch) -> ExportHeads:
    """The heads of a YOLOv5/YOLOv7 export (:func:`find_yolov5_heads`)."""
    return ExportHeads(find_yolov5_heads(model), HeadFamily.YOLOV5)


def find_yolov5_heads(model: onnx.ModelProto) -> tuple[HeadTensor, ...]:
    """The raw head maps of a YOLOv5/YOLOv7 export (anchor-based), stride ascending, each with its anchors.

    Its detect head ends in one convolution per stride of ``na x (5 + nc)`` channels, viewed as
    ``[1, na, 5 + nc, H, W]`` on the way to the decoded output ``[1, rows, 5 + nc]`` (per stride, anchor by
    anchor, its cells: x, y, w, h in input pixels, objectness, class scores). The anchors are read by running
    that decode tail on zero logits, where every row holds its cell's centre and its anchor's own size
    (sigmoid 0 = 0.5: ``(2 x 0.5 + cell - 0.5) x stride`` and ``(2 x 0.5) ** 2 x anchor``); a tail that does
    not give them is refused. ultralytics/yolov5: models/yolo.py (``Detect.forward``, ``_make_grid``).
    """
    graph = Graph.of(model)
    output = onnx_graph.full_head_output(model)
    out_shape = graph.static_shape(output)
    last = onnx_graph.last_convolutions(graph, [output])
    if not last:
        raise GraphError(
            f"{graph.name!r}: no convolution before output {output!r}; expected a YOLOv5 head: per stride a "
            "convolution of na x (5 + nc) channels viewed as [1, na, 5 + nc, H, W], decoded into [1, rows, 5 + nc]"
        )
    consumers = onnx_graph.consumers(model)
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
    return _with_anchors(model, onnx_graph.sorted_heads(heads))


def _with_anchors(model: onnx.ModelProto, heads: tuple[HeadTensor, ...]) -> tuple[HeadTensor, ...]:
    """``heads`` with the anchors their decode tail gives at zero logits (see :func:`find_yolov5_heads`)."""
    _, (_, in_w) = onnx_graph.model_input(model)
    tail = onnx_graph.decode_tail(model, heads)
    session = onnx_graph.tail_session(tail)
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
