"""The paired bootstrap kept in the cache folder: read back to the bit, and resampled again where any
input it depends on changed, or where its file is not one it can trust."""

import dataclasses
import json
import logging

import numpy as np
import pytest

from harness.core.detections import Detections
from harness.core.settings import MetricProtocol
from harness.inputs.dataset import GroundTruth
from harness.pipeline import bootstrap_cache
from harness.pipeline.bootstrap_cache import bootstrap_key, kept_bootstrap
from harness.verdict.metrics import SET_SCORES
from harness.verdict.metrics.coco import paired_bootstrap

from support import synthetic_results as synth

RESAMPLES = 30


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    made = synth.report_case(tmp_path_factory.mktemp("case"))
    return made.dataset.ground_truths, made.onnx.predictions, made.hailo.predictions


def _kept(folder, truths, a, b, metric=MetricProtocol.COCO, resamples=RESAMPLES, seed=0):
    return kept_bootstrap(folder, truths, a, b, synth.NAMES, metric, resamples, seed)


def _fresh(truths, a, b, metric=MetricProtocol.COCO, resamples=RESAMPLES, seed=0):
    return paired_bootstrap(truths, a, b, synth.NAMES, resamples, seed, scores=SET_SCORES[metric])


def _refuse_resampling(monkeypatch):
    def resampled(*args, **kwargs):
        raise AssertionError("resampled, though a bootstrap of these inputs was kept")

    monkeypatch.setattr(bootstrap_cache, "paired_bootstrap", resampled)


@pytest.mark.parametrize("metric", list(MetricProtocol))
def test_a_kept_bootstrap_reads_back_bit_for_bit_without_resampling(case, tmp_path, monkeypatch, metric):
    truths, a, b = case
    first = _kept(tmp_path, truths, a, b, metric)
    assert first == _fresh(truths, a, b, metric)
    assert len(list(tmp_path.glob("*.json"))) == 1
    _refuse_resampling(monkeypatch)
    again = _kept(tmp_path, truths, a, b, metric)
    assert again == first  # dataclass equality of floats: every bit (no NaN in this case)
    assert again.map50.low.hex() == first.map50.low.hex()


def _nudged(detections, image):
    changed = list(detections)
    d = changed[image]
    scores = d.scores.copy()
    scores[0] = np.nextafter(scores[0], np.float32(0))  # one score, one float32 step lower
    changed[image] = Detections(d.boxes, scores, d.class_ids)
    return changed


def _first_labelled(truths):
    return next(i for i, t in enumerate(truths) if len(t))


def _truth_moved(truths):
    changed = list(truths)
    i = _first_labelled(truths)
    boxes = truths[i].boxes.copy()
    boxes[0, 2] += 1.0
    changed[i] = GroundTruth(boxes, truths[i].class_ids, truths[i].crowd)
    return changed


def _truth_crowded(truths):
    changed = list(truths)
    i = _first_labelled(truths)
    crowd = truths[i].crowd.copy()
    crowd[0] = True
    changed[i] = GroundTruth(truths[i].boxes, truths[i].class_ids, crowd)
    return changed


def _box_moved_between_images(detections):
    """The same boxes, one of them handed to the next image: the same arrays joined, other images."""
    changed = list(detections)
    i = next(k for k, d in enumerate(detections[:-1]) if len(d) >= 2)
    d, e = detections[i], detections[i + 1]
    changed[i] = d.select(slice(0, len(d) - 1))
    changed[i + 1] = Detections(
        np.concatenate([d.boxes[-1:], e.boxes]),
        np.concatenate([d.scores[-1:], e.scores]),
        np.concatenate([d.class_ids[-1:], e.class_ids]),
    )
    return changed


CHANGES = {
    "a candidate score": lambda t, a, b, o: (t, a, _nudged(b, 0), o),
    "a reference score": lambda t, a, b, o: (t, _nudged(a, 0), b, o),
    "a ground-truth box": lambda t, a, b, o: (_truth_moved(t), a, b, o),
    "a crowd flag": lambda t, a, b, o: (_truth_crowded(t), a, b, o),
    "a box handed to the next image": lambda t, a, b, o: (t, a, _box_moved_between_images(b), o),
    "the paths swapped": lambda t, a, b, o: (t, b, a, o),
    "the metric": lambda t, a, b, o: (t, a, b, {**o, "metric": MetricProtocol.ULTRALYTICS}),
    "the resamples": lambda t, a, b, o: (t, a, b, {**o, "resamples": RESAMPLES + 1}),
    "the seed": lambda t, a, b, o: (t, a, b, {**o, "seed": 1}),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_any_changed_input_is_another_key_and_is_resampled(case, tmp_path, change):
    truths, a, b = case
    _kept(tmp_path, truths, a, b)
    options = {"metric": MetricProtocol.COCO, "resamples": RESAMPLES, "seed": 0}
    t2, a2, b2, o2 = CHANGES[change](truths, a, b, options)
    before = bootstrap_key(truths, a, b, len(synth.NAMES), **options)
    after = bootstrap_key(t2, a2, b2, len(synth.NAMES), **o2)
    assert after != before
    assert _kept(tmp_path, t2, a2, b2, **o2) == _fresh(t2, a2, b2, **o2)
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_another_class_count_package_version_or_metric_code_is_another_key(case, monkeypatch):
    truths, a, b = case
    options = {"metric": MetricProtocol.COCO, "resamples": RESAMPLES, "seed": 0}
    key = bootstrap_key(truths, a, b, 2, **options)
    assert bootstrap_key(truths, a, b, 3, **options) != key
    monkeypatch.setattr(bootstrap_cache, "environment", lambda: (("python", "3.11.7"), ("numpy", "0.0")))
    assert bootstrap_key(truths, a, b, 2, **options) != key
    monkeypatch.undo()
    monkeypatch.setattr(bootstrap_cache, "code_digest", lambda *parts: "0" * 64)
    assert bootstrap_key(truths, a, b, 2, **options) != key


def _only_file(folder):
    (file,) = folder.glob("*.json")
    return file


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut short
        lambda text: "[]",
        lambda text: text.replace('"format": 1', '"format": 2'),
        lambda text: text.replace('"seed": 0', '"seed": 1'),
        lambda text: text.replace('"point": "', '"point": "zz'),
        lambda text: json.dumps({**json.loads(text), "extra": 1}),
        lambda text: json.dumps({**json.loads(text), "key": "0" * 64}),
    ],
    ids=["cut", "not-an-object", "format", "seed", "number", "unknown-key", "other-key"],
)
def test_a_damaged_or_foreign_file_is_resampled_logged_and_replaced(case, tmp_path, caplog, damage):
    truths, a, b = case
    first = _kept(tmp_path, truths, a, b)
    file = _only_file(tmp_path)
    file.write_text(damage(file.read_text()))
    with caplog.at_level(logging.WARNING, logger=bootstrap_cache.__name__):
        assert _kept(tmp_path, truths, a, b) == first
    assert f"kept paired bootstrap {file} not used" in caplog.text
    assert json.loads(file.read_text())["key"] == file.stem  # replaced by a sound one


def test_a_folder_that_cannot_be_written_costs_the_next_run_its_resampling_only(case, tmp_path, caplog):
    truths, a, b = case
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    with caplog.at_level(logging.WARNING, logger=bootstrap_cache.__name__):
        assert _kept(blocked / "bootstrap", truths, a, b) == _fresh(truths, a, b)
    assert "not kept" in caplog.text


def _hexes(boot):
    return [v.hex() for interval in (boot.map50, boot.map50_95) for v in dataclasses.astuple(interval)]


def test_the_nans_of_a_set_without_ground_truth_are_kept_as_nans(tmp_path, monkeypatch):
    truths = [GroundTruth(np.zeros((0, 4)), np.zeros(0))]
    a = [Detections(np.array([[0, 0, 10, 10]]), np.array([0.9]), np.array([0]))]
    first = _kept(tmp_path, truths, a, [Detections.empty()], resamples=3)
    assert _hexes(first) == ["nan"] * 6
    _refuse_resampling(monkeypatch)
    assert _hexes(_kept(tmp_path, truths, a, [Detections.empty()], resamples=3)) == ["nan"] * 6
