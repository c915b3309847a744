"""An emulated HEF quantizes each conv layer at its output alone, its activation inside it, as the Dataflow
Compiler compiles a conv and its activation into one layer (harness.backends.emulator.fusion)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from PIL import Image

from harness.backends.emulator import EmulatedHef, EmulatorOptions, EmulatorRunner, build_emulated_hef
from harness.backends.emulator import quantize as quantization
from harness.backends.emulator.build import float_graph
from harness.backends.emulator.fusion import fused_tensors, unquantize
from harness.core.specs import FormatType
from harness.formats.quant import dequantize
from harness.inputs.preprocess import letterbox, load_image
from harness.inputs.synthetic import Recipe, split_frame

YOLOV5 = Path(__file__).parents[1] / "support" / "data" / "fire_smoke_yolov5_256.onnx"
COUNT = 8
RECIPE = Recipe(seed=0, train=0, val=0, calib=COUNT, offdomain_calib=0, imgsz=256)


def _conv(
    name: str, source: str, out: str, channels: tuple[int, int], seed: int
) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    rng = np.random.default_rng(seed)
    weight = rng.normal(0, 0.5, (channels[1], channels[0], 1, 1)).astype(np.float32)
    bias = rng.normal(0, 0.1, channels[1]).astype(np.float32)
    tensors = [numpy_helper.from_array(weight, f"{name}.w"), numpy_helper.from_array(bias, f"{name}.b")]
    return helper.make_node("Conv", [source, f"{name}.w", f"{name}.b"], [out], name=name), tensors


def _layers_model() -> onnx.ModelProto:
    """x -> conv a -> SiLU -> m; m -> conv b, read by an Add and a Sigmoid (not an activation of its own);
    add -> conv h -> Sigmoid -> head (an output, as a compiled output activation); m -> conv o -> an output."""
    conv_a, a_weights = _conv("conv_a", "x", "a", (3, 4), 0)
    conv_b, b_weights = _conv("conv_b", "m", "b", (4, 4), 1)
    conv_h, h_weights = _conv("conv_h", "add", "h_logits", (4, 2), 2)
    conv_o, o_weights = _conv("conv_o", "m", "o", (4, 2), 3)
    nodes = [
        conv_a,
        helper.make_node("Sigmoid", ["a"], ["s"], name="silu_sigmoid"),
        helper.make_node("Mul", ["a", "s"], ["m"], name="silu_mul"),
        conv_b,
        helper.make_node("Sigmoid", ["b"], ["b_gate"], name="gate"),
        helper.make_node("Add", ["b", "b_gate"], ["add"], name="add"),
        conv_h,
        helper.make_node("Sigmoid", ["h_logits"], ["head"], name="head_sigmoid"),
        conv_o,
    ]
    weights = a_weights + b_weights + h_weights + o_weights
    graph = helper.make_graph(
        nodes,
        "layers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [
            helper.make_tensor_value_info("head", TensorProto.FLOAT, [1, 2, 8, 8]),
            helper.make_tensor_value_info("o", TensorProto.FLOAT, [1, 2, 8, 8]),
        ],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class _Frames(CalibrationDataReader):
    def __init__(self, frames: list[np.ndarray]) -> None:
        self._frames = iter(frames)

    def get_next(self) -> dict[str, np.ndarray] | None:
        frame = next(self._frames, None)
        return None if frame is None else {"x": frame}


def _quantized(model: onnx.ModelProto, folder: Path, frames: list[np.ndarray]) -> onnx.ModelProto:
    source, out = folder / "float.onnx", folder / "qdq.onnx"
    onnx.save(model, source)
    quantize_static(
        source, out, _Frames(frames), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
    )  # fmt: skip
    return onnx.load(out)


def _quantized_tensors(model: onnx.ModelProto) -> set[str]:
    return {n.input[0] for n in model.graph.node if n.op_type == "QuantizeLinear"}


def test_the_tensors_inside_a_conv_layer_are_its_output_before_its_activation_and_a_silus_sigmoid() -> None:
    # conv b's output is read by two ops that are no SiLU: a layer output of its own; conv o's is a graph output
    assert fused_tensors(_layers_model()) == {"a", "s", "h_logits"}


def test_a_fused_layer_is_quantized_once_at_its_output_and_computes_its_activation_in_float(tmp_path: Path) -> None:
    model = _layers_model()
    frames = [np.random.default_rng(i).uniform(0, 1, (1, 3, 8, 8)).astype(np.float32) for i in range(8)]
    qdq = _quantized(model, tmp_path, frames)
    assert {"a", "s", "h_logits", "m", "b"} <= _quantized_tensors(qdq)  # onnxruntime: every tensor between ops
    fused = onnx.ModelProto()
    fused.CopyFrom(qdq)
    assert unquantize(fused, fused_tensors(model)) is fused  # changed in place
    onnx.checker.check_model(fused)
    assert _quantized_tensors(fused) == _quantized_tensors(qdq) - {"a", "s", "h_logits"}
    read = {name for node in fused.graph.node for name in node.input}
    assert all(i.name in read for i in fused.graph.initializer)  # the pairs' scales and zero points went with them
    # the SiLU's product, the layer's output, is what the fused model quantizes: run both with it as an output
    for m in (qdq, fused):
        m.graph.output.extend([helper.make_empty_tensor_value_info("m"), helper.make_empty_tensor_value_info("a")])
    run = {
        name: ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            ["a", "m"], {"x": frames[0]}
        )
        for name, m in (("qdq", qdq), ("fused", fused))
    }
    a, m = run["fused"]
    np.testing.assert_allclose(m, a / (1 + np.exp(-a)), rtol=1e-5, atol=1e-6)  # SiLU of the conv's float output
    assert np.array_equal(a, run["qdq"][0])  # the same conv, its inputs and weights quantized alike
    assert not np.allclose(run["qdq"][1], m, atol=1e-6)  # three quantizations there, none here


def _images(folder: Path) -> Path:
    folder.mkdir()
    for index in range(COUNT):
        Image.fromarray(split_frame(RECIPE, "calib", index).image).save(folder / f"calib_{index:03d}.png")
    return folder


def _head_sqnr(hef: EmulatedHef) -> float:
    """The heads' signal-to-quantization-noise ratio (dB) against the float graph, over the calibration frames."""
    graph = float_graph(hef.source, hef.options)
    session = ort.InferenceSession(graph.model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [h.tensor for h in graph.heads]
    specs = {h.name: h for h in hef.heads}
    signal = noise = 0.0
    with EmulatorRunner(hef) as runner:
        for path in hef.calibration_images:
            frame = letterbox(load_image(path), graph.input_hw)[0][None]
            heads = runner.raw_heads({graph.input_name: frame})
            for name, reference in zip(names, session.run(names, {graph.input_name: frame}), strict=True):
                emulated = dequantize(heads[name], specs[name].quant).transpose(2, 0, 1)
                signal += float(np.sum(reference[0] ** 2))
                noise += float(np.sum((reference[0] - emulated) ** 2))
    return 10 * np.log10(signal / noise)


def test_the_yolov5_export_quantized_as_compiled_layers_tracks_its_float_heads_closer_than_op_by_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not YOLOV5.is_file():
        pytest.skip(f"YOLOv5 test export not found at {YOLOV5}")
    images = _images(tmp_path / "calib")
    options = EmulatorOptions(calibration_count=COUNT, sigmoid_inside=True, output_format=FormatType.UINT8)
    layers = build_emulated_hef(YOLOV5, images, options, tmp_path / "layers")
    model = onnx.load(layers.quantized_model)
    fused = fused_tensors(float_graph(YOLOV5, options).model)
    # every SiLU of the export and each head's logits before its compiled sigmoid
    assert len(fused) == 2 * sum(n.op_type == "Mul" for n in model.graph.node) + len(layers.heads)
    assert not fused & _quantized_tensors(model)
    monkeypatch.setattr(quantization, "fused_tensors", lambda model: frozenset())
    ops = build_emulated_hef(YOLOV5, images, options, tmp_path / "ops")
    assert fused <= _quantized_tensors(onnx.load(ops.quantized_model))
    # quantizing inside each layer adds noise a compiled HEF does not have
    assert _head_sqnr(layers) > _head_sqnr(ops) + 1.0
