"""Finding the raw YOLO heads of ONNX exports by structure, cutting there, and the float DFL tail."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from harness.backends.onnx.runner import OnnxRunner
from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.settings import SsdConfig
from harness.core.specs import FormatOrder, FormatType
from harness.families.yolo26.onnx import find_yolo26_heads
from harness.families.yolov5.onnx import find_yolov5_heads
from harness.families.yolov8.onnx import find_heads
from harness.families.yolox.onnx import find_yolox_heads
from harness.inputs.export_facts import onnx_class_names
from harness.inputs.onnx_graph import (
    cut_at_heads,
    decode_tail,
    dequantize_decode_tail,
    end_to_end,
    export_heads,
    full_head_output,
    load_model,
    model_input,
)

from support import ssd_exports, yolov5_exports, yolox_exports

EXPORTS = {
    # file: (head prefix, input size, grids stride-ascending)
    "yolov8n_coco80_640_int8.onnx": ("/model.22/", (640, 640), [(80, 80), (40, 40), (20, 20)]),
    "yolo11n_coco80_320_int8.onnx": ("/model.23/", (320, 320), [(40, 40), (20, 20), (10, 10)]),
}
TRAINED_YOLOX = Path(__file__).resolve().parents[1] / "support" / "data" / "fire_smoke_yolox_256.onnx"


@pytest.fixture(scope="module", params=sorted(EXPORTS))
def export(request, shared_fixtures: Path) -> tuple[str, onnx.ModelProto]:
    return request.param, load_model(shared_fixtures / "onnx" / request.param)


def test_find_heads_gives_box_and_class_map_per_stride_of_real_exports(export) -> None:
    name, model = export
    prefix, _, grids = EXPORTS[name]
    heads = find_heads(model)
    assert [(h.grid, h.role, h.channels) for h in heads] == [
        (grid, role, channels) for grid in grids for role, channels in (("box", 64), ("class", 80))
    ]
    # the tensors the Hailo parser's end nodes cv2.i.2 / cv3.i.2 produce
    assert [h.tensor for h in heads] == [
        f"{prefix}{branch}.{i}/{branch}.{i}.2/Conv_output_0" for i in range(3) for branch in ("cv2", "cv3")
    ]
    assert all(h.node.startswith(prefix) for h in heads)


def test_model_input_and_full_head_output_of_real_exports(export) -> None:
    name, model = export
    _, input_hw, _ = EXPORTS[name]
    assert model_input(model) == ("images", input_hw)
    assert full_head_output(model) == "output0"


def _renamed(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, str]]:
    """Every node and tensor renamed to a meaningless name; returns the model and new -> old tensor names."""
    renamed = onnx.ModelProto()
    renamed.CopyFrom(model)
    graph = renamed.graph
    tensors: dict[str, str] = {}

    def new(name: str) -> str:
        if not name:
            return name
        return tensors.setdefault(name, f"t{len(tensors)}")

    for node_index, node in enumerate(graph.node):
        node.name = f"n{node_index}"
        node.input[:] = [new(i) for i in node.input]
        node.output[:] = [new(o) for o in node.output]
    for value in (*graph.input, *graph.output, *graph.value_info, *graph.initializer):
        value.name = new(value.name)
    return renamed, {v: k for k, v in tensors.items()}


def test_find_heads_does_not_depend_on_node_or_tensor_names(export) -> None:
    _, model = export
    renamed, old_names = _renamed(model)
    heads = find_heads(renamed)
    assert [(old_names[h.tensor], h.role, h.grid) for h in heads] == [
        (h.tensor, h.role, h.grid) for h in find_heads(model)
    ]
    assert all(h.node.startswith("n") for h in heads)


def test_end_nodes_by_node_or_tensor_name_give_the_structural_heads(export) -> None:
    _, model = export
    heads = find_heads(model)
    shuffled = [h.node for h in heads][::-1]
    assert find_heads(model, shuffled) == heads
    assert find_heads(model, [h.tensor for h in heads]) == heads


def test_unknown_end_node_raises_naming_it_and_listing_candidates(export) -> None:
    name, model = export
    prefix = EXPORTS[name][0]
    float_style = f"{prefix}cv2.0/cv2.0.2/Conv"  # no such node in the quantized graph
    with pytest.raises(GraphError) as caught:
        find_heads(model, [float_style])
    message = str(caught.value)
    assert repr(float_style) in message
    assert f"{prefix}cv2.0/cv2.0.2/Conv_output_0_bias_add" in message  # the structural head node
    assert f"{prefix}cv2.0/cv2.0.2/Conv_quant" in message  # a similar name


def test_end_node_with_integer_output_is_rejected_pointing_to_the_float_map(export) -> None:
    name, model = export
    conv_integer = f"{EXPORTS[name][0]}cv2.0/cv2.0.2/Conv_quant"
    with pytest.raises(GraphError, match="element type INT32, expected FLOAT"):
        find_heads(model, [conv_integer])


def test_decode_tail_of_an_incomplete_cut_is_rejected(export) -> None:
    _, model = export
    with pytest.raises(GraphError, match=r"also depend on \['images'\]"):
        decode_tail(model, find_heads(model)[:5])


def test_backbone_end_node_feeding_both_branches_is_rejected(export) -> None:
    _, model = export
    with pytest.raises(GraphError, match=r"feeds both the DFL Softmax and the class Sigmoid.*cannot tell its role"):
        find_heads(model, ["/model.0/conv/Conv_output_0_bias_add"])  # the stem conv


def test_cut_model_outputs_exactly_the_head_tensors(export) -> None:
    _, model = export
    heads = find_heads(model)
    cut = cut_at_heads(model, heads)
    onnx.checker.check_model(cut)
    assert [o.name for o in cut.graph.output] == [h.tensor for h in heads]
    assert len(cut.graph.node) < len(model.graph.node)
    assert {p.key for p in cut.metadata_props} == {p.key for p in model.metadata_props}


def test_dequantized_tail_replaces_the_dfl_chain_with_one_float_conv(export) -> None:
    _, model = export
    before = [n.op_type for n in model.graph.node]
    after_model = dequantize_decode_tail(model)
    onnx.checker.check_model(after_model)
    after = [n.op_type for n in after_model.graph.node]
    assert after.count("Conv") == before.count("Conv") + 1
    for op in ("DynamicQuantizeLinear", "ConvInteger", "Cast"):
        assert after.count(op) == before.count(op) - 1
    assert after.count("Mul") == before.count("Mul") - 2
    assert find_heads(after_model) == find_heads(model)
    assert dequantize_decode_tail(after_model) is after_model


# --- a small synthetic export in the older Ultralytics layout: per-scale Concat(box, class, axis=1),
# one Split into box and class channels, float Conv everywhere.
NC, REG_MAX, SIZE = 3, 16, 32


def _old_style_export(nc: int = NC, with_softmax: bool = True) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    joined = []
    anchors = 0
    for i, stride in enumerate((8, 16, 32)):
        grid = SIZE // stride
        anchors += grid * grid
        w = const(f"stem{i}.w", rng.normal(size=(4, 3, stride, stride)).astype(np.float32))
        nodes.append(helper.make_node("Conv", ["images", w], [f"f{i}"], strides=[stride, stride], name=f"stem{i}"))
        for branch, channels in (("box", 4 * REG_MAX), ("cls", nc)):
            w = const(f"{branch}{i}.w", rng.normal(size=(channels, 4, 1, 1)).astype(np.float32))
            nodes.append(helper.make_node("Conv", [f"f{i}", w], [f"{branch}{i}"], name=f"{branch}{i}"))
        nodes.append(helper.make_node("Concat", [f"box{i}", f"cls{i}"], [f"x{i}"], axis=1, name=f"cat{i}"))
        shape = const(f"view{i}", np.array([1, 4 * REG_MAX + nc, -1], np.int64))
        nodes.append(helper.make_node("Reshape", [f"x{i}", shape], [f"v{i}"], name=f"view{i}"))
        joined.append(f"v{i}")
    nodes.append(helper.make_node("Concat", joined, ["x_cat"], axis=2, name="x_cat"))
    split = const("split", np.array([4 * REG_MAX, nc], np.int64))
    nodes.append(helper.make_node("Split", ["x_cat", split], ["box", "cls"], axis=1, name="split"))
    bins = const("bins", np.array([1, 4, REG_MAX, anchors], np.int64))
    nodes.append(helper.make_node("Reshape", ["box", bins], ["b4"], name="dfl_view"))
    nodes.append(helper.make_node("Transpose", ["b4"], ["bt"], perm=[0, 2, 1, 3], name="dfl_t"))
    nodes.append(helper.make_node("Softmax" if with_softmax else "Relu", ["bt"], ["bs"], axis=1, name="dfl_softmax"))
    dfl = const("dfl.w", np.arange(REG_MAX, dtype=np.float32).reshape(1, REG_MAX, 1, 1))
    nodes.append(helper.make_node("Conv", ["bs", dfl], ["dist4"], name="dfl_conv"))
    sides = const("sides", np.array([1, 4, anchors], np.int64))
    nodes.append(helper.make_node("Reshape", ["dist4", sides], ["dist"], name="dfl_out"))
    scale = const("scale", np.full((1, 1, anchors), 8.0, np.float32))
    nodes.append(helper.make_node("Mul", ["dist", scale], ["dbox"], name="dist2bbox"))
    nodes.append(helper.make_node("Sigmoid", ["cls"], ["probs"], name="sigmoid"))
    nodes.append(helper.make_node("Concat", ["dbox", "probs"], ["output0"], axis=1, name="out"))
    graph = helper.make_graph(
        nodes,
        "old_style",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 4 + nc, anchors])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_find_heads_tells_box_from_class_through_a_per_scale_channel_concat() -> None:
    heads = find_heads(_old_style_export())
    assert [(h.tensor, h.role, h.channels, h.grid) for h in heads] == [
        (f"{branch}{i}", role, channels, (SIZE // stride, SIZE // stride))
        for i, stride in enumerate((8, 16, 32))
        for branch, role, channels in (("box", "box", 64), ("cls", "class", NC))
    ]
    assert [h.node for h in heads] == [h.tensor for h in heads]  # Conv nodes named like their outputs


def test_find_heads_refuses_when_box_and_class_maps_have_equal_channel_counts_behind_one_concat() -> None:
    with pytest.raises(GraphError, match="cannot tell its role"):
        find_heads(_old_style_export(nc=4 * REG_MAX))


def test_graph_without_dfl_softmax_raises() -> None:
    with pytest.raises(GraphError, match="Softmax"):
        find_heads(_old_style_export(with_softmax=False))


def test_graph_without_one_decoded_output_raises() -> None:
    model = _old_style_export()
    model.graph.output.append(helper.make_tensor_value_info("x_cat", TensorProto.FLOAT, [1, 4 * REG_MAX + NC, 21]))
    with pytest.raises(GraphError, match="exactly one decoded head output"):
        find_heads(model)


def test_float_model_has_no_tail_to_dequantize() -> None:
    model = _old_style_export()
    assert dequantize_decode_tail(model) is model


def test_onnx_runner_hands_back_cut_heads_channel_last_with_nhwc_float_specs() -> None:
    model = _old_style_export()
    heads = find_heads(model)
    cut = cut_at_heads(model, heads)
    image = np.random.default_rng(1).random((1, 3, SIZE, SIZE), dtype=np.float32)
    raw = ort.InferenceSession(cut.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"images": image})
    with OnnxRunner(cut, threads=1) as runner:
        assert list(runner.input_specs) == ["images"]
        assert runner.input_specs["images"].hw == (SIZE, SIZE)
        specs = runner.output_specs
        outputs = runner.infer({"images": image})
    assert list(specs) == [h.tensor for h in heads] == list(outputs)
    for head, nchw in zip(heads, raw, strict=True):
        spec = specs[head.tensor]
        assert (spec.format_order, spec.format_type) == (FormatOrder.NHWC, FormatType.FLOAT32)
        assert spec.shape == (*head.grid, head.channels) == outputs[head.tensor].shape
        np.testing.assert_array_equal(outputs[head.tensor], nchw[0].transpose(1, 2, 0))


def test_onnx_runner_rejects_a_model_with_non_map_outputs() -> None:
    with pytest.raises(GraphError, match=r"output 'output0'.*expected a raw map"):
        OnnxRunner(_old_style_export())


def test_onnx_runner_rejects_a_feed_of_the_wrong_shape() -> None:
    from harness.core.errors import SpecError

    model = _old_style_export()
    with OnnxRunner(cut_at_heads(model, find_heads(model))) as runner:
        with pytest.raises(SpecError, match=r"input 'images'.*expected float32 \(1, 3, 32, 32\)"):
            runner.infer({"images": np.zeros((1, 3, 16, 16), np.float32)})


def test_unreadable_onnx_file_raises_naming_it(tmp_path) -> None:
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"\x00garbage")
    with pytest.raises(GraphError, match=r"broken\.onnx"):
        load_model(path)


@pytest.mark.parametrize(
    ("data", "said"), [(b"", "is empty (0 bytes)"), (b"\x08\x07", "holds no graph")], ids=["zero-bytes", "no-graph"]
)
def test_an_empty_onnx_file_is_refused_naming_it_not_as_a_model_without_inputs(tmp_path, data, said) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(data)  # protobuf reads both without an error: an empty message, an ir_version alone
    with pytest.raises(GraphError) as refused:
        load_model(path)
    assert str(refused.value) == f"ONNX model {str(path)!r}: {said}, not an ONNX model; expected an exported .onnx file"


def test_export_heads_names_the_head_family_of_each_export(export) -> None:
    from harness.core.head_family import HeadFamily
    from harness.families.yolo26.onnx import find_yolo26_heads
    from harness.inputs.demo import DEMO26_ONNX
    from harness.inputs.onnx_graph import export_heads

    _, model = export
    assert export_heads(model).family is HeadFamily.YOLOV8
    assert export_heads(model).heads == find_heads(model)
    yolo26 = load_model(DEMO26_ONNX)
    found = export_heads(yolo26)
    assert found.family is HeadFamily.YOLO26_ONE2ONE and found.heads == find_yolo26_heads(yolo26)


def test_export_heads_refuses_an_export_no_family_finds_with_each_familys_refusal() -> None:
    from harness.families import REGISTERED
    from harness.inputs.onnx_graph import export_heads

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 64])
    node = helper.make_node("Reshape", ["x", "shape"], ["y"])
    shape = numpy_helper.from_array(np.array([1, 6, 64], dtype=np.int64), "shape")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], [shape]))
    with pytest.raises(GraphError, match="expected exactly one class Sigmoid among them") as refused:
        export_heads(model)
    said = str(refused.value)
    assert said.startswith("'g': no head family's heads found, each family's finder refusing it: [SSD] model outputs")
    assert "\n" not in said and re.findall(r"(?:: |; )\[([^\]]+)\] ", said) == [d.display for d in REGISTERED]
    assert re.search(r"; \[YOLOv5/YOLOv7\] .*expected a YOLOv5 head.*; \[YOLOX\] .*expected a YOLOX head", said)


def test_end_nodes_are_read_by_the_yolov8_finder_alone_and_an_ssd_config_binds_the_search_to_ssd() -> None:
    from harness.inputs.demo import DEMO_ONNX
    from harness.inputs.onnx_graph import export_heads

    model = load_model(DEMO_ONNX)
    with pytest.raises(GraphError, match=r"^end nodes not found in .*\['nowhere'\]") as refused:
        export_heads(model, ["nowhere"])
    assert "\n" not in str(refused.value)
    with pytest.raises(GraphError, match=r"^'main_graph': an SSD config \(--ssd-config\) given for an export that is"):
        export_heads(model, ssd=ssd_exports.ssd_config())
    with pytest.raises(GraphError, match=r"^end nodes \['x'\] with an SSD config: an SSD head is found by structure"):
        export_heads(ssd_exports.ssd_export(), ["x"], ssd_exports.ssd_config())


# --- YOLOv5/YOLOv7 exports (anchor-based) -------------------------------------------------------


@pytest.mark.parametrize(
    ("nc", "anchors"),
    [
        (2, yolov5_exports.DEFAULT_ANCHORS),
        (1, (((12, 16),), ((36, 75),), ((142, 110),))),  # one anchor per stride
        (5, (((10, 13), (16, 30)), ((30, 61), (62, 45)), ((116, 90), (156, 198)))),
    ],
)
def test_a_yolov5_export_gives_one_anchored_map_per_stride_with_the_anchors_its_decode_tail_multiplies(
    nc, anchors
) -> None:
    found = export_heads(yolov5_exports.yolov5_export(nc=nc, anchors=anchors))
    assert found.family is HeadFamily.YOLOV5
    assert [h.node for h in found.heads] == [f"/model.24/m.{i}/Conv" for i in range(3)]
    assert [h.grid for h in found.heads] == [(8, 8), (4, 4), (2, 2)]
    channels = [len(a) * (5 + nc) for a in anchors]
    assert all(h.role is HeadRole.ANCHORED for h in found.heads) and [h.channels for h in found.heads] == channels
    assert [h.anchors for h in found.heads] == [tuple((float(w), float(h)) for w, h in a) for a in anchors]


def test_a_tail_that_does_not_decode_as_yolov5s_is_refused_not_read_for_anchors() -> None:
    model = yolov5_exports.yolov5_export()
    for tensor in model.graph.initializer:
        if tensor.name.endswith("/grid"):  # the grid at the cell, not at cell - 0.5
            shifted = numpy_helper.to_array(tensor) + np.float32(0.5)
            tensor.CopyFrom(numpy_helper.from_array(shifted, tensor.name))
    with pytest.raises(GraphError, match="does not decode as YOLOv5's"):
        find_yolov5_heads(model)


# --- YOLOX exports (anchor-free, objectness) -------------------------------------------------------


@pytest.mark.parametrize("nc", [1, 2, 4, 5])
def test_a_yolox_export_gives_per_stride_its_box_class_and_objectness_maps_read_off_its_decode_tail(nc) -> None:
    found = export_heads(yolox_exports.yolox_export(nc=nc))
    assert found.family is HeadFamily.YOLOX
    assert [(h.node, h.role, h.channels, h.grid) for h in found.heads] == [
        (f"/head/{pred}.{i}/Conv", role, channels, (8 // 2**i, 8 // 2**i))
        for i in range(3)
        for pred, role, channels in (
            ("reg_preds", HeadRole.BOX, 4),
            ("cls_preds", HeadRole.CLASS, nc),
            ("obj_preds", HeadRole.OBJECTNESS, 1),
        )
    ]
    assert found.heads == find_yolox_heads(yolox_exports.yolox_export(nc=nc))


def test_a_two_stride_one_class_yolox_export_is_yolox_not_a_yolo26_of_six_last_convolutions() -> None:
    # two strides x (box 4, objectness 1, class 1): six last convolutions of 4 and 1 channels, as a YOLO26
    # of three strides with nc = 1 has; its three maps per grid tell them apart
    model = yolox_exports.yolox_export(nc=1, levels=2)
    with pytest.raises(GraphError, match=r"grid 8x8 has 3 maps \(4, 1, 1 channels\), expected 2: a box map of 4"):
        find_yolo26_heads(model)
    found = export_heads(model)
    assert found.family is HeadFamily.YOLOX
    assert [(h.role, h.grid) for h in found.heads] == [
        (role, (grid, grid)) for grid in (8, 4) for role in (HeadRole.BOX, HeadRole.CLASS, HeadRole.OBJECTNESS)
    ]


def test_a_yolox_export_without_its_decode_tail_is_refused_naming_decode_in_inference() -> None:
    undecoded = yolox_exports.yolox_export(decoded=False)  # YOLOX's export_onnx.py default
    with pytest.raises(GraphError, match=r"'yolox_test': its decode tail does not decode as YOLOX's.*in_inference"):
        find_yolox_heads(undecoded)


def test_a_tail_whose_grid_is_not_at_the_cells_corner_is_refused_not_read_for_roles() -> None:
    model = yolox_exports.yolox_export()
    for tensor in model.graph.initializer:
        if tensor.name == "/head/grids":  # YOLOv5's grid, at cell - 0.5
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor) - np.float32(0.5), tensor.name))
    with pytest.raises(GraphError, match=r"does not decode as YOLOX's \(rows 0 of 84"):
        find_yolox_heads(model)


def test_the_trained_yolox_export_is_yolox_with_its_nine_head_convolutions_and_its_class_names() -> None:
    """tests/support/data/fire_smoke_yolox_256.onnx (MODEL_CARD_yolox.md): YOLOX's head and decode tail as
    torch exports them (BatchNorm folded, the grids constants), not built here node by node."""
    model = load_model(TRAINED_YOLOX)
    found = export_heads(model)
    assert found.family is HeadFamily.YOLOX
    assert [(h.node, h.role, h.channels, h.grid) for h in found.heads] == [
        (f"/head/{pred}.{i}/Conv", role, channels, (32 // 2**i, 32 // 2**i))
        for i in range(3)
        for pred, role, channels in (
            ("reg_preds", HeadRole.BOX, 4),
            ("cls_preds", HeadRole.CLASS, 2),
            ("obj_preds", HeadRole.OBJECTNESS, 1),
        )
    ]
    assert model_input(model) == ("images", (256, 256)) and onnx_class_names(model) == ("fire", "smoke")


def test_a_head_whose_last_convolutions_are_not_three_per_grid_is_refused_naming_them() -> None:
    with pytest.raises(GraphError, match=r"last convolutions \[.*expected a YOLOX head: per stride convolutions"):
        find_yolox_heads(yolov5_exports.yolov5_export())


# --- SSD exports (anchors and box coding from a config) ----------------------------------------------


@pytest.mark.parametrize("nc", [2, 3, 6])
def test_an_ssd_export_given_its_config_gives_per_layer_its_box_and_class_maps_by_the_output_they_feed(nc) -> None:
    found = export_heads(ssd_exports.ssd_export(nc=nc), ssd=ssd_exports.ssd_config())
    assert found.family is HeadFamily.SSD
    assert [(h.node, h.role, h.channels, h.grid) for h in found.heads] == [
        (f"/BoxPredictor_{i}/{conv}/Conv", role, channels, (16 // 2**i, 16 // 2**i))
        for i, na in enumerate((3, 2))
        for conv, role, channels in (
            ("BoxEncodingPredictor", HeadRole.ANCHOR_BOXES, 4 * na),
            ("ClassPredictor", HeadRole.ANCHOR_CLASSES, na * nc),
        )
    ]


def test_an_ssd_export_without_its_config_is_refused_naming_the_ssd_config_option() -> None:
    model = ssd_exports.ssd_export()
    with pytest.raises(
        GraphError, match=r"'raw_detection_boxes' and 'raw_detection_scores' are an SSD exp.*--ssd-config"
    ):
        export_heads(model)
    assert not end_to_end(model)


def _ssd_refusal(model: onnx.ModelProto, config: SsdConfig) -> str:
    with pytest.raises(GraphError) as refused:
        export_heads(model, ssd=config)
    return str(refused.value)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"centers_scale_factor": 5}, r"row 0 \(layer 0, cell row 0 column 0, anchor 0\).*at codes \[0.1, 0.2"),
        ({"bbox_dimensions_scale_factor": 10}, r"row 0 \(layer 0, cell row 0 column 0, anchor 0\).*at codes \[0.1"),
        ({"ty_index": 1, "tx_index": 0}, r"row 0 .*at codes \[0.1, 0.2, 0.3, 0.4\]"),
        ({"th_index": 3, "tw_index": 2}, r"row 0 .*at codes \[0.1, 0.2, 0.3, 0.4\]"),
        # the anchors' widths and heights swapped: refused at zero codes, on the first anchor that is not square
        (
            {"anchors": tuple(tuple((h, w) for w, h in layer) for layer in ssd_exports.ANCHORS)},
            r"row 1 \(layer 0, cell row 0 column 0, anchor 1\).*at codes \[0.0, 0.0, 0.0, 0.0\]",
        ),
        # the second layer's anchors in another order
        (
            {"anchors": (ssd_exports.ANCHORS[0], ssd_exports.ANCHORS[1][::-1])},
            r"row 768 \(layer 1, cell row 0 column 0, anchor 0\).*at codes \[0.0",
        ),
    ],
)
def test_an_ssd_config_that_is_not_the_exports_is_refused_naming_the_first_row_its_tail_decodes_otherwise(
    change, named
) -> None:
    message = _ssd_refusal(ssd_exports.ssd_export(), dataclasses.replace(ssd_exports.ssd_config(), **change))
    assert re.search(named, message) and "--ssd-config" in message


def test_an_ssd_config_of_other_anchor_counts_or_layers_is_refused_naming_the_layer_and_its_convolutions() -> None:
    model = ssd_exports.ssd_export()
    two_anchors = ssd_exports.ssd_config((ssd_exports.ANCHORS[0][:2], ssd_exports.ANCHORS[1]))
    assert re.search(
        r"layer 0 \(grid 16x16\) has '/BoxPredictor_0/BoxEncodingPredictor/Conv' \(12 ch, anchor-boxes\), "
        r"'/BoxPredictor_0/ClassPredictor/Conv' \(9 ch, anchor-classes\); the SSD config \(--ssd-config\) "
        r"bbox_decoders\[0\] has 2 anchor\(s\), so expected a box convolution of 8 channels",
        _ssd_refusal(model, two_anchors),
    )
    assert "2 SSD layer(s) on grids ['16x16', '8x8'], but the SSD config (--ssd-config) gives anchors for 3" in (
        _ssd_refusal(model, ssd_exports.ssd_config((*ssd_exports.ANCHORS, ((0.9, 0.9),))))
    )


def test_an_ssd_export_without_its_decode_tail_is_refused_its_rows_not_its_anchors_boxes() -> None:
    undecoded = ssd_exports.ssd_export(decoded=False)  # box encodings and class logits, as the predictor gives them
    assert re.search(r"row 0 .*at codes \[0.0, 0.0, 0.0, 0.0\]", _ssd_refusal(undecoded, ssd_exports.ssd_config()))


def test_an_ssd_config_for_a_yolo_export_is_refused_naming_its_outputs() -> None:
    with pytest.raises(GraphError, match=r"model outputs: found \{'output'.*expected an SSD export's two outputs"):
        export_heads(yolox_exports.yolox_export(), ssd=ssd_exports.ssd_config())
    with pytest.raises(GraphError, match="an SSD head is found by structure only"):
        export_heads(ssd_exports.ssd_export(), ["/BoxPredictor_0/ClassPredictor/Conv"], ssd=ssd_exports.ssd_config())


def test_the_trained_ssd_export_with_its_config_file_is_ssd_with_its_six_head_convolutions_and_class_names() -> None:
    """tests/support/data/fire_smoke_ssd_256.onnx (MODEL_CARD_ssd.md) and its fire_smoke_ssd_256.ssd.json: the
    Object Detection API's decode tail as torch exports it (the anchor table a constant, BatchNorm folded), not
    built here node by node; refused without its config."""
    model, config = load_model(ssd_exports.TRAINED), ssd_exports.trained_config()
    found = export_heads(model, ssd=config)
    assert found.family is HeadFamily.SSD
    assert [(h.node, h.role, h.channels, h.grid) for h in found.heads] == [
        (f"/head/{pred}.{i}/Conv", role, channels, (32 // 2**i, 32 // 2**i))
        for i in range(3)
        for pred, role, channels in (
            ("box_preds", HeadRole.ANCHOR_BOXES, 16),
            ("cls_preds", HeadRole.ANCHOR_CLASSES, 12),
        )
    ]
    assert [h.anchors for h in found.heads[::2]] == list(config.anchors)
    assert model_input(model) == ("images", (256, 256)) and onnx_class_names(model) == ("fire", "smoke")
    with pytest.raises(GraphError, match=r"--ssd-config FILE"):
        export_heads(model)


def test_a_files_session_names_the_decoded_outputs_as_the_graph_read_by_onnx_does(
    export, shared_fixtures: Path, tmp_path: Path
) -> None:
    """onnxruntime reads an export's file itself; the decoded outputs named from the shapes it reports are those
    head_outputs finds in the graph onnx reads, for a YOLO export's one output and an SSD export's two."""
    from harness.backends.onnx.runner import FullHeadRunner
    from harness.inputs.onnx_graph import head_outputs

    ssd = tmp_path / "ssd.onnx"
    onnx.save(ssd_exports.ssd_export(), ssd)
    for file in (shared_fixtures / "onnx" / export[0], ssd):
        with FullHeadRunner(file, threads=1) as runner:
            assert runner.output_name == " + ".join(head_outputs(load_model(file)))
    assert FullHeadRunner(ssd, threads=1).output_name == "raw_detection_boxes + raw_detection_scores"


def test_the_full_export_runs_without_importing_onnx_and_a_bad_file_is_refused_as_before(tmp_path: Path) -> None:
    """The float export's session is onnxruntime's reading of the file: no import of onnx (0.6 s of CPU with
    ml_dtypes 0.7) in a run whose export facts are kept; a file onnxruntime cannot read is read with onnx,
    whose refusal names it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from harness.backends.onnx.runner import FullHeadRunner\n"
        "from harness.inputs.demo import DEMO_ONNX\n"
        "import numpy as np\n"
        "runner = FullHeadRunner(DEMO_ONNX, threads=1)\n"
        "out = runner.infer({'images': np.zeros((1, 3, 256, 256), np.float32)})\n"
        "print(out.shape, 'onnx' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-1] == "False", done.stdout
    from harness.backends.onnx.runner import FullHeadRunner

    bad = tmp_path / "cut.onnx"
    bad.write_bytes(b"\x08\x07:\xbc")
    with pytest.raises(GraphError, match=r"cut\.onnx.*cannot be read"):
        FullHeadRunner(bad)
