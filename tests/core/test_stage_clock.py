"""The stage clock: seconds and calls per stage, recorded by the pipeline only while a clock listens."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from harness.backends.base import InputSpec, RunnerBase
from harness.core.detections import Detections
from harness.core.settings import EvalSettings
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.core.stage_clock import Stage, clocked, listening, stage, timed
from harness.inputs.dataset import Dataset
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import DEMO_ONNX
from harness.inputs.synthetic import Recipe, write_dataset
from harness.pipeline.cache import PredictionCache
from harness.pipeline.detect import DecoderPath, DetectionPath, OnnxPath
from harness.pipeline.evaluate import evaluate_path


def test_stages_are_recorded_while_a_clock_listens_from_any_thread_and_not_before_or_after():
    with stage(Stage.INFERENCE):
        pass
    with listening() as clock:
        with stage(Stage.INFERENCE):
            pass
        worker = threading.Thread(target=clocked(Stage.DECODE_IMAGE)(lambda: None))
        worker.start()
        worker.join()
        assert timed(Stage.METRICS, sum, [1, 2]) == 3
    with stage(Stage.INFERENCE):
        pass
    assert clock.calls == {"inference": 1, "decode image": 1, "metrics": 1}
    assert set(clock.seconds) == set(clock.calls) and min(clock.seconds.values()) >= 0


def test_one_clock_listens_at_a_time():
    with listening(), pytest.raises(RuntimeError, match="already listening"), listening():
        pass


class _BlankRunner(RunnerBase):
    """A runner fed like a HEF that hands back nothing: the path's own stages are all there is."""

    label = "blank"
    output_specs: Mapping[str, OutputSpec] = {}

    def __init__(self, input_hw: tuple[int, int]) -> None:
        self.input_specs = {"images": InputSpec("images", (*input_hw, 3), FormatOrder.NHWC, FormatType.UINT8)}

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {}


@pytest.fixture(scope="module")
def three_images(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    folder = tmp_path_factory.mktemp("three")
    write_dataset(folder, Recipe(seed=5, train=0, val=3, calib=0))
    return load_yolo(folder / "data.yaml")


def _runner_path(dataset: Dataset, settings: EvalSettings) -> DetectionPath:
    def nothing(outputs: object, specs: object, config: object) -> Detections:
        return Detections.empty()

    runner = _BlankRunner(settings.input_hw)
    return DecoderPath(runner, settings, dataset.root / "data.yaml", nothing, "emulated-hailo", dataset.names, "")


@pytest.mark.parametrize("kind", ["onnx", "runner"])
def test_an_evaluation_records_each_of_its_stages_once_per_image_or_batch(three_images, tmp_path: Path, kind):
    settings = EvalSettings(input_hw=(256, 256))
    path = OnnxPath(DEMO_ONNX, settings, threads=1) if kind == "onnx" else _runner_path(three_images, settings)
    cache = PredictionCache(tmp_path / "cache")
    with listening() as clock:
        evaluate_path(path, three_images, cache, progress=False, batch=2)
    per_batch = {Stage.PREPROCESS, Stage.INFERENCE, Stage.DECODE}
    run_level = {Stage.DATASET, Stage.EXPORT_FACTS, Stage.REPORTS}  # once per run, not per path
    expected = {s.value: 1 if s is Stage.EVALUATE else 2 if s in per_batch else 3 for s in Stage if s not in run_level}
    expected[Stage.CACHE] = 1 + 3 + 3  # its open, a lookup and a write per image
    expected[Stage.METRICS] = 3  # the COCO metrics, box counts and score distribution
    assert clock.calls == expected
    with listening() as rerun:
        evaluate_path(path, three_images, cache, progress=False, batch=2)
    assert set(rerun.calls) == {Stage.EVALUATE, Stage.CACHE, Stage.METRICS}, "all three from the cache"
