"""The per-image prediction cache: nothing lost on interruption, nothing inferred twice, exact floats."""

from __future__ import annotations

import errno
import hashlib
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

import harness.pipeline.cache as cache_module
from harness.core.detections import Detections, unletterbox
from harness.core.environment import environment
from harness.core.journal import encode_record, read, scan
from harness.core.settings import EvalSettings, MetricProtocol, Preprocess
from harness.inputs.dataset import Dataset
from harness.inputs.dataset_yolo import load_yolo
from harness.pipeline.cache import (
    BATCH_RECORD,
    JOURNAL,
    CacheError,
    CacheFile,
    CacheRepaired,
    Entry,
    PredictionCache,
    cache_key,
    decode_batch,
    encode_batch,
)
from harness.pipeline.detect import FrameResult, file_sha256, prepare
from harness.pipeline.evaluate import evaluate_path
from harness.pipeline.spec import SettingsSpec
from harness.verdict.metrics.distribution import CellsAboveThreshold

N_IMAGES = 6
SETTINGS = EvalSettings(input_hw=(32, 32), score_threshold=0.25)


class CountingPath:
    """A stand-in path: detections drawn from the image's own pixels (full float32 precision), and a
    count of the images it was asked to detect; ``fail_at`` raises on that call, as a device timeout would."""

    name = "emulated-hailo"
    emulated = True
    variant = ""
    fps = None
    model_names = ("a", "b")

    def __init__(self, model: Path, settings: EvalSettings = SETTINGS, fail_at: int = 0, error: type = RuntimeError):
        self.model_file, self.model_sha256 = model, file_sha256(model)
        self.runtime = "a test path"
        self.score_ceiling = None
        self.settings, self.input_hw = settings, settings.input_hw
        self.fail_at, self.error, self.calls = fail_at, error, 0

    def detect(self, image: np.ndarray) -> FrameResult:
        self.calls += 1
        if self.calls == self.fail_at:
            raise self.error("device timeout")
        rng = np.random.default_rng(int(image.astype(np.int64).sum()))
        n = int(rng.integers(1, 5))
        corner = rng.random((n, 2)) * 10
        boxes = np.concatenate([corner, corner + 1 + rng.random((n, 2)) * 10], axis=1)
        dets = Detections(boxes, rng.random(n), rng.integers(0, 2, n))
        return FrameResult(dets, CellsAboveThreshold(self.settings.score_threshold, 21, n, n + 1))


def _dataset(root: Path, names: list[str] | None = None) -> Dataset:
    (root / "images" / "val").mkdir(parents=True)
    (root / "labels" / "val").mkdir(parents=True)
    for i in range(N_IMAGES):
        Image.fromarray(np.full((24, 20 + i, 3), 30 * i, np.uint8)).save(root / "images" / "val" / f"{i}.png")
        (root / "labels" / "val" / f"{i}.txt").write_text(f"{i % 2} 0.5 0.5 0.4 0.4\n")
    (root / "data.yaml").write_text(yaml.safe_dump({"path": ".", "val": "images/val", "names": names or ["a", "b"]}))
    return load_yolo(root / "data.yaml")


@pytest.fixture
def dataset(tmp_path: Path) -> Dataset:
    return _dataset(tmp_path / "data")


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.hef"
    path.write_bytes(b"compiled model")
    return path


@pytest.fixture
def cache(tmp_path: Path) -> PredictionCache:
    """Batches of two images, whatever the time between puts: a file's records are known in advance."""
    return PredictionCache(tmp_path / "cache", batch=2, batch_seconds=3600)


def _same(a: tuple[Detections, ...], b: tuple[Detections, ...]) -> bool:
    """Bit-identical detections, image by image."""
    return len(a) == len(b) and all(
        x.boxes.tobytes() == y.boxes.tobytes()
        and x.scores.tobytes() == y.scores.tobytes()
        and np.array_equal(x.class_ids, y.class_ids)
        for x, y in zip(a, b, strict=True)
    )


# Seven images for the tests of the file itself: in batches of two, three full and one of one.
KEY = {"k": 1}
SHAS = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(7)]


def _frame(i: int) -> FrameResult:
    rng = np.random.default_rng(i)
    n = i % 4
    boxes = rng.random((n, 4), dtype=np.float32) * 640
    dets = Detections(boxes, rng.random(n, dtype=np.float32), rng.integers(0, 2**40, n))
    return FrameResult(dets, None if i % 3 == 0 else CellsAboveThreshold(0.2, 8400, i, 2 * i))


def _same_frame(a: FrameResult, b: FrameResult) -> bool:
    return _same((a.detections,), (b.detections,)) and a.cells == b.cells


def _on_disk(cache: PredictionCache, path: CountingPath) -> int:
    """How many images the path's cache file holds (opening it writes nothing to a sound file)."""
    with cache.open(path) as file:
        return len(file.frames)


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_run_interrupted_mid_way_resumes_with_only_the_remaining_images(dataset, model, cache, error):
    uncached = evaluate_path(CountingPath(model), dataset)
    with pytest.raises(error, match="device timeout"):
        evaluate_path(CountingPath(model, fail_at=4, error=error), dataset, cache)
    assert _on_disk(cache, CountingPath(model)) == 3  # the images done before the interruption, written on close
    resumed = CountingPath(model)
    result = evaluate_path(resumed, dataset, cache)
    assert resumed.calls == N_IMAGES - 3
    assert _same(result.predictions, uncached.predictions)
    assert result.cells == uncached.cells and result.metrics == uncached.metrics


class KilledPath(CountingPath):
    """A path whose process is killed outright (SIGKILL: no exception, no close) at call ``kill_at``."""

    def __init__(self, model: Path, kill_at: int) -> None:
        super().__init__(model)
        self.kill_at = kill_at

    def detect(self, image: np.ndarray) -> FrameResult:
        if self.calls + 1 == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().detect(image)


def _killed_run(model: Path, dataset: Dataset, root: Path, kill_at: int) -> None:
    evaluate_path(KilledPath(model, kill_at), dataset, PredictionCache(root, batch=2, batch_seconds=3600))


def test_a_killed_run_resumes_with_every_completed_batch_and_infers_only_the_rest(dataset, model, cache):
    uncached = evaluate_path(CountingPath(model), dataset)
    child = multiprocessing.get_context("fork").Process(target=_killed_run, args=(model, dataset, cache.root, 6))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == -signal.SIGKILL
    # five images inferred: two batches of two on disk, the fifth unwritten when the process died
    assert _on_disk(cache, CountingPath(model)) == 4
    resumed = CountingPath(model)
    result = evaluate_path(resumed, dataset, cache)
    assert resumed.calls == N_IMAGES - 4
    assert _same(result.predictions, uncached.predictions) and result.cells == uncached.cells


def test_rerun_with_unchanged_inputs_does_no_inference(dataset, model, cache):
    first = evaluate_path(CountingPath(model), dataset, cache)
    again = CountingPath(model)
    second = evaluate_path(again, dataset, cache)
    assert again.calls == 0
    assert _same(first.predictions, second.predictions)
    assert second.cells == first.cells and second.cells is not None and second.cells.cells == 21 * N_IMAGES


def test_changed_settings_or_model_infer_again_under_a_new_key(dataset, model, cache, tmp_path):
    evaluate_path(CountingPath(model), dataset, cache)
    other_settings = CountingPath(model, EvalSettings(input_hw=(32, 32), score_threshold=0.3))
    evaluate_path(other_settings, dataset, cache)
    assert other_settings.calls == N_IMAGES
    assert cache.file_for(other_settings) != cache.file_for(CountingPath(model))
    other_model = tmp_path / "other.hef"
    other_model.write_bytes(b"recompiled model")
    recompiled = CountingPath(other_model)
    evaluate_path(recompiled, dataset, cache)
    assert recompiled.calls == N_IMAGES
    assert len(list(cache.root.iterdir())) == 3


def test_class_map_alone_does_not_change_the_key(dataset, model, cache):
    """Predictions are in model class ids; the class map only relabels the ground truth."""
    evaluate_path(CountingPath(model), dataset, cache)
    swapped = CountingPath(model, EvalSettings(input_hw=(32, 32), score_threshold=0.25, class_map=(1, 0)))
    result = evaluate_path(swapped, dataset, cache)
    assert swapped.calls == 0 and result.settings.class_map == (1, 0)


class FramePath(CountingPath):
    """Detections made from the frame its settings' preprocessing gives: one box a pixel past the
    input's edges, scored by the frame's mean, mapped back as the geometry says."""

    def detect(self, image: np.ndarray) -> FrameResult:
        self.calls += 1
        frame, placed = prepare(image, self.settings)
        h, w = frame.shape[:2]
        box = Detections([[-1.0, -1.0, w + 1.0, h + 1.0]], [float(frame.mean()) / 255], [0])
        return FrameResult(unletterbox(box, placed))


def test_predictions_made_under_another_preprocessing_are_never_served(dataset, model, cache):
    """--metric ultralytics measures yolo val's frames: a COCO run's letterboxed predictions are
    another key, while the metric alone, the frames the same, shares them."""
    coco, theirs = (SettingsSpec(metric=m).resolve((32, 32), (0, 1)) for m in MetricProtocol)
    assert (coco.preprocess, theirs.preprocess) == (Preprocess.LETTERBOX, Preprocess.ULTRALYTICS_VAL)
    first = evaluate_path(FramePath(model, coco), dataset, cache)
    under_theirs = FramePath(model, theirs)
    second = evaluate_path(under_theirs, dataset, cache)
    assert under_theirs.calls == N_IMAGES and not _same(first.predictions, second.predictions)
    assert cache_key(under_theirs)["settings"]["preprocess"] == "ultralytics-val"
    same_frames = FramePath(model, replace(theirs, metric=MetricProtocol.COCO))
    assert _same(evaluate_path(same_frames, dataset, cache).predictions, second.predictions)
    assert same_frames.calls == 0


def test_torn_last_record_is_reported_cut_off_and_its_images_redone(dataset, model, cache):
    first = evaluate_path(CountingPath(model), dataset, cache)  # three batches of two images
    file = cache.file_for(CountingPath(model))
    data = file.read_bytes()
    file.write_bytes(data[:-25])  # the write of the last batch stopped short
    again = CountingPath(model)
    with pytest.warns(
        CacheRepaired, match=r"record 4 at byte \d+: cut short \(\d+ of its \d+ bytes\), an interrupted write"
    ):
        second = evaluate_path(again, dataset, cache)
    assert again.calls == 2
    assert _same(first.predictions, second.predictions)
    assert file.read_bytes() == data  # repaired in place: the same bytes as an uninterrupted run


def test_torn_key_record_starts_the_file_afresh(dataset, model, cache):
    evaluate_path(CountingPath(model), dataset, cache)
    file = cache.file_for(CountingPath(model))
    data = file.read_bytes()
    file.write_bytes(data[:40])  # killed while writing the new file's key
    path = CountingPath(model)
    with pytest.warns(CacheRepaired, match=r"record 1 at byte 12: cut short \(12 of its \d+ bytes\)"):
        evaluate_path(path, dataset, cache)
    assert path.calls == N_IMAGES
    assert file.read_bytes() == data


def test_a_flipped_bit_in_a_middle_batch_costs_that_batch_alone_and_keeps_the_file_as_found(dataset, model, cache):
    first = evaluate_path(CountingPath(model), dataset, cache)
    file = cache.file_for(CountingPath(model))
    data = bytearray(file.read_bytes())
    second = scan(bytes(data), JOURNAL, file).records[2]  # the key, then the batches
    data[second.offset + 40] ^= 0x10
    file.write_bytes(bytes(data))
    again = CountingPath(model)
    with pytest.warns(CacheRepaired, match=r"record 3 at byte \d+: its \d+ bytes fail their checksum: damaged"):
        second_run = evaluate_path(again, dataset, cache)
    assert again.calls == 2  # the damaged batch's two images, the four after and before it kept
    assert _same(first.predictions, second_run.predictions)
    (copy,) = file.parent.glob(f"{file.name}.damaged-*")
    assert copy.read_bytes() == data  # the file as found, kept beside the rewritten one
    records = scan(file.read_bytes(), JOURNAL, file)
    assert not records.losses and len(records.records) == 4


def test_a_cache_whose_key_record_copies_are_both_damaged_serves_none_of_its_batches_and_is_kept(tmp_path):
    file = tmp_path / "c.bin"
    with CacheFile(file, KEY, 0.2, batch=1) as written:
        written.put(SHAS[0], "img0", _frame(1))
    data = bytearray(file.read_bytes())
    slot = (read(file, JOURNAL).records[1].offset - len(JOURNAL.preamble)) // 2
    data[len(JOURNAL.preamble) + 20] ^= 1  # in each copy of the key's payload: the batch cannot be tied to any key
    data[len(JOURNAL.preamble) + slot + 20] ^= 1
    file.write_bytes(bytes(data))
    said = r"record 1 at byte 12: its \d+ bytes fail their checksum: no key to check .*every copy lost.*kept as"
    with pytest.raises(CacheError, match=said):
        CacheFile(file, KEY, 0.2)
    assert file.read_bytes() == data  # left as it was found
    (kept,) = tmp_path.glob("c.bin.damaged-*")
    assert kept.read_bytes() == data
    keyless = JOURNAL.preamble + encode_record(BATCH_RECORD, encode_batch([Entry(SHAS[0], "img0", _frame(1))]))
    file.write_bytes(keyless)
    with pytest.raises(CacheError, match=r"record 1 is of kind b'BAT ', not b'KEY ': no key to check"):
        CacheFile(file, KEY, 0.2)
    assert file.read_bytes() == keyless


def test_a_file_of_the_old_json_lines_format_is_refused_and_left_alone(dataset, model, cache):
    file = cache.file_for(CountingPath(model))
    file.parent.mkdir(parents=True)
    old = b'{"cache":{"format":1,"path":"emulated-hailo"}}\n{"image_sha256":"' + b"a" * 64 + b'","boxes":""}\n'
    file.write_bytes(old)
    path = CountingPath(model)
    with pytest.raises(
        CacheError, match=r"a JSON-lines cache of format 1 \(an older harness\); this harness reads format 3"
    ):
        evaluate_path(path, dataset, cache)
    assert path.calls == 0 and file.read_bytes() == old


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"HHPCACHE\x07\x00\x00\x00", "a prediction cache of format 7; this harness reads format 3"),
        (b"\x89PNG\r\n\x1a\n and more", r"starts with b'\\x89PNG.*expected a prediction cache"),
    ],
)
def test_a_file_of_another_format_or_no_cache_at_all_is_refused(tmp_path, content, words):
    file = tmp_path / "c.bin"
    file.write_bytes(content)
    with pytest.raises(CacheError, match=words):
        CacheFile(file, KEY, 0.2)
    assert file.read_bytes() == content


def test_a_file_stating_another_key_is_an_error(tmp_path):
    file = tmp_path / "c.bin"
    with CacheFile(file, {"path": "hailo"}, 0.2) as other:
        other.put(SHAS[0], "img0", _frame(0))
    with pytest.raises(CacheError, match=r"""first record b'\{"path":"hailo"\}' does not state this cache's key"""):
        CacheFile(file, {"path": "emulated-hailo"}, 0.2)


def test_a_malformed_batch_under_a_sound_checksum_is_an_error_naming_its_record(tmp_path):
    file = tmp_path / "c.bin"
    CacheFile(file, KEY, 0.2).close()
    payload = encode_batch([Entry(SHAS[0], "img0", _frame(3))])
    with file.open("ab") as out:
        out.write(encode_record(BATCH_RECORD, payload[:-2]))  # the image id cut short, the checksum made to match
    with pytest.raises(CacheError, match=r"record 2 at byte \d+: image ids: 2 bytes left, expected 4"):
        CacheFile(file, KEY, 0.2)


@dataclass(frozen=True)
class Written:
    data: bytes
    ends: list[int]  # the key record's end, then each batch's

    def images_before(self, cut: int) -> int:
        """Images in the batches that end at or before byte ``cut``."""
        return min(2 * sum(end <= cut for end in self.ends[1:]), len(SHAS))


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    file = tmp_path_factory.mktemp("written") / "c.bin"
    with CacheFile(file, KEY, 0.2, batch=2, batch_seconds=3600) as cache:
        ends = [file.stat().st_size]
        for i, sha in enumerate(SHAS):
            cache.put(sha, f"images/{i}.jpg", _frame(i))
            if file.stat().st_size != ends[-1]:
                ends.append(file.stat().st_size)
    ends.append(file.stat().st_size)
    assert len(ends) == 1 + 4
    return Written(file.read_bytes(), ends)


def _opened(data: bytes) -> tuple[dict[str, FrameResult], bytes, list[str]]:
    """Open ``data`` as a cache file: its frames, the file's bytes after, the warnings given."""
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "c.bin"
        file.write_bytes(data)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with CacheFile(file, KEY, 0.2) as cache:
                frames = dict(cache.frames)
        return frames, file.read_bytes(), [str(w.message) for w in caught if w.category is CacheRepaired]


@given(data=st.data())
def test_a_file_cut_at_any_byte_keeps_every_batch_before_the_cut_and_never_half_reads_one(written, data):
    cut = data.draw(st.integers(0, len(written.data)), label="cut")
    frames, after, repaired = _opened(written.data[:cut])
    kept = written.images_before(cut)
    assert sorted(frames) == sorted(SHAS[:kept])
    assert all(_same_frame(frames[sha], _frame(i)) for i, sha in enumerate(SHAS[:kept]))
    # Nothing is cut short at a record's end, nor where the preamble alone is whole (a new file's first
    # write: the key record is written again, nothing was lost).
    boundary = cut in written.ends or cut in (0, len(JOURNAL.preamble))
    assert bool(repaired) == (not boundary)
    assert after == written.data[: max([end for end in written.ends if end <= cut], default=written.ends[0])]


def test_a_file_holding_its_preamble_alone_is_a_new_file_and_nothing_is_reported_repaired(written):
    preamble = len(JOURNAL.preamble)
    frames, after, repaired = _opened(written.data[:preamble])
    assert frames == {} and repaired == [] and after == written.data[: written.ends[0]]
    frames, after, repaired = _opened(written.data[: preamble - 1])
    assert frames == {} and len(repaired) == 1 and after == written.data[: written.ends[0]]


@given(tail=st.integers(1, 500), replaced=st.booleans())
def test_a_zero_filled_tail_is_cut_off_as_an_interrupted_write(written, tail, replaced):
    """After a power loss a file can keep its new length with zeros where the last write's data was."""
    cut = written.ends[-2] if replaced else len(written.data)
    frames, after, repaired = _opened(written.data[:cut] + bytes(tail))
    assert sorted(frames) == sorted(SHAS[: written.images_before(cut)])
    assert after == written.data[:cut] and len(repaired) == 1
    assert f"{tail} bytes of zeros (never written)" in repaired[0]


@given(data=st.data())
def test_a_flipped_bit_anywhere_after_the_key_costs_its_batch_alone_and_is_named(written, data):
    bit = data.draw(st.integers(0, 8 * len(written.data) - 1), label="bit")
    flipped = bytearray(written.data)
    flipped[bit // 8] ^= 1 << (bit % 8)
    if bit // 8 < written.ends[0]:  # the preamble or a copy of the key: the other copy is read, nothing lost
        frames, after, repaired = _opened(bytes(flipped))
        assert sorted(frames) == sorted(SHAS) and after == written.data
        assert len(repaired) == 1 and ("header copy at byte" in repaired[0] or "preamble: one bit" in repaired[0])
        return
    hit = next(i for i, end in enumerate(written.ends[1:]) if bit // 8 < end)  # the batch the bit is in
    start, end = written.ends[hit], written.ends[hit + 1]
    frames, after, repaired = _opened(bytes(flipped))
    lost = SHAS[2 * hit : 2 * hit + 2]
    assert sorted(frames) == sorted(sha for sha in SHAS if sha not in lost)
    assert after == written.data[:start] + written.data[end:]  # every other record, byte for byte
    assert len(repaired) == 1 and f"record {hit + 2} at byte {start}" in repaired[0]


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    n = draw(st.integers(0, 6))
    boxes = draw(arrays(np.float32, (n, 4), elements=finite32))
    scores = draw(arrays(np.float32, (n,), elements=finite32))
    class_ids = draw(arrays(np.int64, (n,), elements=st.integers(0, 2**40)))
    cells = draw(st.one_of(st.none(), st.tuples(*[st.integers(0, 10**12)] * 3)))
    frame = FrameResult(
        Detections(boxes, scores, class_ids), None if cells is None else CellsAboveThreshold(0.2, *cells)
    )
    sha = draw(st.binary(min_size=32, max_size=32)).hex()
    return Entry(sha, draw(st.text(max_size=30)), frame)


@given(batch=st.lists(entries(), max_size=8))
def test_a_batch_round_trips_float32_bit_exactly_with_its_ids_and_cells(batch):
    back = decode_batch(memoryview(encode_batch(batch)), 0.2)
    assert [(e.image_sha256, e.image_id) for e in back] == [(e.image_sha256, e.image_id) for e in batch]
    assert all(_same_frame(a.frame, b.frame) for a, b in zip(back, batch, strict=True))


def test_puts_are_written_a_batch_at_a_time_or_once_the_oldest_is_old_enough(tmp_path):
    file = tmp_path / "c.bin"
    with CacheFile(file, KEY, 0.2, batch=3, batch_seconds=3600) as cache:
        sizes = [file.stat().st_size]
        for i in range(4):
            cache.put(SHAS[i], f"img{i}", _frame(i))
            sizes.append(file.stat().st_size)
        assert sizes[0] == sizes[1] == sizes[2] < sizes[3] == sizes[4]  # written with the third put
        cache.flush()
        assert file.stat().st_size > sizes[4]
    timed = tmp_path / "timed.bin"
    with CacheFile(timed, KEY, 0.2, batch=3, batch_seconds=0.0) as cache:  # every put is old enough at once
        sizes = [timed.stat().st_size]
        for i in range(3):
            cache.put(SHAS[i], f"img{i}", _frame(i))
            sizes.append(timed.stat().st_size)
        assert sizes == sorted(set(sizes))


def test_a_failed_write_is_an_error_leaves_the_file_sound_and_its_batch_is_written_later(tmp_path, monkeypatch):
    file = tmp_path / "c.bin"
    cache = CacheFile(file, KEY, 0.2, batch=1)
    cache.put(SHAS[0], "img0", _frame(1))
    sound = file.read_bytes()

    def disk_full(fd: int, data: memoryview) -> int:
        os_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    os_write = os.write
    monkeypatch.setattr(cache_module.os, "write", disk_full)
    with pytest.raises(CacheError, match=r"c.bin: cannot be written \(No space left on device\)"):
        cache.put(SHAS[1], "img1", _frame(2))
    monkeypatch.undo()
    assert file.read_bytes() == sound  # the half-written batch cut off
    cache.close()
    frames, _, repaired = _opened(file.read_bytes())
    assert sorted(frames) == [SHAS[0], SHAS[1]] and not repaired  # written by the close, the disk free again


def test_a_put_after_close_or_with_a_bad_sha_is_an_error(tmp_path):
    cache = CacheFile(tmp_path / "c.bin", KEY, 0.2)
    with pytest.raises(CacheError, match=r"image 'img0' sha256 'ABC', expected 64 hex digits"):
        cache.put("ABC", "img0", _frame(0))
    cache.close()
    with pytest.raises(CacheError, match="written after close"):
        cache.put(SHAS[0], "img0", _frame(0))


_SECOND_WRITER = """
import sys
from pathlib import Path
from harness.pipeline.cache import CacheFile
with CacheFile(Path(sys.argv[1]), {"k": 1}, 0.2) as cache:
    print(sorted(cache.frames))
"""


def test_a_second_process_waits_for_the_writer_then_reads_its_frames(tmp_path: Path) -> None:
    file = tmp_path / "shared.bin"
    frame = FrameResult(Detections(np.array([[1, 2, 3, 4]]), np.array([0.5]), np.array([0])))
    with CacheFile(file, {"k": 1}, 0.2) as cache:
        other = subprocess.Popen([sys.executable, "-c", _SECOND_WRITER, str(file)], stdout=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            other.wait(timeout=1.0)  # blocked on the lock while this process writes
        cache.put("a" * 64, "img0", frame)
    out, _ = other.communicate(timeout=30)
    assert out.strip() == repr(["a" * 64])


_WRITER = """
import hashlib, sys
from pathlib import Path
import numpy as np
from harness.core.detections import Detections
from harness.pipeline.cache import CacheFile
from harness.pipeline.detect import FrameResult
name, count = sys.argv[2], int(sys.argv[3])
with CacheFile(Path(sys.argv[1]), {"k": 1}, 0.2, batch=4) as cache:
    for i in range(count):
        sha = hashlib.sha256(f"{name}{i}".encode()).hexdigest()
        if cache.get(sha) is None:
            cache.put(sha, f"{name}/{i}", FrameResult(Detections(np.full((1, 4), i), [0.5], [i])))
    print(len(cache.frames))
"""


def test_two_writers_at_once_take_turns_and_the_file_holds_both_ones_frames(tmp_path: Path) -> None:
    file = tmp_path / "shared.bin"
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(file), name, "30"], stdout=subprocess.PIPE, text=True)
        for name in ("a", "b")
    ]
    seen = sorted(int(w.communicate(timeout=60)[0]) for w in writers)
    assert seen == [30, 60]  # the second to get the lock found the first one's 30 frames
    frames, after, repaired = _opened(file.read_bytes())
    expected = {hashlib.sha256(f"{name}{i}".encode()).hexdigest(): i for name in "ab" for i in range(30)}
    assert frames.keys() == expected.keys() and not repaired and after == file.read_bytes()
    assert all(frames[sha].detections.class_ids.tolist() == [i] for sha, i in expected.items())


def test_another_runtime_device_package_version_or_detection_code_is_another_cache(model, dataset, cache, monkeypatch):
    first = CountingPath(model)
    result = evaluate_path(first, dataset, cache)
    assert first.calls == N_IMAGES and result.provenance.from_cache == 0
    again = CountingPath(model)
    assert evaluate_path(again, dataset, cache).provenance.from_cache == N_IMAGES and again.calls == 0
    other_device = CountingPath(model)
    other_device.runtime = "HEF model.hef on 0000:02:00.0 (HailoRT 4.23.0, InferModel API)"
    assert evaluate_path(other_device, dataset, cache).provenance.from_cache == 0
    assert other_device.calls == N_IMAGES
    upgraded = dict(environment(), onnxruntime="99.0")
    monkeypatch.setattr(cache_module, "environment", lambda: tuple(upgraded.items()))
    after_upgrade = CountingPath(model)
    assert evaluate_path(after_upgrade, dataset, cache).provenance.from_cache == 0
    monkeypatch.setattr(cache_module, "code_digest", lambda *parts: "an edited decoder")
    assert cache_key(CountingPath(model))["code"] == "an edited decoder"  # part of the key, like the versions
    assert cache_key(first)["runtime"] == "a test path" and cache_key(first)["environment"]["onnxruntime"]
