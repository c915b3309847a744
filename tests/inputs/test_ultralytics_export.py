"""Ultralytics Hailo export folders (``yolo export format=hailo``): read as Ultralytics writes them, held
against the HEF they hold, taken wherever a HEF is. The folders are made here around the real fixture
HEFs (linked, not copied), with the files laid out as ultralytics/engine/exporter.py (export_hailo)
writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.cli import main as cli
from harness.inputs.hef.reader import read_hef
from harness.inputs.hef.ultralytics import ExportError, export_of, hef_in, read_export
from harness.pipeline.options import from_text
from harness.verdict.hef_checks import CheckContext, run_checks

pytest_plugins = ["pytester"]

NMS_CONFIG = {  # the yolov8s NMS op of the fixture HEF, as the export writes it
    "nms_scores_th": 0.2,
    "nms_iou_th": 0.7,
    "image_dims": [640, 640],
    "max_proposals_per_class": 100,
    "classes": 3,
    "regression_length": 16,
    "background_removal": False,
    "background_removal_index": 0,
    "bbox_decoders": [
        {"name": f"bbox_decoder_{s}", "stride": s, "reg_layer": f"conv{r}", "cls_layer": f"conv{r + 1}"}
        for s, r in ((8, 41), (16, 52), (32, 62))
    ],
}


def make_export(root: Path, hef: Path, metadata: dict, nms_config: dict | None) -> Path:
    folder = root / f"{hef.stem}_hailo_model"
    folder.mkdir(parents=True)
    (folder / f"{hef.stem}.hef").symlink_to(hef)
    (folder / "metadata.yaml").write_text(yaml.safe_dump(metadata))
    if nms_config is not None:
        (folder / "nms_config.json").write_text(json.dumps(nms_config, indent=2))
    return folder


def yolo_metadata(**changes) -> dict:
    base = {
        "description": "Ultralytics YOLOv8s model",
        "author": "Ultralytics",
        "task": "detect",
        "stride": 32,
        "batch": 1,
        "imgsz": [640, 640],
        "names": {0: "fire", 1: "smoke", 2: "other"},
        "end2end": False,
        "hailo_arch": "hailo8l",
        "nms": True,
    }
    return {**base, **changes}


@pytest.fixture
def nms_hef(shared_fixtures) -> Path:
    return shared_fixtures / "hef_bad" / "hailo8l_yolov8s_nms_truncated.hef"


def checks(folder: Path) -> dict:
    hef = hef_in(folder)
    context = CheckContext(read_hef(hef, tolerant=True), export=export_of(hef))
    return {r.name: r for r in run_checks(context) if r.name.startswith("export_")}


def test_an_export_is_read_as_ultralytics_writes_it_and_its_files_match_its_hef(tmp_path, nms_hef):
    folder = make_export(tmp_path, nms_hef, yolo_metadata(), NMS_CONFIG)
    export = read_export(folder)
    assert export.hef == folder / f"{nms_hef.stem}.hef" and export.names == ("fire", "smoke", "other")
    assert (export.imgsz, export.hailo_arch, export.nms) == ((640, 640), "hailo8l", True)
    assert export.nms_config is not None and [d.stride for d in export.nms_config.bbox_decoders] == [8, 16, 32]
    results = checks(folder)
    assert results["export_metadata"].passed and results["export_nms_config"].passed, results


@pytest.mark.parametrize(
    ("metadata", "config", "check", "words"),
    [
        ({"imgsz": [320, 320]}, {}, "export_metadata", "metadata.yaml imgsz: found [320, 320], expected [640, 640]"),
        ({"hailo_arch": "hailo10h"}, {}, "export_metadata", "hailo_arch: found hailo10h, expected hailo8l"),
        ({"names": {0: "fire", 1: "smoke"}}, {}, "export_metadata", "expected 3 classes, as in the HEF's NMS op"),
        ({}, {"nms_scores_th": 0.25}, "export_nms_config", "nms_config.json nms_scores_th: found 0.25, expected 0.2"),
        ({}, {"classes": 80}, "export_nms_config", "nms_config.json classes: found 80, expected 3"),
        ({}, {"image_dims": [320, 320]}, "export_nms_config", "image_dims: found [320, 320], expected [640, 640]"),
    ],
)
def test_a_file_that_disagrees_with_its_hef_fails_naming_the_file_the_field_and_both_values(
    tmp_path, nms_hef, metadata, config, check, words
):
    folder = make_export(tmp_path, nms_hef, yolo_metadata(**metadata), {**NMS_CONFIG, **config})
    result = checks(folder)[check]
    assert result.passed is False and words in result.message, result.message


@pytest.mark.parametrize(
    ("metadata", "config", "words"),
    [
        (None, NMS_CONFIG, "no metadata.yaml beside"),
        (yolo_metadata(), None, "says nms: true, but there is no nms_config.json"),
        (yolo_metadata(names={1: "fire", 2: "smoke"}), NMS_CONFIG, "field names has indices [1, 2], expected 0..1"),
        (yolo_metadata(imgsz="640"), NMS_CONFIG, "field imgsz is '640', expected an image size"),
        (yolo_metadata(), {**NMS_CONFIG, "nms_iou_th": float("nan")}, "NaN is not a JSON number (field nms_iou_th)"),
        (yolo_metadata(), {**NMS_CONFIG, "bbox_decoders": [{"name": "d"}]}, "bbox_decoders[0].stride"),
    ],
)
def test_a_folder_whose_files_are_missing_or_malformed_is_refused_naming_the_file_and_field(
    tmp_path, nms_hef, metadata, config, words
):
    folder = make_export(tmp_path, nms_hef, metadata or {}, config)
    if metadata is None:
        (folder / "metadata.yaml").unlink()
    with pytest.raises(ExportError, match=None) as caught:
        read_export(folder)
    assert words in str(caught.value) and str(folder) in str(caught.value)


_BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
)


def _decoder(**change) -> dict:
    return {**NMS_CONFIG, "bbox_decoders": [{**NMS_CONFIG["bbox_decoders"][0], **change}]}


@pytest.mark.parametrize(
    ("metadata", "config", "words"),
    [
        (_BOMB + yaml.safe_dump(yolo_metadata()), NMS_CONFIG, "metadata.yaml: line 1: a YAML anchor &a0"),
        (yolo_metadata(end2end="false"), NMS_CONFIG, "metadata.yaml: field end2end is 'false', expected true or false"),
        (yolo_metadata(task=1), NMS_CONFIG, "metadata.yaml: field task is 1, expected a non-empty string"),
        (yolo_metadata(names={0: "a", "1": "b"}), NMS_CONFIG, "field names has indices [0, '1'], expected 0..1"),
        (yolo_metadata(names={0: "a", 1: 7}), NMS_CONFIG, "field names.1 is 7, expected a class name"),
        (yolo_metadata(args={"data": 3}), NMS_CONFIG, "field args.data is 3, expected the calibration dataset"),
        (yolo_metadata(), {**NMS_CONFIG, "background_removal": "false"}, "field background_removal is 'false'"),
        (yolo_metadata(), {**NMS_CONFIG, "nms_scores_th": "0.2"}, "field nms_scores_th is '0.2', expected a number"),
        (yolo_metadata(), {**NMS_CONFIG, "classes": 3.0}, "field classes is 3.0, expected an integer >= 1"),
        (yolo_metadata(), {**NMS_CONFIG, "nms_scores_th": 10**400}, "an integer of 401 digits (field nms_scores_th)"),
        (
            yolo_metadata(),
            _decoder(reg_layer="../../../etc/passwd"),
            "field bbox_decoders[0].reg_layer is '../../../etc/passwd', expected a layer name",
        ),
        (yolo_metadata(), _decoder(cls_layer="conv42, sigmoid)"), "field bbox_decoders[0].cls_layer is 'conv42, sig"),
        (yolo_metadata(), _decoder(stride=True), "field bbox_decoders[0].stride is True, expected an integer >= 1"),
    ],
)
def test_a_value_a_lenient_reader_would_guess_at_is_refused_naming_the_file_and_field(
    tmp_path, nms_hef, metadata, config, words
):
    """An alias bomb (which hung inspect --tolerant) is refused at its first anchor; "false" is not true,
    1 is not a task, 10**400 does not overflow, a layer name is a layer name (not a path, not script text)."""
    folder = make_export(tmp_path, nms_hef, {}, config)
    (folder / "metadata.yaml").write_text(metadata if isinstance(metadata, str) else yaml.safe_dump(metadata))
    with pytest.raises(ExportError, match=None) as caught:
        read_export(folder)
    assert words in str(caught.value), str(caught.value)


def test_a_key_given_twice_in_either_file_is_refused(tmp_path, nms_hef):
    folder = make_export(tmp_path, nms_hef, yolo_metadata(), NMS_CONFIG)
    text = (folder / "nms_config.json").read_text()
    (folder / "nms_config.json").write_text(text.replace('"classes": 3,', '"classes": 3, "classes": 80,'))
    with pytest.raises(ExportError, match=r"nms_config\.json: key 'classes' given twice in one object"):
        read_export(folder)
    (folder / "nms_config.json").write_text(text)
    (folder / "metadata.yaml").write_text(yaml.safe_dump(yolo_metadata()) + "nms: false\n")
    with pytest.raises(ExportError, match=r"metadata\.yaml: line \d+: key 'nms' given twice"):
        read_export(folder)


def test_the_keys_ultralytics_writes_besides_those_read_are_left_alone(tmp_path, nms_hef):
    metadata = yolo_metadata(date="2025-01-01T00:00:00", version="8.3.0", license="AGPL-3.0", channels=3)
    folder = make_export(tmp_path, nms_hef, metadata, {**NMS_CONFIG, "later_key": 1})
    assert read_export(folder).names == ("fire", "smoke", "other")


def test_a_folder_with_two_hefs_is_refused_naming_both(tmp_path, nms_hef, shared_fixtures):
    folder = make_export(tmp_path, nms_hef, yolo_metadata(), NMS_CONFIG)
    (folder / "other.hef").symlink_to(shared_fixtures / "hef" / "hailo8_mnist_cnn.hef")
    with pytest.raises(
        ExportError, match=r"expected one \.hef .*found .*hailo8l_yolov8s_nms_truncated\.hef, other\.hef"
    ):
        hef_in(folder)


def test_every_surface_takes_the_folder_where_it_takes_a_hef(tmp_path, shared_fixtures, capsys, pytester):
    mnist = shared_fixtures / "hef" / "hailo8_mnist_cnn.hef"
    metadata = yolo_metadata(imgsz=[32, 32], hailo_arch="hailo8", nms=False, names={0: "digit"})
    folder = make_export(tmp_path, mnist, metadata, None)
    assert from_text("hef", str(folder)) == folder / "hailo8_mnist_cnn.hef"  # run, eval, the plugin
    assert cli.main(["inspect", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Ultralytics export: {folder}") and "check export_metadata: ok" in out
    result = pytester.runpytest_subprocess(f"--hef={folder}", "-rA")
    result.stdout.fnmatch_lines(["*PASSED*test_hef_static[[]export_metadata[]]*"])


def test_an_end2end_flag_that_is_not_the_onnx_head_fails_export_metadata(tmp_path, nms_hef):
    """metadata.yaml's end2end is the exported model's: true only for YOLO26's one-to-one head."""
    from harness.core.head_family import HeadFamily

    from support.export_facts import yolo_facts

    def with_model(folder: Path, family: HeadFamily) -> dict:
        hef = hef_in(folder)
        facts = yolo_facts(family=family)
        context = CheckContext(read_hef(hef, tolerant=True), export=export_of(hef), model=facts)
        return {r.name: r for r in run_checks(context)}

    folder = make_export(tmp_path / "a", nms_hef, yolo_metadata(end2end=True), NMS_CONFIG)
    result = with_model(folder, HeadFamily.YOLOV8)["export_metadata"]
    assert (
        result.passed is False
        and "metadata.yaml end2end: found True, expected False (m.onnx carries the yolov8 head)" in result.message
    )
    folder = make_export(tmp_path / "b", nms_hef, yolo_metadata(), NMS_CONFIG)
    assert with_model(folder, HeadFamily.YOLOV8)["export_metadata"].passed


def test_the_facts_of_a_yolo26_export_name_its_head_family():
    from harness.core.head_family import HeadFamily
    from harness.decode.layout import layout_of_tensors
    from harness.inputs.demo import DEMO26_ONNX
    from harness.inputs.export_facts import export_facts

    facts = export_facts(DEMO26_ONNX)
    layout = layout_of_tensors(facts.heads, facts.input_hw)
    assert (facts.family, layout.reg_max, layout.classes, [v.grid for v in layout.levels]) == (
        HeadFamily.YOLO26_ONE2ONE,
        1,
        2,
        [(32, 32), (16, 16), (8, 8)],
    )


def test_the_calibration_an_export_records_is_read_from_its_args_and_inspect_says_it(tmp_path, nms_hef, capsys):
    from harness.cli import main as cli

    args = {"data": "fire_smoke.yaml", "fraction": 0.5, "quantize": 8}
    folder = make_export(tmp_path / "a", nms_hef, yolo_metadata(args=args), NMS_CONFIG)
    assert read_export(folder).calibration == "data=fire_smoke.yaml fraction=0.5"
    cli.main(["inspect", str(folder), "--tolerant"])
    assert "    calibration: data=fire_smoke.yaml fraction=0.5" in capsys.readouterr().out
    bare = make_export(tmp_path / "b", nms_hef, yolo_metadata(args={"data": "d.yaml", "fraction": 1.0}), NMS_CONFIG)
    assert read_export(bare).calibration == "data=d.yaml"
    assert read_export(make_export(tmp_path / "c", nms_hef, yolo_metadata(), NMS_CONFIG)).calibration is None


def test_a_hef_run_alone_takes_its_model_facts_from_the_export_files_instead_of_an_onnx(tmp_path, shared_fixtures):
    """eval --hef FOLDER without --onnx: class names, input size and head family from metadata.yaml and
    the HEF; a run that needs the export (the job's ONNX path) still asks for --onnx."""
    from harness.core.errors import HarnessError
    from harness.core.head_family import HeadFamily
    from harness.pipeline.factory import model_facts
    from harness.pipeline.options import onnx_of

    hef = shared_fixtures / "hef" / "hailo8_mnist_cnn.hef"
    names = {i: str(i) for i in range(10)}
    meta = yolo_metadata(imgsz=[32, 32], names=names, nms=False, end2end=True, hailo_arch="hailo8")
    folder = make_export(tmp_path, hef, meta, None)
    inside = hef_in(folder)  # what the --hef option's parser makes of the folder
    assert onnx_of({"hef": inside}, hef_alone=True) == inside
    assert model_facts(inside, tmp_path / "cache") == model_facts(folder, tmp_path / "cache")
    facts = model_facts(folder, tmp_path / "cache")
    assert (facts.input_hw, facts.names, facts.family) == ((32, 32), tuple(names.values()), HeadFamily.YOLO26_ONE2ONE)
    assert facts.input_name.endswith("input_layer1")
    with pytest.raises(
        HarnessError, match=r"--hef: needs --onnx M.onnx .*\(or a HEF in its Ultralytics export folder\)"
    ):
        onnx_of({"hef": hef}, hef_alone=True)
    with pytest.raises(HarnessError, match=r"--hef: needs --onnx M.onnx \(the model's export, for its class names\)$"):
        onnx_of({"hef": inside})
    with pytest.raises(HarnessError, match=r"a HEF without its Ultralytics export's metadata.yaml"):
        model_facts(hef, tmp_path / "cache")
    wrong = make_export(tmp_path / "w", hef, {**meta, "imgsz": [64, 64]}, None)
    with pytest.raises(HarnessError, match=r"imgsz \[64, 64\], but the HEF's input .* is 32x32"):
        model_facts(wrong, tmp_path / "cache")


def test_the_calibration_note_of_a_hef_path_says_what_its_export_recorded(tmp_path, nms_hef):
    from harness.pipeline.factory import calibration_note
    from harness.pipeline.spec import Backend, PathSpec

    args = {"data": "fire_smoke.yaml", "fraction": 0.25}
    folder = make_export(tmp_path, nms_hef, yolo_metadata(args=args), NMS_CONFIG)
    note = calibration_note(PathSpec(Backend.HAILORT, hef=hef_in(folder)), None)  # type: ignore[arg-type]
    assert note.endswith(
        "(a HEF does not record its images; its Ultralytics export says data=fire_smoke.yaml fraction=0.25)"
    )
