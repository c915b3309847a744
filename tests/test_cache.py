"""The per-image prediction cache: nothing lost on interruption, nothing inferred twice, exact floats."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

import harness.pipeline.cache as cache_module
from harness.core.detections import Detections
from harness.core.environment import environment
from harness.core.settings import EvalSettings
from harness.inputs.dataset import Dataset, load_yolo
from harness.pipeline.cache import CacheError, CacheRepaired, PredictionCache, cache_key, decode_entry, encode_entry
from harness.pipeline.detect import FrameResult, file_sha256
from harness.pipeline.evaluate import evaluate_path
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
    return PredictionCache(tmp_path / "cache")


def _same(a: tuple[Detections, ...], b: tuple[Detections, ...]) -> bool:
    """Bit-identical detections, image by image."""
    return len(a) == len(b) and all(
        x.boxes.tobytes() == y.boxes.tobytes()
        and x.scores.tobytes() == y.scores.tobytes()
        and np.array_equal(x.class_ids, y.class_ids)
        for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_run_interrupted_mid_way_resumes_with_only_the_remaining_images(dataset, model, cache, error):
    uncached = evaluate_path(CountingPath(model), dataset)
    with pytest.raises(error, match="device timeout"):
        evaluate_path(CountingPath(model, fail_at=4, error=error), dataset, cache)
    lines = cache.file_for(CountingPath(model)).read_bytes().splitlines()
    assert len(lines) == 1 + 3  # the key, then the three images done before the interruption
    resumed = CountingPath(model)
    result = evaluate_path(resumed, dataset, cache)
    assert resumed.calls == N_IMAGES - 3
    assert _same(result.predictions, uncached.predictions)
    assert result.cells == uncached.cells and result.metrics == uncached.metrics


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


def test_torn_last_line_is_reported_cut_off_and_its_image_redone(dataset, model, cache):
    first = evaluate_path(CountingPath(model), dataset, cache)
    file = cache.file_for(CountingPath(model))
    data = file.read_bytes()
    file.write_bytes(data[:-25])  # the write of the last image stopped short
    again = CountingPath(model)
    with pytest.warns(CacheRepaired, match=rf"line {N_IMAGES + 1} is incomplete"):
        second = evaluate_path(again, dataset, cache)
    assert again.calls == 1
    assert _same(first.predictions, second.predictions)
    assert file.read_bytes() == data  # repaired in place: the same bytes as an uninterrupted run


def test_torn_key_line_starts_the_file_afresh(dataset, model, cache):
    file = cache.file_for(CountingPath(model))
    file.parent.mkdir(parents=True)
    file.write_bytes(b'{"cache":{"form')
    path = CountingPath(model)
    with pytest.warns(CacheRepaired, match="line 1 is incomplete"):
        evaluate_path(path, dataset, cache)
    assert path.calls == N_IMAGES
    assert len(file.read_bytes().splitlines()) == 1 + N_IMAGES


def test_a_bad_line_before_the_last_is_an_error_naming_it(dataset, model, cache):
    evaluate_path(CountingPath(model), dataset, cache)
    file = cache.file_for(CountingPath(model))
    lines = file.read_bytes().splitlines(keepends=True)
    entry = json.loads(lines[2])
    entry["boxes"] = entry["boxes"][:-8]
    lines[2] = json.dumps(entry).encode() + b"\n"
    file.write_bytes(b"".join(lines))
    with pytest.raises(CacheError, match=r"line 3: boxes: \d+ bytes, expected \d+"):
        evaluate_path(CountingPath(model), dataset, cache)


def test_a_file_stating_another_key_is_an_error(dataset, model, cache):
    evaluate_path(CountingPath(model), dataset, cache)
    file = cache.file_for(CountingPath(model))
    lines = file.read_bytes().splitlines(keepends=True)
    file.write_bytes(lines[0].replace(b'"path":"emulated-hailo"', b'"path":"hailo"') + b"".join(lines[1:]))
    with pytest.raises(CacheError, match="does not state this cache's key"):
        evaluate_path(CountingPath(model), dataset, cache)


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@given(
    boxes=arrays(np.float32, st.tuples(st.integers(0, 6), st.just(4)), elements=finite32),
    data=st.data(),
    cells=st.one_of(st.none(), st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6))),
)
def test_cache_entry_round_trips_float32_bit_exactly(boxes, data, cells):
    n = len(boxes)
    scores = data.draw(arrays(np.float32, (n,), elements=finite32))
    class_ids = data.draw(arrays(np.int64, (n,), elements=st.integers(0, 2**40)))
    frame = FrameResult(
        Detections(boxes, scores, class_ids), None if cells is None else CellsAboveThreshold(0.2, *cells)
    )
    sha, back = decode_entry(encode_entry("ab" * 32, "images/x.jpg", frame).rstrip(b"\n"), 0.2)
    assert sha == "ab" * 32
    assert back.detections.boxes.tobytes() == boxes.tobytes()
    assert back.detections.scores.tobytes() == scores.tobytes()
    assert np.array_equal(back.detections.class_ids, class_ids)
    assert back.cells == frame.cells


_SECOND_WRITER = """
import sys
from pathlib import Path
from harness.pipeline.cache import CacheFile
with CacheFile(Path(sys.argv[1]), {"k": 1}, 0.2) as cache:
    print(sorted(cache.frames))
"""


def test_a_second_process_waits_for_the_writer_then_reads_its_frames(tmp_path: Path) -> None:
    import subprocess
    import sys

    from harness.pipeline.cache import CacheFile

    file = tmp_path / "shared.jsonl"
    frame = FrameResult(Detections(np.array([[1, 2, 3, 4]]), np.array([0.5]), np.array([0])))
    with CacheFile(file, {"k": 1}, 0.2) as cache:
        other = subprocess.Popen([sys.executable, "-c", _SECOND_WRITER, str(file)], stdout=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            other.wait(timeout=1.0)  # blocked on the lock while this process writes
        cache.put("a" * 64, "img0", frame)
    out, _ = other.communicate(timeout=30)
    assert out.strip() == repr(["a" * 64])


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
