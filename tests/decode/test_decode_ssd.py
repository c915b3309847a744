"""SSD heads (a regression and a class map per layer, anchors from a config): the decoder against a loop over
every (cell, anchor) as HailoRT's SSD op walks them, and what it promises whatever the outputs' names, order
and quantization; the SSD config file as it is read."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.documents import DocumentError
from harness.core.errors import HarnessError, HeadPairingError
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.settings import DecodeConfig, NmsMode, SsdConfig, SsdConfigError
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
from harness.decode.heads import decoder, head_layout
from harness.decode.nms import nms
from harness.families.ssd.decode import candidates, decode, layout
from harness.formats.quant import dequantize

from support.reference.decode import reference_nms_hailort, reference_nms_ultralytics
from support.reference.ssd import reference_candidates

KINDS = ("probabilities", "uint8", "uint16")
GRIDS = ((6, 6), (5, 4), (3, 3), (2, 2), (1, 1))
FMT = {None: FormatType.FLOAT32, np.uint8: FormatType.UINT8, np.uint16: FormatType.UINT16}


@st.composite
def ssd_configs(draw, layers: int, nc: int) -> SsdConfig:
    """Anchors per layer (1 to 3, fractions of the input), scale factors, a channel order of ty, tx, th, tw,
    a background class (none, the first or the last) and HailoRT's clip or not."""
    anchors = tuple(
        tuple((draw(st.sampled_from([0.1, 0.25, 0.5, 0.9])), draw(st.sampled_from([0.15, 0.3, 0.7]))) for _ in range(n))
        for n in (draw(st.integers(1, 3)) for _ in range(layers))
    )
    ty, tx, th, tw = draw(st.permutations([0, 1, 2, 3]))
    return SsdConfig(
        anchors,
        centers_scale_factor=draw(st.sampled_from([1, 10])),
        bbox_dimensions_scale_factor=draw(st.sampled_from([1, 5])),
        ty_index=ty,
        tx_index=tx,
        th_index=th,
        tw_index=tw,
        background_class=draw(st.sampled_from([None, 0, nc - 1] if nc > 1 else [None])),
        normalize_boxes=draw(st.booleans()),
    )


@st.composite
def ssd_heads(draw, kinds=KINDS):
    """Per layer (largest grid first, the first of 20 cells at least) a regression map (4 x na) and a class map
    (na x nc) under random names in random order. Regression values raw offsets; class values all different
    (no ties): probabilities, or UINT8/UINT16 codes of probabilities (regression codes with a quant info of
    their own)."""
    side = draw(st.sampled_from([64, 300]))
    layers = draw(st.integers(1, 3))
    smaller = st.lists(st.sampled_from(GRIDS[2:]), min_size=layers - 1, max_size=layers - 1, unique=True)
    grids = [draw(st.sampled_from(GRIDS[:2])), *sorted(draw(smaller), key=lambda g: -g[0] * g[1])]
    nc = draw(st.sampled_from([1, 2, 3, 5]))
    ssd = draw(ssd_configs(layers, nc))
    kind = draw(st.sampled_from(kinds))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sizes = [h * w * len(a) * nc for (h, w), a in zip(grids, ssd.anchors, strict=True)]
    dtype = {"uint8": np.uint8, "uint16": np.uint16}.get(kind)
    if dtype is None:
        scores = rng.permutation(sum(sizes)).astype(np.float32) / np.float32(sum(sizes))
    else:
        top = np.iinfo(dtype).max
        scores = rng.choice(top + 1, sum(sizes), replace=sum(sizes) > top + 1).astype(dtype)
    outputs, specs, heads = {}, {}, []
    names = iter(f"conv{n}" for n in rng.permutation(100)[: 2 * layers])
    for (h, w), group, values in zip(grids, ssd.anchors, np.split(scores, np.cumsum(sizes)[:-1]), strict=True):
        na = len(group)
        if dtype is None:
            reg = rng.uniform(-3, 3, (h, w, 4 * na)).astype(np.float32)
            reg_quant = cls_quant = ()
        else:
            top = np.iinfo(dtype).max
            reg = rng.integers(0, top, (h, w, 4 * na), endpoint=True, dtype=dtype)
            zp = float(rng.integers(0, top))
            scale = float(np.float32(6 / top))  # offsets within about +-6
            reg_quant = (QuantInfo(zp, scale, -zp * scale, (top - zp) * scale),)
            cls_quant = (QuantInfo(0.0, float(np.float32(1 / top)), 0.0, 1.0),)
        pair = []
        for array, quant in ((reg, reg_quant), (values.reshape(h, w, na * nc), cls_quant)):
            name = next(names)
            outputs[name] = array
            specs[name] = OutputSpec(name, array.shape, FormatOrder.NHWC, FMT[dtype], quant)
            pair.append(name)
        heads.append(tuple(pair))
    shuffled = list(specs)
    rng.shuffle(shuffled)
    return outputs, {n: specs[n] for n in shuffled}, heads, side, ssd


def config(side, threshold, ssd, mode=NmsMode.HAILORT, **more) -> DecodeConfig:
    return DecodeConfig(input_hw=(side, side), score_threshold=threshold, mode=mode, ssd=ssd, **more)


def assert_same(got, want) -> None:
    np.testing.assert_array_equal(got.class_ids, want.class_ids)
    np.testing.assert_array_equal(got.scores.astype(np.float32), want.scores.astype(np.float32))
    np.testing.assert_allclose(got.boxes, want.boxes, rtol=1e-6, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(ssd_heads(), st.sampled_from([0.05, 0.25, 0.5]), st.sampled_from(list(NmsMode)))
def test_the_decoder_keeps_what_a_loop_over_every_cell_and_anchor_keeps(heads, threshold, mode):
    outputs, specs, names, side, ssd = heads
    cfg = config(side, threshold, ssd, mode)
    got = decode(outputs, specs, cfg)
    floor = threshold if mode is NmsMode.HAILORT else 0.0
    boxes, scores = reference_candidates(outputs, specs, names, ssd, (side, side), floor)
    want = (reference_nms_hailort if mode is NmsMode.HAILORT else reference_nms_ultralytics)(boxes, scores, cfg)
    assert len(want) or threshold == 0.5  # at 0.05 and 0.25 every frame keeps a detection: the loop is compared
    assert_same(got, want)


@settings(max_examples=40, deadline=None)
@given(ssd_heads(), st.sampled_from([0.0, 0.1, 0.5, 0.9]), st.sampled_from(list(NmsMode)))
def test_reading_only_the_entries_with_a_passing_class_keeps_what_reading_every_entry_keeps(heads, threshold, mode):
    outputs, specs, _, side, ssd = heads
    cfg = config(side, threshold, ssd, mode)
    every = candidates(outputs, layout(specs, cfg.input_hw, ssd.anchors), cfg)
    assert_same(decode(outputs, specs, cfg), nms(*every, cfg))


@settings(max_examples=30, deadline=None)
@given(ssd_heads(kinds=("uint8", "uint16")), st.sampled_from(list(NmsMode)))
def test_quantized_maps_decode_as_their_dequantized_floats_do(heads, mode):
    outputs, specs, _, side, ssd = heads
    floats = {n: dequantize(a, specs[n].quant) for n, a in outputs.items()}
    float_specs = {n: OutputSpec(n, s.shape, s.format_order, FormatType.FLOAT32) for n, s in specs.items()}
    cfg = config(side, 0.25, ssd, mode)
    assert_same(decode(outputs, specs, cfg), decode(floats, float_specs, cfg))


@settings(max_examples=30, deadline=None)
@given(ssd_heads(), st.randoms(use_true_random=False))
def test_names_and_order_of_the_outputs_do_not_matter(heads, random):
    outputs, specs, _, side, ssd = heads
    names = list(specs)
    random.shuffle(names)
    renamed = {f"out{i}": name for i, name in enumerate(names)}
    outputs2 = {new: outputs[old] for new, old in renamed.items()}
    specs2 = {new: OutputSpec(new, specs[old].shape, specs[old].format_order, specs[old].format_type,
                              specs[old].quant) for new, old in renamed.items()}  # fmt: skip
    cfg = config(side, 0.25, ssd)
    assert_same(decode(outputs2, specs2, cfg), decode(outputs, specs, cfg))


@settings(max_examples=30, deadline=None)
@given(ssd_heads(kinds=("probabilities",)), st.permutations([0, 1, 2, 3]))
def test_moving_the_regression_channels_with_the_configs_indices_keeps_the_same_detections(heads, order):
    outputs, specs, names, side, ssd = heads
    moved = dict(outputs)
    for reg, _ in names:
        entries = outputs[reg].reshape(*outputs[reg].shape[:2], -1, 4)
        moved[reg] = entries[..., np.argsort(order)].reshape(outputs[reg].shape)  # channel order[k] holds channel k
    indices = [order[i] for i in ssd.box_indices]
    ssd2 = SsdConfig(ssd.anchors, ssd.centers_scale_factor, ssd.bbox_dimensions_scale_factor, *indices,
                     background_class=ssd.background_class, normalize_boxes=ssd.normalize_boxes)  # fmt: skip
    assert_same(decode(moved, specs, config(side, 0.25, ssd2)), decode(outputs, specs, config(side, 0.25, ssd)))


ANCHORS = (((0.2, 0.4), (0.5, 0.25)), ((0.6, 0.6),))


def planted(layer: int, row: int, col: int, anchor: int, t: list[float], classes: list[float], side: int = 64):
    """Two layers (4 x 4 with two anchors, 2 x 2 with one) of zeros but one entry: regression ``t`` (ty, tx,
    th, tw), class values ``classes``."""
    nc = len(classes)
    outputs, specs = {}, {}
    for i, ((h, w), group) in enumerate(zip(((4, 4), (2, 2)), ANCHORS, strict=True)):
        na = len(group)
        reg, cls = np.zeros((h, w, na, 4), np.float32), np.zeros((h, w, na, nc), np.float32)
        if i == layer:
            reg[row, col, anchor], cls[row, col, anchor] = t, classes
        for kind, array in (("reg", reg), ("cls", cls)):
            name = f"{kind}{i}"
            outputs[name] = array.reshape(h, w, -1)
            specs[name] = OutputSpec(name, outputs[name].shape, FormatOrder.NHWC, FormatType.FLOAT32)
    return outputs, specs


def ssd_of(**more) -> SsdConfig:
    return SsdConfig(ANCHORS, centers_scale_factor=10, bbox_dimensions_scale_factor=5, **more)


@pytest.mark.parametrize(("layer", "row", "col", "anchor"), [(0, 0, 0, 0), (0, 2, 3, 1), (1, 1, 0, 0)])
def test_a_planted_entry_of_zero_offsets_comes_back_as_its_anchor_box_on_its_cell_centre(layer, row, col, anchor):
    outputs, specs = planted(layer, row, col, anchor, [0, 0, 0, 0], [0.1, 0.8])
    got = decoder(HeadFamily.SSD)(outputs, specs, config(64, 0.5, ssd_of()))
    grid = (4, 2)[layer]
    wa, ha = ANCHORS[layer][anchor]
    cx, cy = (col + 0.5) / grid, (row + 0.5) / grid
    assert got.class_ids.tolist() == [1] and got.scores.tolist() == [np.float32(0.8)]
    np.testing.assert_allclose(
        got.boxes[0], np.array([cx - wa / 2, cy - ha / 2, cx + wa / 2, cy + ha / 2]) * 64, rtol=1e-6
    )


def test_a_planted_entry_moves_by_its_offsets_over_the_centre_factor_and_grows_by_exp_over_the_size_factor():
    t = [1.0, -2.0, np.log(2) * 5, np.log(3) * 5]  # ty, tx, th, tw
    outputs, specs = planted(0, 1, 2, 1, t, [0.9])
    got = decode(outputs, specs, config(64, 0.5, ssd_of()))
    wa, ha = ANCHORS[0][1]
    cx, cy = (2 + 0.5) / 4 + (-2.0 / 10) * wa, (1 + 0.5) / 4 + (1.0 / 10) * ha
    w, h = 3 * wa, 2 * ha
    np.testing.assert_allclose(got.boxes[0], np.array([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]) * 64, rtol=1e-5)


@pytest.mark.parametrize(("background", "want"), [(None, [0, 2]), (0, [1]), (2, [0])])
def test_the_background_class_yields_nothing_and_a_first_background_moves_every_class_id_down_by_one(background, want):
    outputs, specs = planted(1, 0, 1, 0, [0, 0, 0, 0], [0.9, 0.1, 0.7])
    got = decode(outputs, specs, config(64, 0.5, ssd_of(background_class=background)))
    assert sorted(got.class_ids.tolist()) == want


def test_hailorts_clip_holds_each_corner_within_the_grid_less_one_of_its_layer():
    outputs, specs = planted(1, 0, 0, 0, [-2, -2, 0, 0], [0.9])  # a box over the left and top edges
    clipped = decode(outputs, specs, config(64, 0.5, ssd_of(normalize_boxes=True)))
    free = decode(outputs, specs, config(64, 0.5, ssd_of()))
    assert (free.boxes[0][:2] < 0).all() and (clipped.boxes[0] >= 0).all()
    np.testing.assert_array_equal(clipped.boxes[0][2:], free.boxes[0][2:])  # within [0, 1] of a 2 x 2 grid
    outputs, specs = planted(1, 1, 1, 0, [30, 30, 0, 0], [0.9])  # far right and below: clipped to grid - 1 = 1
    np.testing.assert_array_equal(
        decode(outputs, specs, config(64, 0.5, ssd_of(normalize_boxes=True))).boxes[0], [64] * 4
    )


def test_the_layout_pairs_each_grid_by_its_anchor_count_and_orders_layers_largest_grid_first():
    _, specs = planted(0, 0, 0, 0, [0, 0, 0, 0], [0.9, 0.1, 0.3])
    heads = head_layout(HeadFamily.SSD, dict(reversed(list(specs.items()))), (64, 64), ANCHORS)
    assert [(lv.grid, lv.box.name, lv.classes.name) for lv in heads.levels] == [
        ((4, 4), "reg0", "cls0"),
        ((2, 2), "reg1", "cls1"),
    ]
    assert {o.role for o in heads.outputs} == {HeadRole.ANCHOR_BOXES, HeadRole.ANCHOR_CLASSES}
    assert heads.classes == 3 and heads.reg_max == 1 and heads.anchors == ANCHORS


def spec(name: str, shape: tuple[int, int, int]) -> OutputSpec:
    return OutputSpec(name, shape, FormatOrder.NHWC, FormatType.FLOAT32)


@pytest.mark.parametrize(
    ("shapes", "anchors", "message"),
    [
        ([(4, 4, 8), (4, 4, 8)], (((0.1, 0.1), (0.2, 0.2)),), r"grid 4x4: .*both have 4 x 2 channels.*nc == 4"),
        ([(4, 4, 8), (4, 4, 6)], (((0.1, 0.1),),), r"grid 4x4: found 2 output\(s\).*regression map of 4 channels"),
        ([(4, 4, 8), (4, 4, 6), (2, 2, 4), (2, 2, 3)], ANCHORS[:1], r"2 grid\(s\) but anchors for 1 layer"),
        ([(4, 4, 8), (4, 4, 5)], ANCHORS[:1], r"4 x anchors box channels and anchors x nc class channels"),
        ([(4, 4, 8), (4, 4, 6)], (), r"an SSD head but no anchors given"),
        (
            [(4, 4, 8), (4, 4, 6), (2, 2, 4), (2, 2, 2)],
            ANCHORS,
            r"different class counts per anchor \(grid 4x4: 3, grid 2x2: 2\)",
        ),
    ],
)
def test_outputs_that_are_not_the_configs_ssd_head_are_refused_naming_them(shapes, anchors, message):
    specs = {f"m{i}": spec(f"m{i}", s) for i, s in enumerate(shapes)}
    with pytest.raises(HeadPairingError, match=message):
        head_layout(HeadFamily.SSD, specs, (64, 64), anchors)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (DecodeConfig((64, 64)), r"DecodeConfig.ssd is None"),
        (DecodeConfig((64, 64), ssd=ssd_of(), classes_are_probabilities=False), r"SSD op applies no activation"),
        (DecodeConfig((64, 64), ssd=ssd_of(background_class=1)), r"background class 1 .*first \(0\) or the last \(2\)"),
    ],
)
def test_a_decoding_the_ssd_op_could_not_do_is_refused_saying_why(cfg, message):
    outputs, specs = planted(0, 0, 0, 0, [0, 0, 0, 0], [0.9, 0.1, 0.3])
    with pytest.raises(HarnessError, match=message):
        decode(outputs, specs, cfg)


# ---------------------------------------------------------------------------------------------- the SSD config

DOCUMENT = {
    "centers_scale_factor": 10,
    "bbox_dimensions_scale_factor": 5,
    "background_removal_index": 0,
    "bbox_decoders": [{"w": [0.1, 0.2], "h": [0.3, 0.4]}, {"w": [0.5], "h": [0.6]}],
}


def test_an_ssd_config_file_gives_per_layer_anchors_as_width_height_pairs_and_hailorts_default_channel_order():
    ssd = SsdConfig.from_dict(DOCUMENT, "ssd.yaml")
    assert ssd.anchors == (((0.1, 0.3), (0.2, 0.4)), ((0.5, 0.6),))
    assert (ssd.centers_scale_factor, ssd.bbox_dimensions_scale_factor, ssd.background_class) == (10, 5, 0)
    assert ssd.box_indices == (0, 1, 2, 3) and not ssd.normalize_boxes
    moved = SsdConfig.from_dict({**DOCUMENT, "ty": 1, "tx": 0, "th": 3, "tw": 2}, "ssd.yaml")
    assert moved.box_indices == (1, 0, 3, 2)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (
            {"bbox_decoders": [{"w": [0.1], "h": [0.3, 0.4]}]},
            DocumentError,
            r"ssd.yaml: field bbox_decoders\[0\].h .*as many",
        ),
        (
            {"bbox_decoders": [{"w": [0.1], "h": [0.3], "reg": 1}]},
            DocumentError,
            r"bbox_decoders\[0\] has unknown keys",
        ),
        ({"bbox_decoders": [{"w": [0.0], "h": [0.3]}]}, DocumentError, r"bbox_decoders\[0\].w .*numbers > 0"),
        ({"bbox_decoders": []}, DocumentError, r"bbox_decoders .*one bbox decoder per layer"),
        ({"centers_scale_factor": 0}, DocumentError, r"centers_scale_factor .*integer >= 1"),
        (
            {"ty": 1},
            DocumentError,
            r"ssd.yaml: SSD config: ty, tx, th, tw indices \(1, 1, 2, 3\); expected each of 0, 1, 2, 3 once",
        ),
        ({"clip": True}, DocumentError, r"unknown keys \['clip'\]"),
    ],
)
def test_an_ssd_config_file_hailort_could_not_take_is_refused_naming_the_key(change, error, message):
    with pytest.raises(error, match=message):
        SsdConfig.from_dict({**DOCUMENT, **change}, "ssd.yaml")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"anchors": ()}, r"expected per layer at least one \(width, height\) anchor"),
        ({"anchors": (((0.1, 0.2),), ())}, r"expected per layer at least one"),
        ({"anchors": (((0.1, -0.2),),)}, r"anchors\[0\] holds \(0.1, -0.2\)"),
        ({"bbox_dimensions_scale_factor": 0}, r"bbox_dimensions_scale_factor is 0"),
        ({"background_class": -1}, r"background_class is -1"),
    ],
)
def test_an_ssd_config_hailort_could_not_take_is_refused_when_made(fields, message):
    with pytest.raises(SsdConfigError, match=message):
        SsdConfig(**{"anchors": ANCHORS, "centers_scale_factor": 10, "bbox_dimensions_scale_factor": 5, **fields})


def test_an_ssd_configs_digest_is_that_of_its_fields_read_from_any_file_spelling_and_changes_with_any_field():
    ssd = SsdConfig.from_dict(DOCUMENT, "ssd.yaml")
    spelled = SsdConfig.from_dict({**DOCUMENT, "ty": 0, "normalize_boxes": False, "centers_scale_factor": 10}, "b")
    assert spelled.digest == ssd.digest and len(ssd.digest) == 64
    changes = [
        {"centers_scale_factor": 5},
        {"bbox_dimensions_scale_factor": 10},
        {"background_class": None},
        {"normalize_boxes": True},
        {"ty_index": 1, "tx_index": 0},
        {"anchors": (((0.1, 0.3), (0.2, 0.4)), ((0.6, 0.5),))},
    ]
    digests = {dataclasses.replace(ssd, **change).digest for change in changes}
    assert len(digests) == len(changes) and ssd.digest not in digests
