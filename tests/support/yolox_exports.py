"""Small YOLOX-style exports made here, for tests: random weights, a few strided convolutions, and the
detect head with YOLOX's own decode tail (``decode_in_inference``), node for node.

Megvii-BaseDetection/YOLOX: yolox/models/yolo_head.py (``forward`` in eval mode: per stride ``reg_preds``
(4 channels) and ``obj_preds`` (1) on the box branch, ``cls_preds`` (nc) on the class branch, ``cat([reg_output,
obj_output.sigmoid(), cls_output.sigmoid()], 1)``, ``flatten(start_dim=2)``, ``cat`` over strides on dim 2,
``permute(0, 2, 1)``; ``decode_outputs``: ``cat([(xy + grids) * strides, exp(wh) * strides, rest], -1)`` with
the grid at the cell's corner), yolox/models/network_blocks.py (``SiLU``: ``x * sigmoid(x)``, as
tools/export_onnx.py exports it).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

STRIDES = (8, 16, 32)
# The prediction convolutions' gains: on these features, score logits within about +-3 (sigmoids from 0.05
# to 0.95, none saturated) and box values within about +-1 (boxes of a third to three strides)
SCORE_GAIN, BOX_GAIN = 12.0, 4.0


def yolox_export(
    side: int = 64, nc: int = 2, seed: int = 0, decoded: bool = True, levels: int = len(STRIDES)
) -> onnx.ModelProto:
    """A float YOLOX-style export: input ``images`` [1, 3, side, side], output ``output`` [1, cells, 5 + nc]
    (``decoded`` False: the rows before ``decode_outputs``, as YOLOX's export writes them by default), its head
    on the first ``levels`` of strides 8, 16 and 32. Weights
    are drawn at a gain of 1 / sqrt(fan in), so that on inputs in [0, 1] the logits stay within a few units:
    the sigmoids do not saturate and exp(wh) stays a few strides."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(array, name))
        return name

    def conv(
        name: str, x: str, cin: int, cout: int, kernel: int, stride: int = 1, pad: int = 0, gain: float = 1
    ) -> str:
        scale = gain / np.sqrt(cin * kernel * kernel)
        w = const(f"{name}.weight", (rng.standard_normal((cout, cin, kernel, kernel)) * scale).astype(np.float32))
        b = const(f"{name}.bias", (rng.standard_normal(cout) * 0.1).astype(np.float32))
        out = f"{name}_output_0"
        nodes.append(
            helper.make_node(
                "Conv", [x, w, b], [out], name=name, kernel_shape=[kernel] * 2, strides=[stride] * 2, pads=[pad] * 4
            )
        )
        return out

    def silu(x: str) -> str:
        nodes.append(helper.make_node("Sigmoid", [x], [f"{x}/sigmoid"]))
        nodes.append(helper.make_node("Mul", [x, f"{x}/sigmoid"], [f"{x}/silu"]))
        return f"{x}/silu"

    features = []
    x, cin = "images", 3
    for i, kernel in enumerate((8, 2, 2)):
        x = silu(conv(f"/backbone/dark{i}/conv/Conv", x, cin, 8, kernel, kernel))
        cin = 8
        features.append(x)
    flat = []
    strides = STRIDES[:levels]
    for i, feature in enumerate(features[:levels]):
        p = f"/head/{i}"
        stem = silu(conv(f"/head/stems.{i}/conv/Conv", feature, 8, 8, 1))
        cls_feat = silu(conv(f"/head/cls_convs.{i}/conv/Conv", stem, 8, 8, 3, pad=1))
        reg_feat = silu(conv(f"/head/reg_convs.{i}/conv/Conv", stem, 8, 8, 3, pad=1))
        cls_output = conv(f"/head/cls_preds.{i}/Conv", cls_feat, 8, nc, 1, gain=SCORE_GAIN)
        reg_output = conv(f"/head/reg_preds.{i}/Conv", reg_feat, 8, 4, 1, gain=BOX_GAIN)
        obj_output = conv(f"/head/obj_preds.{i}/Conv", reg_feat, 8, 1, 1, gain=SCORE_GAIN)
        shape = const(f"{p}/flat_shape", np.array([1, 5 + nc, -1], np.int64))
        nodes += [
            helper.make_node("Sigmoid", [obj_output], [f"{p}/obj_sigmoid"]),
            helper.make_node("Sigmoid", [cls_output], [f"{p}/cls_sigmoid"]),
            helper.make_node("Concat", [reg_output, f"{p}/obj_sigmoid", f"{p}/cls_sigmoid"], [f"{p}/cat"], axis=1),
            helper.make_node("Reshape", [f"{p}/cat", shape], [f"{p}/flat"]),
        ]
        flat.append(f"{p}/flat")
    cells = sum((side // s) ** 2 for s in strides)
    nodes += [
        helper.make_node("Concat", flat, ["/head/cat"], axis=2),
        helper.make_node("Transpose", ["/head/cat"], ["/head/rows" if decoded else "output"], perm=[0, 2, 1]),
    ]
    if decoded:
        grids, steps = [], []
        for stride in strides:
            grid = side // stride
            row, col = np.divmod(np.arange(grid * grid), grid)
            grids.append(np.stack([col, row], axis=1))
            steps.append(np.full((grid * grid, 1), stride))
        grid_xy = const("/head/grids", np.concatenate(grids)[None].astype(np.float32))
        step = const("/head/strides", np.concatenate(steps)[None].astype(np.float32))

        def take(name: str, start: int, end: int) -> str:
            bounds = [const(f"{name}/{k}", np.array([v], np.int64)) for k, v in (("starts", start), ("ends", end))]
            nodes.append(
                helper.make_node(
                    "Slice", ["/head/rows", *bounds, const(f"{name}/axes", np.array([2], np.int64))], [name]
                )
            )
            return name

        xy, wh, rest = take("/head/xy", 0, 2), take("/head/wh", 2, 4), take("/head/rest", 4, 5 + nc)
        nodes += [
            helper.make_node("Add", [xy, grid_xy], ["/head/xy_grid"]),
            helper.make_node("Mul", ["/head/xy_grid", step], ["/head/xy_px"]),
            helper.make_node("Exp", [wh], ["/head/wh_exp"]),
            helper.make_node("Mul", ["/head/wh_exp", step], ["/head/wh_px"]),
            helper.make_node("Concat", ["/head/xy_px", "/head/wh_px", rest], ["output"], axis=-1),
        ]
    graph = helper.make_graph(
        nodes,
        "yolox_test",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, side, side])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, cells, 5 + nc])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
