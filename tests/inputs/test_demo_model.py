"""The shipped demo model is a real Ultralytics export whose heads the harness finds and decodes exactly."""

import onnx

from harness.conformance.verify_decode import verify_decode
from harness.families.yolov8.onnx import find_heads
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.onnx_graph import load_model, model_input
from harness.inputs.synthetic import Recipe, write_dataset


def test_demo_model_is_a_float_two_class_yolo11n_export_at_256():
    model = load_model(DEMO)
    assert model_input(model)[1] == (256, 256)
    heads = find_heads(model)
    assert sorted((h.role, h.channels, h.grid) for h in heads) == sorted(
        [("box", 64, (g, g)) for g in (32, 16, 8)] + [("class", 2, (g, g)) for g in (32, 16, 8)]
    )
    assert not any(n.op_type in ("ConvInteger", "QuantizeLinear") for n in model.graph.node)
    assert {p.key: p.value for p in model.metadata_props}["names"] == "{0: 'fire', 1: 'smoke'}"
    assert onnx.checker.check_model(model) is None


def test_harness_decoder_reproduces_the_demo_models_own_head_on_synthetic_frames(tmp_path):
    write_dataset(tmp_path, Recipe(seed=7, train=0, val=6, calib=0))
    report = verify_decode(DEMO, sorted((tmp_path / "images" / "val").iterdir()))
    assert report.ok and report.detections_identical
    assert report.max_box_diff_px < 1e-3 and report.max_score_diff < 1e-6
