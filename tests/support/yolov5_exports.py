"""Small YOLOv5-style exports made here, for tests: random weights, a few strided convolutions, and the
detect head with YOLOv5's own export decode tail, node for node.

ultralytics/yolov5: models/yolo.py (``Detect.forward`` in export mode: ``x.view(bs, na, no, ny, nx)``,
``permute(0, 1, 3, 4, 2)``, ``sigmoid``, ``split((2, 2, nc + 1), 4)``, ``xy = (xy * 2 + grid) * stride``,
``wh = (wh * 2) ** 2 * anchor_grid``, ``cat``, ``view(bs, na * nx * ny, no)``, then ``cat`` over strides;
``_make_grid``: the grid at ``cell - 0.5``, ``anchor_grid`` the anchors in pixels).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from harness.families.yolov5.decode import DEFAULT_ANCHORS

STRIDES = (8, 16, 32)


def yolov5_export(
    side: int = 64,
    nc: int = 2,
    anchors: tuple[tuple[tuple[float, float], ...], ...] = DEFAULT_ANCHORS,
    seed: int = 0,
) -> onnx.ModelProto:
    """A float YOLOv5-style export: input ``images`` [1, 3, side, side], output ``output0``
    [1, sum(na x cells), 5 + nc]; ``anchors`` per stride (w, h) in pixels."""
    rng = np.random.default_rng(seed)
    no = 5 + nc
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(array, name))
        return name

    def conv(name: str, x: str, cin: int, cout: int, kernel: int, stride: int) -> str:
        w = const(f"{name}.weight", (rng.standard_normal((cout, cin, kernel, kernel)) * 0.5).astype(np.float32))
        b = const(f"{name}.bias", (rng.standard_normal(cout) * 0.5).astype(np.float32))
        out = f"{name}_output_0"
        nodes.append(
            helper.make_node("Conv", [x, w, b], [out], name=name, kernel_shape=[kernel, kernel], strides=[stride] * 2)
        )
        return out

    features = []
    x, cin = "images", 3
    for i, kernel in enumerate((8, 2, 2)):
        x = conv(f"/model.{i}/conv/Conv", x, cin, 8, kernel, kernel)
        cin = 8
        features.append(x)
    rows = []
    for i, (stride, feature, group) in enumerate(zip(STRIDES, features, anchors, strict=True)):
        na, grid = len(group), side // stride
        head = conv(f"/model.24/m.{i}/Conv", feature, 8, na * no, 1, 1)
        p = f"/model.24/{i}"
        view = const(f"{p}/view_shape", np.array([1, na, no, grid, grid], np.int64))
        split = const(f"{p}/split", np.array([2, 2, nc + 1], np.int64))
        row, col = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
        cells = np.stack([col, row], axis=-1).astype(np.float32) - np.float32(0.5)
        grid_xy = const(f"{p}/grid", np.broadcast_to(cells, (1, na, grid, grid, 2)).copy())
        sizes = np.array(group, np.float32).reshape(1, na, 1, 1, 2)
        anchor_grid = const(f"{p}/anchor_grid", np.broadcast_to(sizes, (1, na, grid, grid, 2)).copy())
        two = const(f"{p}/two", np.array(2, np.float32))
        step = const(f"{p}/stride", np.array(stride, np.float32))
        flat = const(f"{p}/flat_shape", np.array([1, na * grid * grid, no], np.int64))
        nodes += [
            helper.make_node("Reshape", [head, view], [f"{p}/view"]),
            helper.make_node("Transpose", [f"{p}/view"], [f"{p}/perm"], perm=[0, 1, 3, 4, 2]),
            helper.make_node("Sigmoid", [f"{p}/perm"], [f"{p}/sig"]),
            helper.make_node("Split", [f"{p}/sig", split], [f"{p}/xy", f"{p}/wh", f"{p}/conf"], axis=4),
            helper.make_node("Mul", [f"{p}/xy", two], [f"{p}/xy2"]),
            helper.make_node("Add", [f"{p}/xy2", grid_xy], [f"{p}/xyg"]),
            helper.make_node("Mul", [f"{p}/xyg", step], [f"{p}/xy_px"]),
            helper.make_node("Mul", [f"{p}/wh", two], [f"{p}/wh2"]),
            helper.make_node("Pow", [f"{p}/wh2", two], [f"{p}/wh_sq"]),
            helper.make_node("Mul", [f"{p}/wh_sq", anchor_grid], [f"{p}/wh_px"]),
            helper.make_node("Concat", [f"{p}/xy_px", f"{p}/wh_px", f"{p}/conf"], [f"{p}/y"], axis=4),
            helper.make_node("Reshape", [f"{p}/y", flat], [f"{p}/rows"]),
        ]
        rows.append(f"{p}/rows")
    nodes.append(helper.make_node("Concat", rows, ["output0"], axis=1))
    total = sum(len(g) * (side // s) ** 2 for s, g in zip(STRIDES, anchors, strict=True))
    graph = helper.make_graph(
        nodes,
        "yolov5_test",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, side, side])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, total, no])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    names = {i: f"class{i}" for i in range(nc)}
    helper.set_model_props(model, {"names": str(names), "stride": "32"})
    onnx.checker.check_model(model)
    return model
