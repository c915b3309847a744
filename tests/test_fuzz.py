"""Bounded fuzzing of every file the harness reads from users: label files, COCO JSON, baseline JSON
and HEF bytes. Whatever the bytes, the harness raises its own error naming the file, or reads them;
any other exception is a crash a user would see as a bare traceback."""

import json
import math
import os
from pathlib import Path

import pytest
import synthetic_results as sr
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from PIL import Image

from harness.core.errors import HarnessError
from harness.inputs.dataset import load_coco, load_yolo
from harness.inputs.hef.reader import read_hef
from harness.verdict.golden import _document, golden_from_result, load_golden

# 120 inputs per reader in the test run (a few seconds); HARNESS_FUZZ_EXAMPLES=5000 for a campaign.
EXAMPLES = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "120"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _mutations(document: object) -> st.SearchStrategy:
    """``document`` with one value somewhere in it replaced by anything JSON can hold, or removed."""

    def paths(node: object, prefix: tuple = ()) -> list[tuple]:
        found = [prefix]
        if isinstance(node, dict):
            for key, value in node.items():
                found += paths(value, (*prefix, key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                found += paths(value, (*prefix, index))
        return found

    def mutate(where: tuple, value: object, remove: bool) -> object:
        copy = json.loads(json.dumps(document))
        if not where:
            return value
        parent = copy
        for key in where[:-1]:
            parent = parent[key]
        if remove and isinstance(parent, dict):
            del parent[where[-1]]
        else:
            parent[where[-1]] = value
        return copy

    return st.builds(mutate, st.sampled_from(paths(document)), json_values, st.booleans())


def _dump(data: object) -> str:
    return json.dumps(data, allow_nan=True)  # NaN and Infinity too, as Python writes them


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-yolo")
    (root / "images").mkdir()
    (root / "labels").mkdir()
    Image.new("RGB", (40, 30), (120, 60, 30)).save(root / "images" / "a.jpg")
    (root / "data.yaml").write_text("names: {0: fire, 1: smoke}\n")
    return root


@FUZZ
@given(data=st.binary(max_size=200) | st.text(alphabet="0123456789 .-e\n\tnaif", max_size=80).map(str.encode))
def test_any_label_file_is_read_or_refused_with_the_harness_error(image_folder, data):
    (image_folder / "labels" / "a.txt").write_bytes(data)
    try:
        dataset = load_yolo(image_folder)
    except HarnessError:
        event("refused with the harness's error")
        return
    event("read")
    boxes = dataset.samples[0].ground_truth.boxes
    assert boxes.shape[1] == 4 and all(math.isfinite(v) for v in boxes.ravel())


VALID_COCO = {
    "images": [{"id": 1, "file_name": "a.jpg", "width": 40, "height": 30}],
    "categories": [{"id": 1, "name": "fire"}, {"id": 2, "name": "smoke"}],
    "annotations": [{"id": 1, "image_id": 1, "category_id": 2, "bbox": [1, 2, 10, 20], "iscrowd": 0}],
}


@FUZZ
@given(data=_mutations(VALID_COCO) | json_values)
def test_any_coco_json_is_read_or_refused_with_the_harness_error(image_folder, data):
    file = image_folder / "instances.json"
    file.write_text(_dump(data))
    try:
        load_coco(file, image_folder / "images")
        event("read")
    except HarnessError:
        event("refused with the harness's error")


@pytest.fixture(scope="module")
def baseline_document() -> dict:
    truths = sr.truths()
    return json.loads(json.dumps(_document(golden_from_result(sr.result(sr.predictions(truths), truths)))))


@FUZZ
@given(data=st.data())
def test_any_baseline_json_is_read_or_refused_with_the_harness_error(tmp_path_factory, baseline_document, data):
    document = data.draw(_mutations(baseline_document))
    file = tmp_path_factory.getbasetemp() / "fuzz-golden" / "ds--onnx.json"
    file.parent.mkdir(exist_ok=True)
    file.write_text(_dump(document))
    try:
        golden = load_golden(file)
    except HarnessError:
        event("refused with the harness's error")
        return
    event("read")
    numbers = (golden.metrics.map50, golden.metrics.map50_95, golden.scores.saturation, golden.box_counts.mean)
    assert all(math.isfinite(v) for v in numbers)  # what is read is something a gate can hold
    assert all(math.isfinite(getattr(golden.tolerances, f)) for f in ("map50_drop", "box_count_rel"))


@FUZZ
@given(data=st.data())
def test_any_hef_bytes_are_read_or_refused_with_the_harness_error(shared_fixtures, tmp_path_factory, data):
    real = (shared_fixtures / "hef" / "hailo8_mnist_cnn.hef").read_bytes()
    cut = data.draw(st.integers(0, len(real)))
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(real) - 1), st.integers(0, 255)), max_size=6))
    mutated = bytearray(real[:cut])
    for index, value in flips:
        if index < len(mutated):
            mutated[index] = value
    file = tmp_path_factory.getbasetemp() / "fuzz.hef"
    file.write_bytes(bytes(mutated))
    for tolerant in (False, True):
        try:
            read_hef(file, tolerant=tolerant)
            event("read")
        except HarnessError:
            event("refused with the harness's error")
