"""Record and replay: a Hailo path's raw outputs written per input to an append-only store, and the
replay backend serving them for the same inputs (and refusing anything else, naming it)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from harness.backends.base import InputSpec
from harness.backends.replay import (
    Recording,
    RecordingRunner,
    ReplayRunner,
    StoreDamaged,
    StoreError,
    feed_key,
    read_recording,
)
from harness.backends.replay.store import (
    FRAME_RECORD,
    HEADER_RECORD,
    JOURNAL,
    READS,
    StoreReader,
    StoreWriter,
    read_header,
)
from harness.core import signing
from harness.core.errors import HarnessError
from harness.core.journal import HEADER, encode_record, read
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import DEMO_ONNX
from harness.inputs.export_facts import file_sha256
from harness.inputs.synthetic import Recipe, write_dataset
from harness.pipeline import evaluate as evaluate_module
from harness.pipeline.factory import calibration_note, compiled_thresholds, evaluate_spec, preflight, prepare_run
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
    export_file="m.onnx",
    export_sha256="cd" * 32,
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
    with pytest.warns(StoreDamaged, match=r"record 4 at byte \d+: cut short \(\d+ of its \d+ bytes\)"):
        assert len(StoreReader(file)) == 2
    with pytest.warns(StoreDamaged, match=r"1 record\(s\) lost: record 4 at byte \d+: cut short"):
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
    with pytest.raises(StoreError, match=r"starts with b'PK\\x03\\x04', expected an output store"):
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
    recorded = evaluate_spec(live, run)
    replay = PathSpec(Backend.REPLAY, replay=store)
    assert replay.path_name == recorded.path == "emulated-hailo"
    replayed = evaluate_spec(replay, run)
    assert replayed.replayed and replayed.label == "emulated-hailo (emulated, replayed)"
    assert replayed.provenance.runtime.startswith("replayed from emulated HEF of fire_smoke_yolo11n_256.onnx")
    assert replayed.metrics == recorded.metrics
    # the replayed path is the recorded model's (its baselines hold), not the store file's
    mine, theirs = replayed.provenance, recorded.provenance
    assert (mine.model_path, mine.model_sha256) == (theirs.model_path, theirs.model_sha256)
    assert mine.model_sha256 != file_sha256(store)
    for a, b in zip(recorded.predictions, replayed.predictions, strict=True):
        assert np.array_equal(a.boxes, b.boxes) and np.array_equal(a.scores, b.scores)
        assert np.array_equal(a.class_ids, b.class_ids)
    # the recording's NMS thresholds are compiled into its HEF: another threshold is refused by name
    other = prepare_run(
        DEMO_ONNX, dataset, SettingsSpec(score_threshold=0.3), tmp / "cache", progress=False, log=lambda line: None
    )
    with pytest.raises(StoreError, match=r"score_threshold recorded 0\.2, this run 0\.3"):
        evaluate_spec(replay, other)
    (tmp / "other.hef").write_bytes(b"another model")
    with pytest.raises(StoreError, match=r"recorded from .*fire_smoke_yolo11n_256.onnx .*not from --hef .*other.hef"):
        evaluate_spec(PathSpec(Backend.REPLAY, replay=store, hef=tmp / "other.hef"), run)
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
        PathSpec(Backend.ONNX, record=tmp / "x.rec")


def test_a_replayed_paths_calibration_is_said_to_be_the_recorded_paths_never_the_float_exports(small):
    tmp, dataset, _ = small
    store = tmp / "calibrated.rec"
    StoreWriter(store, RECORDING).close()
    run = prepare_run(DEMO_ONNX, dataset, cache_dir=tmp / "cache", progress=False, log=lambda _: None)
    note = calibration_note(PathSpec(Backend.REPLAY, replay=store), run)
    assert note == (
        "that of the recorded hailo path (m.hef, HailoRT 4.23.0 on Hailo-8 0000:01:00.0, recorded "
        "2026-12-04T05:00:00+00:00); a recording does not keep the images its model was calibrated on"
    )


def _store(file: Path, frames: int) -> bytes:
    """A store of ``frames`` inputs (seeds 0 to frames - 1); its bytes."""
    writer = StoreWriter(file, RECORDING)
    for seed in range(frames):
        writer.put(feed_key(_feed(seed)), _outputs(seed))
    writer.close()
    return file.read_bytes()


@pytest.mark.parametrize("where", ["payload", "header"])
def test_a_flipped_bit_in_frame_5_of_100_costs_that_frame_alone_and_resuming_keeps_every_other_frame(tmp_path, where):
    file = tmp_path / "run.rec"
    sound = _store(file, 100)
    fifth = read(file, JOURNAL).records[5]  # the header, then frames 0 to 4: the fifth frame is seed 4
    damaged = bytearray(sound)
    damaged[fifth.offset + (HEADER.size + 1000 if where == "payload" else 5)] ^= 0x04  # its arrays, or its length
    file.write_bytes(bytes(damaged))
    # replay serves the 99 others and says the store is damaged where it cannot serve the fifth
    with pytest.warns(StoreDamaged, match=rf"1 record\(s\) lost: record 6 at byte {fifth.offset}"):
        runner = ReplayRunner(file)
    assert len(runner._store) == 99
    said = "its frame was lost" if where == "payload" else "may have held it"
    with pytest.raises(StoreError, match=rf"the store is damaged: .*{said}.*--record .*run.rec resumes the store"):
        runner.infer(_feed(4))
    assert np.array_equal(runner.infer(_feed(99))["nms"], _outputs(99)["nms"])
    # resuming the recording keeps every other frame and the file as found; the fifth is recorded again
    with pytest.warns(StoreDamaged, match=rf"record 6 at byte {fifth.offset}.*the file as found is kept as .*damaged-"):
        resumed = StoreWriter(file, RECORDING)
    assert resumed.keys == {feed_key(_feed(seed)) for seed in range(100) if seed != 4}
    (copy,) = tmp_path.glob("run.rec.damaged-*")
    assert copy.read_bytes() == damaged
    resumed.put(feed_key(_feed(4)), _outputs(4))
    resumed.close()
    reader = StoreReader(file)
    assert len(reader) == 100 and not reader.lost
    for seed in range(100):
        assert np.array_equal(reader.get(feed_key(_feed(seed)))["conv41"], _outputs(seed)["conv41"])


def test_a_store_rewritten_after_it_was_opened_serves_no_frame_that_now_lies_where_another_did(tmp_path):
    def record(file: Path, seeds: tuple[int, ...]) -> None:
        writer = StoreWriter(file, RECORDING)
        for seed in seeds:  # the same outputs under each key: records of the same length, sound checksums
            writer.put(feed_key(_feed(seed)), _outputs(7))
        writer.close()

    file = tmp_path / "run.rec"
    record(file, (0, 1, 2))
    reader = StoreReader(file)
    record(tmp_path / "other.rec", (1, 0, 2))  # the first two swapped
    (tmp_path / "other.rec").replace(file)
    assert np.array_equal(reader.get(feed_key(_feed(2)))["nms"], _outputs(7)["nms"])  # still where it was
    for seed in (0, 1):
        with pytest.raises(StoreError, match=r"record \d at byte \d+: another frame than when the store was opened"):
            reader.get(feed_key(_feed(seed)))


def test_a_second_recorder_into_the_same_store_is_refused_at_once_naming_the_file(tmp_path):
    file = tmp_path / "run.rec"
    first = StoreWriter(file, RECORDING)
    with pytest.raises(StoreError, match=r"output store .*run.rec: another process is recording into it"):
        StoreWriter(file, RECORDING)
    first.put(feed_key(_feed(0)), _outputs(0))
    first.close()
    StoreWriter(file, RECORDING).close()  # free again once the first is closed
    assert len(StoreReader(file)) == 1


def _with_frame(file: Path, meta: bytes | dict, data: bytes) -> None:
    """A store of one sound frame, then a frame of ``meta`` and ``data`` under a sound checksum."""
    _store(file, 1)
    text = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    with open(file, "ab") as out:
        out.write(encode_record(FRAME_RECORD, len(text).to_bytes(4, "little") + text + data))


KEY = feed_key(_feed(7))
ARRAYS = [{"name": "conv41", "dtype": "|u1", "shape": [1, 8, 8, 64]}]
BYTES = zlib.compress(bytes(8 * 8 * 64))


@pytest.mark.parametrize(
    ("meta", "data", "words"),
    [
        (b"{not json", BYTES, r"not valid JSON at line 1"),
        ({"arrays": ARRAYS}, BYTES, r"field key is missing"),
        ({"key": KEY, "arrays": ARRAYS, "size": 3}, BYTES, r"\(top level\) has unknown keys \['size'\]"),
        ({"key": 7, "arrays": ARRAYS}, BYTES, r"field key is 7, expected 32 lowercase hex digits"),
        ({"key": KEY, "image": "ab", "arrays": ARRAYS}, BYTES, r"field image is 'ab', expected null or an image"),
        ({"key": KEY, "arrays": [{**ARRAYS[0], "dtype": "|O"}]}, BYTES, r"field arrays\[0\].dtype is '\|O'"),
        (
            {"key": KEY, "arrays": [{**ARRAYS[0], "dtype": "uint8"}]},
            BYTES,
            r"field arrays\[0\].dtype is 'uint8', expected a numeric",
        ),
        ({"key": KEY, "arrays": [{**ARRAYS[0], "shape": [1, -8]}]}, BYTES, r"field arrays\[0\].shape is \[1, -8\]"),
        (
            {"key": KEY, "arrays": [{**ARRAYS[0], "shape": [1 << 40]}]},
            BYTES,
            r"field arrays\[0\].shape is \[1099511627776\], expected at most",
        ),
    ],
)
def test_a_frame_with_a_sound_checksum_but_malformed_meta_is_a_store_error_naming_frame_and_field(
    tmp_path, meta, data, words
):
    file = tmp_path / "run.rec"
    _with_frame(file, meta, data)
    with pytest.raises(StoreError, match=rf"output store .*run.rec: record 3 at byte \d+ meta: {words}"):
        ReplayRunner(file)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"not zlib at all", r"do not decompress \(zlib: "),
        (zlib.compress(bytes(100)), r"decompress to 100 bytes and end early, expected the 4096 bytes of arrays"),
        (zlib.compress(bytes(5000)), r"decompress to more than the 4096 bytes of arrays \['conv41'\]"),
        (BYTES[:-6], r"decompress to \d+ bytes and end early"),
        (BYTES + b"more", r"are followed by 4 bytes, expected none"),
    ],
)
def test_a_frame_whose_array_bytes_are_not_its_arrays_is_a_store_error_naming_the_frame(tmp_path, data, words):
    file = tmp_path / "run.rec"
    _with_frame(file, {"key": KEY, "arrays": ARRAYS}, data)
    with (
        ReplayRunner(file) as runner,
        pytest.raises(StoreError, match=rf"run.rec: record 3 at byte \d+: its array bytes {words}"),
    ):
        runner.infer(_feed(7))


def test_a_meta_length_past_the_frame_is_a_store_error(tmp_path):
    file = tmp_path / "run.rec"
    _store(file, 1)
    with open(file, "ab") as out:
        out.write(encode_record(FRAME_RECORD, (1000).to_bytes(4, "little") + b"{}"))
    with pytest.raises(StoreError, match=r"record 3 at byte \d+: meta length 1000, more than the 2 bytes after it"):
        StoreWriter(file, RECORDING)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"emulated": "false"}, r"field emulated is 'false', expected true or false"),
        ({"model_sha256": "AB" * 32}, r"field model_sha256 is 'ABAB.*', expected 64 lowercase hex digits"),
        (
            {"inputs": [{"name": "images", "shape": ["64"], "order": "NHWC", "type": "UINT8"}]},
            r"field inputs\[0\].shape is \['64'\]",
        ),
        (
            {"outputs": [{**RECORDING.to_json()["outputs"][0], "order": "ZIGZAG"}]},
            r"field outputs\[0\].order is 'ZIGZAG'",
        ),
        ({"shaping": {"input_hw": [64, {"a": 1}]}}, r"field shaping.input_hw is .*, expected a string, a number"),
        ({"runtime": None}, r"field runtime is None, expected a string"),
        ({"device": "hailo8"}, r"\(top level\) has unknown keys \['device'\]"),
    ],
)
def test_a_header_field_of_another_type_or_unknown_is_refused_by_name_never_coerced(tmp_path, change, words):
    file = tmp_path / "run.rec"
    header = {**RECORDING.to_json(), **change}
    file.write_bytes(JOURNAL.preamble + encode_record(HEADER_RECORD, json.dumps(header).encode()))
    with pytest.raises(StoreError, match=rf"output store .*run.rec: header: {words}"):
        read_recording(file)


def test_a_store_of_the_older_format_is_refused_naming_it_and_left_alone(tmp_path):
    file = tmp_path / "old.rec"
    old = b'hailo-harness output store 1\n\x10\x00\x00\x00\x00\x00\x00\x00{"path":"hailo"}'
    file.write_bytes(old)
    said = r"old.rec: an output store of format 1 \(an older harness\); this harness reads format 4 \(record it again"
    with pytest.raises(StoreError, match=said):
        read_recording(file)
    with pytest.raises(StoreError, match=said):
        StoreWriter(file, RECORDING)
    assert file.read_bytes() == old


def test_a_store_of_format_2_is_replayed_by_its_inputs_and_never_appended_to(tmp_path):
    file = tmp_path / "two.rec"
    meta = json.dumps({"key": feed_key(_feed(0)), "arrays": ARRAYS}).encode()
    frame = encode_record(FRAME_RECORD, len(meta).to_bytes(4, "little") + meta + BYTES)
    recording = dataclasses.replace(RECORDING, outputs=(HEAD,))
    header = encode_record(HEADER_RECORD, json.dumps(recording.to_json()).encode())
    file.write_bytes(READS[2].preamble + header + frame)
    with ReplayRunner(file) as replay:
        assert replay.infer(_feed(0))["conv41"].shape == (1, 8, 8, 64)
        assert replay.served("ab" * 32) is None
    said = r"two.rec: an output store of format 2 \(replayed as it is, never appended to\); this harness reads format 4"
    with pytest.raises(StoreError, match=said):
        StoreWriter(file, RECORDING)


def test_a_frame_recorded_with_its_image_file_is_served_by_that_file_alone_whatever_the_input(tmp_path):
    file, image = tmp_path / "run.rec", "0f" * 32
    with RecordingRunner(_Batched(), file, dataclasses.replace(RECORDING, outputs=(HEAD,))) as recorder:
        (recorded,) = recorder.infer_sourced(_feed(0), [image])
        with pytest.raises(StoreError, match=r"run.rec: 2 image sha256s for 1 frames"):
            recorder.infer_sourced(_feed(1), [image, image])
    with ReplayRunner(file) as replay:
        served = replay.served(image)
        assert served is not None and np.array_equal(served["conv41"], recorded["conv41"])
        assert replay.served("1f" * 32) is None
        # the image file's outputs whatever its input's bytes (another decoder's pixels), the input's else
        (by_image,) = replay.infer_sourced(_feed(5), [image])
        assert np.array_equal(by_image["conv41"], recorded["conv41"])
        with pytest.raises(StoreError, match=r"no outputs recorded for this input"):
            replay.infer_sourced(_feed(5), ["1f" * 32])


def test_a_replayed_evaluation_reads_no_image_file_the_store_recorded(small, monkeypatch):
    tmp, dataset, calibration = small
    run = prepare_run(
        DEMO_ONNX, dataset, cache_dir=tmp / "cache", use_cache=False, progress=False, log=lambda line: None
    )
    store = tmp / "sourced.rec"
    live = PathSpec(Backend.EMULATOR, calibration=str(calibration), calibration_count=8, record=store)
    recorded = evaluate_spec(live, run)
    assert {StoreReader(store).key_of(s.sha256) is not None for s in dataset.samples} == {True}

    def unread(path):
        raise AssertionError(f"{path} read")

    monkeypatch.setattr(evaluate_module, "load_image", unread)
    replayed = evaluate_spec(PathSpec(Backend.REPLAY, replay=store), run)
    assert replayed.metrics == recorded.metrics
    for a, b in zip(recorded.predictions, replayed.predictions, strict=True):
        assert np.array_equal(a.boxes, b.boxes) and np.array_equal(a.scores, b.scores)


def test_replay_refuses_a_store_recorded_from_another_model_naming_both_files_and_sha256s(small):
    tmp, dataset, _ = small
    run = prepare_run(DEMO_ONNX, dataset, cache_dir=tmp / "cache", progress=False, log=lambda line: None)
    demo = hashlib.sha256(DEMO_ONNX.read_bytes()).hexdigest()
    store = tmp / "other-model.rec"
    other = dataclasses.replace(
        RECORDING, model_file="y11.onnx", model_sha256="ef" * 32, export_file="y11.onnx", export_sha256="ef" * 32
    )
    StoreWriter(store, other).close()
    said = rf"recorded from y11.onnx \(sha256 efefefefefefefef\); this run's model is .*{DEMO_ONNX.name} "
    with pytest.raises(StoreError, match=said + rf"\(sha256 {demo[:16]}\): a store serves only the model it was"):
        evaluate_spec(PathSpec(Backend.REPLAY, replay=store), run)
    with pytest.raises(StoreError, match=said):  # a job refuses it before any path runs
        preflight(job_config({"replay": store, "dataset": Path("d")}, ("run",)))
    # a HEF's recording is held to the HEF where --hef is given, else to the export its run was given
    hef = tmp / "m.hef"
    hef.write_bytes(b"compiled model")
    of_hef = dataclasses.replace(
        RECORDING,
        model_sha256=hashlib.sha256(b"compiled model").hexdigest(),
        export_file=str(DEMO_ONNX),
        export_sha256=demo,
    )
    StoreWriter(tmp / "hef.rec", of_hef).close()
    for given in (None, hef):
        with pytest.raises(StoreError, match="recorded under other settings"):  # past the model: its own store
            evaluate_spec(PathSpec(Backend.REPLAY, replay=tmp / "hef.rec", hef=given), run)
    (tmp / "other.hef").write_bytes(b"another compiled model")
    with pytest.raises(
        StoreError, match=r"recorded from m.hef \(sha256 .*\) in a run of .*, not from --hef .*other.hef"
    ):
        evaluate_spec(PathSpec(Backend.REPLAY, replay=tmp / "hef.rec", hef=tmp / "other.hef"), run)


def _recorded(file: Path, n: int) -> None:
    writer = StoreWriter(file, RECORDING)
    for seed in range(n):
        writer.put(feed_key(_feed(seed)), _outputs(seed))
    writer.close()


def test_a_flipped_bit_in_a_stores_header_costs_no_frame_in_replay_or_resume(tmp_path):
    file = tmp_path / "run.rec"
    _recorded(file, 4)
    sound = file.read_bytes()
    first = read(file, JOURNAL).records[0]
    flipped = bytearray(sound)
    flipped[first.offset + HEADER.size + 40] ^= 0x04  # in the first copy of the header
    file.write_bytes(bytes(flipped))
    assert read_recording(file) == RECORDING
    with pytest.warns(StoreDamaged, match=r"header copy at byte 12: .*other copy is read, no frame is lost"):
        reader = StoreReader(file)
    assert len(reader) == 4 and not reader.lost
    with pytest.warns(StoreDamaged, match=r"header copy at byte 12.*kept as .*run.rec.damaged-"):
        StoreWriter(file, RECORDING).close()
    assert file.read_bytes() == sound  # both copies sound again, every frame kept


def test_a_store_whose_every_header_copy_is_lost_is_refused_and_kept_as_found(tmp_path):
    file = tmp_path / "run.rec"
    _recorded(file, 2)
    found = read(file, JOURNAL)
    slot = found.records[1].offset - len(JOURNAL.preamble)
    damaged = bytearray(file.read_bytes())
    for at in (len(JOURNAL.preamble), len(JOURNAL.preamble) + slot // 2):
        damaged[at + HEADER.size + 40] ^= 0x04
    file.write_bytes(bytes(damaged))
    with pytest.raises(StoreError, match=r"its header \(every copy\).*kept as .*run.rec.damaged-\d{8}T\d{6}Z"):
        StoreReader(file)
    with pytest.raises(StoreError, match=r"kept as"):
        StoreWriter(file, RECORDING)
    (kept,) = tmp_path.glob("run.rec.damaged-*")  # the same bytes kept once
    assert kept.read_bytes() == bytes(damaged) == file.read_bytes()


def test_a_store_of_format_3_is_replayed_and_resumed_in_its_own_format(tmp_path):
    file = tmp_path / "three.rec"
    header = encode_record(HEADER_RECORD, json.dumps(RECORDING.to_json()).encode())
    file.write_bytes(READS[3].preamble + header)
    writer = StoreWriter(file, RECORDING)
    writer.put(feed_key(_feed(0)), _outputs(0))
    writer.close()
    assert file.read_bytes().startswith(READS[3].preamble + header)
    reader = StoreReader(file)
    assert len(reader) == 1 and reader.recording == RECORDING


def _sealed_store(file: Path, recording: Recording = RECORDING) -> None:
    writer = StoreWriter(file, recording)
    writer.put(feed_key(_feed(0)), _outputs(0))
    writer.close()


def _header_rewritten(file: Path, **values: object) -> None:
    """The store's header with ``values`` set, every checksum made again (only the header's content differs)."""
    found = read(file, JOURNAL)
    header = {**json.loads(bytes(found.records[0].payload)), **values}
    records = [encode_record(HEADER_RECORD, json.dumps(header).encode())]
    records += [encode_record(r.kind, bytes(r.payload)) for r in found.records[1:]]
    file.write_bytes(JOURNAL.preamble + b"".join(records))


def test_a_store_re_checksummed_to_claim_a_device_origin_is_refused_as_an_edit_on_every_opening(tmp_path, monkeypatch):
    monkeypatch.delenv(signing.KEY_VARIABLE, raising=False)
    file = tmp_path / "emulated.rec"
    _sealed_store(file, dataclasses.replace(RECORDING, emulated=True))
    assert read_header(file)[1].state is signing.SealState.SEALED
    _header_rewritten(file, emulated=False)
    said = r"header: changed after it was written \(its sha256 no longer holds\); refused"
    for opening in (read_recording, StoreReader, ReplayRunner, lambda f: StoreWriter(f, RECORDING)):
        with pytest.raises(HarnessError, match=said):
            opening(file)


def test_a_store_signed_with_the_release_key_is_signed_unverified_without_it_and_refused_under_another(
    tmp_path, monkeypatch
):
    file = tmp_path / "device.rec"
    monkeypatch.setenv(signing.KEY_VARIABLE, "k" * 32)
    _sealed_store(file)
    assert read_header(file)[1].state is signing.SealState.SIGNED
    with ReplayRunner(file) as replay:
        assert replay.label.endswith(f"header signed: signed with key {signing.policy().key_id})")
    monkeypatch.delenv(signing.KEY_VARIABLE)
    assert read_header(file)[1].state is signing.SealState.UNVERIFIED
    monkeypatch.setenv(signing.KEY_VARIABLE, "o" * 32)
    with pytest.raises(HarnessError, match=r"device.rec: header: signed with another key .*; refused"):
        read_recording(file)
    monkeypatch.setenv(signing.KEY_VARIABLE, "k" * 32)
    _header_rewritten(file, runtime="HailoRT 9.9.9")  # the digest made again cannot make the signature hold
    header = json.loads(bytes(read(file, JOURNAL).records[0].payload))
    header["seal"]["sha256"] = signing.seal_document({k: v for k, v in header.items() if k != "seal"}, None)["sha256"]
    _header_rewritten(file, seal=header["seal"])
    with pytest.raises(HarnessError, match=r"header: its signature does not hold: changed after it was signed"):
        read_recording(file)


def test_an_unsigned_store_claiming_a_device_origin_is_labelled_unvouched_and_refused_under_require_signed(
    tmp_path, monkeypatch
):
    monkeypatch.delenv(signing.KEY_VARIABLE, raising=False)
    sealed_file, unsealed_file = tmp_path / "sealed.rec", tmp_path / "unsealed.rec"
    _sealed_store(sealed_file)
    header = encode_record(HEADER_RECORD, json.dumps(RECORDING.to_json()).encode())  # as written before seals
    unsealed_file.write_bytes(JOURNAL.preamble + header)
    for file, state in ((sealed_file, "sealed"), (unsealed_file, "unsealed")):
        with ReplayRunner(file) as replay:
            assert f"; header {state}: " in replay.label
            assert replay.label.endswith(
                "its device origin is not vouched for (an unsigned recording: not signed with the release key))"
            )
    emulated = tmp_path / "emulated.rec"
    _sealed_store(emulated, dataclasses.replace(RECORDING, emulated=True))
    with ReplayRunner(emulated) as replay:
        assert "not vouched" not in replay.label
    monkeypatch.setenv(signing.REQUIRE_VARIABLE, "1")
    for file in (sealed_file, unsealed_file):
        with pytest.raises(
            HarnessError, match=r"header: not signed with the release key .*refused under --require-signed"
        ):
            read_recording(file)
