"""What a rerun reads instead of its models: an export's facts and a cached emulated HEF's, kept in
JSON sidecars keyed by content. An export's sidecar that is corrupt, of another format or of another
export is logged and read from the model again, never trusted. A cached emulated HEF's sidecar is its
sealed record in the shared cache: where it does not vouch for the model beside it, or names other
inputs than the run's, the entry is kept aside and quantized again; where only its facts are stale,
they are read from the verified model."""

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

import harness.backends.emulator as emulator
from harness.backends.emulator import EmulatedHef, EmulatorOptions, build_emulated_hef
from harness.backends.emulator import build as emulator_build
from harness.core import signing
from harness.core.errors import GraphError, HarnessError
from harness.core.head_family import HeadFamily
from harness.core.shared_entry import EntryState, seal_record
from harness.inputs.demo import DEMO_ONNX, IN_DOMAIN, demo_split
from harness.inputs.export_facts import export_facts, export_facts_of, file_sha256, record_passed, sidecar_path
from harness.inputs.onnx_graph import load_model
from harness.pipeline import factory
from harness.pipeline.spec import Backend, JobConfig, PathSpec

DEMO26_ONNX = DEMO_ONNX.with_name("fire_smoke_yolo26n_256.onnx")

# Each way an export's sidecar is not this run's: a field and a value it cannot hold.
STALE_EXPORT = {
    "format": 999,
    "sha256": "0" * 64,
    "code": "an older reader",
    "input_hw": [256],
    "names": "fire",
    "family": "yolo99",
    "end_to_end": "no",
    "passed": None,
    "input_channels": 0,
    "heads": [{"tensor": "t", "node": "n", "role": "anchors", "channels": 64, "grid": [32, 32]}],
    "ssd_config": "0" * 64,  # facts found with an SSD config, read without one
}


def _model_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading an ONNX model from here on fails the test: the facts must come from the sidecar."""

    def refuse(path: object) -> None:
        raise AssertionError(f"model {path} read although its facts are kept")

    monkeypatch.setattr("harness.inputs.onnx_graph.load_model", refuse)


@pytest.fixture(scope="module")
def headless(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo export without the class sigmoid of its decode tail: its heads cannot be found."""
    model = load_model(DEMO_ONNX)
    nodes = [n for n in model.graph.node if n.op_type != "Sigmoid"]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    file = tmp_path_factory.mktemp("headless") / "headless.onnx"
    onnx.save(model, file)
    return file


@pytest.mark.parametrize("export", [DEMO_ONNX, DEMO26_ONNX], ids=["yolo11n", "yolo26n"])
def test_a_rerun_takes_an_exports_facts_from_its_sidecar_and_they_are_the_models(
    export: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = export_facts(export, tmp_path)
    assert first == export_facts_of(load_model(export), file_sha256(export), str(export))
    assert first.input_name == "images" and first.input_hw == (256, 256) and first.names == ("fire", "smoke")
    assert first.family is (HeadFamily.YOLOV8 if export == DEMO_ONNX else HeadFamily.YOLO26_ONE2ONE)
    assert first.end_to_end is (export == DEMO26_ONNX)
    assert sidecar_path(tmp_path, first.sha256).is_file()
    _model_unread(monkeypatch)
    assert export_facts(export, tmp_path) == first


def test_without_the_cache_a_sidecar_is_read_and_none_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--no-cache`` (``prepare_run(use_cache=False)``): the facts a sidecar holds are read from it (no
    model loaded), and facts read from the model are not kept."""
    fresh = factory.model_facts(DEMO_ONNX, tmp_path / "fresh", keep=False)
    assert not (tmp_path / "fresh").exists()
    kept = export_facts(DEMO_ONNX, tmp_path / "kept")
    _model_unread(monkeypatch)
    assert factory.model_facts(DEMO_ONNX, tmp_path / "kept", keep=False) == kept == fresh


@pytest.mark.parametrize("change", [*STALE_EXPORT, "not json", "not an object", "a key twice", "an unknown key"])
def test_a_corrupt_or_stale_export_sidecar_is_logged_and_rebuilt_from_the_model(
    change: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = export_facts(DEMO_ONNX, tmp_path)
    file = sidecar_path(tmp_path, good.sha256)
    data = json.loads(file.read_text())
    if change == "not json":
        file.write_text('{"format": 1, "sha2')
    elif change == "not an object":
        file.write_text("[]")
    elif change == "a key twice":  # the facts of another export merged in after the right ones
        file.write_text(json.dumps(data)[:-1] + ', "input_hw": [640, 640]}')
    elif change == "an unknown key":
        file.write_text(json.dumps(data | {"trusted": True}))
    else:
        file.write_text(json.dumps(data | {change: STALE_EXPORT[change]}))
    with caplog.at_level(logging.WARNING, logger="harness.inputs.export_facts"):
        assert export_facts(DEMO_ONNX, tmp_path) == good
    assert f"export facts {file} not used" in caplog.text
    if change in STALE_EXPORT:
        assert f"field {change}" in caplog.text
    assert json.loads(file.read_text()) == data  # rebuilt whole


def test_a_sidecar_is_keyed_by_the_exports_content_not_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "renamed.onnx"
    shutil.copyfile(DEMO_ONNX, copy)
    facts = export_facts(DEMO_ONNX, tmp_path / "cache")
    _model_unread(monkeypatch)
    assert export_facts(copy, tmp_path / "cache") == facts


def test_a_cache_folder_that_cannot_be_written_keeps_no_facts_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a file"
    blocked.write_text("")  # the cache folder's place taken by a file: nothing can be written below it
    with caplog.at_level(logging.WARNING, logger="harness.inputs.export_facts"):
        facts = export_facts(DEMO_ONNX, blocked)
    assert facts == export_facts(DEMO_ONNX) and "not kept" in caplog.text
    assert blocked.read_text() == "" and list(tmp_path.iterdir()) == [blocked]


def test_an_export_whose_heads_are_not_found_keeps_no_sidecar_and_every_run_says_why(
    headless: Path, tmp_path: Path
) -> None:
    facts = export_facts(headless, tmp_path)
    assert facts.family is None and facts.input_hw == (256, 256)
    assert record_passed(facts, "a check", tmp_path).passed == ("a check",)
    assert not sidecar_path(tmp_path, facts.sha256).exists()
    for _ in range(2):
        with pytest.raises(GraphError, match="expected exactly one class Sigmoid"):
            factory.preflight(JobConfig(onnx=headless, cache_dir=tmp_path))


def test_preflight_checks_an_export_for_the_emulator_once_per_content_and_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[Path] = []
    check_export = emulator.check_export

    def spy(export: Path, options: EmulatorOptions) -> None:
        checked.append(export)
        check_export(export, options)

    monkeypatch.setattr(emulator, "check_export", spy)  # the emulator backend's preflight imports it when it runs
    config = JobConfig(cache_dir=tmp_path)
    factory.preflight(config)
    factory.preflight(config)
    assert checked == [config.onnx]
    facts = export_facts(config.onnx, tmp_path)
    assert facts.passed == (emulator_build.export_check(EmulatorOptions(sigmoid_inside=True)),)
    factory.preflight(JobConfig(cache_dir=tmp_path, hailo=PathSpec(Backend.EMULATOR, sigmoid_inside=False)))
    assert checked == [config.onnx] * 2  # other options: another check
    sidecar_path(tmp_path, facts.sha256).write_text("{")
    factory.preflight(config)
    assert checked == [config.onnx] * 3  # the record lost with its sidecar: checked again


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return sorted(demo_split(tmp_path_factory.mktemp("demo"), IN_DOMAIN).iterdir())[:4]


def _build(calibration: list[Path], cache: Path) -> EmulatedHef:
    options = EmulatorOptions(calibration_count=4, sigmoid_inside=True, nms=True)
    return build_emulated_hef(DEMO_ONNX, calibration, options, cache)


def test_a_cached_emulated_hef_is_described_from_its_sidecar_as_from_its_model(
    calibration: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _build(calibration, tmp_path)
    assert first.quantized_model.with_suffix(".json").is_file()

    def unread(path: Path) -> None:
        raise AssertionError(f"quantized model {path} loaded although its facts are kept")

    monkeypatch.setattr(emulator_build, "_load_cached", unread)
    again = _build(calibration, tmp_path)
    assert again == first
    assert again.output_specs == first.output_specs and again.score_ceiling == first.score_ceiling


def _resealed(data: dict) -> dict:
    """``data`` sealed again as a writer without the key would (its digest recomputed)."""
    return seal_record(data, None)


def _no_quantizing(monkeypatch: pytest.MonkeyPatch) -> None:
    def quantized(*args: object) -> None:
        raise AssertionError("quantized again although the cached model holds")

    monkeypatch.setattr(emulator_build, "_quantized", quantized)


@pytest.mark.parametrize("change", ["code", "heads", "quant", "order", "family", "classes", "anchors"])
def test_a_stale_emulated_hef_record_sealed_again_has_its_facts_read_from_its_verified_model(
    change: str, calibration: list[Path], tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch
) -> None:
    first = _build(calibration, tmp_path)
    kept = first.quantized_model.with_suffix(".json")
    data = json.loads(kept.read_text())
    head, rest = data["heads"][0], data["heads"][1:]
    changed = {
        "code": {"code": "an older reader"},
        "heads": {"heads": []},
        "quant": {"heads": [head | {"quant": [head["quant"][0] | {"scale": "0.1"}]}, *rest]},
        "order": {"heads": [head | {"order": "NCHWX"}, *rest]},
        "family": {"family": "yolo99"},
        "classes": {"classes": 0},
        "anchors": {"anchors": [[[10, 13]]]},  # anchors for an anchor-free head
    }
    kept.write_text(json.dumps(_resealed(data | changed[change])))
    _no_quantizing(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="harness.backends.emulator.facts"):
        again = _build(calibration, tmp_path)
    assert f"emulated HEF facts {kept} not used" in caplog.text
    if change in ("quant", "order"):  # the spec's field is named with its place in the facts
        assert f"heads[0].{change}" in caplog.text
    assert again == first and again.entry is not None and again.entry.state is EntryState.SEALED
    assert json.loads(kept.read_text()) == data  # written again as it was
    assert not list(tmp_path.glob("*.damaged-*"))


@pytest.mark.parametrize(
    "change", ["not json", "format", "key", "model_sha256", "built_from", "edited unsealed", "no record", "model"]
)
def test_an_emulated_hef_entry_its_record_does_not_vouch_for_is_kept_aside_and_quantized_again(
    change: str, calibration: list[Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = _build(calibration, tmp_path)
    model, kept = first.quantized_model, first.quantized_model.with_suffix(".json")
    data = json.loads(kept.read_text())
    inputs = data["built_from"] | {"calibration": data["built_from"]["calibration"] | {"sha256": "0" * 64}}
    changed = {
        "format": _resealed(data | {"format": 4}),
        "key": _resealed(data | {"key": "another"}),
        "model_sha256": _resealed(data | {"model_sha256": "0" * 64}),
        "built_from": _resealed(data | {"built_from": inputs}),  # another calibration's record
        "edited unsealed": data | {"classes": 3},  # the seal left as it was
    }
    if change == "not json":
        kept.write_text("{")
    elif change == "no record":
        kept.unlink()
    elif change == "model":  # another model's bytes under this entry's name
        other = onnx.load(model)
        other.doc_string = "another model"
        onnx.save(other, model)
    else:
        kept.write_text(json.dumps(changed[change]))
    found = model.read_bytes()
    with caplog.at_level(logging.WARNING, logger="harness.backends.emulator.build"):
        again = _build(calibration, tmp_path)
    assert f"emulated HEF cache entry {model} not used" in caplog.text
    assert again == first and again.entry is not None and again.entry.state is EntryState.REBUILT
    assert again.entry.sha256 == file_sha256(model) == json.loads(kept.read_text())["model_sha256"]
    (aside,) = tmp_path.glob(f"{model.name}.damaged-*")
    assert aside.read_bytes() == found  # the one found kept, never deleted
    assert again.entry.detail.startswith(caplog.text.split("not used (")[1].split("): quantizing")[0])


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_damaged_emulated_hef_model_is_kept_aside_and_quantized_again_never_an_internal_error(
    damage: str, calibration: list[Path], tmp_path: Path
) -> None:
    first = _build(calibration, tmp_path)
    model = first.quantized_model
    good = model.read_bytes()
    model.write_bytes({"truncated": good[: len(good) // 2], "garbage": bytes(range(256)) * 64, "empty": b""}[damage])
    again = _build(calibration, tmp_path)
    assert again == first and again.entry is not None and again.entry.state is EntryState.REBUILT
    assert "its model's sha256 is" in again.entry.detail
    assert len(list(tmp_path.glob(f"{model.name}.damaged-*"))) == 1


def test_another_calibrations_model_over_an_entry_with_its_record_patched_is_caught_by_the_signature(
    calibration: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(signing.KEY_VARIABLE, "k" * 32)
    inside = _build(calibration, tmp_path / "in")
    assert inside.entry is not None and inside.entry.state is EntryState.BUILT
    other = _build(calibration[::-1], tmp_path)  # another calibration: another entry
    record = json.loads(inside.quantized_model.with_suffix(".json").read_text())
    theirs = json.loads(other.quantized_model.with_suffix(".json").read_text())
    shutil.copy(inside.quantized_model, other.quantized_model)
    patched = record | {k: theirs[k] for k in ("key", "built_from", "calibration_source")}
    other.quantized_model.with_suffix(".json").write_text(json.dumps(patched))  # its HMAC left as it was
    again = _build(calibration[::-1], tmp_path)
    assert again.entry is not None and again.entry.state is EntryState.REBUILT
    assert "tampered" in again.entry.detail
    # its digest recomputed without the key: sealed, not signed; refused where signatures are required
    other = again
    shutil.copy(inside.quantized_model, other.quantized_model)
    other.quantized_model.with_suffix(".json").write_text(json.dumps(_resealed(patched)))
    monkeypatch.setenv(signing.REQUIRE_VARIABLE, "1")
    again = _build(calibration[::-1], tmp_path)
    assert again.entry is not None and again.entry.state is EntryState.REBUILT
    assert "signatures are required" in again.entry.detail
    assert _build(calibration[::-1], tmp_path).entry.state is EntryState.SIGNED  # type: ignore[union-attr]


def test_a_damaged_entry_in_a_cache_this_run_cannot_write_is_refused_in_one_line(
    calibration: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _build(calibration, tmp_path)
    first.quantized_model.write_bytes(b"garbage")

    def read_only(path: Path, now: object = None) -> None:
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr(emulator_build, "set_aside", read_only)
    with pytest.raises(HarnessError) as refused:
        _build(calibration, tmp_path)
    said = str(refused.value)
    assert "\n" not in said and f"shared cache entry {first.quantized_model}" in said
    assert "its model's sha256 is" in said and "Read-only file system" in said and "HARNESS_SHARED_CACHE" in said
    assert first.quantized_model.read_bytes() == b"garbage"  # neither used nor deleted


def test_two_workers_making_one_entry_at_once_make_it_once(calibration: list[Path], tmp_path: Path) -> None:
    import threading

    made: list[int] = []
    quantized = emulator_build._quantized

    def counted(*args: object) -> object:
        made.append(1)
        return quantized(*args)  # type: ignore[arg-type]

    results: list[EmulatedHef] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(emulator_build, "_quantized", counted)
        workers = [threading.Thread(target=lambda: results.append(_build(calibration, tmp_path))) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert len(made) == 1 and len(results) == 2 and results[0] == results[1]
    assert sorted(r.entry.state.value for r in results if r.entry) == ["built", "sealed"]


def test_an_anchor_based_exports_anchors_are_kept_in_its_sidecar_and_read_back(tmp_path: Path, monkeypatch) -> None:
    from support.yolov5_exports import yolov5_export

    anchors = (((10.0, 13.0), (16.0, 30.0)), ((30.0, 61.0), (62.0, 45.0)), ((116.0, 90.0), (156.5, 198.0)))
    export = tmp_path / "v5.onnx"
    onnx.save(yolov5_export(anchors=anchors), export)
    first = export_facts(export, tmp_path)
    assert first.family is HeadFamily.YOLOV5 and first.anchors == anchors
    _model_unread(monkeypatch)
    assert export_facts(export, tmp_path) == first
    sidecar = sidecar_path(tmp_path, first.sha256)
    data = json.loads(sidecar.read_text())
    data["heads"][0]["anchors"] = [[10, -13]]
    sidecar.write_text(json.dumps(data))
    monkeypatch.undo()
    assert export_facts(export, tmp_path) == first  # a bad sidecar is read from the model again


V5_ANCHORS = (((10.0, 13.0), (16.0, 30.0)), ((30.0, 61.0), (62.0, 45.0)), ((116.0, 90.0), (156.5, 198.0)))


@pytest.fixture(scope="module")
def yolov5_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from support.yolov5_exports import yolov5_export

    export = tmp_path_factory.mktemp("yolov5") / "v5.onnx"
    onnx.save(yolov5_export(anchors=V5_ANCHORS), export)
    return export


def _build_v5(export: Path, calibration: list[Path], cache: Path) -> EmulatedHef:
    options = EmulatorOptions(calibration_count=4, sigmoid_inside=True, nms=True)
    return build_emulated_hef(export, calibration, options, cache)


def test_a_cached_yolov5_emulated_hef_keeps_its_anchors_in_its_sidecar_and_is_described_from_it(
    yolov5_onnx: Path, calibration: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _build_v5(yolov5_onnx, calibration, tmp_path)
    assert first.family is HeadFamily.YOLOV5 and first.classes == 2 and first.anchors == V5_ANCHORS
    data = json.loads(first.quantized_model.with_suffix(".json").read_text())
    assert data["anchors"] == [[list(pair) for pair in group] for group in V5_ANCHORS] and data["family"] == "yolov5"

    def unread(path: Path) -> None:
        raise AssertionError(f"quantized model {path} loaded although its facts are kept")

    monkeypatch.setattr(emulator_build, "_load_cached", unread)
    again = _build_v5(yolov5_onnx, calibration, tmp_path)
    assert again == first and again.layout.anchors == V5_ANCHORS
    assert again.output_specs == first.output_specs and again.score_ceiling == first.score_ceiling


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("a negative height", "field anchors is"),
        ("a stride's anchors missing", "field anchors is"),
        ("a pair of three", "field anchors is"),
        ("an anchor dropped", "fields 'heads' and 'anchors' are not the heads of a yolov5 HEF"),
        ("none", "field anchors is [], expected 3 lists"),
    ],
)
def test_a_corrupt_anchors_entry_of_a_yolov5_emulated_hefs_sidecar_is_refused_naming_the_field_and_rebuilt(
    change: str, said: str, yolov5_onnx: Path, calibration: list[Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = _build_v5(yolov5_onnx, calibration, tmp_path)
    kept = first.quantized_model.with_suffix(".json")
    data = json.loads(kept.read_text())
    anchors = data["anchors"]
    changed = {
        "a negative height": [[[10, -13], [16, 30]], *anchors[1:]],
        "a stride's anchors missing": anchors[:2],
        "a pair of three": [[[10, 13, 1], [16, 30]], *anchors[1:]],
        "an anchor dropped": [[[10, 13]], *anchors[1:]],  # 14 channels for one anchor: 9 classes, not 2
        "none": [],
    }
    kept.write_text(json.dumps(_resealed(data | {"anchors": changed[change]})))
    with caplog.at_level(logging.WARNING, logger="harness.backends.emulator.facts"):
        again = _build_v5(yolov5_onnx, calibration, tmp_path)
    assert f"emulated HEF facts {kept} not used" in caplog.text and said in caplog.text
    assert again == first and json.loads(kept.read_text()) == data


def test_an_ssd_exports_facts_are_kept_with_its_configs_digest_and_read_again_under_another_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import dataclasses

    from support import ssd_exports

    export, config = tmp_path / "ssd.onnx", ssd_exports.ssd_config()
    onnx.save(ssd_exports.ssd_export(), export)
    first = export_facts(export, tmp_path, ssd=config)
    assert first.family is HeadFamily.SSD and first.ssd == config and len(first.heads) == 4
    assert json.loads(sidecar_path(tmp_path, first.sha256).read_text())["ssd_config"] == config.digest
    _model_unread(monkeypatch)
    assert export_facts(export, tmp_path, ssd=config) == first
    monkeypatch.undo()
    # without the config: read again, refused naming the option, nothing kept over the config's facts
    with caplog.at_level(logging.WARNING, logger="harness.inputs.export_facts"):
        bare = export_facts(export, tmp_path)
    assert bare.family is None and "--ssd-config" in (bare.refusal or "") and "field ssd_config is" in caplog.text
    with pytest.raises(GraphError, match="--ssd-config"):
        bare.require_heads()
    # another config the export's tail disagrees with: read again and refused
    other = dataclasses.replace(config, centers_scale_factor=5)
    assert other.digest != config.digest
    assert "its decode tail gives row 0" in (export_facts(export, tmp_path, ssd=other).refusal or "")
    _model_unread(monkeypatch)
    assert export_facts(export, tmp_path, ssd=config) == first


def test_a_jobs_preflight_reads_an_ssd_exports_facts_with_the_runs_ssd_config_and_refuses_one_without(
    tmp_path: Path,
) -> None:
    from harness.pipeline.spec import SettingsSpec

    from support import ssd_exports

    export, config = tmp_path / "ssd.onnx", ssd_exports.ssd_config()
    onnx.save(ssd_exports.ssd_export(), export)
    facts = factory.preflight(JobConfig(onnx=export, cache_dir=tmp_path, settings=SettingsSpec(ssd=config)))
    assert facts is not None and facts.family is HeadFamily.SSD and facts.ssd == config
    assert facts.passed == (emulator_build.export_check(EmulatorOptions(sigmoid_inside=True, ssd=config)),)
    assert "ssd_config=" in facts.passed[0]
    with pytest.raises(GraphError, match=r"give them in an SSD config file \(--ssd-config FILE"):
        factory.preflight(JobConfig(onnx=export, cache_dir=tmp_path))


def test_a_model_changed_after_its_entry_was_checked_or_one_onnxruntime_cannot_load_is_refused_not_run(
    calibration: list[Path], tmp_path: Path
) -> None:
    from harness.backends.emulator import EmulatorRunner

    hef = _build(calibration, tmp_path)
    frame = {"images": np.zeros((1, 256, 256, 3), np.uint8)}
    good = hef.quantized_model.read_bytes()
    hef.quantized_model.write_bytes(good[: len(good) // 2])  # changed between the check and the run
    with EmulatorRunner(hef) as runner, pytest.raises(HarnessError, match=r"changed since it was checked"):
        runner.infer(frame)
    # a record resealed (without the key) over a truncated model: its sha256 holds, onnxruntime refuses it
    kept = hef.quantized_model.with_suffix(".json")
    record = json.loads(kept.read_text()) | {"model_sha256": file_sha256(hef.quantized_model)}
    kept.write_text(json.dumps(_resealed(record)))
    vouched = _build(calibration, tmp_path)
    assert vouched.entry is not None and vouched.entry.state is EntryState.SEALED
    with EmulatorRunner(vouched) as runner, pytest.raises(HarnessError) as refused:
        runner.infer(frame)
    said = str(refused.value)
    assert "cannot be loaded by onnxruntime" in said and "\n" not in said
