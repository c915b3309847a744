"""The emulator backend: a float ONNX quantized by onnxruntime into an emulated HEF, run as HailoRT hands back outputs.

Built on the demo model (a float YOLO11n export, 2 classes, 256x256) with synthetic fire/smoke frames as
in-domain calibration and scenes without fire or smoke as off-domain calibration. Quantized models are
built once per module; runtime-only settings (output format, NMS) reuse them from the cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PIL import Image

from harness.backends.base import InputSpec, Runner
from harness.backends.emulator import (
    CalibrationMethod,
    EmulatedHef,
    EmulatorOptions,
    EmulatorRunner,
    build,
    build_emulated_hef,
)
from harness.backends.emulator.graph import BATCH, _batch_dimension, hef_graph
from harness.backends.emulator.outputs import family_part
from harness.core.errors import GraphError, HarnessError, SpecError
from harness.core.head_family import HeadRole
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.decode.dfl import decode_candidates
from harness.decode.nms import nms_hailort
from harness.families import REGISTERED
from harness.formats.nms_buffer import by_class_size, decode_nms
from harness.formats.quant import dequantize, quantize
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.onnx_graph import load_model
from harness.inputs.preprocess import letterbox, load_image
from harness.inputs.synthetic import OFFDOMAIN_SPLIT, Recipe, split_frame

INPUT_HW = (256, 256)
CALIBRATION_COUNT = 8
RECIPE = Recipe(seed=0, train=0, val=8, calib=CALIBRATION_COUNT, offdomain_calib=CALIBRATION_COUNT, imgsz=256)


def _write_split(folder: Path, split: str, count: int) -> Path:
    folder.mkdir(parents=True)
    for index in range(count):
        Image.fromarray(split_frame(RECIPE, split, index).image).save(folder / f"{split}_{index:03d}.png")
    return folder


@pytest.fixture(scope="module")
def demo_onnx() -> Path:
    if not DEMO.is_file():
        pytest.skip(f"demo model not found at {DEMO}")
    return DEMO


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("emulator-images")
    return {
        "in_domain": _write_split(root / "calib", "calib", CALIBRATION_COUNT),
        "off_domain": _write_split(root / "offdomain", OFFDOMAIN_SPLIT, CALIBRATION_COUNT),
        "val": _write_split(root / "val", "val", RECIPE.val),
    }


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("emulator-cache")


def _options(**changes: object) -> EmulatorOptions:
    settings: dict[str, object] = {"calibration_count": CALIBRATION_COUNT, "output_format": FormatType.UINT8}
    settings.update(changes)
    return EmulatorOptions(**settings)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def sigmoid_hef(demo_onnx: Path, images: dict[str, Path], cache_dir: Path) -> EmulatedHef:
    return build_emulated_hef(demo_onnx, images["in_domain"], _options(sigmoid_inside=True), cache_dir)


@pytest.fixture(scope="module")
def logits_hef(demo_onnx: Path, images: dict[str, Path], cache_dir: Path) -> EmulatedHef:
    return build_emulated_hef(demo_onnx, images["in_domain"], _options(sigmoid_inside=False), cache_dir)


def _frames(folder: Path) -> list[np.ndarray]:
    """uint8 (1, H, W, 3) letterboxed frames of a folder's images, as calibration and evaluation prepare them."""
    return [letterbox(load_image(p), INPUT_HW)[0][None] for p in sorted(folder.iterdir())]


def _first_calibration_frame(hef: EmulatedHef) -> np.ndarray:
    return letterbox(load_image(hef.calibration_images[0]), INPUT_HW)[0][None]


def _class_heads(hef: EmulatedHef) -> list[OutputSpec]:
    return [h for h in hef.heads if h.channels == hef.classes]


# ---------------------------------------------------------------------------------------------- contract


def test_input_is_uint8_nhwc_rgb_with_the_normalization_inside_the_graph(sigmoid_hef: EmulatedHef) -> None:
    with EmulatorRunner(sigmoid_hef) as runner:
        assert runner.input_specs == {"images": InputSpec("images", (256, 256, 3), FormatOrder.NHWC, FormatType.UINT8)}
    graph = hef_graph(load_model(sigmoid_hef.source), str(sigmoid_hef.source), None, sigmoid_inside=False)
    front = graph.model.graph.node[:3]
    assert [n.op_type for n in front] == ["Cast", "Div", "Transpose"]
    divisor = next(i for i in graph.model.graph.initializer if i.name == front[1].input[1])
    assert onnx.numpy_helper.to_array(divisor) == np.float32(255)


def test_float_or_nchw_input_is_rejected_naming_the_input_and_the_contract(sigmoid_hef: EmulatedHef) -> None:
    frame = _first_calibration_frame(sigmoid_hef)
    with EmulatorRunner(sigmoid_hef) as runner:
        with pytest.raises(
            SpecError, match=r"input 'images': float32 \(1, 3, 256, 256\), expected uint8 \(1, 256, 256, 3\)"
        ):
            runner.infer({"images": frame.transpose(0, 3, 1, 2).astype(np.float32) / 255})
        with pytest.raises(SpecError, match=r"input 'images': uint8 \(1, 3, 256, 256\), expected uint8"):
            runner.infer({"images": np.ascontiguousarray(frame.transpose(0, 3, 1, 2))})
        with pytest.raises(SpecError, match=r"feed has inputs \['input'\], expected \['images'\]"):
            runner.infer({"input": frame})


def test_a_batch_of_frames_in_one_call_gives_each_frame_what_it_gives_alone_to_the_bit(
    demo_onnx: Path, images: dict[str, Path], cache_dir: Path, sigmoid_hef: EmulatedHef
) -> None:
    model = onnx.load(sigmoid_hef.quantized_model)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == BATCH
    frames = _frames(images["val"])
    nms_hef = _nms_hef(demo_onnx, images, cache_dir, sigmoid_inside=True)
    for hef in (sigmoid_hef, nms_hef):
        with EmulatorRunner(hef) as runner:
            batched = runner.infer_batch({"images": np.concatenate(frames)})
            alone = [runner.infer({"images": frame}) for frame in frames]
        assert len(batched) == len(frames)
        for got, expected in zip(batched, alone, strict=True):
            assert got.keys() == expected.keys()
            for name in expected:
                assert got[name].dtype == expected[name].dtype
                np.testing.assert_array_equal(got[name], expected[name])


def test_an_emulated_hef_whose_graph_keeps_batch_one_runs_a_batch_frame_by_frame_with_the_same_outputs(
    sigmoid_hef: EmulatedHef, images: dict[str, Path], tmp_path: Path
) -> None:
    model = onnx.load(sigmoid_hef.quantized_model)
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_value = 1
    fixed = tmp_path / "batch_one.onnx"
    onnx.save(model, fixed)
    frames = _frames(images["val"])
    with EmulatorRunner(sigmoid_hef) as runner:
        expected = runner.infer_batch({"images": np.concatenate(frames)})
    with EmulatorRunner(dataclasses.replace(sigmoid_hef, quantized_model=fixed, entry=None)) as runner:
        got = runner.infer_batch({"images": np.concatenate(frames)})
    assert len(got) == len(frames)
    for a, b in zip(got, expected, strict=True):
        assert a.keys() == b.keys() and all(np.array_equal(a[name], b[name]) for name in b)


def test_a_feed_of_no_frames_or_several_frames_to_infer_is_refused_naming_the_shape(sigmoid_hef: EmulatedHef) -> None:
    frame = _first_calibration_frame(sigmoid_hef)
    with EmulatorRunner(sigmoid_hef) as runner:
        with pytest.raises(SpecError, match=r"uint8 \(2, 256, 256, 3\), expected uint8 \(1, 256, 256, 3\)"):
            runner.infer({"images": np.concatenate([frame, frame])})
        with pytest.raises(SpecError, match=r"uint8 \(0, 256, 256, 3\), expected uint8 \(n, 256, 256, 3\)"):
            runner.infer_batch({"images": frame[:0]})
        with pytest.raises(SpecError, match=r"uint8 \(256, 256, 3\), expected uint8 \(n, 256, 256, 3\)"):
            runner.infer_batch({"images": frame[0]})


def _reshaping_model(shape: list[int]) -> onnx.ModelProto:
    """x [1, 2, 4, 4] -> Reshape to the constant ``shape`` -> Relu -> y, every shape fixed at batch 1."""
    out = [1, 2, 16] if shape[0] in (0, 1) else [32]
    nodes = [
        onnx.helper.make_node("Reshape", ["x", "shape"], ["r"]),
        onnx.helper.make_node("Relu", ["r"], ["y"]),
    ]
    graph = onnx.helper.make_graph(
        nodes,
        "reshaping",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 4, 4])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, out)],
        [onnx.numpy_helper.from_array(np.array(shape, np.int64), "shape")],
    )
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])


def test_a_reshape_led_by_the_batch_keeps_it_and_one_folding_the_batch_away_leaves_the_graph_at_batch_one() -> None:
    batched = _batch_dimension(_reshaping_model([1, 2, -1]), "x", ["y"])
    shape = onnx.numpy_helper.to_array(batched.graph.initializer[0])
    assert shape.tolist() == [0, 2, -1]
    assert batched.graph.output[0].type.tensor_type.shape.dim[0].dim_param == BATCH
    x = np.random.default_rng(0).normal(size=(3, 2, 4, 4)).astype(np.float32)
    session = ort.InferenceSession(batched.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(["y"], {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x.reshape(3, 2, 16), 0))
    flat = _reshaping_model([-1])
    assert _batch_dimension(flat, "x", ["y"]) is flat


def test_outputs_carry_the_orders_of_a_compiled_hef_in_host_layout(sigmoid_hef: EmulatedHef) -> None:
    specs = sigmoid_hef.output_specs
    layout = [(s.shape, s.format_order, s.format_type) for s in specs.values()]
    assert layout == [
        ((32, 32, 64), FormatOrder.FCR, FormatType.UINT8),
        ((32, 32, 2), FormatOrder.NHWC, FormatType.UINT8),
        ((16, 16, 64), FormatOrder.FCR, FormatType.UINT8),
        ((16, 16, 2), FormatOrder.NHWC, FormatType.UINT8),
        ((8, 8, 64), FormatOrder.FCR, FormatType.UINT8),
        ((8, 8, 2), FormatOrder.FCR, FormatType.UINT8),
    ]
    assert list(specs) == [f"/model.23/{b}.{i}/{b}.{i}.2/Conv_output_0" for i in range(3) for b in ("cv2", "cv3")]
    with EmulatorRunner(sigmoid_hef) as runner:
        outputs = runner.infer({"images": _first_calibration_frame(sigmoid_hef)})
    assert {n: (a.dtype, a.shape) for n, a in outputs.items()} == {n: (np.uint8, s.shape) for n, s in specs.items()}


def test_limvals_are_the_range_the_uint8_zero_point_and_scale_can_represent(sigmoid_hef: EmulatedHef) -> None:
    for name, q in sigmoid_hef.quant.items():
        assert q.zero_point == int(q.zero_point) and 0 <= q.zero_point <= 255 and q.scale > 0, name
        assert q.limvals_min == np.float32((0 - q.zero_point) * np.float32(q.scale)), name
        assert q.limvals_max == np.float32((255 - q.zero_point) * np.float32(q.scale)), name
        assert q.limvals_min <= 0 <= q.limvals_max, name


# ---------------------------------------------------------------------------------------------- values


def test_uint8_heads_are_the_head_quantizers_outputs_under_the_hailort_rule_within_one_step(
    sigmoid_hef: EmulatedHef, images: dict[str, Path]
) -> None:
    # the quantized graph with each head's QuantizeLinear input as an extra output
    model = onnx.load(sigmoid_hef.quantized_model)
    quantizer_input = {n.output[0]: n.input[0] for n in model.graph.node if n.output[0] in sigmoid_hef.quant}
    model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(t) for t in quantizer_input.values())
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = list(quantizer_input.values())
    with EmulatorRunner(sigmoid_hef) as runner:
        for frame in _frames(images["val"])[:3]:
            before = dict(zip(names, session.run(names, {"images": frame}), strict=True))
            heads = runner.infer({"images": frame})
            for head, spec in zip(heads, sigmoid_hef.heads, strict=True):
                expected = quantize(before[quantizer_input[head]][0].transpose(1, 2, 0), spec.quant)
                steps = np.abs(heads[head].astype(np.int16) - expected)
                # fused integer kernels may round a value lying on a half step the other way
                assert steps.max() <= 1 and (steps == 0).mean() >= 0.999, head


def test_dequantized_heads_track_the_float_heads_on_calibration_images(logits_hef: EmulatedHef) -> None:
    graph = hef_graph(load_model(logits_hef.source), str(logits_hef.source), None, sigmoid_inside=False)
    session = ort.InferenceSession(graph.model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [h.tensor for h in graph.heads]
    errors: dict[str, list[np.ndarray]] = {n: [] for n in names}
    with EmulatorRunner(logits_hef) as runner:
        for path in logits_hef.calibration_images:
            frame = letterbox(load_image(path), INPUT_HW)[0][None]
            quantized = runner.infer({"images": frame})
            for name, head in zip(names, session.run(names, {"images": frame}), strict=True):
                spec, reference = logits_hef.output_specs[name], head[0].transpose(1, 2, 0)
                q = spec.quant[0]
                # MinMax calibration covers the float values of its own images
                assert q.limvals_min - q.scale <= reference.min() and reference.max() <= q.limvals_max + q.scale, name
                errors[name].append(np.abs(dequantize(quantized[name], spec.quant) - reference) / q.scale)
    for name, steps in errors.items():
        # every layer before a head is quantized too: typical errors are a step or so, a few frames see more
        assert np.median(np.concatenate(steps)) <= 2, name


def test_float32_mode_equals_dequantized_uint8_mode(
    demo_onnx: Path, images: dict[str, Path], cache_dir: Path, sigmoid_hef: EmulatedHef
) -> None:
    float_hef = build_emulated_hef(
        demo_onnx, images["in_domain"], _options(sigmoid_inside=True, output_format=FormatType.FLOAT32), cache_dir
    )
    assert float_hef.quantized_model == sigmoid_hef.quantized_model
    assert float_hef.content_hash != sigmoid_hef.content_hash
    assert all(s.format_type is FormatType.FLOAT32 for s in float_hef.output_specs.values())
    frame = _frames(images["val"])[0]
    with EmulatorRunner(sigmoid_hef) as uint8_runner, EmulatorRunner(float_hef) as float_runner:
        raw = uint8_runner.infer({"images": frame})
        floats = float_runner.infer({"images": frame})
    for spec in sigmoid_hef.heads:
        assert floats[spec.name].dtype == np.float32
        np.testing.assert_array_equal(floats[spec.name], dequantize(raw[spec.name], spec.quant))


# ---------------------------------------------------------------------------------------------- calibration


def test_sigmoid_inside_puts_class_limvals_inside_the_unit_interval(
    sigmoid_hef: EmulatedHef, logits_hef: EmulatedHef
) -> None:
    assert all(0 <= h.quant[0].limvals_min and h.quant[0].limvals_max <= 1 for h in _class_heads(sigmoid_hef))
    assert any(h.quant[0].limvals_min < -1 for h in _class_heads(logits_hef))


def test_off_domain_calibration_lowers_the_class_limvals_max(
    demo_onnx: Path, images: dict[str, Path], cache_dir: Path, sigmoid_hef: EmulatedHef
) -> None:
    off_domain = build_emulated_hef(demo_onnx, images["off_domain"], _options(sigmoid_inside=True), cache_dir)
    in_max = max(h.quant[0].limvals_max for h in _class_heads(sigmoid_hef))
    off_max = max(h.quant[0].limvals_max for h in _class_heads(off_domain))
    assert off_max < 0.5 * in_max
    # and no score above that cap can come out of the off-domain HEF, on a frame full of fire
    with EmulatorRunner(off_domain) as runner:
        best = max(
            float(dequantize(a, off_domain.output_specs[n].quant).max())
            for frame in _frames(images["val"])
            for n, a in runner.infer({"images": frame}).items()
            if off_domain.output_specs[n].channels == off_domain.classes
        )
    assert best <= off_max


def test_too_few_calibration_images_raise_naming_the_folder_and_the_count(
    demo_onnx: Path, images: dict[str, Path], cache_dir: Path
) -> None:
    with pytest.raises(
        HarnessError,
        match=rf"{CALIBRATION_COUNT} images, expected at least 64 \(--calibration-count N asks for fewer\)",
    ):
        build_emulated_hef(demo_onnx, images["in_domain"], _options(calibration_count=64), cache_dir)


# ---------------------------------------------------------------------------------------------- NMS


def _nms_hef(demo_onnx: Path, images: dict[str, Path], cache_dir: Path, sigmoid_inside: bool) -> EmulatedHef:
    options = _options(
        sigmoid_inside=sigmoid_inside,
        nms=True,
        output_format=FormatType.FLOAT32,
        score_threshold=0.25,
        iou_threshold=0.6,
        max_proposals_per_class=20,
    )
    return build_emulated_hef(demo_onnx, images["in_domain"], options, cache_dir)


def test_nms_mode_yields_a_by_class_buffer_equal_to_nms_hailort_on_the_same_heads(
    demo_onnx: Path, images: dict[str, Path], cache_dir: Path, sigmoid_hef: EmulatedHef
) -> None:
    nms_hef = _nms_hef(demo_onnx, images, cache_dir, sigmoid_inside=True)
    assert nms_hef.quantized_model == sigmoid_hef.quantized_model
    ((name, spec),) = nms_hef.output_specs.items()
    assert (spec.format_order, spec.format_type, spec.shape) == (
        FormatOrder.NMS_BY_CLASS,
        FormatType.FLOAT32,
        (2, 5, 20),
    )
    config = DecodeConfig(INPUT_HW, 0.25, 0.6, max_per_class=20, classes_are_probabilities=True)
    found = 0
    with EmulatorRunner(nms_hef) as runner, EmulatorRunner(sigmoid_hef) as raw_runner:
        for frame in _frames(images["val"]):
            buffer = runner.infer({"images": frame})[name]
            assert buffer.dtype == np.float32 and buffer.shape == (by_class_size(spec.nms),)
            dets = decode_nms(buffer, spec, INPUT_HW)
            raw = raw_runner.infer({"images": frame})
            expected = nms_hailort(*decode_candidates(raw, {h.name: h for h in sigmoid_hef.heads}, config), config)
            np.testing.assert_array_equal(dets.class_ids, expected.class_ids)
            np.testing.assert_array_equal(dets.scores, expected.scores)
            np.testing.assert_allclose(dets.boxes, expected.boxes, atol=1e-3)
            found += len(dets)
    assert found > 0


def test_nms_without_sigmoid_inside_emits_logits_as_scores(
    demo_onnx: Path, images: dict[str, Path], cache_dir: Path
) -> None:
    nms_hef = _nms_hef(demo_onnx, images, cache_dir, sigmoid_inside=False)
    ((name, spec),) = nms_hef.output_specs.items()
    with EmulatorRunner(nms_hef) as runner:
        scores = np.concatenate(
            [decode_nms(runner.infer({"images": f})[name], spec, INPUT_HW).scores for f in _frames(images["val"])]
        )
    assert scores.max() > 1  # the op applies no sigmoid: logits pass as scores


# ---------------------------------------------------------------------------------------------- cache


def test_cache_is_hit_on_a_second_build_and_missed_when_a_calibration_image_changes(
    demo_onnx: Path,
    images: dict[str, Path],
    cache_dir: Path,
    logits_hef: EmulatedHef,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []
    real = build.quantize
    monkeypatch.setattr(build, "quantize", lambda *args: calls.append(1) or real(*args))
    again = build_emulated_hef(demo_onnx, images["in_domain"], _options(sigmoid_inside=False), cache_dir)
    assert calls == []
    assert again == logits_hef

    changed = shutil.copytree(images["in_domain"], tmp_path / "calib")
    first = sorted(changed.iterdir())[0]
    pixels = np.asarray(Image.open(first)).copy()
    pixels[0, 0] ^= 1
    Image.fromarray(pixels).save(first)
    with caplog.at_level(logging.DEBUG):
        rebuilt = build_emulated_hef(demo_onnx, changed, _options(sigmoid_inside=False), cache_dir)
    assert calls == [1]
    # onnxruntime's messages (root logger warnings, calibrator prints) come through as the emulator's
    ours = [r for r in caplog.records if r.name == "root" or r.name.startswith("harness")]
    assert any("onnxruntime" in r.getMessage() for r in ours)
    assert all(r.name.startswith("harness") and "emulated HEF" in r.getMessage() for r in ours)
    assert rebuilt.quantized_model != logits_hef.quantized_model
    assert rebuilt.quantized_model.is_file()


def test_cache_key_covers_the_calibration_method(
    demo_onnx: Path, images: dict[str, Path], cache_dir: Path, logits_hef: EmulatedHef
) -> None:
    percentile = build_emulated_hef(
        demo_onnx, images["in_domain"], _options(calibration_method=CalibrationMethod.PERCENTILE), cache_dir
    )
    assert percentile.quantized_model != logits_hef.quantized_model
    # the 99.999th percentile never widens a head's range beyond the extremes MinMax takes
    for spec in percentile.heads:
        p, m = spec.quant[0], logits_hef.quant[spec.name]
        assert p.limvals_max - p.limvals_min <= m.limvals_max - m.limvals_min + 2 * m.scale, spec.name


# ---------------------------------------------------------------------------------------------- labels and errors


def test_runner_and_its_log_say_emulated(sigmoid_hef: EmulatedHef, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="harness.backends.emulator"):
        runner: Runner = EmulatorRunner(sigmoid_hef)
    with runner:
        assert isinstance(runner, EmulatorRunner) and runner.emulated is True
        assert runner.label.startswith("emulated HEF of fire_smoke_yolo11n_256.onnx")
    assert caplog.records and all("emulated" in r.getMessage() for r in caplog.records)


def test_an_already_quantized_onnx_is_rejected_asking_for_the_float_export(
    shared_fixtures: Path, images: dict[str, Path], tmp_path: Path
) -> None:
    source = shared_fixtures / "onnx" / "yolo11n_coco80_320_int8.onnx"
    with pytest.raises(GraphError, match=r"quantized ops \['ConvInteger', 'DynamicQuantizeLinear'\], expected a float"):
        build_emulated_hef(source, images["in_domain"], _options(), tmp_path)


def test_nms_with_uint8_output_format_is_rejected() -> None:
    with pytest.raises(HarnessError, match="output_format is UINT8 with nms, expected FLOAT32"):
        EmulatorOptions(nms=True, output_format=FormatType.UINT8)


def test_end_nodes_given_by_name_cut_where_the_structural_heads_are(demo_onnx: Path) -> None:
    model = load_model(demo_onnx)
    found = hef_graph(model, str(demo_onnx), None, sigmoid_inside=False)
    given = hef_graph(model, str(demo_onnx), tuple(h.node for h in found.heads)[::-1], sigmoid_inside=False)
    assert given.heads == found.heads
    assert [o.name for o in given.model.graph.output] == [h.tensor for h in found.heads]
    with pytest.raises(GraphError, match=r"end nodes not found .*'/model.23/cv2.0/cv2.0.2/Conv'"):
        hef_graph(model, str(demo_onnx), ("/model.23/cv2.0/cv2.0.2/Conv_typo",), sigmoid_inside=False)


# ---------------------------------------------------------------------------------------------- YOLO26


@pytest.fixture(scope="module")
def yolo26_hef(images: dict[str, Path], cache_dir: Path) -> EmulatedHef:
    from harness.inputs.demo import DEMO26_ONNX

    return build_emulated_hef(DEMO26_ONNX, images["in_domain"], _options(sigmoid_inside=False), cache_dir)


def test_a_yolo26_export_becomes_six_raw_heads_of_four_box_channels_with_its_family_recorded(
    yolo26_hef: EmulatedHef,
) -> None:
    from harness.core.head_family import HeadFamily

    assert yolo26_hef.family is HeadFamily.YOLO26_ONE2ONE
    assert [(h.shape[:2], h.channels) for h in yolo26_hef.heads] == [
        ((32, 32), 4),
        ((32, 32), 2),
        ((16, 16), 4),
        ((16, 16), 2),
        ((8, 8), 4),
        ((8, 8), 2),
    ]
    assert "yolo26-one2one heads" in yolo26_hef.label and "class logits" in yolo26_hef.label
    # the class maps stay logits: their representable ranges reach far below 0
    assert all(h.quant[0].limvals_min < -1 for h in _class_heads(yolo26_hef))


def test_a_yolo26_emulated_hef_finds_what_its_float_export_finds_with_confidence(
    yolo26_hef: EmulatedHef, images: dict[str, Path]
) -> None:
    """Through the harness's one-to-one decode, the emulated HEF finds every detection the float
    export's own end-to-end rows score at 0.5 or more: the same class, IoU at least 0.8."""
    from harness.core.path_names import EMULATED_HAILO
    from harness.core.settings import EvalSettings
    from harness.decode.nms import box_iou
    from harness.inputs.demo import DEMO26_ONNX
    from harness.pipeline.detect import OnnxPath, runner_path

    settings = EvalSettings(input_hw=INPUT_HW, score_threshold=0.25)
    found = 0
    with OnnxPath(DEMO26_ONNX, settings) as reference, EmulatorRunner(yolo26_hef) as runner:
        emulated = runner_path(runner, settings, DEMO26_ONNX, EMULATED_HAILO, family=yolo26_hef.family)
        for path in sorted(images["val"].iterdir()):
            image = load_image(path)
            expected = reference.detect(image).detections
            ours = emulated.detect(image).detections
            confident = expected.select(expected.scores >= 0.5)
            for box, class_id in zip(confident.boxes, confident.class_ids, strict=True):
                same = ours.class_ids == class_id
                assert same.any() and box_iou(box[None], ours.boxes[same]).max() >= 0.8, path.name
            found += len(confident)
    assert found >= 4


@pytest.fixture(scope="module")
def yolo26_hef16(images: dict[str, Path], cache_dir: Path) -> EmulatedHef:
    from harness.inputs.demo import DEMO26_ONNX

    options = _options(sigmoid_inside=False, output_bits=16, output_format=FormatType.UINT16)
    return build_emulated_hef(DEMO26_ONNX, images["in_domain"], options, cache_dir)


def test_16_bit_outputs_keep_the_calibrated_range_in_steps_257_times_finer(
    yolo26_hef: EmulatedHef, yolo26_hef16: EmulatedHef
) -> None:
    assert [h.format_type for h in yolo26_hef16.heads] == [FormatType.UINT16] * 6
    assert "16-bit outputs" in yolo26_hef16.label and "16-bit" not in yolo26_hef.label
    for wide, narrow in zip(yolo26_hef16.heads, yolo26_hef.heads, strict=True):
        (q16,), (q8,) = wide.quant, narrow.quant
        assert q16.limvals_min == pytest.approx(q8.limvals_min, abs=q16.scale)
        assert q16.limvals_max == pytest.approx(q8.limvals_max, abs=q16.scale)
        assert q8.scale / q16.scale == pytest.approx(65535 / 255, rel=1e-3)


def test_16_bit_outputs_hold_the_same_values_as_8_bit_ones_within_half_a_step_of_each(
    yolo26_hef: EmulatedHef, yolo26_hef16: EmulatedHef
) -> None:
    """The body is quantized alike (the same calibration): only the heads' own rounding differs."""
    frame = _first_calibration_frame(yolo26_hef)
    with EmulatorRunner(yolo26_hef) as narrow, EmulatorRunner(yolo26_hef16) as wide:
        eight = narrow.infer({yolo26_hef.input.name: frame})
        sixteen = wide.infer({yolo26_hef16.input.name: frame})
    for h8, h16 in zip(yolo26_hef.heads, yolo26_hef16.heads, strict=True):
        assert sixteen[h16.name].dtype == np.uint16 and eight[h8.name].dtype == np.uint8
        values8, values16 = dequantize(eight[h8.name], h8.quant), dequantize(sixteen[h16.name], h16.quant)
        bound = (h8.quant[0].scale + h16.quant[0].scale) / 2 + 1e-5
        assert np.abs(values8 - values16).max() <= bound, h8.name


def test_a_yolo26_emulated_hef_with_the_yolov8_nms_op_is_refused_naming_the_head(
    images: dict[str, Path], cache_dir: Path
) -> None:
    from harness.inputs.demo import DEMO26_ONNX

    with pytest.raises(GraphError, match=r"yolo26-one2one head with HailoRT's YOLOv8 NMS op.*expected nms off"):
        build_emulated_hef(
            DEMO26_ONNX, images["in_domain"], _options(nms=True, output_format=FormatType.FLOAT32), cache_dir
        )


# ---------------------------------------------------------------------------------------------- YOLOv5

V5_SIDE = 64
V5_HW = (V5_SIDE, V5_SIDE)
# two anchors per stride, none of YOLOv5's defaults: the HEF must carry the export's own
V5_ANCHORS = (((9.0, 12.0), (20.0, 14.0)), ((24.0, 40.0), (44.0, 30.0)), ((60.0, 50.0), (40.0, 70.0)))


def _tempered(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with each convolution's random weights rescaled to a standard deviation of 1 / sqrt(fan in):
    head logits of a few units, as a trained detector's are, not the saturated ones of the export's plain
    random weights (where nearly every sigmoid sits at 0 or 1)."""
    for init in model.graph.initializer:
        if init.name.endswith(".weight"):
            w = onnx.numpy_helper.to_array(init)
            tempered = w / (w.std() * np.sqrt(np.prod(w.shape[1:])))
            init.CopyFrom(onnx.numpy_helper.from_array(tempered.astype(np.float32), init.name))
    return model


@pytest.fixture(scope="module")
def yolov5_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from support.yolov5_exports import yolov5_export

    path = tmp_path_factory.mktemp("yolov5") / "yolov5_test.onnx"
    onnx.save(_tempered(yolov5_export(side=V5_SIDE, nc=2, anchors=V5_ANCHORS, seed=1)), path)
    return path


@pytest.fixture(scope="module")
def yolov5_hef(yolov5_onnx: Path, images: dict[str, Path], cache_dir: Path) -> EmulatedHef:
    return build_emulated_hef(yolov5_onnx, images["in_domain"], _options(sigmoid_inside=True), cache_dir)


def _v5_frames(folder: Path) -> list[np.ndarray]:
    return [letterbox(load_image(p), V5_HW)[0][None] for p in sorted(folder.iterdir())]


def _v5_config(**changes: object) -> DecodeConfig:
    settings: dict[str, object] = {
        "input_hw": V5_HW,
        "score_threshold": 0.25,
        "iou_threshold": 0.45,
        "classes_are_probabilities": True,
        "anchors": V5_ANCHORS,
    }
    settings.update(changes)
    return DecodeConfig(**settings)  # type: ignore[arg-type]


def test_a_yolov5_export_becomes_one_anchored_map_per_stride_with_its_anchors_and_the_sigmoid_on_every_channel(
    yolov5_onnx: Path, images: dict[str, Path], cache_dir: Path, yolov5_hef: EmulatedHef
) -> None:
    from harness.core.head_family import HeadFamily

    assert yolov5_hef.family is HeadFamily.YOLOV5 and yolov5_hef.classes == 2
    assert yolov5_hef.anchors == V5_ANCHORS == yolov5_hef.layout.anchors
    assert [(h.shape, h.format_order) for h in yolov5_hef.heads] == [
        ((8, 8, 14), FormatOrder.NHWC),  # 2 anchors x (5 + 2 classes)
        ((4, 4, 14), FormatOrder.NHWC),
        ((2, 2, 14), FormatOrder.FCR),
    ]
    assert [level.stride for level in yolov5_hef.layout.levels] == [8, 16, 32]
    assert "yolov5 heads" in yolov5_hef.label and "sigmoid inside" in yolov5_hef.label
    # box offsets, objectness and classes all sigmoided: every map's range within [0, 1]
    tops = [h.quant[0].limvals_max for h in yolov5_hef.heads]
    assert all(0 <= h.quant[0].limvals_min and h.quant[0].limvals_max <= 1 for h in yolov5_hef.heads)
    assert yolov5_hef.score_ceiling == pytest.approx(max(tops) ** 2)  # objectness x class
    logits = build_emulated_hef(yolov5_onnx, images["in_domain"], _options(sigmoid_inside=False), cache_dir)
    assert logits.quantized_model != yolov5_hef.quantized_model
    assert all(h.quant[0].limvals_min < -1 for h in logits.heads)


BEST = 5  # the export's detections per frame held to be found again (random weights: scores of 0.4 to 0.5)


def _export_rows(session: ort.InferenceSession, frame: np.ndarray, hef: EmulatedHef) -> np.ndarray:
    """The export's own decoded rows of ``frame`` (x, y, w, h in pixels, objectness, classes), in the order the
    harness's decoder takes entries: per stride, cell-major then anchor. YOLOv5 writes them anchor-major
    (ultralytics/yolov5: models/yolo.py, ``Detect.forward``: ``view(bs, na * nx * ny, no)`` after
    ``permute(0, 1, 3, 4, 2)``)."""
    (rows,) = session.run(None, {"images": (frame.transpose(0, 3, 1, 2) / np.float32(255)).astype(np.float32)})
    parts, start = [], 0
    for level in hef.layout.levels:
        na = len(level.anchors)
        block = rows[0, start : start + na * level.cells]
        parts.append(block.reshape(na, level.cells, -1).transpose(1, 0, 2).reshape(na * level.cells, -1))
        start += na * level.cells
    assert start == rows.shape[1]
    return np.concatenate(parts)


def test_a_yolov5_emulated_hefs_raw_heads_decode_to_the_float_exports_own_output_within_quantization_error(
    yolov5_onnx: Path, yolov5_hef: EmulatedHef, images: dict[str, Path]
) -> None:
    """Every (cell, anchor) entry decoded from the uint8 maps by harness.families.yolov5.decode against the export's own
    decode tail: centre, size and score differences in steps of the map's quantization (one step of a
    sigmoided value moves a centre by at most 2 x stride, a size by at most 8 x anchor, a score
    objectness x class by at most 2). Then the best detections of the export's rows (the harness's NMS over
    them) are found again: the same class, IoU at least 0.5."""
    from harness.decode.nms import box_iou, nms
    from harness.families.yolov5 import decode as yolov5

    session = ort.InferenceSession(str(yolov5_onnx), providers=["CPUExecutionProvider"])
    specs = {h.name: h for h in yolov5_hef.heads}
    config = _v5_config()
    layout = yolov5_hef.layout
    steps: dict[str, list[np.ndarray]] = {"centre": [], "size": [], "score": []}
    confident = matched = 0
    with EmulatorRunner(yolov5_hef) as runner:
        for frame in _v5_frames(images["val"]):
            raw = runner.infer({"images": frame})
            rows = _export_rows(session, frame, yolov5_hef)
            boxes, scores = yolov5.candidates(raw, layout, config)
            per_entry = [
                (np.full((len(v.anchors) * v.cells, 1), v.stride, np.float32), np.tile(v.anchors, (v.cells, 1)))
                for v in layout.levels
            ]
            scale = np.concatenate(
                [np.full(len(v.anchors) * v.cells, v.box.host_spec.quant[0].scale) for v in layout.levels]
            )[:, None]
            stride, anchor = (np.concatenate(part) for part in zip(*per_entry, strict=True))
            centre, size = (boxes[:, :2] + boxes[:, 2:]) / 2, boxes[:, 2:] - boxes[:, :2]
            steps["centre"].append(np.abs(centre - rows[:, :2]) / (2 * stride * scale))
            steps["size"].append(np.abs(size - rows[:, 2:4]) / (8 * anchor * scale))
            steps["score"].append(np.abs(scores - rows[:, 5:] * rows[:, 4:5]) / (2 * scale))
            ours = yolov5.decode(raw, specs, config)
            xyxy = np.concatenate([rows[:, :2] - rows[:, 2:4] / 2, rows[:, :2] + rows[:, 2:4] / 2], axis=1)
            theirs = nms(xyxy.astype(np.float32), (rows[:, 5:] * rows[:, 4:5]).astype(np.float32), config)
            sure = theirs.select(np.argsort(-theirs.scores, kind="stable")[:BEST])
            for box, class_id in zip(sure.boxes, sure.class_ids, strict=True):
                same = ours.class_ids == class_id
                matched += bool(same.any() and box_iou(box[None], ours.boxes[same]).max() >= 0.5)
            confident += len(sure)
    for name, found in steps.items():
        values = np.concatenate(found).ravel()
        # every layer before the heads is quantized too: typically well under a step, a few entries see more
        assert np.median(values) <= 1 and np.percentile(values, 99) <= 4, (name, np.percentile(values, [50, 99]))
    assert confident == BEST * RECIPE.val and matched >= 0.9 * confident, (matched, confident)


def test_a_yolov5_emulated_hef_with_nms_writes_hailorts_yolov5_op_buffer_of_its_raw_heads(
    yolov5_onnx: Path, images: dict[str, Path], cache_dir: Path, yolov5_hef: EmulatedHef
) -> None:
    from harness.backends.emulator.runner import nms_op
    from harness.core.head_family import HeadFamily
    from harness.core.settings import NmsMode

    options = _options(
        sigmoid_inside=True, nms=True, output_format=FormatType.FLOAT32, score_threshold=0.3, max_proposals_per_class=20
    )
    nms_hef = build_emulated_hef(yolov5_onnx, images["in_domain"], options, cache_dir)
    assert nms_hef.quantized_model == yolov5_hef.quantized_model  # NMS is a runtime setting
    assert "HailoRT NMS" in nms_hef.label
    ((name, spec),) = nms_hef.output_specs.items()
    # hailo-ai/tappas: core/hailo/libs/postprocesses/detection/yolo_hailortpp.cpp
    assert name == "yolov5_nms_postprocess"
    assert (spec.format_order, spec.format_type, spec.shape) == (
        FormatOrder.NMS_BY_CLASS,
        FormatType.FLOAT32,
        (2, 5, 20),
    )
    config = _v5_config(
        score_threshold=0.3, iou_threshold=nms_hef.options.iou_threshold, max_per_class=20, mode=NmsMode.HAILORT
    )
    found = 0
    with EmulatorRunner(nms_hef) as runner, EmulatorRunner(yolov5_hef) as raw_runner:
        for frame in _v5_frames(images["val"]):
            buffer = runner.infer({"images": frame})[name]
            raw = raw_runner.infer({"images": frame})
            expected = nms_op(raw, {h.name: h for h in yolov5_hef.heads}, config, spec, HeadFamily.YOLOV5)
            assert buffer.dtype == np.float32 and buffer.shape == (by_class_size(spec.nms),)
            np.testing.assert_array_equal(buffer, expected)
            found += len(decode_nms(buffer, spec, V5_HW))
    assert found > 0


def test_a_yolov5_models_corrupt_anchors_are_refused_naming_the_head_and_a_cached_one_is_quantized_again(
    yolov5_onnx: Path,
    images: dict[str, Path],
    yolov5_hef: EmulatedHef,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from harness.backends.emulator.facts import hef_facts_of
    from harness.backends.emulator.quantize import HEAD_ANCHORS_KEY
    from harness.core.documents import DocumentError
    from harness.core.shared_entry import EntryState, seal_record

    model = onnx.load(yolov5_hef.quantized_model)
    entry = next(p for p in model.metadata_props if p.key == HEAD_ANCHORS_KEY)
    first = yolov5_hef.heads[0].name
    entry.value = entry.value.replace("[9.0, 12.0]", "[9.0, -12.0]")
    with pytest.raises(DocumentError, match=rf"{HEAD_ANCHORS_KEY}'?: field {first} is .*expected a non-empty list"):
        hef_facts_of(model)
    del model.metadata_props[list(model.metadata_props).index(entry)]
    with pytest.raises(GraphError, match=rf"{HEAD_ANCHORS_KEY}' missing, expected the anchors of its anchored maps"):
        hef_facts_of(model)
    # a model cached without them (as an emulator that knew no anchors left one) is quantized again
    cache = tmp_path / "cache"
    built = build_emulated_hef(yolov5_onnx, images["in_domain"], _options(sigmoid_inside=True), cache)
    onnx.save(model, built.quantized_model)
    kept = built.quantized_model.with_suffix(".json")  # its record as an older reader sealed it
    record = json.loads(kept.read_text()) | {
        "code": "an older reader",
        "model_sha256": hashlib.sha256(built.quantized_model.read_bytes()).hexdigest(),
    }
    kept.write_text(json.dumps(seal_record(record, None)))
    with caplog.at_level(logging.WARNING, logger="harness.backends.emulator"):
        again = build_emulated_hef(yolov5_onnx, images["in_domain"], _options(sigmoid_inside=True), cache)
    assert "unreadable" in caplog.text and HEAD_ANCHORS_KEY in caplog.text
    assert again.anchors == V5_ANCHORS and again == built
    assert again.entry is not None and again.entry.state is EntryState.REBUILT


def test_nms_is_allowed_for_yolov5_heads_and_refused_for_yolo26_heads(
    yolov5_onnx: Path, images: dict[str, Path]
) -> None:
    from harness.backends.emulator import check_export
    from harness.inputs.demo import DEMO26_ONNX

    options = EmulatorOptions(sigmoid_inside=True, nms=True)
    check_export(yolov5_onnx, options)
    with pytest.raises(GraphError, match=r"yolo26-one2one head with HailoRT's YOLOv8 NMS op.*expected nms off"):
        check_export(DEMO26_ONNX, options)


def test_a_yolox_export_becomes_box_objectness_and_class_maps_per_stride_its_nms_hailorts_yolox_op(
    tmp_path_factory: pytest.TempPathFactory, images: dict[str, Path], cache_dir: Path
) -> None:
    """The sigmoid goes on the objectness and class maps (HailoRT's YOLOX op reads probabilities there),
    the role of each map is recorded, and the NMS output is the YOLOX op's on the raw heads."""
    from harness.backends.emulator.runner import nms_op
    from harness.core.head_family import HeadFamily, HeadRole
    from harness.core.settings import NmsMode

    from support.yolox_exports import yolox_export

    path = tmp_path_factory.mktemp("yolox") / "yolox_test.onnx"
    onnx.save(yolox_export(side=V5_SIDE, nc=2, seed=1), path)
    raw_hef = build_emulated_hef(path, images["in_domain"], _options(sigmoid_inside=True), cache_dir)
    assert raw_hef.family is HeadFamily.YOLOX and raw_hef.classes == 2
    layout = raw_hef.layout
    assert [len(level.outputs) for level in layout.levels] == [3, 3, 3]
    scored = [*layout.of_role(HeadRole.OBJECTNESS), *layout.of_role(HeadRole.CLASS)]
    assert all(0 <= o.host_spec.quant[0].limvals_min and o.host_spec.quant[0].limvals_max <= 1 for o in scored)
    options = _options(sigmoid_inside=True, nms=True, output_format=FormatType.FLOAT32, score_threshold=0.3)
    nms_hef = build_emulated_hef(path, images["in_domain"], options, cache_dir)
    ((name, spec),) = nms_hef.output_specs.items()
    config = DecodeConfig(input_hw=V5_HW, score_threshold=0.3, iou_threshold=nms_hef.options.iou_threshold,
                          max_per_class=spec.nms.max_bboxes_per_class, mode=NmsMode.HAILORT,
                          classes_are_probabilities=True)  # fmt: skip
    found = 0
    with EmulatorRunner(nms_hef) as runner, EmulatorRunner(raw_hef) as raw_runner:
        for frame in _v5_frames(images["val"]):
            buffer = runner.infer({"images": frame})[name]
            expected = nms_op(raw_runner.infer({"images": frame}), {h.name: h for h in raw_hef.heads}, config,
                              spec, HeadFamily.YOLOX)  # fmt: skip
            np.testing.assert_array_equal(buffer, expected)
            found += len(decode_nms(buffer, spec, V5_HW))
    assert found > 0


def test_an_ssd_export_becomes_regression_and_class_maps_per_layer_its_nms_hailorts_ssd_op_with_its_config(
    tmp_path_factory: pytest.TempPathFactory, images: dict[str, Path], cache_dir: Path
) -> None:
    """The sigmoid goes on the class maps (HailoRT's SSD op reads them as scores), the roles, each layer's
    anchors and the SSD config's digest are recorded (in the model and its facts), and the NMS output is the
    SSD op's on the raw heads with the config."""
    from harness.backends.emulator.build import _load_cached
    from harness.backends.emulator.runner import nms_op
    from harness.core.head_family import HeadFamily, HeadRole
    from harness.core.settings import NmsMode

    from support.ssd_exports import ANCHORS, ssd_config, ssd_export

    path, config = tmp_path_factory.mktemp("ssd") / "ssd_test.onnx", ssd_config()
    onnx.save(ssd_export(side=V5_SIDE, nc=3, seed=1), path)
    with pytest.raises(GraphError, match=r"--ssd-config FILE"):
        build_emulated_hef(path, images["in_domain"], _options(sigmoid_inside=True), cache_dir)
    raw_hef = build_emulated_hef(path, images["in_domain"], _options(sigmoid_inside=True, ssd=config), cache_dir)
    assert raw_hef.family is HeadFamily.SSD and raw_hef.classes == 3 and raw_hef.anchors == ANCHORS
    assert f"ssd heads (SSD config {config.digest[:12]})" in raw_hef.label
    layout = raw_hef.layout
    assert [(level.box.role, level.classes.role, level.anchors) for level in layout.levels] == [
        (HeadRole.ANCHOR_BOXES, HeadRole.ANCHOR_CLASSES, group) for group in ANCHORS
    ]
    scored = layout.of_role(HeadRole.ANCHOR_CLASSES)
    assert all(0 <= o.host_spec.quant[0].limvals_min and o.host_spec.quant[0].limvals_max <= 1 for o in scored)
    assert 0 < raw_hef.score_ceiling <= 1
    record = json.loads(raw_hef.quantized_model.with_suffix(".json").read_text())
    assert record["ssd_config"] == config.digest and record["anchors"] == [[list(p) for p in g] for g in ANCHORS]
    described = _load_cached(raw_hef.quantized_model)  # the model records what its facts say
    assert described is not None and described.ssd_config == config.digest and described.anchors == ANCHORS
    other = dataclasses.replace(config, centers_scale_factor=5)  # another config: another HEF, refused by the tail
    with pytest.raises(GraphError, match=r"its decode tail gives row 0"):
        build_emulated_hef(path, images["in_domain"], _options(sigmoid_inside=True, ssd=other), cache_dir)
    options = _options(sigmoid_inside=True, nms=True, output_format=FormatType.FLOAT32, score_threshold=0.3, ssd=config)
    nms_hef = build_emulated_hef(path, images["in_domain"], options, cache_dir)
    ((name, spec),) = nms_hef.output_specs.items()
    assert name == "ssd_nms_postprocess" and spec.nms is not None and spec.nms.number_of_classes == 2
    decode = DecodeConfig(input_hw=V5_HW, score_threshold=0.3, iou_threshold=nms_hef.options.iou_threshold,
                          max_per_class=spec.nms.max_bboxes_per_class, mode=NmsMode.HAILORT,
                          classes_are_probabilities=True, ssd=config)  # fmt: skip
    found = 0
    with EmulatorRunner(nms_hef) as runner, EmulatorRunner(raw_hef) as raw_runner:
        for frame in _v5_frames(images["val"]):
            buffer = runner.infer({"images": frame})[name]
            raw = raw_runner.infer({"images": frame})
            expected = nms_op(raw, {h.name: h for h in raw_hef.heads}, decode, spec, HeadFamily.SSD)
            np.testing.assert_array_equal(buffer, expected)
            found += len(decode_nms(buffer, spec, V5_HW))
    assert found > 0


# ---------------------------------------------------------------------------------------------- bbox-only op


def _bbox_only_options(**changes: object) -> EmulatorOptions:
    return _options(**{"sigmoid_inside": True, "bbox_only": True, "output_format": FormatType.FLOAT32, **changes})


def test_a_bbox_only_hef_writes_the_bbox_only_op_of_its_raw_heads_and_the_host_nms_finds_what_the_nms_op_keeps(
    demo_onnx: Path, images: dict[str, Path], cache_dir: Path, sigmoid_hef: EmulatedHef
) -> None:
    from harness.core.head_family import HeadFamily
    from harness.core.settings import NmsMode
    from harness.decode.bbox_only import bbox_only_op, decode_bbox_only

    bbox_hef = build_emulated_hef(demo_onnx, images["in_domain"], _bbox_only_options(), cache_dir)
    nms_hef = _nms_hef(demo_onnx, images, cache_dir, sigmoid_inside=True)
    assert bbox_hef.quantized_model == sigmoid_hef.quantized_model  # the op is a runtime setting
    assert "bbox-only op (NMS on the host)" in bbox_hef.label and "emulated HEF" in bbox_hef.label
    ((name, spec),) = bbox_hef.output_specs.items()
    assert name == "yolov8_nms_postprocess"  # the NMS op's output, compiled bbox_decoding_only
    assert (spec.format_order, spec.format_type, spec.shape) == (FormatOrder.NHWC, FormatType.FLOAT32, (1, 1344, 6))
    ((nms_name, nms_spec),) = nms_hef.output_specs.items()
    config = DecodeConfig(INPUT_HW, 0.25, 0.6, max_per_class=20, mode=NmsMode.HAILORT, classes_are_probabilities=True)
    heads = {h.name: h for h in sigmoid_hef.heads}
    found = 0
    with (
        EmulatorRunner(bbox_hef) as runner,
        EmulatorRunner(nms_hef) as nms_runner,
        EmulatorRunner(sigmoid_hef) as raw_runner,
    ):
        for frame in _frames(images["val"]):
            buffer = runner.infer({"images": frame})[name]
            raw = raw_runner.infer({"images": frame})
            np.testing.assert_array_equal(buffer, bbox_only_op(raw, heads, config, HeadFamily.YOLOV8))
            ours = decode_bbox_only(buffer, spec, config, HeadFamily.YOLOV8)
            theirs = decode_nms(nms_runner.infer({"images": frame})[nms_name], nms_spec, INPUT_HW)
            np.testing.assert_array_equal(ours.class_ids, theirs.class_ids)
            np.testing.assert_array_equal(ours.scores, theirs.scores)
            np.testing.assert_allclose(ours.boxes, theirs.boxes, atol=1e-3)  # normalised and back: float rounding
            found += len(ours)
    assert found > 0


def test_a_yolov5_bbox_only_hef_writes_every_anchor_of_every_cell_and_the_host_nms_keeps_what_the_op_keeps(
    yolov5_onnx: Path, images: dict[str, Path], cache_dir: Path, yolov5_hef: EmulatedHef
) -> None:
    from harness.backends.emulator.outputs import nms_spec
    from harness.backends.emulator.runner import nms_op
    from harness.core.head_family import HeadFamily
    from harness.core.settings import NmsMode
    from harness.decode.bbox_only import bbox_only_op, decode_bbox_only

    bbox_hef = build_emulated_hef(yolov5_onnx, images["in_domain"], _bbox_only_options(), cache_dir)
    ((name, spec),) = bbox_hef.output_specs.items()
    assert name == "yolov5_nms_postprocess"
    assert spec.shape == (1, 2 * (8 * 8 + 4 * 4 + 2 * 2), 5 + 2)  # 2 anchors per cell, objectness then 2 classes
    heads = {h.name: h for h in yolov5_hef.heads}
    config = _v5_config(mode=NmsMode.HAILORT, max_per_class=20)
    op_spec = nms_spec(2, 20, HeadFamily.YOLOV5)
    found = 0
    with EmulatorRunner(bbox_hef) as runner, EmulatorRunner(yolov5_hef) as raw_runner:
        for frame in _v5_frames(images["val"]):
            buffer = runner.infer({"images": frame})[name]
            raw = raw_runner.infer({"images": frame})
            np.testing.assert_array_equal(buffer, bbox_only_op(raw, heads, config, HeadFamily.YOLOV5))
            # the host's NMS over it keeps what HailoRT's YOLOv5 NMS op keeps of the same heads
            ours = decode_bbox_only(buffer, spec, config, HeadFamily.YOLOV5)
            theirs = decode_nms(nms_op(raw, heads, config, op_spec, HeadFamily.YOLOV5), op_spec, V5_HW)
            np.testing.assert_array_equal(ours.class_ids, theirs.class_ids)
            np.testing.assert_array_equal(ours.scores, theirs.scores)
            np.testing.assert_allclose(ours.boxes, theirs.boxes, atol=1e-3)
            found += len(ours)
    assert found > 0


def test_the_bbox_only_op_is_refused_beside_the_nms_op_with_uint8_outputs_and_on_a_head_without_one(
    images: dict[str, Path], cache_dir: Path
) -> None:
    from harness.inputs.demo import DEMO26_ONNX

    with pytest.raises(HarnessError, match=r"nms and bbox_only both set, expected one"):
        EmulatorOptions(nms=True, bbox_only=True)
    with pytest.raises(HarnessError, match=r"output_format is UINT8 with bbox_only, expected FLOAT32"):
        EmulatorOptions(bbox_only=True, output_format=FormatType.UINT8)
    with pytest.raises(GraphError, match=r"yolo26-one2one head with HailoRT's bbox-only op.*expected bbox_only off"):
        build_emulated_hef(DEMO26_ONNX, images["in_domain"], _bbox_only_options(), cache_dir)


def test_every_family_names_the_roles_of_its_emulated_head_maps() -> None:
    """Each family's emulator part: the roles of one stride's maps, an objectness map of its own where the family
    scores objectness outside an anchored map."""
    for family in REGISTERED:
        roles = family_part(family.family).head_roles()
        assert roles and all(isinstance(r, HeadRole) for r in roles), family.display
        assert (HeadRole.OBJECTNESS in roles) is (family.objectness and not family.anchored), family.display
