"""YOLOv10's one-to-one head, end to end: its export's heads found as YOLOv10's (not YOLOv8's, not YOLO26's),
its decoder agreeing with the export's own top-k rows, and the conformance suite's reference decoder passing
on its scenes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from harness.conformance.suite import properties, run_conformance
from harness.conformance.verify_decode import format_report, report_as_dict, verify_decode
from harness.core.errors import GraphError
from harness.core.head_family import HeadFamily, HeadRole
from harness.families import descriptor, part
from harness.families.yolo26.one2one.decode import decode as decode_one2one
from harness.families.yolov8.decode import decode as decode_yolov8
from harness.families.yolov10.decode import decode
from harness.inputs.demo import DEMO26_ONNX, DEMO_ONNX
from harness.inputs.onnx_graph import HeadSearch, export_heads, load_model

from support.yolov10_exports import yolov10_export


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    return yolov10_export(load_model(DEMO_ONNX))


@pytest.fixture(scope="module")
def model_path(model: onnx.ModelProto, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("yolov10") / "yolov10.onnx"
    onnx.save(model, path)
    return path


def test_the_export_is_end_to_end_rows_of_a_top_k(model: onnx.ModelProto) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    image = np.random.default_rng(0).random((1, 3, 256, 256), dtype=np.float32)
    (rows,) = session.run(None, {session.get_inputs()[0].name: image})
    assert rows.shape == (1, 300, 6)
    assert np.all(np.diff(rows[0, :, 4]) <= 0) and set(np.unique(rows[0, :, 5])) <= {0.0, 1.0}
    assert np.all(rows[0, :, 2] >= rows[0, :, 0]) and np.all(rows[0, :, 3] >= rows[0, :, 1])  # xyxy


def test_its_heads_are_found_as_yolov10_s_dfl_box_and_class_maps(model: onnx.ModelProto) -> None:
    found = export_heads(model)
    assert found.family is HeadFamily.YOLOV10
    assert [(h.role, h.channels, h.grid) for h in found.heads] == [
        (role, 64 if role is HeadRole.BOX else 2, (side, side))
        for side in (32, 16, 8)
        for role in (HeadRole.BOX, HeadRole.CLASS)
    ]
    facts = descriptor(HeadFamily.YOLOV10)
    assert facts.end_to_end and facts.dfl_boxes and facts.host_postprocess and not facts.sigmoid_compiled


def test_the_other_finders_refuse_it_and_its_finder_refuses_theirs(model: onnx.ModelProto) -> None:
    for family in (HeadFamily.YOLOV8, HeadFamily.YOLO26_ONE2ONE, HeadFamily.YOLO26_ONE2MANY):
        with pytest.raises(GraphError):
            part(family, "onnx").find(model, HeadSearch())
    finder = part(HeadFamily.YOLOV10, "onnx")
    with pytest.raises(GraphError, match=r"expected YOLOv10's end to end, \[1, max_det, 6\]"):
        finder.find(load_model(DEMO_ONNX), HeadSearch())  # YOLOv8/YOLO11: no top-k
    with pytest.raises(GraphError, match=r"^decode tail: box maps on grids \[\]"):
        finder.find(load_model(DEMO26_ONNX), HeadSearch())  # YOLO26 one-to-one: box maps of 4, no DFL
    assert export_heads(load_model(DEMO_ONNX)).family is HeadFamily.YOLOV8
    assert export_heads(load_model(DEMO26_ONNX)).family is HeadFamily.YOLO26_ONE2ONE


def test_its_decoder_agrees_with_the_export_s_own_top_k(model_path: Path, shared_fixtures: Path) -> None:
    frames = sorted((shared_fixtures / "datasets/fire_smoke_val/images/val").glob("*.jpg"))[:6]
    report = verify_decode(model_path, frames, threads=1)
    text = format_report(report)
    assert report.ok, text
    assert report.family is HeadFamily.YOLOV10 and report_as_dict(report)["family"] == "yolov10"
    assert [(level.stride, level.reg_max) for level in report.layout.levels] == [(8, 16), (16, 16), (32, 16)]
    assert report.max_box_diff_px <= 1e-3 and report.max_score_diff <= 1e-5
    assert sum(i.detections for i in report.images) >= 1
    assert "decode: top-300 (anchor, class) pairs of the one-to-one head, no NMS" in text
    assert "after top-k identical on 6/6 images" in text


def test_a_decoder_with_nms_in_place_of_the_top_k_disagrees_with_it(model_path: Path, shared_fixtures: Path) -> None:
    frames = sorted((shared_fixtures / "datasets/fire_smoke_val/images/val").glob("*.jpg"))[:3]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(part(HeadFamily.YOLOV10, "scenes"), "decode", decode_yolov8)
        report = verify_decode(model_path, frames, threads=1)
    assert not report.ok


def test_the_reference_decoder_passes_every_property_on_its_scenes() -> None:
    family = HeadFamily.YOLOV10
    assert part(family, "scenes").reference_decoder() is decode
    assert run_conformance(decode, family=family) == {p.sentence: None for p in properties(family)}
    assert all(run_conformance(decode_one2one, family=family).values())  # the boxes are DFL bins, not distances


def test_its_model_script_is_an_end_to_end_head_s_cut_at_its_box_then_class_maps(
    model_path: Path, tmp_path: Path
) -> None:
    """Ultralytics compiles an end-to-end head without an NMS op, a16_w16 on its outputs, the box maps given
    first as end nodes (ultralytics: ultralytics/engine/exporter.py, ``export_hailo``)."""
    from harness.backends.dfc.heads import end_nodes_of, onnx_facts, table_from_names
    from harness.backends.dfc.layers import placeholder_names
    from harness.backends.dfc.scripts import write_checked_scripts
    from harness.backends.dfc.writing import NmsSettings

    facts = onnx_facts(model_path)
    assert facts.family is HeadFamily.YOLOV10 and facts.end_to_end
    assert [(h.role, h.channels) for h in end_nodes_of(facts)] == [("box", 64)] * 3 + [("class", 2)] * 3
    names = placeholder_names(facts)
    table = table_from_names(facts, names, "placeholder")
    files, results = write_checked_scripts(tmp_path, "yolov10", facts, names, table, NmsSettings(), 64)
    assert files.nms_json is None and all(r.passed is not False for r in results), results
    alls = files.alls.read_text()
    assert "nms_postprocess" not in alls and "change_output_activation" not in alls
    assert "quantization_param([output_layer1, output_layer2, output_layer3, output_layer4, output_layer5, " in alls
