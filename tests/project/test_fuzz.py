"""Bounded fuzzing of every file the harness reads from users: label files, data.yaml, COCO JSON,
Ultralytics export folders (metadata.yaml, nms_config.json), baseline JSON, HEF bytes, and JSON and
YAML documents at large (bombs, depth, huge numbers, keys given twice).

The property of every family: whatever the bytes, the reader raises the harness's own error naming
the file, or reads them; any other exception is a crash a user would see as a bare traceback. Each
example also holds to a time bound (no hang) and a memory bound (a bomb is refused, not expanded)."""

from __future__ import annotations

import copy
import json
import math
import os
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from PIL import Image

from harness.core.documents import parse_json, parse_yaml
from harness.core.errors import HarnessError
from harness.inputs.dataset_coco import load_coco
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.hef.reader import read_hef
from harness.inputs.hef.ultralytics import read_export
from harness.verdict import golden_writing
from harness.verdict.golden_blessing import golden_from_result
from harness.verdict.golden_reading import load_golden

from support import synthetic_results as sr

# 120 inputs per family in the test run (the file in about 15 s); HARNESS_FUZZ_EXAMPLES=5000 for a campaign.
EXAMPLES = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "120"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SECONDS = 5.0  # per example: far above any read of these small inputs, far below a hang
MEMORY = 64 * 2**20  # peak traced allocation per example: a bomb expanded would take gigabytes

HUGE_NUMBERS = ("1" + "0" * 400, "-" + "9" * 5000, "1e400", "-1e400", "NaN", "Infinity", "1" + "0" * 41)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.integers(10**38, 10**400)
    | st.floats(allow_nan=True)
    | st.text(max_size=8)
    | st.sampled_from(["0.2", "true", "false", "yes", "../../../etc/passwd", "conv41, sigmoid)"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        | st.dictionaries(st.integers(0, 3) | st.sampled_from(["0", "1"]), inner, max_size=4)
    ),  # mixed key types
    max_leaves=12,
)


def _mutations(document: object) -> st.SearchStrategy:
    """``document`` with one value somewhere in it replaced by anything JSON or YAML can hold, or removed."""

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
        mutated = copy.deepcopy(document)
        if not where:
            return value
        parent: Any = mutated
        for key in where[:-1]:
            parent = parent[key]
        if remove and isinstance(parent, dict):
            del parent[where[-1]]
        else:
            parent[where[-1]] = value
        return mutated

    return st.builds(mutate, st.sampled_from(paths(document)), json_values, st.booleans())


@st.composite
def _text_edits(draw: st.DrawFn, text: str, kind: str) -> str:
    """``text`` (a JSON or YAML document) as a hand or a tool might break it: a line given twice (a key
    given twice), a number made huge, an alias bomb or deep nesting put in, cut short, or as it is."""
    edit = draw(st.sampled_from(["none"] * 3 + ["line twice", "huge number", "bomb", "deep", "cut", "bytes"]))
    lines = text.splitlines(keepends=True) or [""]
    if edit == "line twice":
        index = draw(st.integers(0, len(lines) - 1))
        return "".join(lines[: index + 1] + lines[index:])
    if edit == "huge number":
        digits = [i for i, c in enumerate(text) if c.isdigit() and (i == 0 or not text[i - 1].isalnum())]
        if digits:
            at = draw(st.sampled_from(digits))
            end = at
            while end < len(text) and (text[end].isdigit() or text[end] in ".eE+-"):
                end += 1
            return text[:at] + draw(st.sampled_from(HUGE_NUMBERS)) + text[end:]
        return text
    if edit == "bomb":
        return draw(yaml_bombs()) + text if kind == "yaml" else draw(deep_nesting("json"))
    if edit == "deep":
        nested = draw(deep_nesting(kind))
        key = '"deep": ' if kind == "json" else "deep: "
        return text.replace("{", "{" + key + nested + ", ", 1) if kind == "json" else text + key + nested + "\n"
    if edit == "cut":
        return text[: draw(st.integers(0, len(text)))]
    if edit == "bytes":  # written back as the bytes drawn (see _write): not UTF-8 where they are not
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.binary(max_size=6)).decode("utf-8", "surrogateescape") + text[at:]
    return text


@st.composite
def yaml_bombs(draw: st.DrawFn) -> str:
    """A billion-laughs document: ``levels`` anchors, each a list of ``fan`` aliases of the one before
    (fan**levels strings once expanded), or a merge-key chain."""
    levels, fan = draw(st.integers(1, 12)), draw(st.integers(2, 12))
    if draw(st.booleans()):
        lines = ["l0: &l0 {k0: v}"] + [f"l{i}: &l{i} {{<<: *l{i - 1}, k{i}: v}}" for i in range(1, levels)]
    else:
        lines = [f"l0: &l0 [{', '.join(['lol'] * fan)}]"]
        lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fan)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@st.composite
def deep_nesting(draw: st.DrawFn, kind: str) -> str:
    """Flow collections nested around the depth bound, or (one time in ten) 1,000 to 100,000 deep; in
    YAML also block mappings up to 200 deep. (A deep flow sequence costs the YAML scanner about 0.3 s
    whatever its depth, three times that under tracemalloc: drawn less often.)"""
    deep = draw(st.sampled_from([False] * 9 + [True]))
    depth = draw(st.sampled_from([1_000, 10_000, 100_000]) if deep else st.integers(1, 80))
    if kind == "yaml" and draw(st.booleans()):
        depth = min(depth, 200)
        return "\n" + "".join(f"{'  ' * (i + 1)}k{i}:\n" for i in range(depth)) + "  " * (depth + 1) + "v"
    opening, closing = draw(st.sampled_from([("[", "]"), ('{"k": ', "}")]))
    return opening * depth + "1" + closing * depth


def _read_or_refused(read: Callable[[], object], names: str) -> object | None:
    """What ``read`` returns, or None where it raised the harness's error naming ``names``; within
    :data:`SECONDS` and :data:`MEMORY` either way."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        value = read()
        event("read")
        return value
    except HarnessError as error:
        event("refused with the harness's error")
        assert names in str(error), f"the error does not name {names}: {error}"
        return None
    finally:
        elapsed, peak = time.perf_counter() - started, tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert elapsed < SECONDS, f"{elapsed:.1f} s"
        assert peak < MEMORY, f"{peak / 2**20:.0f} MiB"


def _write(file: Path, text: str) -> None:
    file.write_bytes(text.encode("utf-8", "surrogateescape"))


def _dump(data: object) -> str:
    return json.dumps(data, allow_nan=True)  # NaN and Infinity too, as Python writes them


def _dump_yaml(data: object) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-yolo")
    (root / "images").mkdir()
    (root / "labels").mkdir()
    Image.new("RGB", (40, 30), (120, 60, 30)).save(root / "images" / "a.jpg")
    (root / "data.yaml").write_text("names: {0: fire, 1: smoke}\n")
    return root


# --- YOLO labels and data.yaml -------------------------------------------------------------------


@FUZZ
@given(data=st.binary(max_size=200) | st.text(alphabet="0123456789 .-e\n\tnaif", max_size=80).map(str.encode))
def test_any_label_file_is_read_or_refused_with_the_harness_error(image_folder, data):
    (image_folder / "labels" / "a.txt").write_bytes(data)
    dataset = _read_or_refused(lambda: load_yolo(image_folder), str(image_folder))
    if dataset is not None:
        boxes = dataset.samples[0].ground_truth.boxes
        assert boxes.shape[1] == 4 and all(math.isfinite(v) for v in boxes.ravel())


DATA_YAML = {"path": ".", "val": "images", "names": {0: "fire", 1: "smoke"}, "nc": 2, "download": None}


@pytest.fixture(scope="module")
def yaml_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-data-yaml")
    (root / "images").mkdir()
    (root / "labels").mkdir()
    Image.new("RGB", (40, 30), (120, 60, 30)).save(root / "images" / "a.jpg")
    (root / "labels" / "a.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    return root


@FUZZ
@given(data=st.data())
def test_any_data_yaml_is_read_or_refused_with_the_harness_error(yaml_folder, data):
    """Mutated values (mixed names keys, string numbers, huge numbers), then the text broken: keys
    given twice, alias bombs, deep nesting, bytes that are not UTF-8."""
    document = data.draw(_mutations(DATA_YAML))
    text = data.draw(_text_edits(_dump_yaml(document), "yaml"))
    file = yaml_folder / "data.yaml"
    _write(file, text)
    dataset = _read_or_refused(lambda: load_yolo(file), str(yaml_folder))
    if dataset is not None:
        assert dataset.names and all(isinstance(n, str) and n for n in dataset.names)


# --- COCO JSON -----------------------------------------------------------------------------------


VALID_COCO = {
    "info": {"year": 2017},
    "images": [{"id": 1, "file_name": "a.jpg", "width": 40, "height": 30}],
    "categories": [{"id": 1, "name": "fire"}, {"id": 2, "name": "smoke"}],
    "annotations": [{"id": 1, "image_id": 1, "category_id": 2, "bbox": [1, 2, 10, 20], "iscrowd": 0}],
}


@FUZZ
@given(data=st.data())
def test_any_coco_json_is_read_or_refused_with_the_harness_error(image_folder, data):
    """Mutated records, huge numbers (10**400 overflowed), deep nesting, keys given twice."""
    document = data.draw(_mutations(VALID_COCO) | json_values)
    text = data.draw(_text_edits(_dump(document), "json"))
    file = image_folder / "instances.json"
    _write(file, text)
    dataset = _read_or_refused(lambda: load_coco(file, image_folder / "images"), "instances.json")
    if dataset is not None:
        for sample in dataset.samples:
            assert all(math.isfinite(v) for v in sample.ground_truth.boxes.ravel())


# --- Ultralytics export folders ------------------------------------------------------------------


METADATA = {
    "description": "Ultralytics YOLOv8s model",
    "task": "detect",
    "stride": 32,
    "imgsz": [640, 640],
    "names": {0: "fire", 1: "smoke", 2: "other"},
    "end2end": False,
    "args": {"data": "fire_smoke.yaml", "fraction": 0.5},
    "hailo_arch": "hailo8l",
    "nms": True,
}
NMS_CONFIG = {
    "nms_scores_th": 0.2,
    "nms_iou_th": 0.7,
    "image_dims": [640, 640],
    "max_proposals_per_class": 100,
    "classes": 3,
    "regression_length": 16,
    "background_removal": False,
    "background_removal_index": 0,
    "bbox_decoders": [
        {"name": f"bbox_decoder_{s}", "stride": s, "reg_layer": f"conv{r}", "cls_layer": f"conv{r + 1}"}
        for s, r in ((8, 41), (16, 52), (32, 62))
    ],
}


@pytest.fixture(scope="module")
def export_folder(shared_fixtures, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz-export") / "m_hailo_model"
    folder.mkdir()
    (folder / "m.hef").symlink_to(shared_fixtures / "hef_bad" / "hailo8l_yolov8s_nms_truncated.hef")
    return folder


@FUZZ
@given(data=st.data())
def test_any_ultralytics_export_folder_is_read_or_refused_with_the_harness_error(export_folder, data):
    """metadata.yaml and nms_config.json mutated (string numbers, "false", huge numbers, mixed names
    keys, layer names that are paths), then their text broken (keys given twice, bombs, depth)."""
    metadata = data.draw(_mutations(METADATA))
    config = data.draw(_mutations(NMS_CONFIG))
    _write(export_folder / "metadata.yaml", data.draw(_text_edits(_dump_yaml(metadata), "yaml")))
    _write(export_folder / "nms_config.json", data.draw(_text_edits(_dump(config), "json")))
    export = _read_or_refused(lambda: read_export(export_folder), str(export_folder))
    if export is not None:
        assert all(isinstance(n, str) and n for n in export.names)
        assert isinstance(export.end2end, bool) and isinstance(export.nms, bool)
        if export.nms_config is not None:
            assert isinstance(export.nms_config.background_removal, bool)
            assert 0 <= export.nms_config.score_threshold <= 1
            assert all(".." not in d.reg_layer.split("/") for d in export.nms_config.bbox_decoders)


# --- JSON and YAML at large ----------------------------------------------------------------------


@FUZZ
@given(text=yaml_bombs() | deep_nesting("yaml") | deep_nesting("json") | st.sampled_from(HUGE_NUMBERS))
def test_any_bomb_deep_nesting_or_huge_number_is_refused_or_read_within_bounds(text):
    """Whatever the document, :mod:`harness.core.documents` refuses it naming it or reads it, in
    bounded time and memory: an alias bomb is refused at its first anchor, never expanded."""
    for parse in (parse_json, parse_yaml):
        _read_or_refused(lambda parse=parse: parse(text, "fuzzed.doc"), "fuzzed.doc")


@FUZZ
@given(data=st.data())
def test_any_mutated_json_or_yaml_text_is_refused_or_read_as_the_standard_reader_reads_it(data):
    document = data.draw(json_values)
    for kind, dump, standard, parse in (
        ("json", _dump, json.loads, parse_json),
        ("yaml", _dump_yaml, yaml.safe_load, parse_yaml),
    ):
        text = data.draw(_text_edits(dump(document), kind))
        value = _read_or_refused(lambda parse=parse, text=text: parse(text, "fuzzed.doc"), "fuzzed.doc")
        if value is not None:
            assert value == standard(text)  # what is read is what a plain reader reads


# --- baselines and HEFs --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def baseline_document() -> dict:
    truths = sr.truths()
    return json.loads(
        json.dumps(golden_writing.baseline_document(golden_from_result(sr.result(sr.predictions(truths), truths))))
    )


@FUZZ
@given(data=st.data())
def test_any_baseline_json_is_read_or_refused_with_the_harness_error(tmp_path_factory, baseline_document, data):
    document = data.draw(_mutations(baseline_document))
    file = tmp_path_factory.getbasetemp() / "fuzz-golden" / "ds--onnx.json"
    file.parent.mkdir(exist_ok=True)
    file.write_text(_dump(document))
    golden = _read_or_refused(lambda: load_golden(file), "ds--onnx.json")
    if golden is not None:
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
        _read_or_refused(lambda tolerant=tolerant: read_hef(file, tolerant=tolerant), "fuzz.hef")
