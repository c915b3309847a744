"""The backend registry (harness.pipeline.backends): one descriptor per Backend, each path name and
kind said once, and the refusals of options another backend takes in the words they always had."""

from pathlib import Path

import pytest

from harness.core.errors import HarnessError
from harness.core.path_names import DFC_QUANTIZED, EMULATED_HAILO, HAILO, ONNX, PathKind
from harness.pipeline.backends import BACKENDS, describe, kind_named, listed
from harness.pipeline.spec import Backend, PathSpec


def test_every_backend_has_one_descriptor_and_each_path_name_one_backend():
    assert list(BACKENDS) == list(Backend) and all(describe(b).backend is b for b in Backend)
    names = [name for d in BACKENDS.values() for name in d.names]
    assert len(names) == len(set(names))
    assert [describe(b).kind for b in Backend] == [
        PathKind.FLOAT,
        PathKind.EMULATED,
        PathKind.DEVICE,
        PathKind.EMULATED,
        PathKind.REPLAYED,
    ]
    assert [kind_named(n) for n in (ONNX, EMULATED_HAILO, HAILO, DFC_QUANTIZED)] == [
        PathKind.FLOAT,
        PathKind.EMULATED,
        PathKind.DEVICE,
        PathKind.EMULATED,
    ]
    with pytest.raises(HarnessError, match="path name 'openvino': expected one of"):
        kind_named("openvino")


def test_only_the_device_backend_makes_device_paths():
    assert [b for b, d in BACKENDS.items() if d.kind is PathKind.DEVICE] == [Backend.HAILORT]
    assert PathSpec(Backend.HAILORT, hef=Path("m.hef")).kind is PathKind.DEVICE
    assert PathSpec(Backend.HAILORT, hef=Path("m.hef")).recorded_kind is None


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: PathSpec(Backend.EMULATOR, hef=Path("m.hef")),
            "--hef belongs to --backend hailort (or replay), not --backend emulator",
        ),
        (lambda: PathSpec(Backend.ONNX, replay=Path("s.rec")), "--replay STORE and --backend replay go together"),
        (lambda: PathSpec(Backend.REPLAY), "--replay STORE and --backend replay go together"),
        (
            lambda: PathSpec(Backend.ONNX, record=Path("s.rec")),
            "--record belongs to a Hailo path (emulator, hailort or dfc), not --backend onnx",
        ),
        (
            lambda: PathSpec(Backend.HAILORT, hef=Path("m.hef"), har=Path("m.har")),
            "--har belongs to --backend dfc, not --backend hailort",
        ),
        (
            lambda: PathSpec(Backend.HAILORT),
            "--backend hailort: needs --hef M.hef (the compiled model to run on the device)",
        ),
        (lambda: PathSpec(Backend.DFC), "--backend dfc: needs --har M.har (the optimized HAR to emulate)"),
        (
            lambda: PathSpec(Backend.DFC, har=Path("m.har"), hailo_devices=("0",)),
            "--hailo-device belongs to --backend hailort, not --backend dfc",
        ),
        (
            lambda: PathSpec(Backend.ONNX, calibration="in-domain"),
            "--calibration belongs to --backend emulator, not --backend onnx",
        ),
    ],
)
def test_a_spec_with_an_option_of_another_backend_is_never_made_and_the_refusal_names_both(make, message):
    with pytest.raises(HarnessError) as refused:
        make()
    assert str(refused.value) == message


def test_names_are_listed_as_a_sentence_says_them():
    assert [listed(n) for n in (["a"], ["a", "b"], ["a", "b", "c"])] == ["a", "a or b", "a, b or c"]


def test_emulated_hefs_and_the_demo_set_are_kept_in_the_runs_cache_folder_unless_a_shared_one_is_named(
    monkeypatch, tmp_path
):
    from harness.inputs.demo import demo_root
    from harness.pipeline.backends.emulator import emulator_cache

    monkeypatch.delenv("HARNESS_SHARED_CACHE", raising=False)
    assert emulator_cache(tmp_path / "cache") == tmp_path / "cache" / "emulator"
    assert demo_root(tmp_path / "cache").parent == tmp_path / "cache" / "demo-data"
    monkeypatch.setenv("HARNESS_SHARED_CACHE", str(tmp_path / "shared"))
    assert emulator_cache(tmp_path / "cache") == tmp_path / "shared" / "emulator"
    assert demo_root(tmp_path / "cache").parent == tmp_path / "shared" / "demo-data"
