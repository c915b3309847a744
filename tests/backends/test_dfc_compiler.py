"""The DFC adapter against a fake hailo_sdk_client: calls and their order, calibration, cache, log scan,
emulation per stage; the pure stage comparison; and, where the real DFC is installed, the real thing."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import pytest
from PIL import Image

from harness.backends.dfc.checks import failures
from harness.backends.dfc.compiler import (
    CompileRequest,
    DfcError,
    DfcNotInstalled,
    calibration_array,
    compile_hef,
    load_sdk,
    scan_log,
)
from harness.backends.dfc.heads import onnx_facts
from harness.backends.dfc.layers import names_from_parsed, parsed_layers
from harness.backends.dfc.scripts import validate_files, write_checked_scripts
from harness.backends.dfc.writing import NmsSettings
from harness.families.yolov8.onnx import find_heads
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.onnx_graph import load_model

from support.yolov5_exports import yolov5_export

DFC_CALL_ORDER = [
    "ClientRunner",
    "translate_onnx_model",
    "get_hn",
    "load_model_script",
    "optimize",
    "save_har",
    "compile",
]
NO_GPU = (
    "Reducing optimization level to 0 (the accuracy won't be optimized and compression won't be used) "
    "because there's no available GPU"
)


@pytest.fixture
def calibration(tmp_path: Path) -> Path:
    folder = tmp_path / "calib"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i, (h, w) in enumerate([(60, 100), (120, 80), (64, 64)]):
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(folder / f"{i}.png")
    return folder


def _calls(fake: ModuleType, name: str) -> list[dict]:
    return [kwargs for call, kwargs in fake.CALLS if call == name]


def test_compile_calls_the_dfc_in_order_with_the_heads_and_nhwc_calibration(
    sdk: ModuleType, calibration: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = compile_hef(CompileRequest(DEMO, calibration, calibration_count=3), out, cache_root=tmp_path / "cache")
    assert [call for call, _ in sdk.CALLS] == DFC_CALL_ORDER
    assert _calls(sdk, "ClientRunner") == [{"hw_arch": "hailo8", "har": None}]
    (translate,) = _calls(sdk, "translate_onnx_model")
    assert translate == {
        "model": str(DEMO),
        "net_name": "fire_smoke_yolo11n_256",
        "start_node_names": ["images"],
        "end_node_names": [h.node for h in find_heads(load_model(DEMO))],
        "net_input_shapes": {"images": [1, 3, 256, 256]},
    }
    (script,) = _calls(sdk, "load_model_script")
    # The fake names the end nodes conv51.. in order: box, class per stride.
    for cls in ("conv52", "conv54", "conv56"):
        assert f"change_output_activation({cls}, sigmoid)" in script["script"]
    assert f'nms_postprocess("{result.scripts.nms_json.resolve()}", meta_arch=yolov8, engine=cpu)' in script["script"]
    (optimize,) = _calls(sdk, "optimize")
    assert optimize["shape"] == (3, 256, 256, 3) and optimize["dtype"] == np.float32
    assert 0 <= optimize["min"] and optimize["max"] <= 255 and optimize["max"] > 1  # raw 0-255, /255 inside
    assert result.hef == out / "fire_smoke_yolo11n_256.hef" and result.hef.read_bytes() == sdk.HEF_BYTES
    assert result.log.parent == result.hef.parent
    assert "Starting Model Optimization" in result.log.read_text()  # the DFC's non-propagating logger
    decoders = json.loads(result.scripts.nms_json.read_text())["bbox_decoders"]
    assert [(d["reg_layer"], d["cls_layer"]) for d in decoders] == [
        ("conv51", "conv52"),
        ("conv53", "conv54"),
        ("conv55", "conv56"),
    ]
    assert not result.cached and not failures(result.checks)


def test_calibration_frames_are_letterboxed_like_evaluation(calibration: Path) -> None:
    batch = calibration_array(sorted(calibration.iterdir()), (256, 256))
    assert batch.shape == (3, 256, 256, 3) and batch.dtype == np.float32
    assert np.all(batch[0, :50] == 114)  # a 60x100 image fills 154 of 256 rows, centred: grey above


def test_a_second_compile_of_the_same_inputs_does_not_call_the_dfc(
    sdk: ModuleType, calibration: Path, tmp_path: Path
) -> None:
    request = CompileRequest(DEMO, calibration, calibration_count=3)
    first = compile_hef(request, tmp_path / "a", cache_root=tmp_path / "cache")
    sdk.CALLS.clear()
    second = compile_hef(request, tmp_path / "b", cache_root=tmp_path / "cache")
    assert sdk.CALLS == []
    assert second.cached and second.key == first.key
    assert second.hef.read_bytes() == first.hef.read_bytes()
    assert second.log.read_text() == first.log.read_text()
    compile_hef(CompileRequest(DEMO, calibration, calibration_count=2), tmp_path / "c", cache_root=tmp_path / "cache")
    assert [call for call, _ in sdk.CALLS] == ["ClientRunner", "translate_onnx_model", *DFC_CALL_ORDER[3:]]


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text.replace('"channels": ', '"channels": "', 1),  # not JSON
        lambda text: text.replace('"channels": ', '"channels": 1.5, "x": ', 1),  # a key no read takes
        lambda text: text.replace('"name": "', '"name": "../', 1),  # not a layer name
        lambda text: text.replace('{"layers": [', '{"layers": [], "layers": [', 1),  # a key given twice
    ],
)
def test_a_stored_layer_table_that_is_refused_is_logged_and_the_onnx_translated_again(
    sdk: ModuleType, calibration: Path, tmp_path: Path, damage, caplog: pytest.LogCaptureFixture
) -> None:
    request = CompileRequest(DEMO, calibration, calibration_count=3)
    first = compile_hef(request, tmp_path / "a", cache_root=tmp_path / "cache")
    (stored,) = (tmp_path / "cache" / "parsed").glob("*.json")
    stored.write_text(damage(stored.read_text()))
    sdk.CALLS.clear()
    again = compile_hef(request, tmp_path / "b", cache_root=tmp_path / "cache")
    assert [call for call, _ in sdk.CALLS][:2] == ["ClientRunner", "translate_onnx_model"]
    assert again.key == first.key
    assert f"{stored}" in caplog.text and "translating the ONNX again" in caplog.text


def test_an_allocator_crash_is_reported_with_its_log_line(sdk: ModuleType, calibration: Path, tmp_path: Path) -> None:
    sdk.FAIL_COMPILE = "Compilation failed: map::at"
    with pytest.raises(
        DfcError, match=r"compile failed: BackendAllocatorException: Compilation failed: map::at"
    ) as info:
        compile_hef(
            CompileRequest(DEMO, calibration, calibration_count=3), tmp_path / "out", cache_root=tmp_path / "cache"
        )
    assert "the allocator failed with map::at" in str(info.value)
    log = (tmp_path / "out" / "compile.log").read_text()
    (warning,) = [w for w in scan_log(log) if "map::at" in w.line]
    assert log.splitlines()[warning.line_number - 1] == warning.line
    sdk.FAIL_COMPILE = None
    sdk.CALLS.clear()
    compile_hef(CompileRequest(DEMO, calibration, calibration_count=3), tmp_path / "out", cache_root=tmp_path / "cache")
    assert "compile" in [call for call, _ in sdk.CALLS]  # the failure was not cached


def test_a_reduced_optimization_level_is_a_warning_with_its_line(
    sdk: ModuleType, calibration: Path, tmp_path: Path
) -> None:
    sdk.OPTIMIZE_LOG.append((logging.WARNING, NO_GPU))
    result = compile_hef(
        CompileRequest(DEMO, calibration, calibration_count=3), tmp_path / "out", cache_root=tmp_path / "cache"
    )
    (warning,) = result.warnings
    assert NO_GPU in warning.line and "optimization level" in warning.meaning
    assert result.log.read_text().splitlines()[warning.line_number - 1] == warning.line


def test_scan_log_reports_each_known_sign_once_per_line() -> None:
    log = "\n".join(
        [
            "[info] Starting Model Optimization",
            f"[warning] {NO_GPU}",
            "Skipping registering GPU devices...",
            "[error] BackendAllocatorException: Compilation failed: map::at",
            "[error] BackendAllocatorException: Compilation failed: Agent infeasible",
        ]
    )
    assert [(w.line_number, w.meaning.split(" (")[0]) for w in scan_log(log)] == [
        (2, "the DFC lowered the optimization level"),
        (3, "the DFC found no usable GPU"),
        (4, "the allocator failed with map::at"),
        (5, "the allocator could not map the model onto the device"),
    ]
    assert scan_log("[info] Compilation succeeded\n") == ()


def test_without_hailo_sdk_client_compiling_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "hailo_sdk_client", None)
    with pytest.raises(
        DfcNotInstalled, match=r"Dataflow Compiler is not installed .*hailo_dataflow_compiler-.*--dry-run"
    ):
        load_sdk()
    with pytest.raises(DfcNotInstalled, match="hailo_sdk_client"):
        compile_hef(CompileRequest(DEMO, tmp_path), tmp_path / "out", cache_root=tmp_path / "cache")
    assert not (tmp_path / "out").exists()


@pytest.mark.dfc
def test_real_dfc_translation_names_the_demo_heads_and_the_scripts_validate(tmp_path: Path) -> None:
    sdk = load_sdk()
    facts = onnx_facts(DEMO)
    runner = sdk.ClientRunner(hw_arch="hailo8")
    runner.translate_onnx_model(
        str(DEMO),
        "demo",
        start_node_names=["images"],
        end_node_names=[h.node for h in facts.heads],
        net_input_shapes={"images": [1, 3, 256, 256]},
    )
    table = parsed_layers(runner.get_hn())
    names = names_from_parsed(facts, table)
    assert len(set(names.values())) == 6
    files, checks = write_checked_scripts(tmp_path, "demo", facts, names, table, NmsSettings(), 0)
    assert not failures(checks)
    assert not failures(validate_files(files.alls, files.nms_json, facts, table))


@pytest.mark.dfc
def test_real_dfc_compiles_the_demo_model_into_a_hef(calibration: Path, tmp_path: Path) -> None:
    result = compile_hef(
        CompileRequest(DEMO, calibration, calibration_count=3), tmp_path / "out", cache_root=tmp_path / "cache"
    )
    assert result.hef.read_bytes()[:4] == b"\x01HEF"
    assert result.har.is_file() and result.log.read_text()


def test_a_yolov5_export_is_compiled_with_its_three_head_convs_the_sigmoid_and_the_yolov5_nms_op(
    sdk: ModuleType, calibration: Path, tmp_path: Path
) -> None:
    onnx_path = tmp_path / "yolov5_64.onnx"
    onnx.save(yolov5_export(64, 2), onnx_path)
    out = tmp_path / "out"
    result = compile_hef(
        CompileRequest(onnx_path, calibration, calibration_count=3), out, cache_root=tmp_path / "cache"
    )
    assert [call for call, _ in sdk.CALLS] == DFC_CALL_ORDER
    (translate,) = _calls(sdk, "translate_onnx_model")
    assert translate["end_node_names"] == [f"/model.24/m.{i}/Conv" for i in range(3)]
    assert translate["net_input_shapes"] == {"images": [1, 3, 64, 64]}
    (script,) = _calls(sdk, "load_model_script")
    nms_json = out / "yolov5_64_nms_config.json"
    assert script["script"] == (
        "normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n"
        "change_output_activation(sigmoid)\n"
        f'nms_postprocess("{nms_json.resolve()}", meta_arch=yolov5, engine=cpu)\n'
    )
    assert 'nms_postprocess("yolov5_64_nms_config.json", meta_arch=yolov5' in result.scripts.alls.read_text()
    decoders = json.loads(nms_json.read_text())["bbox_decoders"]
    # The fake names the end nodes conv51.. in order; anchors: YOLOv5's defaults, the export's
    assert [(d["encoded_layer"], d["stride"], d["w"], d["h"]) for d in decoders] == [
        ("conv51", 8, [10, 16, 33], [13, 30, 23]),
        ("conv52", 16, [30, 62, 59], [61, 45, 119]),
        ("conv53", 32, [116, 156, 373], [90, 198, 326]),
    ]
    assert result.hef.read_bytes() == sdk.HEF_BYTES
    assert not failures(result.checks)
    assert {r.name for r in result.checks if r.passed} >= {"anchors", "encoded_layer", "sigmoid", "layer_names"}


# ------------------------------------------------------------------------------------------ what a HAR was made from


def test_compile_records_beside_the_har_the_hef_and_calibration_it_was_made_from(
    sdk: ModuleType, calibration: Path, tmp_path: Path
) -> None:
    from harness.backends.dfc.record import har_facts, read_record, record_file
    from harness.inputs.calibration import calibration_paths, images_digest
    from harness.inputs.export_facts import file_sha256

    result = compile_hef(
        CompileRequest(DEMO, calibration, calibration_count=2), tmp_path / "a", cache_root=tmp_path / "c"
    )
    assert record_file(result.har) == tmp_path / "a" / f"{DEMO.stem}_made_from.json"
    record = read_record(result.har)
    assert record is not None and record.hw_arch == "hailo8" and record.dfc
    assert (record.har_sha256, record.hef_sha256) == (file_sha256(result.har), file_sha256(result.hef))
    assert dict(har_facts(result.har)) == {
        "hef_sha256": file_sha256(result.hef),
        "calibration": f"{calibration} (2)",
        "calibration_sha256": images_digest(calibration_paths(calibration, 2)),
    }
    cached = compile_hef(
        CompileRequest(DEMO, calibration, calibration_count=3), tmp_path / "a", cache_root=tmp_path / "c"
    )
    assert dict(har_facts(cached.har))["calibration"] == f"{calibration} (3)"  # rewritten with the HAR it names


def test_a_har_without_a_record_says_its_calibration_is_not_recorded_and_a_stale_record_is_refused(
    sdk: ModuleType, calibration: Path, tmp_path: Path
) -> None:
    from harness.backends.dfc.record import har_facts, record_file
    from harness.core.errors import HarnessError

    result = compile_hef(
        CompileRequest(DEMO, calibration, calibration_count=2), tmp_path / "a", cache_root=tmp_path / "c"
    )
    elsewhere = tmp_path / "b" / "other.har"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(result.har.read_bytes())
    assert har_facts(elsewhere) == (("calibration", "not recorded (no _made_from.json beside the HAR)"),)
    result.har.write_bytes(result.har.read_bytes() + b" ")  # the HAR replaced since compile wrote its record
    with pytest.raises(
        HarnessError, match=r"_made_from.json: har_sha256 [0-9a-f]{12}\.\.\., but .* expected the record"
    ):
        har_facts(result.har)
    file = record_file(result.har)
    assert file is not None
    file.write_text(file.read_text().replace('"calibration_count": 2', '"calibration_count": 0'))
    with pytest.raises(HarnessError, match=r"calibration_count.*0"):
        har_facts(result.har)
