"""Small SSD-style exports made here, for tests: random weights, a few strided convolutions, per layer a box
convolution of ``4 x na`` channels and a class convolution of ``na x nc`` (the background class first), and
the decode tail of TensorFlow's Object Detection API, node for node, ending in boxes and scores.

tensorflow/models: research/object_detection/predictors/heads/box_head.py and class_head.py
(``ConvolutionalBoxHead``, ``ConvolutionalClassHead``: a conv on the NHWC feature map reshaped to
``[batch, H * W * na, 4]`` and ``[batch, H * W * na, nc]``: row by row, column by column, anchor by anchor),
box_coders/faster_rcnn_box_coder.py (``_decode``: ``ty, tx, th, tw`` divided by the scale factors ``[10, 10, 5,
5]``, ``w = exp(tw) * wa``, ``ycenter = ty * ha + ycenter_a``, the box ``[ymin, xmin, ymax, xmax]`` as fractions
of the input), meta_architectures/ssd_meta_arch.py (``postprocess``: the score converter, a sigmoid in the SSD
MobileNet configs, over the class predictions with the background class at 0), anchor_generators/
grid_anchor_generator.py (an anchor's centre at its cell's centre). In an ONNX graph the NHWC reshape is a
``Transpose`` of the NCHW map before the ``Reshape``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from harness.core.documents import read_json
from harness.core.settings import SsdConfig

# Per layer, largest grid first, each anchor's (width, height) as a fraction of the input.
ANCHORS = (
    ((0.2, 0.2), (0.28, 0.14), (0.14, 0.28)),
    ((0.45, 0.45), (0.6, 0.32)),
)
CENTERS_SCALE, DIMENSIONS_SCALE = 10, 5
# The prediction convolutions' gains: on a random image, scores from 0.05 to 0.95 (none saturated) and boxes a
# tenth to two thirds of the input tall
SCORE_GAIN, BOX_GAIN = 4.0, 5.0
BOXES, SCORES = "raw_detection_boxes", "raw_detection_scores"
DEMO_NAMES = ("fire", "smoke")
# A trained SSD export and its SSD config file (MODEL_CARD_ssd.md, tools/train_ssd_demo.py)
TRAINED = Path(__file__).resolve().parent / "data" / "fire_smoke_ssd_256.onnx"
TRAINED_CONFIG = TRAINED.with_suffix(".ssd.json")


def trained_config() -> SsdConfig:
    """The trained export's SSD config, read from its file as ``--ssd-config`` reads it."""
    return SsdConfig.from_dict(read_json(TRAINED_CONFIG, "SSD config"), str(TRAINED_CONFIG))


def ssd_config(anchors: tuple[tuple[tuple[float, float], ...], ...] = ANCHORS) -> SsdConfig:
    """The config that decodes :func:`ssd_export`'s heads as its own tail does."""
    return SsdConfig(
        anchors=anchors,
        centers_scale_factor=CENTERS_SCALE,
        bbox_dimensions_scale_factor=DIMENSIONS_SCALE,
        background_class=0,
    )


def config_document(anchors: tuple[tuple[tuple[float, float], ...], ...] = ANCHORS) -> dict[str, Any]:
    """:func:`ssd_config` as an SSD config file holds it (HailoRT's field names, ``SsdConfig.from_dict``)."""
    return {
        "centers_scale_factor": CENTERS_SCALE,
        "bbox_dimensions_scale_factor": DIMENSIONS_SCALE,
        "background_removal_index": 0,
        "bbox_decoders": [{"w": [a[0] for a in layer], "h": [a[1] for a in layer]} for layer in anchors],
    }


def ssd_export(
    side: int = 64,
    nc: int = 3,
    seed: int = 0,
    anchors: tuple[tuple[tuple[float, float], ...], ...] = ANCHORS,
    decoded: bool = True,
) -> onnx.ModelProto:
    """A float SSD-style export: input ``images`` [1, 3, side, side], outputs ``raw_detection_boxes`` [1, rows, 4]
    (``ymin, xmin, ymax, xmax`` as fractions of the input) and ``raw_detection_scores`` [1, rows, nc] (sigmoids,
    the background class first); its layers on grids side / 4, side / 8, ... one per group of ``anchors``; its
    metadata names the classes but the background (the demo set's fire and smoke first).
    ``decoded`` False: the box encodings and class logits as the box predictor gives them, no decode tail."""
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

    def relu(x: str) -> str:
        nodes.append(helper.make_node("Relu", [x], [f"{x}/relu"]))
        return f"{x}/relu"

    x, cin, grid = "images", 3, side // 4
    box_rows, class_rows, centres = [], [], []
    for i, layer in enumerate(anchors):
        kernel = 4 if i == 0 else 2
        x = relu(conv(f"/FeatureExtractor/layer_{i}/Conv", x, cin, 8, kernel, kernel))
        cin, na = 8, len(layer)
        p = f"/BoxPredictor_{i}"
        box = conv(f"{p}/BoxEncodingPredictor/Conv", x, 8, 4 * na, 3, pad=1, gain=BOX_GAIN)
        cls = conv(f"{p}/ClassPredictor/Conv", x, 8, na * nc, 3, pad=1, gain=SCORE_GAIN)
        for name, tensor, width, rows in ((f"{p}/box", box, 4, box_rows), (f"{p}/class", cls, nc, class_rows)):
            shape = const(f"{name}/shape", np.array([1, -1, width], np.int64))
            nodes += [
                helper.make_node("Transpose", [tensor], [f"{name}/nhwc"], perm=[0, 2, 3, 1]),
                helper.make_node("Reshape", [f"{name}/nhwc", shape], [f"{name}/rows"]),
            ]
            rows.append(f"{name}/rows")
        row, col = np.divmod(np.arange(grid * grid), grid)
        cell = np.stack([(row + 0.5) / grid, (col + 0.5) / grid], axis=1)  # (ycenter, xcenter)
        sizes = np.array([(h, w) for w, h in layer])  # (ha, wa)
        centres.append(np.concatenate([np.repeat(cell, na, axis=0), np.tile(sizes, (grid * grid, 1))], axis=1))
        grid //= 2
    rows = sum(len(c) for c in centres)
    encodings = BOXES if not decoded else "/BoxPredictor/box_encodings"
    logits = SCORES if not decoded else "/BoxPredictor/class_predictions"
    nodes += [
        helper.make_node("Concat", box_rows, [encodings], axis=1),
        helper.make_node("Concat", class_rows, [logits], axis=1),
    ]
    if decoded:
        table = np.concatenate(centres).astype(np.float32)[None]  # [1, rows, 4]: ycenter_a, xcenter_a, ha, wa

        def column(source: str, name: str, k: int) -> str:
            bounds = [const(f"{name}/{b}", np.array([v], np.int64)) for b, v in (("starts", k), ("ends", k + 1))]
            axes = const(f"{name}/axes", np.array([2], np.int64))
            nodes.append(helper.make_node("Slice", [source, *bounds, axes], [name]))
            return name

        anchors_table = const("/Postprocessor/anchors", table)
        yca, xca, ha, wa = (column(anchors_table, f"/Postprocessor/anchor_{n}", k) for k, n in enumerate("yxhw"))
        ty, tx, th, tw = (column(encodings, f"/Postprocessor/t{n}", k) for k, n in enumerate("yxhw"))
        scale = {
            "c": const("/Postprocessor/centers_scale", np.array(CENTERS_SCALE, np.float32)),
            "d": const("/Postprocessor/dimensions_scale", np.array(DIMENSIONS_SCALE, np.float32)),
        }
        two = const("/Postprocessor/two", np.array(2, np.float32))

        def op(kind: str, a: str, b: str | None, out: str) -> str:
            nodes.append(helper.make_node(kind, [a] if b is None else [a, b], [f"/Postprocessor/{out}"]))
            return f"/Postprocessor/{out}"

        ty, tx = op("Div", ty, scale["c"], "ty_scaled"), op("Div", tx, scale["c"], "tx_scaled")
        th, tw = op("Div", th, scale["d"], "th_scaled"), op("Div", tw, scale["d"], "tw_scaled")
        w = op("Mul", op("Exp", tw, None, "tw_exp"), wa, "w")
        h = op("Mul", op("Exp", th, None, "th_exp"), ha, "h")
        ycenter = op("Add", op("Mul", ty, ha, "ty_ha"), yca, "ycenter")
        xcenter = op("Add", op("Mul", tx, wa, "tx_wa"), xca, "xcenter")
        half_h, half_w = op("Div", h, two, "half_h"), op("Div", w, two, "half_w")
        corners = [
            op("Sub", ycenter, half_h, "ymin"),
            op("Sub", xcenter, half_w, "xmin"),
            op("Add", ycenter, half_h, "ymax"),
            op("Add", xcenter, half_w, "xmax"),
        ]
        nodes += [
            helper.make_node("Concat", corners, [BOXES], axis=2),
            helper.make_node("Sigmoid", [logits], [SCORES]),
        ]
    graph = helper.make_graph(
        nodes,
        "ssd_test",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, side, side])],
        [
            helper.make_tensor_value_info(BOXES, TensorProto.FLOAT, [1, rows, 4]),
            helper.make_tensor_value_info(SCORES, TensorProto.FLOAT, [1, rows, nc]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    # the classes but the background, as an Ultralytics export names them (the demo set's first)
    names = {i: name for i, name in enumerate((*DEMO_NAMES, *(f"class{k}" for k in range(2, nc)))[: nc - 1])}
    helper.set_model_props(model, {"names": repr(names)})
    onnx.checker.check_model(model)
    return model
