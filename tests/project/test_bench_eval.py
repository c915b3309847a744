"""tools.bench_eval's memory part: its stages are the pipeline's, each timed where the loop runs it, and
they add up to the evaluation's total."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import harness.pipeline.evaluate as evaluate_module
from harness.core.settings import MetricProtocol
from harness.inputs.synthetic import Recipe, write_dataset
from harness.verdict.metrics import coco, ultralytics

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # tools/ is not installed with the package
    sys.path.insert(0, str(ROOT))

from tools.bench_eval import MAIN_THREAD_STAGES, measure  # noqa: E402

IMAGES = 10  # two batches at the default batch of 8: one whole, one cut short
BATCHES = 2


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict:
    data = tmp_path_factory.mktemp("bench-eval-data")
    write_dataset(data, Recipe(seed=0, train=0, val=IMAGES, calib=0))
    return measure(data, IMAGES, seed=0, trace=False)


def test_the_stages_and_the_untimed_rest_add_up_to_the_total(measured):
    parts = [measured[field] for field in MAIN_THREAD_STAGES]
    assert sum(parts) + measured["untimed_ms"] == pytest.approx(measured["total_ms_per_image"], rel=1e-9)
    # the evaluating thread runs them one after another inside the evaluation: none is counted twice
    assert measured["untimed_ms"] >= -1e-9
    assert min(parts) > 0


def test_each_stage_is_timed_once_per_batch_the_loop_runs(measured):
    # the loop calls detect_batch: its letterbox, inference and decode each ran once per batch
    assert measured["evaluate_calls"] == 1
    assert measured["preprocess_calls"] == measured["inference_calls"] == measured["decode_calls"] == BATCHES
    assert measured["decode_image_calls"] == IMAGES
    assert measured["boxes"] > 0


def test_measure_puts_the_pipelines_metrics_back(measured):
    originals = {MetricProtocol.COCO: coco.evaluate, MetricProtocol.ULTRALYTICS: ultralytics.evaluate}
    assert evaluate_module.METRICS == originals
