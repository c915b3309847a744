"""evaluate_path: a path over a labelled dataset -> PathResult (metrics, distributions, provenance)."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.core.settings import EvalSettings, NmsMode
from harness.inputs.dataset import Dataset, DatasetError
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import DEMO_ONNX
from harness.pipeline.cache import PredictionCache
from harness.pipeline.detect import FrameResult, OnnxPath, file_sha256
from harness.pipeline.evaluate import evaluate_path
from harness.pipeline.factory import RunContext, evaluate_spec, load_dataset, prepare_run
from harness.pipeline.spec import Backend, PathSpec

# What Ultralytics 8.4.190 `yolo val` reports for this model on these 16 images (imgsz 640, batch 1,
# conf 0.001, iou 0.7, CPU): mAP50 0.733, mAP50-95 0.596. The harness differs by its resize of two
# 333-row images (Ultralytics' val loader rounds sides up), per-axis back-scaling on one image and
# pycocotools' AP (100 detections per image) instead of Ultralytics' own; measured 0.728 / 0.594.
ULTRALYTICS_MAP50, ULTRALYTICS_MAP50_95 = 0.733, 0.596


@pytest.fixture(scope="module")
def coco16(shared_fixtures: Path) -> Dataset:
    return load_yolo(shared_fixtures / "datasets/coco128_val16/config.yaml")


def test_yolov8n_on_coco128_val16_measures_what_ultralytics_val_reports(shared_fixtures, coco16):
    model = shared_fixtures / "onnx" / "yolov8n_coco80_640_int8.onnx"
    settings = EvalSettings(input_hw=(640, 640), score_threshold=0.001, iou_threshold=0.7, nms_mode=NmsMode.ULTRALYTICS)
    with OnnxPath(model, settings, threads=1) as path:
        result = evaluate_path(path, coco16)
    assert result.metrics.n_images == 16 and len(result.predictions) == 16
    assert result.image_ids == tuple(s.image_id for s in coco16.samples)
    assert abs(result.metrics.map50 - ULTRALYTICS_MAP50) < 0.01
    assert abs(result.metrics.map50_95 - ULTRALYTICS_MAP50_95) < 0.01
    assert result.box_counts.max == 300 and result.scores.below_zero == result.scores.above_one == 0
    assert (result.path, result.emulated, result.cells) == ("onnx", False, None)
    assert result.settings.class_map == tuple(range(80))
    p = result.provenance
    assert p.model_sha256 == file_sha256(model) and p.dataset_manifest == coco16.manifest
    assert datetime.fromisoformat(p.created).tzinfo == timezone.utc
    assert {"python", "numpy", "onnxruntime"} <= dict(p.environment).keys()


class OraclePath:
    """Predicts each image's labelled boxes exactly, in the MODEL's class ids (found by image size)."""

    name = "emulated-hailo"
    emulated = True
    variant = ""
    fps = None

    def __init__(self, dataset: Dataset, model_names: tuple[str, ...] | None, model: Path, class_map=()) -> None:
        self.model_file, self.model_sha256, self.model_names = model, file_sha256(model), model_names
        self.runtime = "a test path"
        self.score_ceiling = None
        self.settings = EvalSettings(input_hw=(32, 32), class_map=class_map)
        self.input_hw = self.settings.input_hw
        ids = {name: i for i, name in enumerate(model_names or ())}
        self._truth = {
            s.original_hw: Detections(
                s.ground_truth.boxes,
                np.full(len(s.ground_truth), 0.9),
                [ids.get(dataset.names[c], 0) for c in s.ground_truth.class_ids],
            )
            for s in dataset.samples
        }

    def detect(self, image: np.ndarray) -> FrameResult:
        return FrameResult(self._truth[image.shape[:2]])


def _dataset(root: Path, names: list[str], count: int = 6) -> Dataset:
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    for i in range(count):
        Image.fromarray(np.full((30, 40 + i, 3), 100, np.uint8)).save(root / "images" / f"{i}.png")
        (root / "labels" / f"{i}.txt").write_text(f"{i % 2} 0.5 0.5 0.5 0.5\n{(i + 1) % 2} 0.2 0.2 0.2 0.2\n")
    (root / "data.yaml").write_text(yaml.safe_dump({"names": names}))
    return load_yolo(root)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.hef"
    path.write_bytes(b"model")
    return path


def test_class_names_in_another_order_are_an_error_unless_mapped(tmp_path, model):
    dataset = _dataset(tmp_path / "d", ["smoke", "fire"])
    with pytest.raises(DatasetError, match="the same names in another order; match them by name with --map-class"):
        evaluate_path(OraclePath(dataset, ("fire", "smoke"), model), dataset)
    mapped = evaluate_path(OraclePath(dataset, ("fire", "smoke"), model, class_map=(1, 0)), dataset)
    assert mapped.metrics.map50 == pytest.approx(1.0) and mapped.metrics.map50_95 == pytest.approx(1.0)
    assert [c.name for c in mapped.metrics.per_class] == ["fire", "smoke"]
    wrong = evaluate_path(OraclePath(dataset, ("fire", "smoke"), model, class_map=(0, 1)), dataset)
    assert wrong.metrics.map50 == pytest.approx(0.0)


def test_class_names_that_differ_are_an_error(tmp_path, model):
    dataset = _dataset(tmp_path / "d", ["fire", "smoke"])
    with pytest.raises(DatasetError, match="different names; match them by name with --map-class fire=fire"):
        evaluate_path(OraclePath(dataset, ("fire", "smoke", "person"), model), dataset)
    with pytest.raises(DatasetError, match=r"class_map \[0\]: expected one model class id"):
        evaluate_path(OraclePath(dataset, ("fire", "smoke"), model, class_map=(0,)), dataset)
    with pytest.raises(HarnessError, match="class names unknown"):
        evaluate_path(OraclePath(dataset, None, model), dataset)


def test_progress_bar_is_drawn_when_forced_and_not_on_a_pipe(tmp_path, model):
    dataset = _dataset(tmp_path / "d", ["fire", "smoke"], count=22)
    path = OraclePath(dataset, ("fire", "smoke"), model)
    forced, piped = io.StringIO(), io.StringIO()
    evaluate_path(path, dataset, progress=True, stream=forced)
    evaluate_path(path, dataset, stream=piped)
    assert "22/22 images, 0 cached" in forced.getvalue() and forced.getvalue().endswith("\n")
    assert piped.getvalue() == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_is_drawn_on_a_terminal_for_more_than_twenty_images(tmp_path, model):
    small, large = _dataset(tmp_path / "s", ["fire", "smoke"], 20), _dataset(tmp_path / "l", ["fire", "smoke"], 21)
    for dataset, drawn in ((small, False), (large, True)):
        stream = _Terminal()
        evaluate_path(OraclePath(dataset, ("fire", "smoke"), model), dataset, stream=stream)
        assert ("21/21 images" in stream.getvalue()) is drawn


def test_an_image_changed_since_the_dataset_was_listed_is_an_error(tmp_path, model):
    dataset = _dataset(tmp_path / "d", ["fire", "smoke"])
    path = OraclePath(dataset, ("fire", "smoke"), model)
    Image.fromarray(np.zeros((10, 10, 3), np.uint8)).save(tmp_path / "d" / "images" / "2.png")
    with pytest.raises(HarnessError, match=r"'images/2.png': 10x10 when read, but 30x42 when the dataset was listed"):
        evaluate_path(path, dataset)


class BatchOraclePath(OraclePath):
    """The oracle taking batches, keeping the size of each."""

    def __init__(self, dataset: Dataset, model_names: tuple[str, ...] | None, model: Path) -> None:
        super().__init__(dataset, model_names, model)
        self.batches: list[int] = []

    def detect_batch(self, images: list[np.ndarray]) -> list[FrameResult]:
        self.batches.append(len(images))
        return [self.detect(image) for image in images]


def _same_predictions(a: Sequence[Detections], b: Sequence[Detections]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.boxes, y.boxes)
        np.testing.assert_array_equal(x.scores, y.scores)
        np.testing.assert_array_equal(x.class_ids, y.class_ids)


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_images_are_inferred_a_batch_at_a_time_and_come_back_in_their_places_cached_or_not(tmp_path, model, batch):
    dataset = _dataset(tmp_path / "d", ["fire", "smoke"], count=11)
    names = ("fire", "smoke")
    one_by_one = evaluate_path(OraclePath(dataset, names, model), dataset)
    uncached = BatchOraclePath(dataset, names, model)
    _same_predictions(evaluate_path(uncached, dataset, batch=batch).predictions, one_by_one.predictions)
    assert uncached.batches == [batch] * (11 // batch) + ([11 % batch] if 11 % batch else [])
    cache = PredictionCache(tmp_path / "cache")
    evaluate_path(
        OraclePath(dataset, names, model), dataclasses.replace(dataset, samples=dataset.samples[2:9:3]), cache
    )
    path = BatchOraclePath(dataset, names, model)
    result = evaluate_path(path, dataset, cache, batch=batch)  # images 2, 5 and 8 from the cache
    assert result.provenance.from_cache == 3 and sum(path.batches) == 8 and max(path.batches) <= batch
    _same_predictions(result.predictions, one_by_one.predictions)
    assert result.metrics == one_by_one.metrics


def test_a_batch_of_no_images_is_refused(tmp_path, model):
    dataset = _dataset(tmp_path / "d", ["fire", "smoke"])
    with pytest.raises(HarnessError, match="batch 0: expected a whole number of at least 1"):
        evaluate_path(OraclePath(dataset, ("fire", "smoke"), model), dataset, batch=0)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> RunContext:
    cache = tmp_path_factory.mktemp("demo")
    dataset = load_dataset(None, cache_dir=cache)
    return prepare_run(DEMO_ONNX, dataset, cache_dir=cache, use_cache=False, progress=False, log=lambda line: None)


@pytest.mark.parametrize("backend", [Backend.ONNX, Backend.EMULATOR])
def test_the_demo_set_gives_the_same_detections_at_batch_one_and_eight(demo_run, backend):
    one = evaluate_spec(PathSpec(backend), dataclasses.replace(demo_run, batch=1))
    eight = evaluate_spec(PathSpec(backend), dataclasses.replace(demo_run, batch=8))
    assert len(one.predictions) == 100 and sum(len(p) for p in one.predictions) > 100
    _same_predictions(one.predictions, eight.predictions)
    assert one.metrics == eight.metrics


def test_the_shared_cache_entries_of_the_dataset_and_of_the_path_are_named_in_the_provenance(tmp_path, model):
    from harness.core.shared_entry import EntryState, EntryUse

    dataset = _dataset(tmp_path / "d", ["fire", "smoke"])
    path = OraclePath(dataset, ("fire", "smoke"), model)
    assert evaluate_path(path, dataset).provenance.shared_cache == ()  # none used: none named
    demo = EntryUse("/shared/demo-data", "set", "a" * 64, EntryState.SEALED)
    hef = EntryUse("/shared/emulator", "k.onnx", "b" * 64, EntryState.REBUILT, "its model's sha256 is 0123")
    path.cache_entries = (hef,)
    result = evaluate_path(path, dataclasses.replace(dataset, cache_entry=demo))
    assert result.provenance.shared_cache == (demo, hef)


def test_the_demo_set_is_loaded_with_the_shared_cache_entry_it_was_read_from(tmp_path, monkeypatch):
    from harness.core.shared_entry import EntryState
    from harness.inputs import demo

    monkeypatch.setenv("HARNESS_SHARED_CACHE", str(tmp_path / "shared"))
    tiny = {"seed": 0, "train": 0, "val": 2, "calib": 1, "offdomain_calib": 1, "imgsz": 64}
    monkeypatch.setattr(demo, "_RECIPE", tiny)
    first = load_dataset(None, cache_dir=tmp_path / "cache")
    again = load_dataset(None, cache_dir=tmp_path / "cache")
    assert first.cache_entry is not None and first.cache_entry.state is EntryState.BUILT
    assert again.cache_entry is not None and again.cache_entry.state is EntryState.SEALED
    assert again.cache_entry.folder == str(tmp_path / "shared" / "demo-data") and len(again.samples) == 2
