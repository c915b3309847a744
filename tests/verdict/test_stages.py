"""Per-stage localisation: the first stage past the tolerance, and the stage mAPs of a run's results."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import HarnessError
from harness.core.path_names import DFC_FP_OPTIMIZED, DFC_QUANTIZED, EMULATED_HAILO, HAILO
from harness.verdict.stages import STAGES, first_degraded_stage, stage_results

from support import synthetic_results as sr


def test_first_degraded_stage_names_fp_optimized_before_quantization() -> None:
    maps = {"float": 0.60, "fp_optimized": 0.50, "quantized": 0.45, "hardware": 0.44}
    found = first_degraded_stage(maps, tolerance=0.02)
    assert found is not None and found.stage == "fp_optimized" and found.drop == pytest.approx(0.10)
    assert "before quantization" in found.message
    found = first_degraded_stage({**maps, "fp_optimized": 0.595}, tolerance=0.02)
    assert found is not None and found.stage == "quantized"
    assert first_degraded_stage({"float": 0.6, "quantized": 0.59, "hardware": 0.585}, tolerance=0.02) is None
    assert first_degraded_stage({"float": 0.5, "hardware": 0.25}, tolerance=0.25) is None  # exactly at the tolerance


def test_first_degraded_stage_refuses_maps_without_float_or_with_unknown_stages() -> None:
    with pytest.raises(HarnessError, match="expected 'float' among them"):
        first_degraded_stage({"quantized": 0.5}, 0.01)
    with pytest.raises(HarnessError, match=r"stages \['int8'\]"):
        first_degraded_stage({"float": 0.5, "int8": 0.4}, 0.01)
    with pytest.raises(HarnessError, match=r"tolerance -0\.1, expected >= 0"):
        first_degraded_stage({"float": 0.5}, -0.1)


@given(
    st.dictionaries(st.sampled_from(STAGES[1:]), st.floats(0, 1)),
    st.floats(0, 1),
    st.floats(0, 0.5),
)
def test_first_degraded_stage_is_past_the_tolerance_and_no_earlier_stage_is(
    others: dict[str, float], float_map: float, tolerance: float
) -> None:
    maps = {"float": float_map, **others}
    found = first_degraded_stage(maps, tolerance)
    earlier = STAGES[1:] if found is None else STAGES[1 : STAGES.index(found.stage)]
    assert all(float_map - maps[s] <= tolerance for s in earlier if s in maps)
    if found is not None:
        assert found.drop > tolerance and found.map == maps[found.stage]


def test_stage_results_take_each_stage_from_its_path_in_stage_order_and_leave_the_harness_emulation_out() -> None:
    truths = sr.truths()
    onnx = sr.result(sr.predictions(truths), truths)
    worse = sr.predictions(truths, scores=(0.2, 0.3))
    results = [
        onnx,
        sr.result(worse, truths, path=DFC_FP_OPTIMIZED, emulated=True),
        sr.result(sr.predictions(truths, seed=3), truths, path=DFC_QUANTIZED, emulated=True),
        sr.result(worse, truths, path=EMULATED_HAILO, emulated=True),
    ]
    staged = stage_results(results)
    assert list(staged) == ["float", "fp_optimized", "quantized"]
    assert [staged[s] for s in staged] == results[:3]
    hardware = sr.result(worse, truths, path=HAILO)
    assert list(stage_results([hardware, results[2], onnx]).items()) == [
        ("float", onnx),
        ("quantized", results[2]),
        ("hardware", hardware),
    ]
    with pytest.raises(HarnessError, match="two results of stage quantized"):
        stage_results([onnx, results[2], results[2]])
