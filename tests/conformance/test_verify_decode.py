"""``verify_decode`` and the ``verify-decode`` command on a real export (YOLO11n, 320x320)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main as cli
from harness.conformance import verify_decode as vd
from harness.conformance.verify_decode import (
    BOX_TOLERANCE_PX,
    SCORE_TOLERANCE,
    format_report,
    report_as_dict,
    verify_decode,
)
from harness.core.errors import HarnessError
from harness.decode import dfl
from harness.decode.dfl import candidates

MODEL = "yolo11n_coco80_320_int8.onnx"


@pytest.fixture(scope="module")
def model_path(shared_fixtures: Path) -> Path:
    return shared_fixtures / "onnx" / MODEL


@pytest.fixture(scope="module")
def images(shared_fixtures: Path) -> list[Path]:
    return sorted((shared_fixtures / "datasets/coco128_val16/images/val2017").glob("*.jpg"))


@pytest.fixture(scope="module")
def report(model_path: Path, images: list[Path]) -> vd.VerifyReport:
    return verify_decode(model_path, images, threads=1)


@pytest.fixture
def image_folder(tmp_path: Path, images: list[Path]) -> Path:
    """Three fixture images, linked (not copied) into a folder of their own."""
    folder = tmp_path / "images"
    folder.mkdir()
    for image in images[:3]:
        (folder / image.name).symlink_to(image)
    return folder


@pytest.fixture
def command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "verify-decode", "harness.cli.commands.verify_decode")


def test_real_export_agrees_with_the_decoder_on_all_images(report: vd.VerifyReport) -> None:
    assert report.ok
    assert len(report.images) == 16
    assert report.max_box_diff_px <= BOX_TOLERANCE_PX
    assert report.max_score_diff <= SCORE_TOLERANCE
    assert report.detections_identical
    assert sum(i.detections for i in report.images) > 16
    assert report.tail_dequantized
    assert report.reference_output == "output0"
    assert [level.stride for level in report.layout.levels] == [8, 16, 32]
    heads = {h.tensor: h for h in report.heads}
    assert all(heads[o.name].role is o.role for o in report.layout.outputs)
    assert [o.role.value for o in report.layout.outputs] == ["box", "class"] * 3


def test_report_text_names_heads_tolerances_and_every_image(report: vd.VerifyReport) -> None:
    text = format_report(report)
    assert text.splitlines()[0].endswith(": OK")
    assert "/model.23/cv2.0/cv2.0.2/Conv_output_0" in text and "stride 32" in text
    assert f"tolerance {BOX_TOLERANCE_PX:g}" in text
    assert all(i.image in text for i in report.images)
    assert "identical on 16/16 images" in text
    assert "decode: hailort NMS, score threshold" in text and "top-k" not in text


def test_report_as_dict_is_json_with_the_verdict(report: vd.VerifyReport) -> None:
    data = json.loads(json.dumps(report_as_dict(report)))
    assert data["ok"] is True
    assert data["config"]["mode"] == "hailort"
    assert len(data["images"]) == 16 and len(data["heads"]) == 6


def test_a_decoder_off_by_half_a_cell_is_caught(
    model_path: Path, images: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def shifted(outputs, heads, config):
        boxes, scores = candidates(outputs, heads, config)
        return boxes + np.float32(4), scores  # half a stride-8 cell

    monkeypatch.setattr(dfl, "candidates", shifted)
    report = verify_decode(model_path, images[:2], threads=1)
    assert not report.ok
    assert report.max_box_diff_px == pytest.approx(4, abs=1e-3)
    assert "DISAGREES" in format_report(report)


def test_given_end_nodes_give_the_same_heads(report: vd.VerifyReport, model_path: Path, images: list[Path]) -> None:
    nodes = [h.node for h in report.heads]
    given = verify_decode(model_path, images[:1], end_nodes=nodes, threads=1)
    assert given.heads == report.heads
    assert given.ok


def test_no_images_is_an_error(model_path: Path) -> None:
    with pytest.raises(HarnessError, match="no images"):
        verify_decode(model_path, [])


def test_cli_verify_decode_prints_the_report_and_exits_0(command, model_path, image_folder, capsys) -> None:
    assert cli.main(["verify-decode", "--onnx", str(model_path), "--images", str(image_folder)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(": OK")
    assert "identical on 3/3 images" in out


def test_cli_verify_decode_json(command, model_path, image_folder, capsys) -> None:
    assert cli.main(["verify-decode", "--onnx", str(model_path), "--images", str(image_folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and len(data["images"]) == 3


def test_cli_verify_decode_exits_1_when_the_decoder_disagrees(
    command, model_path, image_folder, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(dfl, "candidates", lambda o, h, c: tuple(a * 0 for a in candidates(o, h, c)))
    assert cli.main(["verify-decode", "--onnx", str(model_path), "--images", str(image_folder)]) == 1
    assert "DISAGREES" in capsys.readouterr().out


def test_cli_verify_decode_unknown_end_node_exits_2_naming_it(command, model_path, image_folder, capsys) -> None:
    argv = ["verify-decode", "--onnx", str(model_path), "--images", str(image_folder), "--end-nodes", "/nope/Conv"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "'/nope/Conv'" in err and "/model.23/cv2.0/cv2.0.2/Conv_output_0_bias_add" in err


def test_cli_verify_decode_folder_without_images_exits_2(command, model_path, tmp_path, capsys) -> None:
    assert cli.main(["verify-decode", "--onnx", str(model_path), "--images", str(tmp_path)]) == 2
    assert "no image files" in capsys.readouterr().err


def test_a_yolo26_export_is_verified_against_its_own_one_to_one_top_k(shared_fixtures: Path) -> None:
    """On fire/smoke frames, two of which (fire-image_73, smoke-image_11) rank rows near the 300th score
    in another order than the export's own top-k: rows within rounding of the cut may trade places."""
    from harness.inputs.demo import DEMO26_ONNX

    frames = shared_fixtures / "datasets/fire_smoke_val/images/val"
    chosen = ["fire-image_73.jpg", "smoke-image_11.jpg", *sorted(p.name for p in frames.glob("*.jpg"))[:4]]
    report = verify_decode(DEMO26_ONNX, [frames / name for name in chosen], threads=1)
    assert [(level.stride, level.reg_max) for level in report.layout.levels] == [(8, 1), (16, 1), (32, 1)]
    assert report.ok, format_report(report)
    assert report.max_box_diff_px <= 1e-3 and report.max_score_diff <= 1e-6
    text = format_report(report)  # the one-to-one head runs no NMS, and the report does not say it does
    assert "decode: top-300 (anchor, class) pairs of the one-to-one head, no NMS" in text
    assert "NMS identical" not in text and "after top-k identical on 6/6 images" in text
    assert report_as_dict(report)["family"] == "yolo26-one2one"


@pytest.fixture(scope="module")
def yolov5_model(tmp_path_factory) -> Path:
    import onnx

    from support.yolov5_exports import yolov5_export

    path = tmp_path_factory.mktemp("yolov5") / "v5.onnx"
    onnx.save(yolov5_export(side=64, nc=3, seed=3), path)
    return path


def test_a_yolov5_export_is_verified_against_its_own_rows_with_the_anchors_its_tail_multiplies(
    yolov5_model: Path, images: list[Path]
) -> None:
    report = verify_decode(yolov5_model, images, threads=1)
    assert report.ok, format_report(report)
    assert report.config.anchors == tuple(h.anchors for h in report.heads) and len(report.config.anchors) == 3
    assert report.max_box_diff_px <= 1e-3 and report.max_score_diff <= 1e-6
    assert sum(i.detections for i in report.images) >= 10
    text = format_report(report)
    assert "anchored '/model.24/m.0/Conv_output_0' (24 ch" in text and "anchors 10x13, 16x30, 33x23" in text


def test_a_yolov5_decode_with_anchors_of_the_wrong_strides_disagrees(yolov5_model: Path, images: list[Path]) -> None:
    from harness.families.yolov5.decode import DEFAULT_ANCHORS

    config = vd.DecodeConfig(input_hw=(64, 64), anchors=DEFAULT_ANCHORS[::-1])
    report = verify_decode(yolov5_model, images, config=config, threads=1)
    assert not report.ok and report.max_box_diff_px > 10


def test_a_yolox_export_is_verified_against_its_own_rows(tmp_path: Path, images: list[Path]) -> None:
    import onnx

    from support.yolox_exports import yolox_export

    path = tmp_path / "yolox.onnx"
    onnx.save(yolox_export(side=64, nc=3, seed=3), path)
    report = verify_decode(path, images, threads=1)
    assert report.ok, format_report(report)
    assert report.family.value == "yolox" and report.max_box_diff_px <= 1e-3 and report.max_score_diff <= 1e-6
    assert sum(i.detections for i in report.images) >= 10


def test_an_ssd_export_is_verified_against_its_own_boxes_and_scores_with_its_config(
    tmp_path: Path, images: list[Path], command, capsys
) -> None:
    import dataclasses

    import onnx

    from harness.core.settings import DecodeConfig

    from support.ssd_exports import ANCHORS, CENTERS_SCALE, DIMENSIONS_SCALE, ssd_config, ssd_export

    path = tmp_path / "ssd.onnx"
    onnx.save(ssd_export(side=64, nc=3, seed=3), path)
    report = verify_decode(path, images, config=DecodeConfig(input_hw=(64, 64), ssd=ssd_config()), threads=1)
    assert report.ok, format_report(report)
    assert report.family.value == "ssd" and report.max_box_diff_px <= 1e-3 and report.max_score_diff <= 1e-6
    assert sum(i.detections for i in report.images) >= 10
    assert report.reference_output == "raw_detection_boxes, raw_detection_scores"
    # another centre scale is refused where the heads are found: the export's own tail decodes otherwise
    other = dataclasses.replace(ssd_config(), centers_scale_factor=CENTERS_SCALE + 1)
    with pytest.raises(HarnessError, match=r"centers_scale_factor|decode"):
        verify_decode(path, images[:1], config=DecodeConfig(input_hw=(64, 64), ssd=other), threads=1)
    # the command: --ssd-config in HailoRT's words
    folder = tmp_path / "images"
    folder.mkdir()
    for image in images[:3]:
        (folder / image.name).symlink_to(image)
    config = tmp_path / "ssd.json"
    decoders = [{"w": [w for w, _ in layer], "h": [h for _, h in layer]} for layer in ANCHORS]
    config.write_text(
        json.dumps(
            {
                "centers_scale_factor": CENTERS_SCALE,
                "bbox_dimensions_scale_factor": DIMENSIONS_SCALE,
                "background_removal_index": 0,
                "bbox_decoders": decoders,
            }
        )
    )
    base = ["verify-decode", "--onnx", str(path), "--images", str(folder)]
    assert cli.main([*base, "--ssd-config", str(config)]) == 0
    assert "detections after NMS identical on 3/3 images" in capsys.readouterr().out
    assert cli.main(base) == 2
    assert "give them in an SSD config file (--ssd-config FILE" in capsys.readouterr().err


def test_the_trained_yolov5_export_is_verified_on_real_fire_smoke_frames(shared_fixtures: Path) -> None:
    """tests/support/data/fire_smoke_yolov5_256.onnx (MODEL_CARD_yolov5.md): YOLOv5's own export tail, its
    default anchors read from the graph, the harness's decoder equal to its rows on real frames."""
    from harness.families.yolov5.decode import DEFAULT_ANCHORS

    model = Path(__file__).resolve().parents[1] / "support" / "data" / "fire_smoke_yolov5_256.onnx"
    frames = sorted((shared_fixtures / "datasets/fire_smoke_val/images/val").glob("*.jpg"))[:12]
    report = verify_decode(model, frames, threads=1)
    assert report.ok, format_report(report)
    assert report.config.anchors == DEFAULT_ANCHORS
    assert report.max_box_diff_px <= 1e-3 and report.max_score_diff <= 1e-6
    assert sum(i.detections for i in report.images) >= 12


def test_the_trained_yolox_export_is_verified_on_every_fire_smoke_frame(shared_fixtures: Path) -> None:
    """tests/support/data/fire_smoke_yolox_256.onnx (MODEL_CARD_yolox.md): YOLOX's own decode tail
    (``decode_in_inference``), the harness's YOLOX decoder over its nine cut head maps equal to its rows on
    the 200 real frames, the detections after NMS the same on each."""
    model = Path(__file__).resolve().parents[1] / "support" / "data" / "fire_smoke_yolox_256.onnx"
    frames = sorted((shared_fixtures / "datasets/fire_smoke_val/images/val").glob("*.jpg"))
    report = verify_decode(model, frames, threads=1)
    assert report.ok, format_report(report)
    assert report.family.value == "yolox" and len(report.heads) == 9 and len(report.images) == 200
    assert all(i.same_detections for i in report.images)
    assert report.max_box_diff_px <= 1e-3 and report.max_score_diff <= 1e-6
    assert sum(i.detections for i in report.images) >= 200


def test_the_trained_ssd_export_is_verified_with_its_config_file_on_every_fire_smoke_frame(
    shared_fixtures: Path,
) -> None:
    """tests/support/data/fire_smoke_ssd_256.onnx (MODEL_CARD_ssd.md) with fire_smoke_ssd_256.ssd.json: the
    Object Detection API's decode tail as torch exports it, the harness's SSD decoder (HailoRT's SSD op) over
    its six cut head maps, the class maps put through the sigmoid, equal to its boxes and scores on the 200
    real frames, the detections after NMS the same on each (measured: 200 of 200, boxes within 3.1e-5 px,
    scores within 1.2e-7, 4517 detections)."""
    from harness.core.settings import DecodeConfig

    from support.ssd_exports import TRAINED, trained_config

    frames = sorted((shared_fixtures / "datasets/fire_smoke_val/images/val").glob("*.jpg"))
    config = DecodeConfig(input_hw=(256, 256), ssd=trained_config())
    report = verify_decode(TRAINED, frames, config=config, threads=1)
    assert report.ok, format_report(report)
    assert report.family.value == "ssd" and len(report.heads) == 6 and len(report.images) == 200
    assert all(i.same_detections for i in report.images)
    assert report.max_box_diff_px <= 1e-3 and report.max_score_diff <= 1e-6
    assert sum(i.detections for i in report.images) >= 200
