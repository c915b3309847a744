import pytest

from harness.core.errors import HarnessError
from harness.core.settings import EvalSettings, NmsMode, Preprocess, SettingsMismatch


def test_settings_round_trip_through_a_dict():
    s = EvalSettings((640, 480), 0.001, 0.6, 50, 100, NmsMode.ULTRALYTICS, Preprocess.RESIZE, (1, 0))
    assert EvalSettings.from_dict(s.to_dict()) == s


def test_comparing_results_under_different_thresholds_is_an_error_naming_the_field():
    hef, hailomz = EvalSettings((640, 640), score_threshold=0.2), EvalSettings((640, 640), score_threshold=0.001)
    with pytest.raises(SettingsMismatch, match=r"score_threshold: 0\.2 vs 0\.001"):
        hef.require_same(hailomz, "golden vs run")
    hef.require_same(EvalSettings((640, 640)), "same")


def test_unknown_or_missing_fields_are_named():
    with pytest.raises(HarnessError, match=r"^golden/x\.json: field settings\.input_hw is missing"):
        EvalSettings.from_dict({"conf": 0.2}, "golden/x.json")
    with pytest.raises(HarnessError, match=r"^golden/x\.json: field settings has unknown keys \['conf'\]"):
        EvalSettings.from_dict({"conf": 0.2, "input_hw": [640, 640]}, "golden/x.json")


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("score_threshold", "0.2", "a number from 0 to 1"),
        ("score_threshold", True, "a number from 0 to 1"),
        ("input_hw", [256.9, 256.2], "[height, width], two integers > 0"),
        ("max_total", 300.0, "an integer >= 1"),
        ("nms_mode", "HAILORT", "one of 'hailort', 'ultralytics'"),
        ("class_map", [0, "1"], "a list of model class ids"),
    ],
)
def test_a_setting_is_never_coerced_from_another_type(field, value, expected):
    data = {**EvalSettings((640, 640)).to_dict(), field: value}
    with pytest.raises(
        HarnessError, match=rf"field settings\.{field} is .*, expected {expected.replace('[', '.').replace(']', '.')}"
    ):
        EvalSettings.from_dict(data, "g.json")


def test_decode_config_carries_the_settings():
    c = EvalSettings((256, 320), 0.3, 0.5, 7, 9, NmsMode.ULTRALYTICS).decode_config()
    assert (c.input_hw, c.score_threshold, c.iou_threshold, c.max_per_class, c.max_total, c.mode) == (
        (256, 320),
        0.3,
        0.5,
        7,
        9,
        NmsMode.ULTRALYTICS,
    )
