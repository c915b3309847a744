"""The mAP protocol a run chose (``--metric``): recorded in its settings, its baselines and its
report, and a baseline of one protocol never gates a run of another."""

import dataclasses
import json

import pytest

from harness.core.errors import HarnessError
from harness.core.settings import EvalSettings, MetricProtocol, Preprocess, SettingsMismatch
from harness.pipeline.options import OPTIONS, from_text, settings_spec
from harness.pipeline.spec import SettingsSpec
from harness.report.view import metric_note
from harness.verdict.gates import gate_map
from harness.verdict.golden_blessing import golden_from_result, write_golden
from harness.verdict.golden_reading import load_golden
from harness.verdict.metrics import METRICS, ultralytics

from support import synthetic_results as synth

ULTRALYTICS = EvalSettings((synth.SIDE, synth.SIDE), score_threshold=0.2, metric=MetricProtocol.ULTRALYTICS)


def _results():
    truths = synth.truths()
    preds = synth.predictions(truths)
    coco = synth.result(preds, truths)
    theirs = synth.replaced(
        synth.result(preds, truths, settings=ULTRALYTICS),
        metrics=ultralytics.evaluate(truths, preds, synth.NAMES, ULTRALYTICS.score_threshold),
    )
    return coco, theirs


def test_the_option_defaults_to_coco_and_refuses_other_names_naming_the_option():
    assert settings_spec({}).metric is MetricProtocol.COCO
    assert settings_spec({"metric": from_text("metric", "ultralytics")}).metric is MetricProtocol.ULTRALYTICS
    with pytest.raises(HarnessError, match=r"^--metric 'yolo': expected one of \['coco', 'ultralytics'\]$"):
        OPTIONS["metric"].value("yolo")


def test_each_protocol_has_its_metric_and_they_differ_on_the_same_predictions():
    coco, theirs = _results()
    assert METRICS[MetricProtocol.COCO] is not METRICS[MetricProtocol.ULTRALYTICS]
    assert theirs.metrics.map50 != coco.metrics.map50  # perfect matches: 0.995 against 1.0


def test_settings_record_the_metric_and_a_document_without_it_is_cocos():
    assert EvalSettings.from_dict(ULTRALYTICS.to_dict()) == ULTRALYTICS
    old = {k: v for k, v in ULTRALYTICS.to_dict().items() if k != "metric"}
    assert EvalSettings.from_dict(old).metric is MetricProtocol.COCO
    refusal = r"^b\.json: field settings\.metric is 'voc', expected one of 'coco', 'ultralytics'$"
    with pytest.raises(HarnessError, match=refusal):
        EvalSettings.from_dict({**ULTRALYTICS.to_dict(), "metric": "voc"}, "b.json")


def test_a_baseline_records_its_metric_and_an_old_one_without_it_reads_as_cocos(tmp_path):
    coco, theirs = _results()
    file = tmp_path / "onnx.json"
    write_golden(file, golden_from_result(theirs))
    assert json.loads(file.read_text())["settings"]["metric"] == "ultralytics"
    assert load_golden(file).settings.metric is MetricProtocol.ULTRALYTICS
    write_golden(file, golden_from_result(coco))
    document = json.loads(file.read_text())
    del document["settings"]["metric"]  # a baseline blessed before the metric was chosen
    file.write_text(json.dumps(document))
    assert load_golden(file).settings.metric is MetricProtocol.COCO


@pytest.mark.parametrize("blessed_under", ["coco", "ultralytics"])
def test_a_baseline_of_one_metric_fails_a_run_of_the_other_naming_both(blessed_under):
    coco, theirs = _results()
    blessed, run = (coco, theirs) if blessed_under == "coco" else (theirs, coco)
    gate = gate_map(run, golden_from_result(blessed))
    other = "ultralytics" if blessed_under == "coco" else "coco"
    assert not gate.passed and gate.baseline is None and gate.observed is None
    assert f"metric: '{blessed_under}' vs '{other}'" in gate.text
    assert f"mAPs of --metric {blessed_under} and --metric {other} are not comparable" in gate.text
    assert gate_map(run, golden_from_result(run)).passed  # under its own metric it holds


def test_the_report_says_which_protocol_the_maps_used():
    coco, theirs = _results()
    assert metric_note([{"settings": theirs.settings.to_dict()}]).startswith("mAP protocol: ultralytics (the numbers")
    old = {k: v for k, v in coco.settings.to_dict().items() if k != "metric"}
    assert metric_note([{"settings": old}]).startswith("mAP protocol: coco (pycocotools' COCOeval")
    assert "; preprocessing: letterbox (one resize keeping the aspect ratio" in metric_note([{"settings": old}])
    val = {**theirs.settings.to_dict(), "preprocess": "ultralytics-val"}
    assert "; preprocessing: ultralytics-val (yolo val's: the long side resized" in metric_note([{"settings": val}])


@pytest.mark.parametrize(
    ("asked", "metric", "used"),
    [
        (None, MetricProtocol.COCO, Preprocess.LETTERBOX),
        (None, MetricProtocol.ULTRALYTICS, Preprocess.ULTRALYTICS_VAL),
        (Preprocess.LETTERBOX, MetricProtocol.COCO, Preprocess.LETTERBOX),
        (Preprocess.LETTERBOX, MetricProtocol.ULTRALYTICS, Preprocess.LETTERBOX),  # given: overrides the protocol's
        (Preprocess.RESIZE, MetricProtocol.ULTRALYTICS, Preprocess.RESIZE),
        (Preprocess.ULTRALYTICS_VAL, MetricProtocol.COCO, Preprocess.ULTRALYTICS_VAL),
    ],
)
def test_the_ultralytics_metric_measures_yolo_vals_letterbox(asked, metric, used):
    assert SettingsSpec(preprocess=asked, metric=metric).resolve((320, 320), (0, 1)).preprocess is used
    given = {"preprocess": from_text("preprocess", asked and asked.value), "metric": from_text("metric", metric.value)}
    spec = settings_spec(given)
    assert spec.resolve((320, 320), (0, 1)).preprocess is used


def test_the_report_names_each_setting_a_run_took_otherwise_than_its_protocol():
    whole = SettingsSpec(metric=MetricProtocol.ULTRALYTICS).resolve((320, 320), (0, 1))
    assert "set otherwise" not in metric_note([{"settings": whole.to_dict()}])
    capped = SettingsSpec(metric=MetricProtocol.ULTRALYTICS, score_threshold=0.25, max_total=100)
    note = metric_note([{"settings": capped.resolve((320, 320), (0, 1)).to_dict()}])
    assert "; set otherwise than its protocol: max_total 100 (the protocol's: 300), score_threshold 0.25 (the " in note
    resized = SettingsSpec(preprocess=Preprocess.RESIZE).resolve((320, 320), (0, 1))
    assert "set otherwise than its protocol: preprocess resize (the protocol's: letterbox)" in metric_note(
        [{"settings": resized.to_dict()}]
    )


def test_a_baseline_of_the_ultralytics_metric_alone_is_refused_naming_the_options_that_measure_as_it_did():
    before = EvalSettings(
        (320, 320), score_threshold=0.2, metric=MetricProtocol.ULTRALYTICS, preprocess=Preprocess.ULTRALYTICS_VAL
    )
    now = SettingsSpec(metric=MetricProtocol.ULTRALYTICS).resolve((320, 320), ())
    with pytest.raises(SettingsMismatch, match=r"nms_mode: 'ultralytics' vs 'hailort'.*: --metric ultralytics sets "):
        now.require_same(before, "baseline")
    with pytest.raises(SettingsMismatch) as refused:
        now.require_same(dataclasses.replace(now, input_hw=(640, 640)), "x")
    assert "--metric ultralytics sets" not in str(refused.value)
