import json
import math

import synthetic_results as sr

from harness.report import write_reports
from harness.report.json_report import report_document


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
    assert [(p["path"], p["label"], p["emulated"]) for p in data["paths"]] == [
        ("onnx", "onnx", False),
        ("hailo", "hailo (emulated)", True),
    ]
    hailo = data["paths"][1]
    assert hailo["provenance"]["environment"] == {"hailort": "4.23.0", "onnxruntime": "1.20.1"}
    assert hailo["settings"]["score_threshold"] == 0.2
    assert hailo["box_counts"]["total"] == case.hailo.box_counts.total
    assert data["dataset"]["manifest"] == case.dataset.manifest


def test_nan_metrics_become_null(tmp_path):
    case = sr.report_case(tmp_path / "dataset")
    metrics = case.hailo.metrics
    no_truth = sr.replaced(metrics, per_class=(sr.replaced(metrics.per_class[0], ap50=math.nan), metrics.per_class[1]))
    document = report_document([case.onnx, sr.replaced(case.hailo, metrics=no_truth)], case.gates, case.dataset)
    _strict_json(json.dumps(document, allow_nan=False))
    assert document["paths"][1]["metrics"]["per_class"][0]["ap50"] is None
