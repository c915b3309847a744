"""The HailoRT backend against a fake hailo_platform computed by the emulator (tests/support/fake_hailo_platform.py).

The fake mirrors hailo_platform 4.18 and 5.1 (names, shapes, orders, NMS forms, exceptions); its outputs
are the emulated HEF's, so every detection the HailoRT runner hands over can be compared with the
emulator path's own.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from harness.backends.base import Runner
from harness.backends.emulator import EmulatedHef, EmulatorOptions, EmulatorRunner, build_emulated_hef
from harness.backends.hailort import (
    Api,
    DeviceFailureError,
    HailoRTError,
    HailoRTMissingError,
    HailoRTRunner,
    HefInvalidError,
    HefNotCompatibleError,
    InferenceTimeoutError,
)
from harness.core.detections import Detections
from harness.core.errors import HarnessError, SpecError
from harness.core.path_names import HAILO
from harness.core.settings import EvalSettings
from harness.core.specs import FormatOrder, FormatType
from harness.formats.nms_buffer import decode_nms
from harness.formats.quant import dequantize
from harness.inputs.dataset import Dataset
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.preprocess import letterbox, load_image
from harness.inputs.synthetic import Recipe, write_dataset
from harness.pipeline.detect import NmsBufferPath, RawHeadsPath, keeps_in_flight
from harness.pipeline.evaluate import IN_FLIGHT, evaluate_path
from harness.pipeline.job import run_job, summary_lines
from harness.pipeline.spec import Backend, JobConfig, PathSpec

from support.fake_hailo_platform import HAILORT_4_18, HAILORT_4_23, HAILORT_5_1, Board, FakeHailoRT, Profile, QuantInfo

INPUT_HW = (256, 256)
CALIBRATION = 8
PROFILES = {"4.18": HAILORT_4_18, "5.1": HAILORT_5_1}
APIS = [Api.VSTREAMS, Api.INFER_MODEL]


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not DEMO.is_file():
        pytest.skip(f"demo model not found at {DEMO}")
    root = tmp_path_factory.mktemp("hailort-data")
    write_dataset(root, Recipe(seed=0, train=0, val=0, calib=CALIBRATION))
    return root / "images" / "calib"


@pytest.fixture(scope="module")
def heads_hef(calibration: Path, tmp_path_factory: pytest.TempPathFactory) -> EmulatedHef:
    options = EmulatorOptions(calibration_count=CALIBRATION, sigmoid_inside=True, output_format=FormatType.UINT8)
    return build_emulated_hef(DEMO, calibration, options, tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def nms_hef(calibration: Path, tmp_path_factory: pytest.TempPathFactory) -> EmulatedHef:
    options = EmulatorOptions(calibration_count=CALIBRATION, sigmoid_inside=True, nms=True, score_threshold=0.05)
    return build_emulated_hef(DEMO, calibration, options, tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def images(calibration: Path) -> list[np.ndarray]:
    return [load_image(p) for p in sorted(calibration.iterdir())[:4]]


@pytest.fixture(scope="module")
def frames(images: list[np.ndarray]) -> list[np.ndarray]:
    """uint8 (1, 256, 256, 3) model inputs."""
    return [letterbox(image, INPUT_HW)[0][None] for image in images]


@pytest.fixture(scope="module")
def hef_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hefs")
    files = {"heads": root / "yolo11n_heads.hef", "nms": root / "yolo11n_nms.hef", "other": root / "other.hef"}
    for path in files.values():
        path.write_bytes(b"HEF stand-in: the fake maps the path to an emulated HEF")
    return files


MakeFake = Callable[..., FakeHailoRT]


@pytest.fixture
def make_fake(
    monkeypatch: pytest.MonkeyPatch, heads_hef: EmulatedHef, nms_hef: EmulatedHef, hef_files: dict[str, Path]
) -> MakeFake:
    def make(profile: Profile = HAILORT_5_1, **kwargs: object) -> FakeHailoRT:
        fake = FakeHailoRT({hef_files["heads"]: heads_hef, hef_files["nms"]: nms_hef}, profile, **kwargs)  # type: ignore[arg-type]
        fake.install(monkeypatch)
        return fake

    return make


def _same(a: Detections, b: Detections) -> None:
    a, b = a.sorted(), b.sorted()
    np.testing.assert_array_equal(a.class_ids, b.class_ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.boxes, b.boxes)


# ---------------------------------------------------------------------------------------------- contract


@pytest.mark.parametrize("api", APIS)
def test_runner_describes_the_hef_as_its_vstream_infos_do(
    make_fake: MakeFake, hef_files: dict[str, Path], heads_hef: EmulatedHef, api: Api
) -> None:
    make_fake()
    with HailoRTRunner(hef_files["heads"], api=api, format_type=FormatType.UINT8) as runner:
        protocol: Runner = runner
        assert protocol.input_specs == {"images": heads_hef.input}
        assert runner.output_specs == {h.name: h for h in heads_hef.heads}  # order, shape, type, quant info
        assert runner.emulated is False
        assert runner.api is api
        assert runner.hailort_version == "5.1.1"
    with HailoRTRunner(hef_files["heads"], api=api) as runner:
        assert {n: s.format_type for n, s in runner.output_specs.items()} == {
            h.name: FormatType.FLOAT32 for h in heads_hef.heads
        }


@pytest.mark.parametrize("profile", PROFILES.values(), ids=PROFILES)
@pytest.mark.parametrize("format_type", [FormatType.UINT8, FormatType.FLOAT32])
def test_both_apis_give_the_same_raw_head_outputs_as_the_emulator(
    make_fake: MakeFake,
    hef_files: dict[str, Path],
    heads_hef: EmulatedHef,
    frames: list[np.ndarray],
    profile: Profile,
    format_type: FormatType,
) -> None:
    make_fake(profile)
    emulator = EmulatorRunner(heads_hef)
    for api in APIS:
        with HailoRTRunner(hef_files["heads"], api=api, format_type=format_type) as runner:
            for frame in frames[:2]:
                raw = emulator.raw_heads({"images": frame})
                got = runner.infer({"images": frame})
                assert set(got) == set(raw)
                for name, spec in runner.output_specs.items():
                    expected = raw[name] if format_type is FormatType.UINT8 else dequantize(raw[name], spec.quant)
                    assert got[name].dtype == np.dtype(spec.format_type.numpy_dtype)
                    assert got[name].shape == spec.shape
                    np.testing.assert_array_equal(got[name], expected)


@pytest.mark.parametrize("api", APIS)
def test_uint8_outputs_dequantized_by_the_harness_equal_hailorts_float32_outputs(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray], api: Api
) -> None:
    make_fake()
    with (
        HailoRTRunner(hef_files["heads"], api=api, format_type=FormatType.UINT8) as quantized,
        HailoRTRunner(hef_files["heads"], api=api, format_type=FormatType.FLOAT32) as floats,
    ):
        for frame in frames[:2]:
            raw, dequantized = quantized.infer({"images": frame}), floats.infer({"images": frame})
            for name, spec in quantized.output_specs.items():
                assert spec.is_quantized and len(spec.quant) == 1
                np.testing.assert_array_equal(dequantize(raw[name], spec.quant), dequantized[name])


@pytest.mark.parametrize("format_type", [FormatType.UINT8, FormatType.FLOAT32])
def test_raw_heads_path_on_the_hailort_runner_finds_what_the_emulator_path_finds(
    make_fake: MakeFake,
    hef_files: dict[str, Path],
    heads_hef: EmulatedHef,
    images: list[np.ndarray],
    format_type: FormatType,
) -> None:
    make_fake()
    settings = EvalSettings(input_hw=INPUT_HW)
    emulated = RawHeadsPath(EmulatorRunner(heads_hef), settings, DEMO)
    with HailoRTRunner(hef_files["heads"], format_type=format_type) as runner:
        path = RawHeadsPath(runner, settings, DEMO, name=HAILO)
        assert path.emulated is False
        found = 0
        for image in images:
            expected, got = emulated.detect(image), path.detect(image)
            _same(got.detections, expected.detections)
            assert got.cells == expected.cells
            found += len(got.detections)
        assert found > 0


NMS_FORMS = {
    "vstreams-list-5.1": (Api.VSTREAMS, HAILORT_5_1, False, FormatOrder.NMS_BY_CLASS),
    "vstreams-tf-5.1": (Api.VSTREAMS, HAILORT_5_1, True, FormatOrder.NMS_BY_CLASS),
    "vstreams-list-4.18": (Api.VSTREAMS, HAILORT_4_18, False, FormatOrder.NMS_BY_CLASS),
    "infer_model-list-5.1": (Api.INFER_MODEL, HAILORT_5_1, False, FormatOrder.NMS_BY_CLASS),
    "infer_model-tf-5.1": (Api.INFER_MODEL, HAILORT_5_1, True, FormatOrder.NMS_BY_CLASS),
    "infer_model-list-4.18": (Api.INFER_MODEL, HAILORT_4_18, False, FormatOrder.NMS_BY_CLASS),
    "infer_model-tf-4.18": (Api.INFER_MODEL, HAILORT_4_18, True, FormatOrder.NMS_BY_CLASS),
    "infer_model-by_score-5.1": (Api.INFER_MODEL, HAILORT_5_1, False, FormatOrder.NMS_BY_SCORE),
}


@pytest.mark.parametrize("case", NMS_FORMS.values(), ids=NMS_FORMS)
def test_every_nms_form_decodes_to_the_detections_of_the_by_class_buffer(
    make_fake: MakeFake,
    hef_files: dict[str, Path],
    nms_hef: EmulatedHef,
    frames: list[np.ndarray],
    case: tuple[Api, Profile, bool, FormatOrder],
) -> None:
    api, profile, tf, order = case
    make_fake(profile)
    emulator = EmulatorRunner(nms_hef)
    ((name, buffer_spec),) = nms_hef.output_specs.items()
    with HailoRTRunner(hef_files["nms"], api=api, tf_nms_format=tf, nms_order=order) as runner:
        spec = runner.output_specs[name]
        assert (spec.format_order, spec.nms, spec.shape) == (order, buffer_spec.nms, buffer_spec.shape)
        classes = set()
        for frame in frames:
            output = runner.infer({"images": frame})[name]
            if tf:
                assert isinstance(output, np.ndarray) and output.shape == spec.shape
            elif order is FormatOrder.NMS_BY_SCORE:
                assert isinstance(output, list) and all(hasattr(d, "class_id") for d in output)
            else:
                assert isinstance(output, list) and len(output) == spec.shape[0]
                assert all(isinstance(a, np.ndarray) and a.shape[1:] == (5,) for a in output)
            expected = decode_nms(emulator.infer({"images": frame})[name], buffer_spec, INPUT_HW)
            _same(decode_nms(output, spec, INPUT_HW), expected)
            classes.update(expected.class_ids.tolist())
        assert classes == {0, 1}  # both classes present, so class order in the forms is exercised


def test_nms_buffer_path_on_the_hailort_runner_finds_what_the_emulator_path_finds(
    make_fake: MakeFake, hef_files: dict[str, Path], nms_hef: EmulatedHef, images: list[np.ndarray]
) -> None:
    make_fake()
    settings = EvalSettings(input_hw=INPUT_HW, score_threshold=0.05)
    emulated = NmsBufferPath(EmulatorRunner(nms_hef), settings, DEMO)
    for api in APIS:
        with HailoRTRunner(hef_files["nms"], api=api) as runner:
            path = NmsBufferPath(runner, settings, DEMO, name=HAILO)
            for image in images:
                _same(path.detect(image).detections, emulated.detect(image).detections)


# ---------------------------------------------------------------------------------------------- devices, APIs


@pytest.mark.parametrize("api", APIS)
def test_device_ids_reach_the_vdevice_params(make_fake: MakeFake, hef_files: dict[str, Path], api: Api) -> None:
    devices = ["0000:01:00.0", "0000:02:00.0", "0000:03:00.0"]
    fake = make_fake(devices=devices)
    with HailoRTRunner(hef_files["heads"], api=api, device_ids=devices[1:]) as runner:
        assert fake.vdevice_params[-1]["device_ids"] == devices[1:]
        assert runner.physical_devices == tuple(devices[1:])
        assert "0000:02:00.0, 0000:03:00.0" in runner.label
    with HailoRTRunner(hef_files["heads"], api=api):
        assert fake.vdevice_params[-1]["device_ids"] == []  # HailoRT picks a free device


def test_an_absent_device_fails_naming_the_devices_asked_for(make_fake: MakeFake, hef_files: dict[str, Path]) -> None:
    make_fake(devices=["0000:01:00.0"])
    with pytest.raises(DeviceFailureError) as caught:
        HailoRTRunner(hef_files["heads"], device_ids=["0000:09:00.0"])
    assert "Hailo device 0000:09:00.0" in str(caught.value)
    assert "HAILO_OUT_OF_PHYSICAL_DEVICES" in str(caught.value) and "hailortcli scan" in str(caught.value)


def test_vstreams_run_without_the_scheduler_inside_an_activated_network_group_with_the_batch_size(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray]
) -> None:
    fake = make_fake()
    with HailoRTRunner(hef_files["heads"], api="vstreams", batch_size=2) as runner:
        runner.infer_batch({"images": np.concatenate(frames[:2])})
    assert fake.vdevice_params[-1]["scheduling_algorithm"] == 0  # HailoSchedulingAlgorithm.NONE
    assert fake.batch_sizes == [2]
    assert fake.warnings == []  # activate() was a real activation, not the scheduler's deprecated no-op
    assert fake.calls == [("InferVStreams.infer", 2)]


def test_infer_model_runs_under_hailorts_default_scheduler_with_the_batch_size(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray]
) -> None:
    fake = make_fake()
    with HailoRTRunner(hef_files["heads"], api="infer_model", batch_size=2) as runner:
        runner.infer_batch({"images": np.concatenate(frames[:2])})
    assert fake.vdevice_params[-1]["scheduling_algorithm"] == 1  # ROUND_ROBIN, the VDeviceParams default
    assert fake.batch_sizes == [2]
    assert fake.calls == [("ConfiguredInferModel.run", 2)]


def test_auto_takes_infer_model_where_hailort_has_it_and_vstreams_otherwise(
    make_fake: MakeFake, hef_files: dict[str, Path]
) -> None:
    make_fake()
    with HailoRTRunner(hef_files["heads"]) as runner:
        assert runner.api is Api.INFER_MODEL
    make_fake(Profile("4.18.0", legacy_nms=True, classes=HAILORT_4_18.classes, infer_model=False))
    with HailoRTRunner(hef_files["heads"]) as runner:
        assert runner.api is Api.VSTREAMS
    with pytest.raises(
        HailoRTError, match=r"api 'infer_model' asked, HailoRT 4\.18\.0 has no VDevice\.create_infer_model"
    ):
        HailoRTRunner(hef_files["heads"], api="infer_model")


def test_by_score_needs_infer_model_and_a_hailort_that_has_it(make_fake: MakeFake, hef_files: dict[str, Path]) -> None:
    make_fake()
    with pytest.raises(HailoRTError, match="NMS_BY_SCORE needs api 'infer_model'"):
        HailoRTRunner(hef_files["nms"], api="vstreams", nms_order=FormatOrder.NMS_BY_SCORE)
    make_fake(HAILORT_4_18)
    with pytest.raises(HailoRTError, match=r"HailoRT 4.18.0 has no FormatOrder.HAILO_NMS_BY_SCORE"):
        HailoRTRunner(hef_files["nms"], api="infer_model", nms_order=FormatOrder.NMS_BY_SCORE)


def test_infer_batch_sends_the_frames_in_one_call_and_equals_frame_by_frame(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray]
) -> None:
    fake = make_fake()
    for api in APIS:
        with HailoRTRunner(hef_files["nms"], api=api, batch_size=2) as runner:
            fake.calls.clear()
            batch = runner.infer_batch({"images": np.concatenate(frames)})
            assert len(fake.calls) == 1 and fake.calls[0][1] == len(frames)
            ((name, spec),) = runner.output_specs.items()
            for frame, outputs in zip(frames, batch, strict=True):
                single = runner.infer_batch({"images": np.concatenate([frame, frame])})[0]
                _same(decode_nms(outputs[name], spec, INPUT_HW), decode_nms(single[name], spec, INPUT_HW))
            with pytest.raises(SpecError, match="3 frames in one call, expected a multiple of batch_size 2"):
                runner.infer_batch({"images": np.concatenate(frames[:3])})


def test_a_bad_feed_is_rejected_naming_the_input_and_the_contract(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray]
) -> None:
    make_fake()
    with HailoRTRunner(hef_files["heads"]) as runner:
        with pytest.raises(SpecError, match=r"input 'images': float32 \(1, 256, 256, 3\), expected uint8"):
            runner.infer({"images": frames[0].astype(np.float32) / 255})
        with pytest.raises(SpecError, match=r"expected uint8 \(1, 256, 256, 3\) NHWC"):
            runner.infer({"images": np.concatenate(frames[:2])})
        with pytest.raises(SpecError, match=r"feed has inputs \['image'\], expected \['images'\]"):
            runner.infer({"image": frames[0]})


def test_a_per_feature_hef_read_through_vstreams_needs_float32(
    make_fake: MakeFake, hef_files: dict[str, Path], heads_hef: EmulatedHef
) -> None:
    fake = make_fake()
    info = fake.model(str(hef_files["heads"])).outputs[0]
    info.quant_info = QuantInfo(0.0, 0.0, 0.0, 0.0)  # what a HEF quantized per feature reports
    with pytest.raises(SpecError, match=f"output {info.name!r}: the HEF quantizes per feature"):
        HailoRTRunner(hef_files["heads"], api="vstreams", format_type=FormatType.UINT8)
    with HailoRTRunner(hef_files["heads"], api="vstreams") as runner:
        assert runner.output_specs[info.name].quant == ()


def test_fps_is_frames_over_the_wall_time_of_infer_calls(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray]
) -> None:
    latency = 0.02
    make_fake(latency_s=latency)
    with HailoRTRunner(hef_files["heads"]) as runner:
        assert runner.fps is None
        for frame in frames:
            runner.infer({"images": frame})
        assert runner.frames == len(frames)
        assert runner.fps is not None and 1 / (20 * latency) < runner.fps <= 1 / latency


def test_a_closed_runner_releases_the_device_and_refuses_to_infer(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray]
) -> None:
    fake = make_fake()
    runner = HailoRTRunner(hef_files["heads"])
    runner.close()
    assert fake.released == 1
    with pytest.raises(HailoRTError, match="runner used after close"):
        runner.infer({"images": frames[0]})


# ---------------------------------------------------------------------------------------------- errors


ERRORS = {
    "invalid-hef": ("hef", "HAILO_INVALID_HEF", HAILORT_5_1, HefInvalidError, "HailoRTInvalidHEFException"),
    "not-compatible": (
        "configure",
        "HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE",
        HAILORT_5_1,
        HefNotCompatibleError,
        "HailoRTHEFNotCompatibleWithDevice",
    ),
    "not-compatible-4.18": (
        "configure",
        "HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE",
        HAILORT_4_18,
        HefNotCompatibleError,
        "libhailort failed with error: 93 (HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE)",
    ),
    "driver": (
        "vdevice",
        "HAILO_DRIVER_OPERATION_FAILED",
        HAILORT_5_1,
        DeviceFailureError,
        "HailoRTDriverOperationFailedException",
    ),
    "driver-4.18": ("vdevice", "HAILO_DRIVER_FAIL", HAILORT_4_18, DeviceFailureError, "HailoRTPCIeDriverException"),
    "in-use": ("vdevice", "HAILO_DEVICE_IN_USE", HAILORT_5_1, DeviceFailureError, "hailortcli monitor"),
    "driver-version": (
        "vdevice",
        "HAILO_INVALID_DRIVER_VERSION",
        HAILORT_5_1,
        DeviceFailureError,
        "driver of the same HailoRT version",
    ),
    "other": ("infer", "HAILO_INVALID_OPERATION", HAILORT_5_1, HailoRTError, "HailoRTInvalidOperationException"),
}


@pytest.mark.parametrize("case", ERRORS.values(), ids=ERRORS)
@pytest.mark.parametrize("api", APIS)
def test_each_hailort_exception_maps_to_a_harness_error_naming_hef_device_and_cause(
    make_fake: MakeFake,
    hef_files: dict[str, Path],
    frames: list[np.ndarray],
    case: tuple[str, str, Profile, type[HailoRTError], str],
    api: Api,
) -> None:
    stage, status, profile, expected, text = case
    fake = make_fake(profile)
    fake.fail(stage, status)
    with pytest.raises(expected) as caught:
        with HailoRTRunner(hef_files["heads"], api=api, device_ids=["0000:01:00.0"]) as runner:
            runner.infer({"images": frames[0]})
    message = str(caught.value)
    assert type(caught.value) is expected and isinstance(caught.value, HarnessError)
    assert str(hef_files["heads"]) in message and "Hailo device 0000:01:00.0" in message
    assert f"HailoRT {profile.version}" in message and text in message
    assert isinstance(caught.value.__cause__, fake.pyhailort.HailoRTException)


def test_a_file_hailort_does_not_know_as_a_hef_is_invalid(make_fake: MakeFake, hef_files: dict[str, Path]) -> None:
    make_fake()
    with pytest.raises(HefInvalidError, match=r"other\.hef.*reading the HEF: HailoRT rejects the HEF as invalid"):
        HailoRTRunner(hef_files["other"])
    with pytest.raises(HarnessError, match=r"missing\.hef'?: no such file"):
        HailoRTRunner(hef_files["other"].with_name("missing.hef"))


@pytest.mark.parametrize("api", APIS)
def test_a_timeout_is_retried_and_the_run_goes_on(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray], api: Api
) -> None:
    fake = make_fake()
    with HailoRTRunner(hef_files["heads"], api=api, retries=2) as runner:
        expected = runner.infer({"images": frames[0]})
        fake.fail("infer", "HAILO_TIMEOUT", times=2)
        fake.calls.clear()
        got = runner.infer({"images": frames[0]})
        assert len(fake.calls) == 1  # two timed-out tries never reached the device model, the third did
        assert not fake.faults["infer"]
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name])


@pytest.mark.parametrize("api", APIS)
def test_timeouts_on_every_try_fail_naming_the_hef_the_device_and_the_timeout(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray], api: Api
) -> None:
    fake = make_fake()
    with HailoRTRunner(hef_files["heads"], api=api, retries=1, timeout_ms=500) as runner:
        fake.fail("infer", "HAILO_TIMEOUT", times=3)
        with pytest.raises(InferenceTimeoutError) as caught:
            runner.infer({"images": frames[0]})
        assert fake.faults["infer"] == ["HAILO_TIMEOUT"]  # 1 + 1 retry tried, the third fault left
        assert runner.frames == 0
    message = str(caught.value)
    assert str(hef_files["heads"]) in message and "the first free Hailo device" in message
    assert "timed out 2 times in a row, after 500 ms each" in message and "raise timeout_ms" in message


def test_missing_hailo_platform_says_how_to_install_it_and_that_the_emulator_is_the_alternative(
    monkeypatch: pytest.MonkeyPatch, hef_files: dict[str, Path]
) -> None:
    monkeypatch.setitem(sys.modules, "hailo_platform", None)  # import hailo_platform -> ModuleNotFoundError
    with pytest.raises(HailoRTMissingError) as caught:
        HailoRTRunner(hef_files["heads"])
    message = str(caught.value)
    assert "hailo_platform, HailoRT's Python wheel, which is not installed" in message
    assert "Developer Zone" in message and "same version as the HailoRT PCIe driver" in message
    assert "--backend emulator" in message


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("format_type", FormatType.UINT16, "format_type .*expected FormatType.FLOAT32 or UINT8"),
        ("api", "async", "api 'async', expected one of \\['auto', 'vstreams', 'infer_model'\\]"),
        ("device_ids", "0000:01:00.0", "device_ids '0000:01:00.0', expected a list"),
        ("batch_size", 0, "batch_size 0, expected an integer >= 1"),
        ("retries", -1, "retries -1, expected an integer >= 0"),
        ("nms_order", FormatOrder.NHWC, "nms_order .*expected NMS_BY_CLASS or NMS_BY_SCORE"),
    ],
)
def test_bad_arguments_are_rejected_naming_the_field_and_what_was_expected(
    make_fake: MakeFake, hef_files: dict[str, Path], field: str, value: object, expected: str
) -> None:
    make_fake()
    with pytest.raises(HarnessError, match=expected):
        HailoRTRunner(hef_files["heads"], **{field: value})  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- commands


def test_eval_runs_the_hef_on_the_devices_asked_for_and_reports_the_measured_fps(
    make_fake: MakeFake, hef_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main as cli

    write_dataset(tmp_path / "syn", Recipe(seed=7, train=0, val=3, calib=0))
    fake = make_fake(devices=["0000:01:00.0", "0000:02:00.0"], latency_s=0.01)
    argv = ["eval", "--hef", str(hef_files["nms"]), "--onnx", str(DEMO), "--dataset", str(tmp_path / "syn")]
    assert cli.main([*argv, "--hailo-device", "0000:02:00.0", "--no-cache", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert fake.vdevice_params[-1]["device_ids"] == ["0000:02:00.0"]
    assert result["label"] == "hailo" and result["emulated"] is False
    assert 0 < result["fps"] <= 100  # 10 ms a frame on the fake device
    assert cli.main([*argv, "--no-cache"]) == 0
    assert "throughput on the device: " in capsys.readouterr().out


def _device_job(tmp_path: Path, hef: Path) -> JobConfig:
    """The job over the synthetic set in ``tmp_path / "syn"`` with ``hef`` on the (fake) device, its files in
    ``tmp_path``."""
    return JobConfig(
        dataset=tmp_path / "syn",
        report_dir=tmp_path / "report",
        cache_dir=tmp_path / "cache",
        golden_root=tmp_path / "golden",
        hailo=PathSpec(Backend.HAILORT, hef=hef),
        progress=False,
    )


def test_the_job_on_a_device_reports_its_fps_next_to_the_accuracy(
    make_fake: MakeFake, hef_files: dict[str, Path], tmp_path: Path
) -> None:
    make_fake(latency_s=0.005)
    write_dataset(tmp_path / "syn", Recipe(seed=7, train=0, val=3, calib=64))
    config = _device_job(tmp_path, hef_files["nms"])
    job = run_job(config, log=lambda line: None)
    hailo = job.results[-1]
    assert hailo.path == HAILO and hailo.fps is not None and 0 < hailo.fps <= 200
    assert f"{hailo.fps:.1f} frames/s on the device" in summary_lines(job)[len(job.results) - 1]
    document = json.loads(job.reports["json"].read_text())
    assert document["paths"][-1]["fps"] == pytest.approx(hailo.fps)
    assert f"| {hailo.fps:.1f} |" in job.reports["markdown"].read_text()
    again = run_job(config, log=lambda line: None)  # every prediction from the cache: nothing measured
    assert again.results[-1].fps is None
    assert "not measured (cached)" in again.reports["markdown"].read_text()


def test_eval_asks_hailort_for_the_output_format_given_and_caches_the_formats_apart(
    make_fake: MakeFake, hef_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    import harness.backends.hailort as hailort_backend
    from harness.cli import main as cli

    make_fake()
    formats: list[FormatType] = []

    def recording(hef: Path, **kwargs: object) -> HailoRTRunner:
        formats.append(kwargs["format_type"])  # type: ignore[arg-type]
        return HailoRTRunner(hef, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(hailort_backend, "HailoRTRunner", recording)  # the factory imports it when a path runs
    write_dataset(tmp_path / "syn", Recipe(seed=7, train=0, val=3, calib=0))
    argv = ["eval", "--hef", str(hef_files["heads"]), "--onnx", str(DEMO), "--dataset", str(tmp_path / "syn")]
    maps = []
    for name in ("float32", "uint8"):
        assert cli.main([*argv, "--hailo-format", name, "--cache", str(tmp_path / "cache"), "--json"]) == 0
        maps.append(json.loads(capsys.readouterr().out)["metrics"]["map50"])
    assert formats == [FormatType.FLOAT32, FormatType.UINT8]
    assert len(list((tmp_path / "cache").glob("predictions/hailo-*.bin"))) == 2
    assert maps[0] == pytest.approx(maps[1], abs=0.02)  # the same HEF, dequantized by HailoRT or by the harness


# ---------------------------------------------------------------------------------------------- a fleet


def test_worker_devices_give_each_xdist_worker_its_own_device_and_refuse_more_workers_than_devices() -> None:
    from harness.backends.hailort.devices import worker_devices

    devices = ("0000:01:00.0", "0000:02:00.0")
    assert worker_devices(devices, None) == devices  # outside xdist: one virtual device of both
    assert worker_devices(devices, "gw0") == ("0000:01:00.0",)
    assert worker_devices(devices, "gw1") == ("0000:02:00.0",)
    assert worker_devices(devices[:1], "gw5") == devices[:1]  # one device: every worker asks for it
    with pytest.raises(HarnessError, match=r"worker gw2 has no device of its own \(2 devices\); .*pytest -n 2"):
        worker_devices(devices, "gw2")


def test_shards_on_two_devices_merge_to_the_one_device_runs_verdict_bit_for_bit(
    make_fake: MakeFake, hef_files: dict[str, Path], tmp_path: Path
) -> None:
    from harness.backends.hailort.devices import worker_devices
    from harness.pipeline.options import job_config
    from harness.pipeline.shard import Shard, merge_job, run_shard

    devices = ("0000:01:00.0", "0000:02:00.0")
    fake = make_fake(devices=list(devices))
    write_dataset(tmp_path / "syn", Recipe(seed=7, train=0, val=6, calib=0))
    values = {"onnx": DEMO, "hef": hef_files["nms"], "dataset": tmp_path / "syn", "golden": tmp_path / "golden"}
    values |= {"cache": tmp_path / "cache"}

    def config(report: Path, device: tuple[str, ...] = ()) -> JobConfig:
        return job_config({**values, "report": report, "hailo_device": list(device)}, ("pytest",), progress=False)

    blessing = job_config({**values, "report": tmp_path / "blessed", "update_golden": True}, ("pytest",))
    run_job(blessing, log=lambda line: None)
    single = run_job(config(tmp_path / "single", devices[:1]), log=lambda line: None)
    assert single.passed
    stores = []
    for index, worker in ((1, "gw0"), (2, "gw1")):  # as two pytest-xdist workers would, each on its device
        store = tmp_path / f"shard-{index}"
        run_shard(config(store, worker_devices(devices, worker)), Shard(index, 2), values, log=lambda line: None)
        assert fake.vdevice_params[-1]["device_ids"] == [devices[index - 1]]
        stores.append(store)
    merged = merge_job(stores, values | {"report": tmp_path / "merged"}, ("hailo-harness", "merge"), lambda line: None)
    assert merged.results[-1].kind.value == "device" and merged.results[-1].fps is not None
    for one, other in zip(single.results, merged.results, strict=True):
        for a, b in zip(one.predictions, other.predictions, strict=True):
            assert a.boxes.tobytes() == b.boxes.tobytes() and a.scores.tobytes() == b.scores.tobytes()
            assert a.class_ids.tobytes() == b.class_ids.tobytes()
    assert [(g.name, g.passed, g.observed, g.text) for g in single.gates] == [
        (g.name, g.passed, g.observed, g.text) for g in merged.gates
    ]
    documents = [json.loads(job.reports["json"].read_text()) for job in (single, merged)]
    for document in documents:  # what differs: when, from a cache or not, which device and its frame rate
        for path in document["paths"]:
            path.pop("fps")
            for name in ("created", "from_cache", "runtime"):
                path["provenance"].pop(name)
            path["provenance"].get("made_from", {}).pop("device", None)  # the device it ran on, as the runtime
    assert documents[0] == documents[1]


# ---------------------------------------------------------------------------------------------- device identity


@pytest.mark.parametrize("profile", [HAILORT_4_23, HAILORT_5_1])
def test_the_runner_identifies_each_device_it_opened_and_releases_them(
    make_fake: MakeFake, hef_files: dict[str, Path], profile: Profile
) -> None:
    devices = ["0000:01:00.0", "0000:02:00.0"]
    fake = make_fake(profile, devices=devices, boards={"0000:02:00.0": Board("4.20.0", serial="HLLWM2B999")})
    with HailoRTRunner(hef_files["heads"], device_ids=devices) as runner:
        assert fake.opened_devices == 0  # each Device made to identify it is released at once
        assert [(i.device_id, i.architecture, i.firmware) for i in runner.identities] == [
            ("0000:01:00.0", "HAILO8", profile.version),
            ("0000:02:00.0", "HAILO8", "4.20.0"),
        ]
        assert dict(runner.made_from) == {
            "device": "0000:01:00.0 (HAILO8, serial HLLWM2B214900345), 0000:02:00.0 (HAILO8, serial HLLWM2B999)",
            "firmware": f"0000:01:00.0 {profile.version}, 0000:02:00.0 4.20.0",
        }
        assert f"(firmware 0000:01:00.0 {profile.version}, 0000:02:00.0 4.20.0, HailoRT {profile.version}," in (
            runner.label
        )


def test_one_firmware_is_named_once_and_a_develop_build_is_marked(
    make_fake: MakeFake, hef_files: dict[str, Path]
) -> None:
    make_fake(boards={"0000:01:00.0": Board("4.23.0", is_release=False, serial="")})
    with HailoRTRunner(hef_files["nms"]) as runner:
        assert dict(runner.made_from) == {"device": "0000:01:00.0 (HAILO8)", "firmware": "4.23.0 (develop)"}
        assert "(firmware 4.23.0 (develop), HailoRT" in runner.label


def test_a_device_that_does_not_identify_runs_with_its_firmware_recorded_unknown(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray]
) -> None:
    fake = make_fake()
    fake.fail("identify", "HAILO_TIMEOUT")
    with HailoRTRunner(hef_files["heads"]) as runner:
        assert dict(runner.made_from) == {
            "device": "0000:01:00.0",
            "firmware": "unknown (identify failed: HailoRTTimeout)",
        }
        assert runner.infer({next(iter(runner.input_specs)): frames[0]})  # the run goes on
    assert fake.opened_devices == 0


def test_a_firmware_update_is_recorded_missed_by_the_cache_and_said_in_the_sign_off_report(
    make_fake: MakeFake, hef_files: dict[str, Path], tmp_path: Path
) -> None:
    write_dataset(tmp_path / "syn", Recipe(seed=7, train=0, val=10, calib=0))
    config = _device_job(tmp_path, hef_files["nms"])
    quiet = lambda line: None  # noqa: E731
    make_fake(boards={"0000:01:00.0": Board("4.20.0")})
    run_job(replace(config, update_golden=True, release="r1"), log=quiet)
    make_fake(boards={"0000:01:00.0": Board("4.23.0")})
    job = run_job(config, log=quiet)
    hailo = job.results[-1]
    made = dict(hailo.provenance.made_from)
    assert made["firmware"] == "4.23.0" and made["device"] == "0000:01:00.0 (HAILO8, serial HLLWM2B214900345)"
    assert hailo.provenance.from_cache == 0  # predictions made on 4.20.0 are not served as 4.23.0's
    said = "hailo: this run against r1: device firmware changed from 4.20.0 to 4.23.0; model unchanged"
    assert f"What changed: {said}." in job.reports["markdown"].read_text()
    assert f"- {said}" in job.reports["summary"].read_text()


# ---------------------------------------------------------------------------------------------- in flight

PIPELINED = {
    "infer_model-5.1": (Api.INFER_MODEL, HAILORT_5_1),
    "infer_model-4.18": (Api.INFER_MODEL, HAILORT_4_18),
    "vstreams-5.1": (Api.VSTREAMS, HAILORT_5_1),
}


def _device_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("hailo-harness-device", "fake-hailo-device"))]


def _path(runner: HailoRTRunner, dataset: Dataset) -> RawHeadsPath:
    return RawHeadsPath(runner, EvalSettings(input_hw=INPUT_HW), DEMO, name=HAILO, model_names=dataset.names)


@pytest.fixture(scope="module")
def seven(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("seven")
    write_dataset(root, Recipe(seed=11, train=0, val=7, calib=0))
    return load_yolo(root)


@pytest.mark.parametrize("hef", ["heads", "nms"])
@pytest.mark.parametrize("case", PIPELINED.values(), ids=PIPELINED)
def test_batches_kept_in_flight_give_the_synchronous_detections_in_the_same_order(
    make_fake: MakeFake, hef_files: dict[str, Path], seven: Dataset, case: tuple[Api, Profile], hef: str
) -> None:
    api, profile = case
    fake = make_fake(profile, latency_s=0.002)
    settings = EvalSettings(input_hw=INPUT_HW)
    kind = RawHeadsPath if hef == "heads" else NmsBufferPath
    with HailoRTRunner(hef_files[hef], api=api) as runner:
        path = kind(runner, settings, DEMO, name=HAILO, model_names=seven.names)
        assert keeps_in_flight(path)
        images = [load_image(s.path) for s in seven.samples]
        synchronous = [f for i in range(0, 7, 3) for f in path.detect_batch(images[i : i + 3])]
        fake.calls.clear()
        result = evaluate_path(path, seven, batch=3, progress=False)
    assert len(result.predictions) == 7 and sum(len(d) for d in result.predictions) > 0
    for got, expected in zip(result.predictions, synchronous, strict=True):
        np.testing.assert_array_equal(got.boxes, expected.detections.boxes)  # the same order, not only the same set
        np.testing.assert_array_equal(got.scores, expected.detections.scores)
        np.testing.assert_array_equal(got.class_ids, expected.detections.class_ids)
    if api is Api.INFER_MODEL:  # every batch in flight handed to the device before the first was waited for
        submitted = [("ConfiguredInferModel.run_async", 3), ("ConfiguredInferModel.run_async", 3)]
        submitted += [("ConfiguredInferModel.run_async", 1)] if IN_FLIGHT > 2 else []
        assert fake.calls[: len(submitted) + 1] == [*submitted, ("AsyncInferJob.wait", 3)]
    assert runner.frames == 7 + 7 and runner.fps is not None and runner.fps <= 1 / 0.002
    assert _device_threads() == []


@pytest.mark.parametrize("case", PIPELINED.values(), ids=PIPELINED)
def test_a_device_failure_in_flight_is_one_clear_error_and_the_device_is_released(
    make_fake: MakeFake, hef_files: dict[str, Path], seven: Dataset, case: tuple[Api, Profile]
) -> None:
    api, profile = case
    fake = make_fake(profile, latency_s=0.002)
    fake.fail("infer", "HAILO_DRIVER_OPERATION_FAILED" if profile is HAILORT_5_1 else "HAILO_DRIVER_FAIL")
    with pytest.raises(DeviceFailureError) as caught:
        with HailoRTRunner(hef_files["heads"], api=api) as runner:
            evaluate_path(_path(runner, seven), seven, batch=2, progress=False)
    message = str(caught.value)
    assert message.startswith(f"HEF {str(hef_files['heads'])!r} on the first free Hailo device") and "dmesg" in message
    assert "running inference" in message
    assert fake.released == 1 and _device_threads() == []


@pytest.mark.parametrize("case", PIPELINED.values(), ids=PIPELINED)
def test_an_interrupt_while_batches_are_in_flight_leaves_no_thread_and_releases_the_device(
    make_fake: MakeFake,
    hef_files: dict[str, Path],
    seven: Dataset,
    case: tuple[Api, Profile],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, profile = case
    fake = make_fake(profile, latency_s=0.01)

    def interrupted(self: RawHeadsPath, outputs: dict[str, np.ndarray], geometry: object) -> object:
        raise KeyboardInterrupt  # Ctrl-C while the host decodes the first batch, the second on the device

    with pytest.raises(KeyboardInterrupt):
        with HailoRTRunner(hef_files["heads"], api=api) as runner:
            monkeypatch.setattr(RawHeadsPath, "_decode", interrupted)
            evaluate_path(_path(runner, seven), seven, batch=2, progress=False)
    assert fake.released == 1 and _device_threads() == []
    in_flight = sum(n for call, n in fake.calls if call != "AsyncInferJob.wait")
    assert in_flight == min(7, 2 * IN_FLIGHT)  # the batches in flight when Ctrl-C came, run to their end


def test_a_batch_in_flight_past_every_timeout_fails_naming_the_timeout_and_close_waits_for_it(
    make_fake: MakeFake, hef_files: dict[str, Path], frames: list[np.ndarray]
) -> None:
    fake = make_fake(latency_s=0.05)
    with HailoRTRunner(hef_files["heads"], api=Api.INFER_MODEL, retries=1, timeout_ms=10) as runner:
        waiting = runner.submit_batch({"images": np.concatenate(frames[:2])})
        with pytest.raises(InferenceTimeoutError, match=r"timed out 2 times in a row, after 10 ms each"):
            waiting()
        late = runner.submit_batch({"images": frames[0]})  # still in flight when the runner closes
    assert fake.released == 1 and _device_threads() == []
    with pytest.raises(HailoRTError, match="runner used after close"):
        runner.submit_batch({"images": frames[0]})
    del late
