"""Record and replay: a Hailo path's raw outputs written per input to an append-only store, and the
replay backend serving them for the same inputs (and refusing anything else, naming it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from harness.backends.base import InputSpec
from harness.backends.replay import Recording, RecordingRunner, ReplayRunner, StoreError, feed_key, read_recording
from harness.backends.replay.store import StoreReader, StoreWriter
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo
from harness.inputs.dataset import load_yolo
from harness.inputs.demo import DEMO_ONNX
from harness.inputs.synthetic import Recipe, write_dataset
from harness.pipeline.factory import compiled_thresholds, evaluate, prepare_run
from harness.pipeline.options import job_config
from harness.pipeline.spec import Backend, CompiledThresholds, PathSpec, SettingsSpec, planned_gates

HEAD = OutputSpec("conv41", (8, 8, 64), FormatOrder.FCR, FormatType.UINT8, (QuantInfo(3.0, 0.05, -0.15, 12.6),))
NMS = OutputSpec("nms", (2, 5, 100), FormatOrder.NMS_BY_CLASS, FormatType.FLOAT32, nms=NmsShape(2, 100))
RECORDING = Recording(
    path="hailo",
    emulated=False,
    runtime="HailoRT 4.23.0 on Hailo-8 0000:01:00.0",
    model_file="m.hef",
    model_sha256="ab" * 32,
    inputs=(InputSpec("images", (64, 64, 3), FormatOrder.NHWC, FormatType.UINT8),),
    outputs=(HEAD, NMS),
    shaping={"input_hw": [64, 64], "preprocess": "letterbox"},
    created="2026-12-04T05:00:00+00:00",
    harness_version="0.1.0",
)


def _feed(seed: int) -> dict[str, np.ndarray]:
    return {"images": np.random.default_rng(seed).integers(0, 256, (1, 64, 64, 3), dtype=np.uint8)}


def _outputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(100 + seed)
    return {"conv41": rng.integers(0, 256, (1, 8, 8, 64), dtype=np.uint8), "nms": rng.random((1, 1001), np.float32)}


def test_a_store_gives_back_every_array_as_recorded_with_its_specs(tmp_path):
    file = tmp_path / "run.rec"
    writer = StoreWriter(file, RECORDING)
    for seed in range(3):
        writer.put(feed_key(_feed(seed)), _outputs(seed))
    writer.close()
    assert read_recording(file) == RECORDING
    reader = StoreReader(file)
    assert len(reader) == 3
    for seed in range(3):
        got = reader.get(feed_key(_feed(seed)))
        for name, array in _outputs(seed).items():
            assert got[name].dtype == array.dtype and np.array_equal(got[name], array)


def test_the_key_of_an_input_changes_with_any_byte_and_with_its_shape():
    feed = _feed(0)
    assert feed_key(feed) == feed_key({"images": feed["images"].copy()})
    changed = feed["images"].copy()
    changed[0, 5, 5, 1] ^= 1
    assert feed_key({"images": changed}) != feed_key(feed)
    assert feed_key({"images": feed["images"].reshape(1, 32, 128, 3)}) != feed_key(feed)


def test_a_recording_killed_mid_frame_resumes_after_its_last_whole_frame(tmp_path):
    file = tmp_path / "run.rec"
    writer = StoreWriter(file, RECORDING)
    for seed in range(3):
        writer.put(feed_key(_feed(seed)), _outputs(seed))
    writer.close()
    with open(file, "r+b") as fh:  # the third frame cut short, as by a kill
        fh.truncate(file.stat().st_size - 7)
    assert len(StoreReader(file)) == 2
    with pytest.warns(UserWarning, match="bytes of a frame cut short dropped"):
        resumed = StoreWriter(file, RECORDING)
    assert resumed.keys == {feed_key(_feed(0)), feed_key(_feed(1))}
    resumed.put(feed_key(_feed(2)), _outputs(2))
    resumed.close()
    assert np.array_equal(StoreReader(file).get(feed_key(_feed(2)))["nms"], _outputs(2)["nms"])


def test_a_store_recorded_another_way_is_not_appended_to_and_the_fields_are_named(tmp_path):
    file = tmp_path / "run.rec"
    StoreWriter(file, RECORDING).close()
    other = dataclasses.replace(RECORDING, runtime="HailoRT 4.23.0 on Hailo-8L", shaping={"input_hw": [640, 640]})
    with pytest.raises(StoreError, match=r"recorded with other \['runtime', 'shaping'\]"):
        StoreWriter(file, other)
    (tmp_path / "not.rec").write_bytes(b"PK\x03\x04")
    with pytest.raises(StoreError, match="not an output store"):
        read_recording(tmp_path / "not.rec")


def test_replay_serves_recorded_inputs_and_refuses_any_other_naming_what_differs(tmp_path):
    file = tmp_path / "run.rec"
    writer = StoreWriter(file, RECORDING)
    writer.put(feed_key(_feed(0)), _outputs(0))
    writer.close()
    with ReplayRunner(file) as runner:
        assert runner.label.startswith("replayed from HailoRT 4.23.0 on Hailo-8 0000:01:00.0, recorded 2026-12-04")
        assert dict(runner.output_specs) == {"conv41": HEAD, "nms": NMS}
        assert np.array_equal(runner.infer(_feed(0))["conv41"], _outputs(0)["conv41"])
        with pytest.raises(StoreError, match=r"no outputs recorded for this input .* other preprocessing"):
            runner.infer(_feed(1))


class _Batched:
    """Takes a batch in one call (and nothing else): each frame's head is its pixel sum modulo 256."""

    label = "a runner taking batches"

    def __init__(self) -> None:
        self.input_specs = {i.name: i for i in RECORDING.inputs}
        self.output_specs = {"conv41": HEAD}
        self.calls: list[int] = []

    def infer(self, feed):
        raise AssertionError("a batch is inferred in one call")

    def infer_batch(self, feed):
        frames = feed["images"]
        self.calls.append(len(frames))
        return [{"conv41": np.full(HEAD.shape, int(f.sum()) % 256, np.uint8)} for f in frames]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_a_batch_recorded_in_one_call_is_replayed_frame_by_frame_under_each_frames_own_key(tmp_path):
    file, inner = tmp_path / "run.rec", _Batched()
    feeds = [_feed(seed) for seed in range(3)]
    with RecordingRunner(inner, file, dataclasses.replace(RECORDING, outputs=(HEAD,))) as recorder:
        batched = recorder.infer_batch({"images": np.concatenate([f["images"] for f in feeds])})
    assert inner.calls == [3]
    store = StoreReader(file)
    assert len(store) == 3 and all(feed_key(f) in store for f in feeds)
    with ReplayRunner(file) as replay:
        for feed, outputs in zip(feeds, batched, strict=True):
            assert np.array_equal(replay.infer(feed)["conv41"], outputs["conv41"])
            assert outputs["conv41"][0, 0, 0] == int(feed["images"].sum()) % 256


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replay")
    data = tmp / "data"
    write_dataset(data, Recipe(seed=3, train=0, val=6, calib=8))
    return tmp, load_yolo(data), data / "images" / "calib"


def test_the_emulated_path_replayed_gives_the_same_detections_and_metrics_as_live(small):
    tmp, dataset, calibration = small
    run = prepare_run(DEMO_ONNX, dataset, cache_dir=tmp / "cache", progress=False, log=lambda line: None)
    store = tmp / "emulated.rec"
    live = PathSpec(Backend.EMULATOR, calibration=str(calibration), calibration_count=8, record=store)
    recorded = evaluate(live, run)
    replay = PathSpec(Backend.REPLAY, replay=store)
    assert replay.path_name == recorded.path == "emulated-hailo"
    replayed = evaluate(replay, run)
    assert replayed.replayed and replayed.label == "emulated-hailo (emulated, replayed)"
    assert replayed.provenance.runtime.startswith("replayed from emulated HEF of fire_smoke_yolo11n_256.onnx")
    assert replayed.metrics == recorded.metrics
    for a, b in zip(recorded.predictions, replayed.predictions, strict=True):
        assert np.array_equal(a.boxes, b.boxes) and np.array_equal(a.scores, b.scores)
        assert np.array_equal(a.class_ids, b.class_ids)
    # the recording's NMS thresholds are compiled into its HEF: another threshold is refused by name
    other = prepare_run(
        DEMO_ONNX, dataset, SettingsSpec(score_threshold=0.3), tmp / "cache", progress=False, log=lambda line: None
    )
    with pytest.raises(StoreError, match=r"score_threshold recorded 0\.2, this run 0\.3"):
        evaluate(replay, other)
    (tmp / "other.hef").write_bytes(b"another model")
    with pytest.raises(StoreError, match=r"recorded from .*fire_smoke_yolo11n_256.onnx .*not from --hef .*other.hef"):
        evaluate(PathSpec(Backend.REPLAY, replay=store, hef=tmp / "other.hef"), run)
    # without a threshold given, a run with the replayed path is evaluated at the recorded NMS's thresholds
    lines: list[str] = []
    taken = prepare_run(
        DEMO_ONNX, dataset, SettingsSpec(), tmp / "cache", progress=False, log=lines.append, paths=(replay,)
    )
    assert compiled_thresholds(replay) == CompiledThresholds(0.2, 0.7, f"NMS buffer recorded in {store}")
    assert taken.settings == run.settings
    assert taken.thresholds.startswith("score threshold 0.2, IoU threshold 0.7: every path evaluated at the score ")
    assert lines == [f"thresholds: {taken.thresholds}"]


def test_replay_is_a_jobs_hailo_path_with_the_recorded_paths_gates(small):
    tmp, _, _ = small
    store = tmp / "gates.rec"
    StoreWriter(store, RECORDING).close()
    config = job_config({"replay": store, "dataset": Path("d")}, ("test",))
    assert config.hailo == PathSpec(Backend.REPLAY, replay=store)
    assert [str(g) for g in planned_gates(config)][-1] == "test_path_agreement[d-hailo]"
    with pytest.raises(Exception, match="--record belongs to a Hailo path"):
        PathSpec(Backend.ONNX, record=tmp / "x.rec").validate()
