"""YOLO26 heads (reg_max 1): the one-to-one decoder against a loop over every anchor, and what both
heads promise whatever the outputs' names, order and quantization."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import HeadPairingError
from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.families.yolo26.one2many.decode import decode as decode_one2many
from harness.families.yolo26.one2one.decode import decode as decode_one2one

from support.reference import yolo26 as reference

STRIDES = (8, 16, 32)


@st.composite
def yolo26_heads(draw, probabilities: bool = True):
    """Six heads as a YOLO26 export has them (box maps first, then class maps), random names;
    class values all different (no ties), probabilities or logits."""
    side = draw(st.sampled_from([32, 64, 96]))
    nc = draw(st.integers(1, 6).filter(lambda n: n != 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cells = sum((side // s) ** 2 for s in STRIDES)
    values = rng.permutation(cells * nc).astype(np.float32) / np.float32(cells * nc)  # distinct, in [0, 1)
    if not probabilities:
        values = (values - np.float32(0.5)) * np.float32(12)
    outputs, specs, boxes, classes, start = {}, {}, {}, {}, 0
    names = iter(rng.permutation(6))
    for stride in STRIDES:
        grid = side // stride
        boxes[stride] = rng.uniform(0, 6, (grid, grid, 4)).astype(np.float32)
        classes[stride] = values[start : start + grid * grid * nc].reshape(grid, grid, nc)
        start += grid * grid * nc
    for maps in (boxes, classes):  # box maps first, as the export lists them
        for array in maps.values():
            name = f"output{next(names)}"
            outputs[name] = array
            specs[name] = OutputSpec(name, array.shape, FormatOrder.NHWC, FormatType.FLOAT32)
    return outputs, specs, boxes, classes, side


def config(side: int, threshold: float, max_total: int = 300, probabilities: bool = True, **more) -> DecodeConfig:
    return DecodeConfig(
        input_hw=(side, side),
        score_threshold=threshold,
        max_total=max_total,
        classes_are_probabilities=probabilities,
        **more,
    )


@given(yolo26_heads(), st.sampled_from([0.0, 0.25, 0.5, 0.9]), st.sampled_from([1, 7, 300]))
def test_the_one_to_one_head_keeps_what_a_loop_over_every_anchor_and_class_keeps(heads, threshold, max_det):
    outputs, specs, boxes, classes, side = heads
    got = decode_one2one(outputs, specs, config(side, threshold, max_det))
    want_boxes, want_scores, want_classes = reference.decode_one2one(boxes, classes, threshold, max_det)
    np.testing.assert_array_equal(got.scores, np.array(want_scores, np.float32))
    np.testing.assert_array_equal(got.class_ids, np.array(want_classes))
    np.testing.assert_array_equal(got.boxes, np.array(want_boxes, np.float32).reshape(-1, 4))


@given(yolo26_heads(probabilities=False), st.sampled_from([0.1, 0.5]), st.integers(1, 400))
def test_the_one_to_one_head_returns_at_most_max_total_best_first_all_above_the_threshold(heads, threshold, max_total):
    outputs, specs, _, _, side = heads
    got = decode_one2one(outputs, specs, config(side, threshold, max_total, probabilities=False))
    assert len(got) <= max_total
    assert np.all(got.scores > threshold) and np.all(got.scores <= 1)
    assert np.all(np.diff(got.scores) <= 0)


@given(yolo26_heads(probabilities=False))
def test_both_heads_decode_alike_whatever_the_outputs_order_and_names(heads):
    outputs, specs, _, _, side = heads
    shuffled = dict(reversed(list(specs.items())))
    renamed = {
        f"x{i}": OutputSpec(f"x{i}", s.shape, s.format_order, s.format_type) for i, s in enumerate(shuffled.values())
    }
    renamed_outputs = {f"x{i}": outputs[name] for i, name in enumerate(shuffled)}
    for decode in (decode_one2one, decode_one2many):
        cfg = config(side, 0.3, probabilities=False, mode=NmsMode.ULTRALYTICS)
        a, b = decode(outputs, specs, cfg), decode(renamed_outputs, renamed, cfg)
        np.testing.assert_array_equal(a.boxes, b.boxes)
        np.testing.assert_array_equal(a.scores, b.scores)


def test_a_box_planted_at_one_cell_comes_back_where_its_four_distances_put_it():
    side, nc = 64, 2
    outputs, specs = {}, {}
    for stride in STRIDES:
        grid = side // stride
        box, cls = np.zeros((grid, grid, 4), np.float32), np.full((grid, grid, nc), -8, np.float32)
        if stride == 16:
            box[1, 2] = (1.0, 0.5, 2.0, 1.5)  # left, top, right, bottom in cells
            cls[1, 2, 1] = 3.0  # logit: sigmoid 0.9526
        outputs[f"b{stride}"], outputs[f"c{stride}"] = box, cls
    for name, array in outputs.items():
        specs[name] = OutputSpec(name, array.shape, FormatOrder.NHWC, FormatType.FLOAT32)
    for decode in (decode_one2one, decode_one2many):
        got = decode(outputs, specs, config(side, 0.5, probabilities=False))
        assert got.class_ids.tolist() == [1] and got.scores[0] == pytest.approx(1 / (1 + np.exp(-3.0)), rel=1e-6)
        cx, cy = (2 + 0.5) * 16, (1 + 0.5) * 16
        np.testing.assert_allclose(got.boxes[0], [cx - 16, cy - 8, cx + 32, cy + 24], rtol=0, atol=1e-4)


def test_a_class_map_of_four_channels_is_refused_as_ambiguous():
    outputs = {}
    for stride in STRIDES:
        grid = 32 // stride
        outputs[f"b{stride}"] = np.zeros((grid, grid, 4), np.float32)
        outputs[f"c{stride}"] = np.zeros((grid, grid, 4), np.float32)
    specs = {n: OutputSpec(n, a.shape, FormatOrder.NHWC, FormatType.FLOAT32) for n, a in outputs.items()}
    with pytest.raises(HeadPairingError, match=r"grid 4x4: .*same channel count.*ambiguous"):
        decode_one2one(outputs, specs, config(32, 0.5))


def test_the_one_to_one_decoder_reproduces_the_yolo26_exports_own_output_from_its_cut_heads():
    """The shipped YOLO26n export ends in the one-to-one head's own top-k (output 1x300x6): cutting at
    the six head convolutions and decoding them must give the same 300 detections."""
    import onnxruntime as ort

    from harness.families.yolo26.onnx import find_yolo26_heads
    from harness.inputs.demo import DEMO26_ONNX
    from harness.inputs.onnx_graph import cut_at_heads, load_model

    model = load_model(DEMO26_ONNX)
    heads = find_yolo26_heads(model)
    assert [(h.role, h.channels, h.grid) for h in heads[:2]] == [("box", 4, (32, 32)), ("class", 2, (32, 32))]
    frame = np.random.default_rng(0).random((1, 3, 256, 256), dtype=np.float32)
    (own,) = ort.InferenceSession(model.SerializeToString()).run(None, {"images": frame})
    cut = ort.InferenceSession(cut_at_heads(model, heads).SerializeToString())
    maps = dict(zip((h.tensor for h in heads), cut.run([h.tensor for h in heads], {"images": frame}), strict=True))
    outputs = {name: m[0].transpose(1, 2, 0) for name, m in maps.items()}
    specs = {n: OutputSpec(n, a.shape, FormatOrder.NHWC, FormatType.FLOAT32) for n, a in outputs.items()}
    got = decode_one2one(outputs, specs, config(256, 0.0, probabilities=False))
    own = own[0]
    assert len(got) == len(own) == 300
    np.testing.assert_array_equal(got.class_ids, own[:, 5].astype(np.int64))
    np.testing.assert_allclose(got.scores, own[:, 4], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.boxes, own[:, :4], rtol=0, atol=1e-3)


def test_a_yolov8_style_export_is_not_taken_for_a_yolo26_one():
    from harness.core.errors import GraphError
    from harness.families.yolo26.onnx import find_yolo26_heads
    from harness.inputs.demo import DEMO_ONNX
    from harness.inputs.onnx_graph import load_model

    with pytest.raises(GraphError, match=r"last convolutions .*dfl/conv/Conv.*expected the six head convolutions"):
        find_yolo26_heads(load_model(DEMO_ONNX))
