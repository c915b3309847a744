"""Properties of the raw six-output YOLOv8/YOLO11 decoder, and the fast code against the loop reference."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import HeadPairingError, SpecError
from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo
from harness.decode import dfl
from harness.decode.dfl import decode_candidates, pair_heads
from harness.decode.maps import classes_are_probabilities
from harness.decode.nms import nms_hailort, nms_ultralytics
from harness.families.yolov8 import decode as yolov8
from harness.families.yolov8.decode import decode
from harness.formats.quant import dequantize

from support.reference.decode import ReferenceHead, reference_candidates

STRIDES = (8, 16, 32)


@dataclass(frozen=True)
class Heads:
    """Six generated head outputs and what the generator knows about them."""

    outputs: dict[str, np.ndarray]
    specs: dict[str, OutputSpec]
    reference: tuple[ReferenceHead, ...]
    input_hw: tuple[int, int]
    probabilities: bool
    nc: int
    reg_max: int

    def __repr__(self) -> str:  # the arrays are too long to be of use in a failure report
        layout = {name: (spec.shape, spec.format_type.name, spec.quant[:2]) for name, spec in self.specs.items()}
        known = f"input_hw={self.input_hw}, nc={self.nc}, reg_max={self.reg_max}, probabilities={self.probabilities}"
        return f"Heads({known}, {layout})"

    def config(self, **overrides) -> DecodeConfig:
        return DecodeConfig(input_hw=self.input_hw, **overrides)


def pairing_is_determined(nc: int, reg_max: int) -> bool:
    """Whether pair_heads finds the box head: the only count that is a multiple of 4, or 64 when
    both are (so nc = 64 with reg_max 8 reads as nc = 32 with reg_max 16, and is left out)."""
    return nc != 4 * reg_max and (not (nc % 4 == 0 and nc >= 8) or reg_max == 16)


def _quant(zero_point: float, scale: float, qmax: int) -> QuantInfo:
    return QuantInfo(zero_point, scale, (0 - zero_point) * scale, (qmax - zero_point) * scale)


def _head(rng, name, grid, channels, fmt, kind, per_feature) -> tuple[np.ndarray, OutputSpec]:
    """kind: 'box' (DFL logits), 'logits' (class logits, mostly low), 'probabilities'."""
    shape = (*grid, channels)
    if fmt is FormatType.FLOAT32:
        if kind == "box":
            values = rng.normal(0, 3, shape)
        else:
            values = rng.normal(-5, 3, shape)
            if kind == "probabilities":
                values = 1 / (1 + np.exp(-values))
        return values.astype(np.float32), OutputSpec(name, shape, FormatOrder.FCR, fmt)
    qmax = 255 if fmt is FormatType.UINT8 else 65535
    step = 255 / qmax
    count = channels if per_feature else 1
    if kind == "probabilities":
        quant = tuple(_quant(0, rng.uniform(0.4, 1) / qmax, qmax) for _ in range(count))
    elif kind == "logits":
        quant = tuple(_quant(rng.integers(128, 256) / step, rng.uniform(0.02, 0.12) * step, qmax) for _ in range(count))
    else:
        quant = tuple(_quant(rng.integers(0, 256) / step, rng.uniform(0.02, 0.2) * step, qmax) for _ in range(count))
    raw = rng.integers(0, qmax + 1, shape).astype(fmt.numpy_dtype)
    return raw, OutputSpec(name, shape, FormatOrder.FCR, fmt, quant)


@st.composite
def random_heads(
    draw,
    max_side: int = 10,
    formats: tuple[FormatType, ...] = (FormatType.FLOAT32, FormatType.UINT8, FormatType.UINT16),
):
    """Six outputs for input sizes 64..32*max_side (multiples of 32), nc 1..80, reg_max 16 or 8,
    FLOAT32 or quantized with random quant parameters, class logits or probabilities, random names
    in random order."""
    input_hw = (32 * draw(st.integers(2, max_side)), 32 * draw(st.integers(2, max_side)))
    reg_max = draw(st.sampled_from([16, 8]))
    nc = draw(st.integers(1, 80).filter(lambda n: pairing_is_determined(n, reg_max)))
    fmt = draw(st.sampled_from(formats))
    probabilities = draw(st.booleans())
    per_feature = draw(st.booleans())
    names = draw(st.lists(st.from_regex(r"[a-z][a-z0-9_/]{0,12}", fullmatch=True), min_size=6, max_size=6, unique=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    entries, reference = [], []
    for i, stride in enumerate(STRIDES):
        grid = (input_hw[0] // stride, input_hw[1] // stride)
        box_name, class_name = names[2 * i], names[2 * i + 1]
        entries.append(_head(rng, box_name, grid, 4 * reg_max, fmt, "box", per_feature))
        entries.append(
            _head(rng, class_name, grid, nc, fmt, "probabilities" if probabilities else "logits", per_feature)
        )
        reference.append(ReferenceHead(box_name, class_name, stride))
    order = draw(st.permutations(range(6)))
    return Heads(
        outputs={entries[i][1].name: entries[i][0] for i in order},
        specs={entries[i][1].name: entries[i][1] for i in order},
        reference=tuple(reference),
        input_hw=input_hw,
        probabilities=probabilities,
        nc=nc,
        reg_max=reg_max,
    )


def assert_same(a, b) -> None:
    for field in ("boxes", "scores", "class_ids"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


@given(random_heads(max_side=20))
def test_fast_decoder_equals_reference_on_random_heads(heads):
    boxes, scores = decode_candidates(heads.outputs, heads.specs, heads.config())
    ref_boxes, ref_scores = reference_candidates(heads.outputs, heads.specs, heads.reference, heads.probabilities)
    assert boxes.dtype == scores.dtype == np.float32
    assert scores.shape == (sum((heads.input_hw[0] // s) * (heads.input_hw[1] // s) for s in STRIDES), heads.nc)
    np.testing.assert_allclose(boxes, ref_boxes, rtol=1e-5, atol=2e-3)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-5, atol=1e-6)


@given(random_heads(max_side=6), st.sampled_from(list(NmsMode)), st.sampled_from([0.0, 0.001, 0.2, 0.5, 0.999, 1.0]))
def test_decode_equals_the_nms_of_all_candidates(heads, mode, threshold):
    # No caps, so that a candidate just above the threshold missed by the pre-selection would show.
    config = heads.config(mode=mode, score_threshold=threshold, max_per_class=10**6, max_total=10**6)
    nms = {NmsMode.HAILORT: nms_hailort, NmsMode.ULTRALYTICS: nms_ultralytics}[mode]
    candidates = decode_candidates(heads.outputs, heads.specs, config)
    assert_same(decode(heads.outputs, heads.specs, config), nms(*candidates, config))


@given(random_heads(max_side=6), st.data())
def test_permuting_or_renaming_the_six_outputs_changes_nothing(heads, data):
    config = heads.config(score_threshold=0.1)
    names = list(heads.specs)
    new_names = data.draw(st.lists(st.text(min_size=1, max_size=8), min_size=6, max_size=6, unique=True))
    order = data.draw(st.permutations(range(6)))
    rename = dict(zip(names, new_names, strict=True))
    specs = {rename[names[i]]: dataclasses.replace(heads.specs[names[i]], name=rename[names[i]]) for i in order}
    outputs = {rename[names[i]]: heads.outputs[names[i]] for i in order}
    assert_same(decode(outputs, specs, config), decode(heads.outputs, heads.specs, config))
    for got, expected in zip(
        decode_candidates(outputs, specs, config),
        decode_candidates(heads.outputs, heads.specs, config),
        strict=True,
    ):
        np.testing.assert_array_equal(got, expected)


@given(random_heads(max_side=6))
def test_a_leading_batch_of_one_changes_nothing(heads):
    batched = {name: array[None] for name, array in heads.outputs.items()}
    config = heads.config(score_threshold=0.1)
    assert_same(decode(batched, heads.specs, config), decode(heads.outputs, heads.specs, config))


def _class_values(heads: Heads) -> np.ndarray:
    parts = []
    for head in heads.reference:
        spec, raw = heads.specs[head.class_name], heads.outputs[head.class_name]
        values = dequantize(raw, spec.quant) if spec.is_quantized else raw
        parts.append(values.reshape(-1, heads.nc))
    return np.concatenate(parts)


@given(random_heads(max_side=6), st.sampled_from([None, True, False]))
def test_sigmoid_is_applied_only_to_logits(heads, override):
    _, scores = decode_candidates(heads.outputs, heads.specs, heads.config(classes_are_probabilities=override))
    values = _class_values(heads)
    if heads.probabilities if override is None else override:
        np.testing.assert_array_equal(scores, values)
    else:
        np.testing.assert_allclose(scores, 1 / (1 + np.exp(-values.astype(np.float64))), rtol=1e-5, atol=1e-6)


@given(random_heads(max_side=6, formats=(FormatType.FLOAT32,)))
def test_anchor_centres_sit_at_half_cells(heads):
    outputs = dict(heads.outputs)
    for head in heads.reference:
        bins = outputs[head.box_name].reshape(*outputs[head.box_name].shape[:2], 4, heads.reg_max).copy()
        bins[:, :, 2:] = bins[:, :, :2]  # right = left, bottom = top: the box is centred on its anchor
        outputs[head.box_name] = bins.reshape(outputs[head.box_name].shape)
    boxes, _ = decode_candidates(outputs, heads.specs, heads.config())
    expected = []
    for stride in STRIDES:  # stride ascending, then row-major: Ultralytics' make_anchors order
        rows, cols = heads.input_hw[0] // stride, heads.input_hw[1] // stride
        y, x = np.meshgrid(np.arange(rows) + 0.5, np.arange(cols) + 0.5, indexing="ij")
        expected.append(np.stack([x.ravel(), y.ravel()], axis=1) * stride)
    centres = (boxes[:, :2] + boxes[:, 2:]) / 2
    np.testing.assert_allclose(centres, np.concatenate(expected), atol=1e-3)


@given(random_heads(max_side=6))
def test_pairing_uses_grid_and_channels_not_names(heads):
    # Give every box head a class-sounding name and every class head a box-sounding one.
    misleading = {}
    for i, head in enumerate(heads.reference):
        misleading[head.box_name] = f"/model.23/cv3.{i}/cv3.{i}.2/Conv_cls"
        misleading[head.class_name] = f"/model.23/cv2.{i}/cv2.{i}.2/Conv_box"
    specs = {misleading[n]: dataclasses.replace(s, name=misleading[n]) for n, s in heads.specs.items()}
    pairs = pair_heads(specs, heads.input_hw)
    assert [p.stride for p in pairs] == list(STRIDES)
    for pair, head in zip(pairs, heads.reference, strict=True):
        assert (pair.box_name, pair.class_name) == (misleading[head.box_name], misleading[head.class_name])
        assert pair.grid == (heads.input_hw[0] // head.stride, heads.input_hw[1] // head.stride)
        assert pair.reg_max == heads.reg_max


def _specs(input_hw, layout) -> dict[str, OutputSpec]:
    """layout: (name, stride, channels) triples."""
    return {
        name: OutputSpec(name, (input_hw[0] // s, input_hw[1] // s, c), FormatOrder.FCR, FormatType.FLOAT32)
        for name, s, c in layout
    }


SIX = [("b8", 8, 64), ("c8", 8, 80), ("b16", 16, 64), ("c16", 16, 80), ("b32", 32, 64), ("c32", 32, 80)]


def _defects():
    missing = [
        (f"{name} missing", SIX[:i] + SIX[i + 1 :], (640, 640), ["expected exactly 2"])
        for i, (name, *_) in enumerate(SIX)
    ]
    return [
        *missing,
        ("three on one grid", [*SIX, ("extra8", 8, 32)], (640, 640), ["'extra8'", "found 3", "(80, 80, 32)"]),
        ("nc == 4 * reg_max", [(n, s, 64) for n, s, _ in SIX], (640, 640), ["ambiguous", "'c8'", "(80, 80, 64)"]),
        (
            "both multiples of 4, neither 64",
            [(n, s, 32 if n[0] == "b" else 80) for n, s, _ in SIX],
            (640, 640),
            ["cannot tell"],
        ),
        ("nc differs", [*SIX[:5], ("c32", 32, 81)], (640, 640), ["class heads (nc)", "stride 32: 81", "stride 8: 80"]),
        (
            "reg_max differs",
            [(n, s, 3 if n[0] == "c" else 32 if s == 32 else 64) for n, s, _ in SIX],
            (640, 640),
            ["box heads", "stride 32: 32", "stride 8: 64"],
        ),
    ]


@pytest.mark.parametrize(("layout", "input_hw", "words"), [d[1:] for d in _defects()], ids=[d[0] for d in _defects()])
def test_ambiguous_or_missing_heads_raise_a_clear_error(layout, input_hw, words):
    specs = _specs(input_hw, layout)
    with pytest.raises(HeadPairingError) as error:
        pair_heads(specs, input_hw)
    message = str(error.value)
    for word in words:
        assert word in message
    if "missing" in message or "expected exactly 2" in message:
        assert re.search(r"grid \d+x\d+", message)


def test_grids_without_one_integral_stride_raise_a_clear_error():
    specs = _specs((640, 640), SIX)
    with pytest.raises(HeadPairingError, match=r"grid 80x80 .*input 650x640 does not give one integral stride"):
        pair_heads(specs, (650, 640))
    with pytest.raises(HeadPairingError, match=r"grid 80x80 .*input 640x1280"):
        pair_heads(specs, (640, 1280))


def test_an_nms_output_is_not_taken_for_a_head():
    nms = OutputSpec("nms", (80, 5, 100), FormatOrder.NMS_BY_CLASS, FormatType.FLOAT32, nms=NmsShape(80, 100))
    with pytest.raises(HeadPairingError, match=r"output 'nms'.*not a raw head map"):
        pair_heads({**_specs((640, 640), SIX), "nms": nms}, (640, 640))


def test_classes_are_probabilities_follows_limvals_then_values():
    def spec(fmt, quant=()):
        return OutputSpec("cls", (2, 2, 3), FormatOrder.FCR, fmt, quant)

    sigmoid_compiled = QuantInfo(0, 0.0032765, 0, 0.8355)  # a real cls conv (hailo-facts.md section 3)
    logits = QuantInfo(200, 0.1, -20, 5.5)
    values = np.full((2, 2, 3), 0.5, np.float32)
    assert classes_are_probabilities(spec(FormatType.UINT8, (sigmoid_compiled,)), values - 5)
    assert not classes_are_probabilities(spec(FormatType.UINT8, (logits,)), values)
    assert classes_are_probabilities(spec(FormatType.FLOAT32), values)
    assert not classes_are_probabilities(spec(FormatType.FLOAT32), values - 1)
    assert classes_are_probabilities(spec(FormatType.UINT8, (QuantInfo(0, 0.01, 0, 0),)), values)


def _six_heads(fmt=FormatType.FLOAT32) -> tuple[dict, dict]:
    specs = _specs((64, 64), [(n, s, c) for n, s, c in SIX])
    outputs = {n: np.zeros(s.shape, np.float32) for n, s in specs.items()}
    return outputs, specs


def test_arrays_that_contradict_their_spec_raise_a_spec_error():
    outputs, specs = _six_heads()
    config = DecodeConfig((64, 64))
    with pytest.raises(SpecError, match=r"output 'c8': array shape \(8, 7, 80\).*expected \(8, 8, 80\)"):
        decode({**outputs, "c8": np.zeros((8, 7, 80), np.float32)}, specs, config)
    with pytest.raises(SpecError, match=r"output 'b16': format type FLOAT32 but array dtype uint8"):
        decode({**outputs, "b16": np.zeros((4, 4, 64), np.uint8)}, specs, config)
    with pytest.raises(SpecError, match=r"output 'b32': missing"):
        decode({n: a for n, a in outputs.items() if n != "b32"}, specs, config)
    zero = {
        **specs,
        "b8": dataclasses.replace(specs["b8"], format_type=FormatType.UINT8, quant=(QuantInfo(0, 0, 0, 0),)),
    }
    with pytest.raises(SpecError, match=r"output 'b8': quantized \(UINT8\).*expected one non-zero"):
        decode({**outputs, "b8": np.zeros((8, 8, 64), np.uint8)}, zero, config)


def test_class_outputs_that_disagree_on_the_sigmoid_raise_a_spec_error():
    outputs, specs = _six_heads()
    outputs["c16"] = np.full((4, 4, 80), -3, np.float32)
    with pytest.raises(SpecError, match=r"'c16': logits.*classes_are_probabilities"):
        decode(outputs, specs, DecodeConfig((64, 64)))


def _with_float_dfl_and_head_outputs(model, names: list[str]):
    """The exports' DFL integral is a dynamically quantized ConvInteger; put back the float conv with
    weights 0..15 (ultralytics: ultralytics/nn/modules/block.py, ``DFL``) and expose the head convs."""
    import onnx

    nodes = list(model.graph.node)
    conv = next(n for n in nodes if n.op_type == "ConvInteger" and "/dfl/" in n.name)
    quantize_input = next(n for n in nodes if n.op_type == "DynamicQuantizeLinear" and n.output[0] == conv.input[0])
    cast = next(n for n in nodes if n.op_type == "Cast" and n.input[0] == conv.output[0])
    rescale = next(n for n in nodes if n.op_type == "Mul" and cast.output[0] in n.input)
    scales = next(n for n in nodes if n.output[0] in rescale.input and n is not cast)
    weight = onnx.numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(1, 16, 1, 1), "dfl_float_weight")
    float_conv = onnx.helper.make_node("Conv", [quantize_input.input[0], weight.name], [rescale.output[0]])
    kept = [n for n in nodes if n not in (conv, quantize_input, cast, rescale, scales)]
    kept.insert(kept.index(next(n for n in kept if rescale.output[0] in n.input)), float_conv)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    model.graph.initializer.append(weight)
    model.graph.output.extend(onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in names)
    return model


@pytest.mark.fixtures
@pytest.mark.parametrize(
    ("model_file", "head", "size"),
    [("yolov8n_coco80_640_int8.onnx", "/model.22", 640), ("yolo11n_coco80_320_int8.onnx", "/model.23", 320)],
)
def test_decoding_the_six_head_convs_reproduces_the_ultralytics_head_output(shared_fixtures, model_file, head, size):
    import onnx
    import onnxruntime as ort
    from PIL import Image

    names = [f"{head}/cv{b}.{i}/cv{b}.{i}.2/Conv_output_0" for i in range(3) for b in (2, 3)]
    model = _with_float_dfl_and_head_outputs(onnx.load(shared_fixtures / "onnx" / model_file), names)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    image_path = sorted((shared_fixtures / "datasets" / "coco128_val16" / "images" / "val2017").glob("*.jpg"))[0]
    image = np.asarray(Image.open(image_path).convert("RGB").resize((size, size)), dtype=np.float32) / 255
    full, *heads = session.run(["output0", *names], {session.get_inputs()[0].name: image.transpose(2, 0, 1)[None]})
    # Channel-last, as a backend hands them over, and in a scrambled order.
    outputs = {n: a[0].transpose(1, 2, 0) for n, a in reversed(list(zip(names, heads, strict=True)))}
    specs = {n: OutputSpec(n, a.shape, FormatOrder.NHWC, FormatType.FLOAT32) for n, a in outputs.items()}
    boxes, scores = decode_candidates(outputs, specs, DecodeConfig((size, size)))
    xywh = full[0, :4].T
    expected = np.concatenate([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], axis=1)
    np.testing.assert_allclose(boxes, expected, atol=1e-3)
    np.testing.assert_allclose(scores, full[0, 4:].T, atol=1e-6)
    assert (scores.max(axis=1) > 0.25).sum() > 0


def test_a_spec_filed_under_another_name_raises_a_spec_error():
    specs = _specs((640, 640), SIX)
    specs["c8"] = specs.pop("c16")
    with pytest.raises(SpecError, match=r"specs\['c8'\] is the spec of output 'c16'"):
        pair_heads(specs, (640, 640))


def _probability_floor(threshold: float) -> float:
    return threshold - dfl._PRESELECT_MARGIN


THRESHOLDS = st.sampled_from([0.0, 1e-6, 0.001, 0.25, 0.9, 1.0])


@given(random_heads(max_side=6), st.sampled_from([None, True, False]), THRESHOLDS)
def test_passing_decodes_exactly_the_anchors_whose_class_value_reaches_the_floor(heads, override, threshold):
    # passing reads the class maps as they came (codes, bit patterns); the anchors it decodes are those
    # whose dequantized class value reaches the floor, decoded as candidates decodes them
    config = heads.config(score_threshold=threshold, classes_are_probabilities=override)
    layout = yolov8.layout(heads.specs, heads.input_hw)
    boxes, scores = dfl.passing(heads.outputs, layout, config)
    all_boxes, all_scores = dfl.candidates(heads.outputs, layout, config)
    probabilities = heads.probabilities if override is None else override
    floor = np.float32(dfl._class_value_floor(_probability_floor(threshold), probabilities))
    reaching = (_class_values(heads) >= floor).any(axis=1)
    np.testing.assert_array_equal(boxes, all_boxes[reaching])
    np.testing.assert_array_equal(scores, all_scores[reaching])


ABOVE_ONE = np.nextafter(np.float32(1), np.float32(2))
EDGE_VALUES = np.array([-0.0, np.nan, -np.nan, -1e-45, ABOVE_ONE, np.inf, -np.inf, 2.0], np.float32)


@given(
    random_heads(max_side=4, formats=(FormatType.FLOAT32,)),
    st.sampled_from(list(EDGE_VALUES)),
    st.integers(0, 2),
    st.integers(0, 10**6),
    st.sampled_from([0.001, 0.25]),
)
def test_a_value_outside_0_and_1_anywhere_in_a_class_map_decides_as_the_float_comparisons_do(
    heads, value, level, place, threshold
):
    # the bit-pattern pass reads a map as probabilities only if every value it finds lies in [0, 1]:
    # one value outside (or -0.0, which the comparisons take for 0) anywhere gives the verdict of the float
    # comparisons, so decode keeps giving the NMS of every candidate, or the same refusal
    name = heads.reference[level].class_name
    outputs = dict(heads.outputs)
    values = outputs[name].copy().reshape(-1)
    values[place % len(values)] = value
    outputs[name] = values.reshape(outputs[name].shape)
    config = heads.config(score_threshold=threshold, max_per_class=10**6, max_total=10**6)
    try:
        expected = nms_hailort(*decode_candidates(outputs, heads.specs, config), config)
    except SpecError as refusal:
        with pytest.raises(SpecError, match=re.escape(str(refusal))):
            decode(outputs, heads.specs, config)
    else:
        with np.errstate(invalid="ignore"):
            assert_same(decode(outputs, heads.specs, config), expected)


@given(st.sampled_from([1, 2, 4, 8, 16, 24, 32, 136]), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_the_dfl_sums_are_numpys_over_each_sides_bins_to_the_bit(reg_max, cells, seed):
    box_values = (np.random.default_rng(seed).normal(0, 4, (cells, 4 * reg_max))).astype(np.float32)
    bins = box_values.reshape(cells, 4, reg_max)
    if reg_max == 1:
        expected = bins[:, :, 0]
    else:
        e = np.exp(bins - bins.max(axis=2, keepdims=True))
        expected = (e * np.arange(reg_max, dtype=np.float32)).sum(axis=2) / e.sum(axis=2)
    np.testing.assert_array_equal(dfl._side_distances(box_values, reg_max), expected)
