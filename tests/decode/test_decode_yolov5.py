"""YOLOv5/YOLOv7 heads (anchors, objectness x class): the decoder against a loop over every cell and
anchor as HailoRT's YOLOv5 op walks them, and what it promises whatever the outputs' names, order and
quantization."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.errors import HeadPairingError
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
from harness.decode.heads import decoder, head_layout
from harness.decode.nms import nms
from harness.families.yolov5.decode import DEFAULT_ANCHORS, candidates, decode, layout

from support.reference.decode import reference_nms_hailort, reference_nms_ultralytics
from support.reference.yolov5 import reference_candidates

STRIDES = (8, 16, 32)


@st.composite
def yolov5_heads(draw):
    """One anchored map per stride (random names, random order), na anchors of random sizes, values
    all different (no ties): probabilities, logits, or UINT8/UINT16 codes of probabilities."""
    side = draw(st.sampled_from([32, 64]))
    nc = draw(st.integers(1, 4))
    na = draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["probabilities", "logits", "uint8", "uint16"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    anchors = tuple(tuple((float(w), float(h)) for w, h in rng.integers(2, 2 * side, (na, 2))) for _ in STRIDES)
    grids = [side // s for s in STRIDES]
    sizes = [g * g * na * (5 + nc) for g in grids]
    dtype = {"uint8": np.uint8, "uint16": np.uint16}.get(kind)
    if dtype is None:
        # objectness high enough that many entries pass: offsets anywhere in [0, 1)
        values = rng.permutation(sum(sizes)).astype(np.float32) / np.float32(sum(sizes))
        if kind == "logits":
            values = (values - np.float32(0.5)) * np.float32(12)
    else:
        top = np.iinfo(dtype).max
        values = rng.choice(top + 1, sum(sizes), replace=sum(sizes) > top + 1).astype(dtype)
    outputs, specs = {}, {}
    maps = np.split(values, np.cumsum(sizes)[:-1])
    names = [f"conv{n}" for n in rng.permutation(100)[:3]]
    for i in rng.permutation(3):
        shape = (grids[i], grids[i], na * (5 + nc))
        quant = ()
        if dtype is not None:
            top = np.iinfo(dtype).max
            scale = float(np.float32(1 / top))
            quant = (QuantInfo(0.0, scale, 0.0, 1.0),)  # limvals inside [0, 1]: post-sigmoid
        fmt = FormatType.FLOAT32 if dtype is None else (FormatType.UINT8 if dtype == np.uint8 else FormatType.UINT16)
        outputs[names[i]] = maps[i].reshape(shape)
        specs[names[i]] = OutputSpec(names[i], shape, FormatOrder.NHWC, fmt, quant)
    heads = [(names[i], anchors[i]) for i in range(3)]
    return outputs, specs, heads, anchors, side, kind


def config(side, anchors, threshold, mode=NmsMode.HAILORT, **more) -> DecodeConfig:
    return DecodeConfig(input_hw=(side, side), score_threshold=threshold, mode=mode, anchors=anchors, **more)


def assert_same(got, want) -> None:
    np.testing.assert_array_equal(got.class_ids, want.class_ids)
    np.testing.assert_array_equal(got.scores.astype(np.float32), want.scores.astype(np.float32))
    np.testing.assert_allclose(got.boxes, want.boxes, rtol=1e-5, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(yolov5_heads(), st.sampled_from([0.05, 0.25, 0.5]), st.sampled_from(list(NmsMode)))
def test_the_decoder_keeps_what_a_loop_over_every_cell_and_anchor_keeps(heads, threshold, mode):
    outputs, specs, names, anchors, side, kind = heads
    cfg = config(side, anchors, threshold, mode)
    got = decode(outputs, specs, cfg)
    boxes, scores = reference_candidates(
        outputs, specs, names, (side, side), kind != "logits", threshold if mode is NmsMode.HAILORT else 0.0
    )
    want = (reference_nms_hailort if mode is NmsMode.HAILORT else reference_nms_ultralytics)(boxes, scores, cfg)
    assert_same(got, want)


@settings(max_examples=40, deadline=None)
@given(yolov5_heads(), st.sampled_from([0.0, 0.1, 0.5, 0.9]), st.sampled_from(list(NmsMode)))
def test_reading_only_the_entries_whose_objectness_passes_keeps_what_reading_every_entry_keeps(heads, threshold, mode):
    outputs, specs, _, anchors, side, _ = heads
    cfg = config(side, anchors, threshold, mode)
    every = candidates(outputs, layout(specs, cfg.input_hw, anchors), cfg)
    assert_same(decode(outputs, specs, cfg), nms(*every, cfg))


@settings(max_examples=30, deadline=None)
@given(yolov5_heads())
def test_logit_heads_decode_as_their_sigmoids_do(heads):
    outputs, specs, _, anchors, side, kind = heads
    if kind != "logits":
        return
    probabilities = {n: (1 / (1 + np.exp(-a))).astype(np.float32) for n, a in outputs.items()}
    assert_same(
        decode(outputs, specs, config(side, anchors, 0.25)), decode(probabilities, specs, config(side, anchors, 0.25))
    )


@settings(max_examples=30, deadline=None)
@given(yolov5_heads(), st.randoms(use_true_random=False))
def test_outputs_are_told_apart_by_grid_never_by_name_or_order(heads, random):
    outputs, specs, _, anchors, side, _ = heads
    names = list(specs)
    random.shuffle(names)
    renamed = {f"out{i}": name for i, name in enumerate(names)}
    outputs2 = {new: outputs[old] for new, old in renamed.items()}
    specs2 = {
        new: OutputSpec(new, s.shape, s.format_order, s.format_type, s.quant)
        for new, s in ((n, specs[o]) for n, o in renamed.items())
    }
    cfg = config(side, anchors, 0.25)
    assert_same(decode(outputs2, specs2, cfg), decode(outputs, specs, cfg))


@pytest.mark.parametrize("stride", STRIDES)
def test_a_planted_entry_comes_back_as_its_anchor_box_centred_on_its_cell(stride):
    side, nc, anchors = 64, 2, DEFAULT_ANCHORS
    outputs, specs = {}, {}
    for s in STRIDES:
        grid = side // s
        values = np.zeros((grid, grid, 3, 5 + nc), np.float32)
        if s == stride:
            # tx = ty = 0.5: the cell's centre; tw = th = 0.5: the anchor's own size
            values[1, 0, 2] = [0.5, 0.5, 0.5, 0.5, 0.9, 0.1, 0.8]
        outputs[f"p{s}"] = values.reshape(grid, grid, -1)
        specs[f"p{s}"] = OutputSpec(f"p{s}", (grid, grid, 3 * (5 + nc)), FormatOrder.NHWC, FormatType.FLOAT32)
    got = decoder(HeadFamily.YOLOV5)(outputs, specs, config(side, anchors, 0.5))
    w, h = anchors[STRIDES.index(stride)][2]
    cx, cy = 0.5 * stride, 1.5 * stride
    assert got.class_ids.tolist() == [1]
    assert got.scores[0] == pytest.approx(0.72)
    np.testing.assert_allclose(got.boxes[0], [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], rtol=1e-6)


def spec(name: str, shape: tuple[int, int, int]) -> OutputSpec:
    return OutputSpec(name, shape, FormatOrder.NHWC, FormatType.FLOAT32)


def test_an_anchor_based_head_without_anchors_is_refused_naming_the_anchors_it_needs():
    specs = {f"p{s}": spec(f"p{s}", (64 // s, 64 // s, 21)) for s in STRIDES}
    with pytest.raises(HeadPairingError, match=r"no anchors given.*DecodeConfig\.anchors"):
        head_layout(HeadFamily.YOLOV5, specs, (64, 64))


@pytest.mark.parametrize(
    ("shapes", "anchors", "message"),
    [
        ([(8, 8, 20), (4, 4, 20), (2, 2, 20)], DEFAULT_ANCHORS, r"'head0' \(stride 8\): 20 channels for 3 anchor\(s\)"),
        ([(8, 8, 21), (4, 4, 21), (2, 2, 21)], DEFAULT_ANCHORS[:2], r"3 stride\(s\) but anchors for 2"),
        ([(8, 8, 21), (8, 8, 21), (2, 2, 21)], DEFAULT_ANCHORS, r"grid 8x8: found 2 outputs"),
        ([(8, 8, 21), (4, 4, 24), (2, 2, 21)], DEFAULT_ANCHORS, r"different class counts"),
    ],
)
def test_outputs_that_are_not_an_anchored_head_are_refused_naming_them(shapes, anchors, message):
    specs = {f"head{i}": spec(f"head{i}", shape) for i, shape in enumerate(shapes)}
    with pytest.raises(HeadPairingError, match=message):
        layout(specs, (64, 64), anchors)
