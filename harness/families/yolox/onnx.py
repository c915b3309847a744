"""YOLOX heads: per stride three last convolutions (box, objectness, class), each map's role read off the
export's own decode tail."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.inputs import onnx_graph
from harness.inputs.onnx_graph import ExportHeads, Graph, HeadSearch

if TYPE_CHECKING:
    import onnx


def find(model: onnx.ModelProto, search: HeadSearch) -> ExportHeads:
    """The heads of a YOLOX export (:func:`find_yolox_heads`)."""
    return ExportHeads(find_yolox_heads(model), HeadFamily.YOLOX)


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
    graph = Graph.of(model)
    output = onnx_graph.full_head_output(model)
    out_shape = graph.static_shape(output)
    last = onnx_graph.last_convolutions(graph, [output])
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
    _, (_, in_w) = onnx_graph.model_input(model)
    tail = onnx_graph.extract(model, [n.output[0] for n, _, _ in convs], [output], "decode tail")
    session = onnx_graph.tail_session(tail)
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
