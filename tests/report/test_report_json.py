import json
import math

import pytest

from harness.core.errors import HarnessError
from harness.core.path_names import PathKind
from harness.report import write_reports
from harness.report.json_report import report_document
from harness.verdict.result import result_json

from support import synthetic_results as sr


def _strict_json(text):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_json_report_is_strict_json_with_gates_paths_and_provenance(tmp_path):
    case = sr.report_case(tmp_path / "dataset")
    files = write_reports(tmp_path / "report", [case.onnx, case.hailo], case.gates, case.dataset)
    data = _strict_json(files["json"].read_text())
    assert data["passed"] is False
    assert [g["name"] for g in data["gates"]] == [g.name for g in case.gates]
    agreement = next(g for g in data["gates"] if g["name"].startswith("test_path_agreement"))
    assert agreement["passed"] is False and agreement["causes"][0]["fix"]
    map_gate = next(g for g in data["gates"] if g["name"].startswith("test_map["))
    assert set(map_gate["interval"]) == {"point", "low", "high"}
    assert [(p["path"], p["label"], p["emulated"], p["kind"], p["recorded_kind"]) for p in data["paths"]] == [
        ("onnx", "onnx", False, "float", None),
        ("hailo", "hailo (emulated)", True, "emulated", None),
    ]
    hailo = data["paths"][1]
    assert hailo["provenance"]["environment"] == {"hailort": "4.23.0", "onnxruntime": "1.20.1"}
    assert hailo["settings"]["score_threshold"] == 0.2
    assert hailo["box_counts"]["total"] == case.hailo.box_counts.total
    assert data["dataset"]["manifest"] == case.dataset.manifest
    assert data["paths"] == [result_json(case.onnx), result_json(case.hailo)]  # eval --json prints the same form
    assert hailo["n_images"] == len(case.hailo.image_ids)


def test_nan_metrics_become_null(tmp_path):
    case = sr.report_case(tmp_path / "dataset")
    metrics = case.hailo.metrics
    no_truth = sr.replaced(metrics, per_class=(sr.replaced(metrics.per_class[0], ap50=math.nan), metrics.per_class[1]))
    document = report_document([case.onnx, sr.replaced(case.hailo, metrics=no_truth)], case.gates, case.dataset)
    _strict_json(json.dumps(document, allow_nan=False))
    assert document["paths"][1]["metrics"]["per_class"][0]["ap50"] is None


def test_the_stage_table_holds_each_measured_stage_and_names_the_first_degraded_one(tmp_path):
    from harness.core.path_names import DFC_FP_OPTIMIZED, DFC_QUANTIZED

    case = sr.report_case(tmp_path / "dataset")
    gt, ids = case.dataset.ground_truths, [s.image_id for s in case.dataset.samples]
    fp = sr.replaced(case.onnx, path=DFC_FP_OPTIMIZED, kind=PathKind.EMULATED)
    quantized = sr.result(
        [p.select(slice(0, 1)) for p in sr.predictions(gt, seed=3)],
        gt,
        path=DFC_QUANTIZED,
        emulated=True,
        image_ids=ids,
    )
    device = sr.replaced(case.hailo, kind=PathKind.DEVICE, fps=123.45)
    files = write_reports(tmp_path / "report", [case.onnx, fp, quantized, device], case.gates, case.dataset)
    stages = _strict_json(files["json"].read_text())["stages"]
    assert [(r["stage"], r["label"]) for r in stages["rows"]] == [
        ("float", "onnx"),
        ("fp_optimized", "dfc-fp-optimized (emulated)"),
        ("quantized", "dfc-quantized (emulated)"),
        ("hardware", "hailo"),
    ]
    assert stages["rows"][1]["drop"] == 0 and stages["first_degraded"]["stage"] == "quantized"
    markdown = files["markdown"].read_text()
    assert "First stage past the tolerance: quantized." in markdown
    assert "| hailo | hardware |" in markdown and "| 123.5 |" in markdown  # the device's frames per second
    html = files["html"].read_text()
    assert "First stage past the tolerance: quantized." in html and "123.5" in html


def test_a_report_without_later_stages_has_no_stage_table(tmp_path):
    case = sr.report_case(tmp_path / "dataset")
    emulated = sr.replaced(case.hailo, path="emulated-hailo")
    assert report_document([case.onnx, emulated], case.gates, case.dataset)["stages"] is None


def test_a_path_is_labelled_by_the_kind_it_carries_and_only_a_device_path_is_hardware(tmp_path):
    """A second float backend is the host, not hardware; a replay says what recorded it."""
    from harness.report.view import fps, path_kind

    case = sr.report_case(tmp_path / "dataset")
    runtime = sr.replaced(case.hailo.provenance, runtime="replayed from HailoRT 4.23.0 on 0000:01:00.0 (recorded)")
    paths = {
        "openvino": sr.replaced(case.onnx, path="openvino"),
        "device": sr.replaced(case.hailo, kind=PathKind.DEVICE),
        "replayed device": sr.replaced(
            case.hailo, kind=PathKind.REPLAYED, recorded=PathKind.DEVICE, provenance=runtime
        ),
        "replayed emulation": sr.replaced(
            case.hailo, kind=PathKind.REPLAYED, recorded=PathKind.EMULATED, provenance=runtime
        ),
    }
    documents = {name: report_document([case.onnx, path], case.gates, case.dataset) for name, path in paths.items()}
    said = {name: (p["label"], path_kind(p), fps(p)) for name, p in ((n, d["paths"][1]) for n, d in documents.items())}
    assert said == {
        "openvino": ("openvino", "host", "-"),
        "device": ("hailo", "hardware", "not measured (cached)"),
        "replayed device": (
            "hailo (replayed)",
            "hardware, replayed from HailoRT 4.23.0 on 0000:01:00.0",
            "not measured (cached)",
        ),
        "replayed emulation": (
            "hailo (emulated, replayed)",
            "emulated, replayed from HailoRT 4.23.0 on 0000:01:00.0",
            "-",
        ),
    }
    with pytest.raises(HarnessError, match="expected a recorded kind"):
        sr.replaced(case.hailo, kind=PathKind.REPLAYED)


def test_the_shared_cache_entries_a_path_used_are_named_in_its_provenance_and_in_both_reports(tmp_path):
    import dataclasses

    from harness.core.shared_entry import EntryState, EntryUse
    from harness.report.json_report import SCHEMA_VERSION

    case = sr.report_case(tmp_path / "dataset")
    entry = EntryUse("/shared/emulator", "ab12.onnx", "c" * 64, EntryState.REBUILT, "its model's sha256 is 0123")
    provenance = dataclasses.replace(case.hailo.provenance, shared_cache=(entry,))
    hailo = dataclasses.replace(case.hailo, provenance=provenance)
    files = write_reports(tmp_path / "report", [case.onnx, hailo], case.gates, case.dataset)
    data = _strict_json(files["json"].read_text())
    assert SCHEMA_VERSION >= 10 and data["schema_version"] == SCHEMA_VERSION
    assert data["paths"][0]["provenance"]["shared_cache"] == []
    assert data["paths"][1]["provenance"]["shared_cache"] == [
        {"folder": "/shared/emulator", "name": "ab12.onnx", "sha256": "c" * 64, "state": "rebuilt",
         "detail": "its model's sha256 is 0123"}
    ]  # fmt: skip
    for kind in ("markdown", "html"):
        text = files[kind].read_text()
        assert "shared cache" in text and "cccccccccccccccc, rebuilt" in text and "sha256 is 0123" in text
