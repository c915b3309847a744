"""The HailoRT backend on a real Hailo device: the HEF named by ``HARNESS_HEF``, on the device(s) named by
``HARNESS_HAILO_DEVICE`` (comma-separated HailoRT device ids; a free device when unset).

Marked ``hailo_hw``: the harness's pytest plugin skips these, with the reason, where hailo_platform or a
device is absent. They check what the fake cannot: that HailoRT itself honours the contract.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.backends.hailort import Api, HailoRTRunner
from harness.core.specs import FormatType
from harness.formats.nms_buffer import decode_nms
from harness.formats.quant import dequantize
from harness.inputs.preprocess import letterbox
from harness.inputs.synthetic import Recipe, split_frame

pytestmark = pytest.mark.hailo_hw

FRAMES = 8


@pytest.fixture(scope="module")
def hef() -> Path:
    value = os.environ.get("HARNESS_HEF")
    if not value:
        pytest.skip("HARNESS_HEF is not set: name the HEF to run on the device")
    return Path(value)


@pytest.fixture(scope="module")
def device_ids() -> list[str] | None:
    value = os.environ.get("HARNESS_HAILO_DEVICE", "")
    return [d.strip() for d in value.split(",") if d.strip()] or None


def _frames(runner: HailoRTRunner) -> list[np.ndarray]:
    (spec,) = runner.input_specs.values()
    recipe = Recipe(seed=0, train=0, val=FRAMES, calib=0)
    return [letterbox(split_frame(recipe, "val", i).image, spec.hw)[0][None] for i in range(FRAMES)]


def test_the_hef_runs_on_the_device_as_its_specs_say_and_reports_fps(
    hef: Path, device_ids: list[str] | None, record_property: Callable[[str, object], None]
) -> None:
    with HailoRTRunner(hef, device_ids=device_ids) as runner:
        ((name, _),) = runner.input_specs.items()
        for frame in _frames(runner):
            outputs = runner.infer({name: frame})
            assert set(outputs) == set(runner.output_specs)
            for output, spec in runner.output_specs.items():
                if spec.is_nms:
                    detections = decode_nms(outputs[output], spec, runner.input_specs[name].hw)
                    assert ((detections.scores > 0) & (detections.scores <= 1)).all()
                else:
                    assert outputs[output].shape == spec.shape
                    assert outputs[output].dtype == np.dtype(spec.format_type.numpy_dtype)
        assert runner.fps is not None and runner.fps > 0
        record_property("fps", round(runner.fps, 1))
        record_property("runner", runner.label)


def test_both_apis_give_the_same_outputs_on_the_device(hef: Path, device_ids: list[str] | None) -> None:
    with HailoRTRunner(hef, api=Api.VSTREAMS, device_ids=device_ids) as vstreams:
        frames = _frames(vstreams)
        ((name, _),) = vstreams.input_specs.items()
        expected = [vstreams.infer({name: f}) for f in frames]
        specs = vstreams.output_specs
    try:
        infer_model = HailoRTRunner(hef, api=Api.INFER_MODEL, device_ids=device_ids)
    except Exception as error:  # a HailoRT without InferModel says so
        pytest.skip(str(error))
    with infer_model:
        hw = infer_model.input_specs[name].hw
        for frame, want in zip(frames, expected, strict=True):
            got = infer_model.infer({name: frame})
            for output, spec in specs.items():
                if spec.is_nms:
                    a, b = decode_nms(got[output], spec, hw).sorted(), decode_nms(want[output], spec, hw).sorted()
                    np.testing.assert_array_equal(a.boxes, b.boxes)
                    np.testing.assert_array_equal(a.class_ids, b.class_ids)
                else:
                    np.testing.assert_array_equal(got[output], want[output])


def test_uint8_outputs_dequantized_by_the_harness_equal_hailorts_float32(
    hef: Path, device_ids: list[str] | None
) -> None:
    with HailoRTRunner(
        hef, format_type=FormatType.FLOAT32, device_ids=device_ids
    ) as floats:  # one device user at a time
        ((name, _),) = floats.input_specs.items()
        frames = _frames(floats)[:2]
        dequantized = [floats.infer({name: f}) for f in frames]
    with HailoRTRunner(hef, format_type=FormatType.UINT8, device_ids=device_ids) as quantized:
        raw_heads = {n: s for n, s in quantized.output_specs.items() if s.is_quantized}
        if not raw_heads:
            pytest.skip(f"{hef}: no quantized outputs (NMS only)")
        for frame, want in zip(frames, dequantized, strict=True):
            raw = quantized.infer({name: frame})
            for output, spec in raw_heads.items():
                np.testing.assert_allclose(dequantize(raw[output], spec.quant), want[output], rtol=1e-6, atol=1e-6)
