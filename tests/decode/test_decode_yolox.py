"""YOLOX heads (anchor-free, objectness x class, exp boxes): the decoder against a loop over every cell as
HailoRT's YOLOX op walks them, and what it promises whatever the outputs' names, order and quantization."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.errors import HeadPairingError
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
from harness.decode.heads import decoder, head_layout
from harness.decode.nms import nms
from harness.families.yolox.decode import candidates, decode, layout
from harness.formats.quant import dequantize
from harness.inputs.onnx_graph import cut_at_heads, export_heads

from support.reference.decode import reference_nms_hailort, reference_nms_ultralytics
from support.reference.yolox import reference_candidates
from support.yolox_exports import yolox_export

STRIDES = (8, 16, 32)
KINDS = ("probabilities", "logits", "uint8", "uint16")


@st.composite
def yolox_heads(draw, kinds=KINDS):
    """Per stride a box map (4), an objectness map (1) and a class map (nc) under random names in random
    order. Box values raw offsets; objectness and class values all different (no ties): probabilities,
    logits, or UINT8/UINT16 codes of probabilities (box codes with a quant info of their own)."""
    side = draw(st.sampled_from([32, 64]))
    nc = draw(st.sampled_from([1, 2, 3, 5]))
    kind = draw(st.sampled_from(kinds))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    grids = [side // s for s in STRIDES]
    score_sizes = [g * g * (1 + nc) for g in grids]
    dtype = {"uint8": np.uint8, "uint16": np.uint16}.get(kind)
    if dtype is None:
        scores = rng.permutation(sum(score_sizes)).astype(np.float32) / np.float32(sum(score_sizes))
        if kind == "logits":
            scores = (scores - np.float32(0.5)) * np.float32(12)
    else:
        top = np.iinfo(dtype).max
        total = sum(score_sizes)
        scores = rng.choice(top + 1, total, replace=total > top + 1).astype(dtype)
    outputs, specs, heads = {}, {}, []
    names = iter(f"conv{n}" for n in rng.permutation(100)[:9])
    per_stride = np.split(scores, np.cumsum(score_sizes)[:-1])
    for grid, values in zip(grids, per_stride, strict=True):
        objectness, classes = values[: grid * grid], values[grid * grid :]
        if dtype is None:
            box = rng.uniform(-2, 2, (grid, grid, 4)).astype(np.float32)
            box_quant = score_quant = ()
        else:
            top = np.iinfo(dtype).max
            box = rng.integers(0, top, (grid, grid, 4), endpoint=True, dtype=dtype)
            zp = float(rng.integers(0, top))
            scale = float(np.float32(4 / top))  # offsets within about +-4
            box_quant = (QuantInfo(zp, scale, -zp * scale, (top - zp) * scale),)
            score_quant = (QuantInfo(0.0, float(np.float32(1 / top)), 0.0, 1.0),)  # limvals in [0, 1]: post-sigmoid
        fmt = {None: FormatType.FLOAT32, np.uint8: FormatType.UINT8, np.uint16: FormatType.UINT16}[dtype]
        triplet = []
        for array, channels, quant in (
            (box, 4, box_quant),
            (objectness, 1, score_quant),
            (classes, nc, score_quant),
        ):
            name = next(names)
            shape = (grid, grid, channels)
            outputs[name] = array.reshape(shape)
            specs[name] = OutputSpec(name, shape, FormatOrder.NHWC, fmt, quant)
            triplet.append(name)
        heads.append(tuple(triplet))
    shuffled = list(specs)
    rng.shuffle(shuffled)
    return outputs, {n: specs[n] for n in shuffled}, heads, side, kind


def config(side, threshold, mode=NmsMode.HAILORT, **more) -> DecodeConfig:
    return DecodeConfig(input_hw=(side, side), score_threshold=threshold, mode=mode, **more)


def assert_same(got, want) -> None:
    np.testing.assert_array_equal(got.class_ids, want.class_ids)
    np.testing.assert_array_equal(got.scores.astype(np.float32), want.scores.astype(np.float32))
    np.testing.assert_allclose(got.boxes, want.boxes, rtol=1e-5, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(yolox_heads(), st.sampled_from([0.05, 0.25, 0.5]), st.sampled_from(list(NmsMode)))
def test_the_decoder_keeps_what_a_loop_over_every_cell_keeps(heads, threshold, mode):
    outputs, specs, names, side, kind = heads
    cfg = config(side, threshold, mode)
    got = decode(outputs, specs, cfg)
    boxes, scores = reference_candidates(
        outputs, specs, names, (side, side), kind != "logits", threshold if mode is NmsMode.HAILORT else 0.0
    )
    want = (reference_nms_hailort if mode is NmsMode.HAILORT else reference_nms_ultralytics)(boxes, scores, cfg)
    assert len(want) or threshold == 0.5  # at 0.05 and 0.25 every frame keeps a detection: the loop is compared
    assert_same(got, want)


@settings(max_examples=40, deadline=None)
@given(yolox_heads(), st.sampled_from([0.0, 0.1, 0.5, 0.9]), st.sampled_from(list(NmsMode)))
def test_reading_only_the_cells_whose_objectness_passes_keeps_what_reading_every_cell_keeps(heads, threshold, mode):
    outputs, specs, _, side, _ = heads
    cfg = config(side, threshold, mode)
    every = candidates(outputs, layout(specs, cfg.input_hw), cfg)
    assert_same(decode(outputs, specs, cfg), nms(*every, cfg))


@settings(max_examples=30, deadline=None)
@given(yolox_heads(kinds=("logits",)))
def test_logit_maps_decode_as_their_sigmoids_do_and_the_box_map_gets_none(heads):
    outputs, specs, names, side, _ = heads
    boxes = {box for box, _, _ in names}
    probabilities = {n: a if n in boxes else (1 / (1 + np.exp(-a))).astype(np.float32) for n, a in outputs.items()}
    assert_same(decode(outputs, specs, config(side, 0.25)), decode(probabilities, specs, config(side, 0.25)))


@settings(max_examples=30, deadline=None)
@given(yolox_heads(kinds=("uint8", "uint16")), st.sampled_from(list(NmsMode)))
def test_quantized_maps_decode_as_their_dequantized_floats_do(heads, mode):
    outputs, specs, _, side, _ = heads
    floats = {n: dequantize(a, specs[n].quant) for n, a in outputs.items()}
    float_specs = {n: OutputSpec(n, s.shape, s.format_order, FormatType.FLOAT32) for n, s in specs.items()}
    cfg = config(side, 0.25, mode)
    assert_same(decode(outputs, specs, cfg), decode(floats, float_specs, cfg))


@settings(max_examples=30, deadline=None)
@given(yolox_heads(), st.randoms(use_true_random=False))
def test_outputs_are_told_apart_by_channels_never_by_name_or_order(heads, random):
    outputs, specs, _, side, _ = heads
    names = list(specs)
    random.shuffle(names)
    renamed = {f"out{i}": name for i, name in enumerate(names)}
    outputs2 = {new: outputs[old] for new, old in renamed.items()}
    specs2 = {
        new: OutputSpec(new, s.shape, s.format_order, s.format_type, s.quant)
        for new, s in ((n, specs[o]) for n, o in renamed.items())
    }
    cfg = config(side, 0.25)
    assert_same(decode(outputs2, specs2, cfg), decode(outputs, specs, cfg))


def planted(stride: int, t: list[float], objectness: float, classes: list[float], side: int = 64):
    """Every map zero but one cell (row 1, column 0) of stride ``stride``: box values ``t``, its scores."""
    nc = len(classes)
    outputs, specs = {}, {}
    for s in STRIDES:
        grid = side // s
        maps = {"reg": np.zeros((grid, grid, 4), np.float32), "obj": np.zeros((grid, grid, 1), np.float32)}
        maps["cls"] = np.zeros((grid, grid, nc), np.float32)
        if s == stride:
            maps["reg"][1, 0], maps["obj"][1, 0], maps["cls"][1, 0] = t, [objectness], classes
        for kind, array in maps.items():
            outputs[f"{kind}{s}"] = array
            specs[f"{kind}{s}"] = OutputSpec(f"{kind}{s}", array.shape, FormatOrder.NHWC, FormatType.FLOAT32)
    return outputs, specs


@pytest.mark.parametrize("stride", STRIDES)
@pytest.mark.parametrize(("t", "own_cell"), [([0.5, 0.5, 0.0, 0.0], True), ([0.25, 0.75, np.log(2), np.log(3)], False)])
def test_a_planted_cell_comes_back_centred_at_its_offset_from_the_cell_and_sized_exp_t_strides(stride, t, own_cell):
    outputs, specs = planted(stride, t, 0.9, [0.1, 0.8])
    got = decoder(HeadFamily.YOLOX)(outputs, specs, config(64, 0.5))
    cx, cy = (t[0] + 0) * stride, (t[1] + 1) * stride
    w, h = np.exp(t[2]) * stride, np.exp(t[3]) * stride
    assert got.class_ids.tolist() == [1]
    assert got.scores[0] == np.float32(0.8) * np.float32(0.9)
    np.testing.assert_allclose(got.boxes[0], [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], rtol=1e-6)
    if own_cell:  # the cell's own box: one stride wide, centred on the cell
        np.testing.assert_allclose(got.boxes[0], [0, stride, stride, 2 * stride], rtol=1e-6)


def test_a_cell_whose_objectness_is_below_the_threshold_yields_nothing_however_high_its_class():
    outputs, specs = planted(8, [0.5, 0.5, 0.0, 0.0], 0.49, [1.0, 1.0])
    assert len(decode(outputs, specs, config(64, 0.5))) == 0
    outputs, specs = planted(8, [0.5, 0.5, 0.0, 0.0], 0.5, [1.0, 0.99])
    assert decode(outputs, specs, config(64, 0.5)).class_ids.tolist() == [0]  # 0.5 x 0.99 is under 0.5


def test_probabilities_are_read_as_the_op_reads_them_and_one_map_of_logits_makes_every_map_logits():
    # HailoRT's YOLOX op never sigmoids (it only dequantizes: yolox_post_process.hpp): a probability frame
    # scores class x objectness as it came
    outputs, specs = planted(16, [0.5, 0.5, 0.0, 0.0], 0.9, [0.7, 0.2])
    got = decode(outputs, specs, config(64, 0.5))
    assert got.scores.tolist() == [np.float32(0.7) * np.float32(0.9)]
    # a value outside [0, 1] in one map: every objectness and class map holds logits
    outputs["obj32"][0, 0] = -3.0
    got = decode(outputs, specs, config(64, 0.45))  # 0.668 x 0.711 passes, 0.550 x 0.711 and 0.5 x 0.5 do not
    sig = 1 / (1 + np.exp(-np.float32([0.7, 0.9])))
    assert got.class_ids.tolist() == [0] and got.scores[0] == pytest.approx(sig[0] * sig[1], rel=1e-6)
    # DecodeConfig.classes_are_probabilities overrides
    got = decode(outputs, specs, config(64, 0.5, classes_are_probabilities=True))
    assert got.scores.tolist() == [np.float32(0.7) * np.float32(0.9)]


def test_with_one_class_either_single_channel_map_read_as_the_objectness_keeps_the_same_detections():
    outputs, specs, side = _one_class_frame()
    first = decode(outputs, specs, config(side, 0.3))
    swapped = dict(reversed(list(specs.items())))
    roles = {o.name: o.role for o in layout(specs, (side, side)).outputs}
    swapped_roles = {o.name: o.role for o in layout(swapped, (side, side)).outputs}
    assert {n for n, r in roles.items() if r is HeadRole.OBJECTNESS} != {
        n for n, r in swapped_roles.items() if r is HeadRole.OBJECTNESS
    }
    assert len(first) > 0
    assert_same(decode(outputs, swapped, config(side, 0.3)), first)


def _one_class_frame():
    rng = np.random.default_rng(7)
    outputs, specs = {}, {}
    for s in STRIDES:
        grid = 64 // s
        for kind, channels in (("reg", 4), ("obj", 1), ("cls", 1)):
            low = -2 if kind == "reg" else 0
            outputs[f"{kind}{s}"] = rng.uniform(low, 2 if kind == "reg" else 1, (grid, grid, channels)).astype(
                np.float32
            )
            specs[f"{kind}{s}"] = OutputSpec(f"{kind}{s}", (grid, grid, channels), FormatOrder.NHWC, FormatType.FLOAT32)
    return outputs, specs, 64


def spec(name: str, shape: tuple[int, int, int]) -> OutputSpec:
    return OutputSpec(name, shape, FormatOrder.NHWC, FormatType.FLOAT32)


@pytest.mark.parametrize(
    ("channels", "message"),
    [
        ((4, 1, 4), r"grid 8x8: outputs .*two maps of 4 channels.*nc == 4 is not supported"),
        ((4, 1), r"grid 8x8: found 2 output\(s\).*expected exactly 3: a box map of 4 channels"),
        ((4, 3, 2), r"grid 8x8: found 3 output\(s\).*an objectness map of 1"),
        ((8, 1, 2), r"grid 8x8: found 3 output\(s\).*a box map of 4 channels"),
    ],
)
def test_outputs_that_are_not_a_yolox_head_are_refused_naming_them(channels, message):
    specs = {}
    for s in STRIDES:
        for i, c in enumerate(channels):
            specs[f"s{s}_{i}"] = spec(f"s{s}_{i}", (64 // s, 64 // s, c))
    with pytest.raises(HeadPairingError, match=message):
        head_layout(HeadFamily.YOLOX, specs, (64, 64))


def test_the_layout_gives_each_stride_its_box_objectness_and_class_map():
    specs = {f"m{s}_{c}": spec(f"m{s}_{c}", (64 // s, 64 // s, c)) for s in (32, 8, 16) for c in (3, 1, 4)}
    heads = layout(specs, (64, 64))
    assert [level.stride for level in heads.levels] == list(STRIDES)
    assert [(lv.box.name, lv.objectness.name, lv.classes.name) for lv in heads.levels] == [
        (f"m{s}_4", f"m{s}_1", f"m{s}_3") for s in STRIDES
    ]
    assert heads.classes == 3 and heads.reg_max == 1


@pytest.mark.parametrize(("nc", "seed"), [(1, 0), (2, 1), (5, 2)])
def test_the_heads_of_a_yolox_export_decode_to_the_rows_of_its_own_decode_tail(nc, seed):
    model = yolox_export(nc=nc, seed=seed)
    heads = export_heads(model).heads
    image = np.random.default_rng(seed).uniform(0, 1, (1, 3, 64, 64)).astype(np.float32)
    rows = ort.InferenceSession(model.SerializeToString()).run(None, {"images": image})[0][0]
    maps = ort.InferenceSession(cut_at_heads(model, heads).SerializeToString()).run(None, {"images": image})
    outputs = {h.tensor: m[0].transpose(1, 2, 0) for h, m in zip(heads, maps, strict=True)}  # NCHW -> HWC
    specs = {n: OutputSpec(n, a.shape, FormatOrder.NHWC, FormatType.FLOAT32) for n, a in outputs.items()}
    cfg = config(64, 0.25)
    boxes, scores = candidates(outputs, layout(specs, cfg.input_hw), cfg)
    centre, size = rows[:, :2], rows[:, 2:4]
    np.testing.assert_allclose(boxes, np.concatenate([centre - size / 2, centre + size / 2], axis=1), atol=1e-4)
    np.testing.assert_allclose(scores, rows[:, 4:5] * rows[:, 5:], rtol=1e-5)
    assert 0.05 < rows[:, 4:].min() and rows[:, 4:].max() < 0.999  # the sigmoids not saturated
