"""SSD heads, found only with the export's SSD config (``--ssd-config``: no graph holds its anchors and box
coding): per layer the last convolutions, told by the output they feed, the config held to the export's own
decode tail."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.inputs import onnx_graph
from harness.inputs.onnx_graph import ExportHeads, Graph, HeadSearch

if TYPE_CHECKING:
    import onnx

    from harness.core.settings import SsdConfig


def find(model: onnx.ModelProto, search: HeadSearch) -> ExportHeads:
    """The heads of an SSD export, with the search's SSD config (:func:`find_ssd_heads`); without one, refused:
    naming ``--ssd-config`` where the export's outputs are an SSD export's boxes and scores."""
    if search.ssd is None:
        boxes, scores = onnx_graph.ssd_outputs(model)
        raise GraphError(
            f"{model.graph.name or 'graph'!r}: outputs {boxes!r} and {scores!r} are an SSD export's boxes and scores; "
            "its anchors and box coding are in no graph: give them in an SSD config file (--ssd-config FILE: "
            "bbox_decoders, centers_scale_factor, bbox_dimensions_scale_factor)"
        )
    if search.end_nodes is not None:
        raise GraphError(
            f"end nodes {list(search.end_nodes)} with an SSD config: an SSD head is found by structure only"
        )
    return ExportHeads(find_ssd_heads(model, search.ssd), HeadFamily.SSD)


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
    graph = Graph.of(model)
    try:
        boxes, scores = onnx_graph.ssd_outputs(model)
    except GraphError as error:
        raise GraphError(
            f"{graph.name!r}: an SSD config (--ssd-config) given for an export that is not SSD: {error}"
        ) from None
    box_side, score_side = graph.ancestors(boxes), graph.ancestors(scores)
    last = onnx_graph.last_convolutions(graph, [boxes, scores])
    nc = int(onnx_graph.output_shapes(model)[scores][2])
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
    out_rows = int(onnx_graph.output_shapes(model)[boxes][1])
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
    tail = onnx_graph.extract(model, [h.tensor for h in heads], [outputs[0]], "SSD decode tail")
    session = onnx_graph.tail_session(tail)
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
