import json
from dataclasses import replace

import pytest

from harness.verdict.gates import run_gates
from harness.verdict.golden import GoldenError, blessed_history, golden_path
from harness.verdict.golden_blessing import golden_from_result, write_golden
from harness.verdict.golden_reading import load_golden
from harness.verdict.history import release_name

from support import synthetic_results as sr

SHA_1, SHA_2 = "1" * 64, "2" * 64


def _result(drop_images=0, created="2025-03-04T05:06:07Z", sha=SHA_1, path="hailo"):
    """A run on the synthetic set whose first ``drop_images`` images lost their detections."""
    truths = sr.truths()
    preds = sr.predictions(truths)
    preds[:drop_images] = [p.select(slice(0, 0)) for p in preds[:drop_images]]
    return sr.result(preds, truths, path=path, created=created, model_sha256=sha)


@pytest.fixture(scope="module")
def first():
    return _result()


@pytest.fixture(scope="module")
def second():
    return _result(drop_images=3, created="2025-05-06T07:08:09Z", sha=SHA_2)


@pytest.fixture
def file(tmp_path, first):
    return golden_path(tmp_path, first.provenance.model_path, first.path, first.provenance.dataset)


def test_two_blessings_with_two_releases_are_both_in_the_history_in_order(file, first, second):
    write_golden(file, golden_from_result(first, release="v1.2"))
    summary = write_golden(file, golden_from_result(second, release="v1.3"))
    loaded = load_golden(file)
    history = blessed_history(loaded)
    assert [(b.release, b.created, b.model_sha256) for b in history] == [
        ("v1.2", "2025-03-04T05:06:07Z", SHA_1),
        ("v1.3", "2025-05-06T07:08:09Z", SHA_2),
    ]
    assert history[0].value("map") == round(first.metrics.map50, 6) != history[1].value("map")
    assert history[1].value("map") == loaded.metrics.map50  # the last one is the baseline the gates hold
    assert history[0].value("box_count") == round(first.box_counts.mean, 6)
    assert history[0].value("path_agreement") is None  # blessed without a reference
    assert "release: n/a -> v1.3" not in summary and "release: v1.2 -> v1.3" in summary
    assert "history: 1 earlier blessing, the replaced one added last" in summary


def test_the_history_survives_a_blessing_of_an_unchanged_model(file, first, second):
    write_golden(file, golden_from_result(first, release="v1.2"))
    write_golden(file, golden_from_result(second, release="v1.3"))
    again = replace(second, provenance=replace(second.provenance, created="2025-06-01T00:00:00Z"))
    write_golden(file, golden_from_result(again))  # the same model blessed again, no release named
    history = blessed_history(load_golden(file))
    assert [(b.release, b.model_sha256) for b in history] == [("v1.2", SHA_1), ("v1.3", SHA_2), (None, SHA_2)]
    assert history[1].values == history[2].values


def test_a_baseline_written_back_as_read_adds_no_blessing(file, first, second):
    write_golden(file, golden_from_result(first, release="v1.2"))
    write_golden(file, golden_from_result(second, release="v1.3"))
    loaded = load_golden(file)
    write_golden(file, loaded)
    assert load_golden(file).history == loaded.history and len(loaded.history) == 1


def test_the_replaced_values_move_into_the_history_one_field_per_line(file, first, second):
    write_golden(file, golden_from_result(first, release="v1.2"))
    old = file.read_text()
    write_golden(file, golden_from_result(second, release="v1.3"))
    new = file.read_text()
    data = json.loads(new)
    assert new == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert data["release"] == "v1.3" and json.loads(old)["history"] == []
    (entry,) = data["history"]
    assert entry["values"]["map"] == json.loads(old)["metrics"]["map50"]
    assert entry["created"] == json.loads(old)["provenance"]["created"]
    assert f'      "model_sha256": "{SHA_1}",' in new.splitlines()  # the entry's own line in a review diff


def test_a_baseline_of_schema_2_reads_without_history_and_begins_the_history_of_the_next(file, first, second):
    write_golden(file, golden_from_result(first))
    data = json.loads(file.read_text())
    data.update(schema_version=2)
    del data["release"], data["history"], data["history_tip"], data["seal"]
    file.write_text(json.dumps(data))
    old = load_golden(file)
    assert old.history == () and old.release is None
    assert [b.created for b in blessed_history(old)] == [first.provenance.created]
    write_golden(file, golden_from_result(second, release="v1.3"))
    assert [b.release for b in blessed_history(load_golden(file))] == [None, "v1.3"]


def test_a_blessing_over_another_models_baseline_keeps_none_of_its_history(tmp_path, file, first, second):
    write_golden(file, golden_from_result(first, release="v1.2"))
    data = json.loads(file.read_text())
    data["model"] = "yolov8n"  # another model's baseline copied into this file
    file.write_text(json.dumps(data))
    write_golden(file, golden_from_result(second, release="v1.3"))
    assert [b.release for b in blessed_history(load_golden(file))] == ["v1.3"]


def _entry(**changes):
    entry = {
        "created": "2025-01-02T03:04:05Z",
        "dataset": "fire_smoke_val",
        "dataset_manifest": "m" * 64,
        "metric": "coco",
        "model": "fire_smoke_yolo11n",
        "model_sha256": SHA_1,
        "path": "hailo",
        "release": "v1.0",
        "values": {"box_count": 1.5, "map": 0.7, "map50_95": 0.5, "score_saturation": 0.0},
    }
    entry.update(changes)
    return entry


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ([_entry(values={"map": float("nan")})], r"NaN is not a JSON number \(field history\[0\]\.values\.map\)"),
        ([_entry(values={"map": "0.7"})], r"field history\[0\]\.values\.map is '0\.7', expected a share in \[0, 1\]"),
        ([_entry(values={"box_count": -1})], r"field history\[0\]\.values\.box_count is -1, expected a finite number"),
        ([_entry(values={"mAP": 0.7})], r"field history\[0\]\.values has unknown keys \['mAP'\]"),
        ([_entry(values={})], r"field history\[0\]\.values is \{\}, expected the blessed value of at least one"),
        ([_entry(), _entry(note="ok")], r"field history\[1\] has unknown keys \['note'\]"),
        ([_entry(model="yolov8n")], r"field history\[0\]\.model is 'yolov8n', expected 'fire_smoke_yolo11n': this"),
        ([_entry(dataset="coco")], r"field history\[0\]\.dataset is 'coco', expected 'fire_smoke_val'"),
        ([_entry(path="onnx")], r"field history\[0\]\.path is 'onnx', expected 'hailo'"),
        ([_entry(release="v 1")], r"field history\[0\]\.release is 'v 1', expected a release name"),
        ([_entry(release=13)], r"field history\[0\]\.release is 13, expected a release name"),
        ([_entry(created="yesterday")], r"field history\[0\]\.created is 'yesterday', expected an ISO 8601 time"),
        ([_entry(metric="voc")], r"field history\[0\]\.metric is 'voc', expected one of \['coco', 'ultralytics'\]"),
        ([_entry(model_sha256=None)], r"field history\[0\]\.model_sha256 is None, expected a non-empty string"),
        ({"0": _entry()}, r"field history is \{.*, expected a list"),
    ],
)
def test_a_bad_history_entry_is_refused_naming_the_file_and_the_field(file, first, history, message):
    write_golden(file, golden_from_result(first))
    data = json.loads(file.read_text())
    data["history"] = history
    file.write_text(json.dumps(data))
    with pytest.raises(GoldenError, match=rf"^{file}: {message}"):
        load_golden(file)


def test_a_history_key_given_twice_is_refused(file, first):
    write_golden(file, golden_from_result(first, release="v1.2"))
    text = file.read_text().replace('"release": "v1.2"', '"release": "v1.2",\n  "release": "v9"', 1)
    file.write_text(text)
    with pytest.raises(GoldenError, match=rf"^{file}: .*release"):
        load_golden(file)


def test_a_blessing_over_a_baseline_of_a_bad_history_keeps_that_file_in_its_history_folder(file, first, second):
    write_golden(file, golden_from_result(first))
    data = json.loads(file.read_text())
    data["history"] = [_entry(values={"map": 2.0})]
    file.write_text(json.dumps(data))
    before = file.read_bytes()
    write_golden(file, golden_from_result(second, release="v1.3"))  # an unreadable baseline is replaced, kept
    assert blessed_history(load_golden(file))[0].release == "v1.3"
    kept = list((file.parent / "history" / file.stem).glob("*-unreadable.json"))
    assert [k.read_bytes() for k in kept] == [before]


def test_the_gates_never_read_the_history(file, first, second):
    write_golden(file, golden_from_result(first, release="v1.2"))
    data = json.loads(file.read_text())
    data["history"] = [_entry(values={"map": 0.0, "box_count": 99.0, "map50_95": 0.0, "score_saturation": 1.0})]
    file.write_text(json.dumps(data))
    tampered = load_golden(file)
    assert tampered.history
    held = run_gates(second, tampered)
    assert [(g.passed, g.baseline, g.observed, g.text) for g in held] == [
        (g.passed, g.baseline, g.observed, g.text) for g in run_gates(second, replace(tampered, history=()))
    ]


@pytest.mark.parametrize("name", ["v1.3", "2025.01-rc1", "release_7+build.2", "версия-2"])
def test_a_release_name_is_letters_digits_and_a_few_marks(name):
    assert release_name(name) == name


@pytest.mark.parametrize("name", ["", ".hidden", "v 1.3", "a/b", "x" * 65, "v1\n"])
def test_a_release_name_of_other_characters_is_refused(name):
    with pytest.raises(ValueError, match="expected a release name of at most 64"):
        release_name(name)


def _leaves(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    else:
        yield path


_OF_ITS_KIND = {
    (("release",), None),
    (("release",), "x"),
    (("dataset_manifest",), "x"),
    (("model_sha256",), "x"),
    (("values", "box_count"), 1.5),
    (("previous",), None),  # an entry outside the chain: named by the chain's check, not by the schema
    (("seal", "hmac"), None),
    (("seal", "key_id"), None),
}


@pytest.mark.parametrize("bad", [None, True, -1, 1.5, "", "x", [], {}, [{}]])
def test_any_value_in_any_history_field_is_read_or_refused_with_the_baseline_error(file, first, second, bad):
    write_golden(file, golden_from_result(first, release="v1.2"))
    write_golden(file, golden_from_result(second, release="v1.3"))
    document = json.loads(file.read_text())
    for path in _leaves(document["history"][0]):
        data = json.loads(json.dumps(document))
        *parents, key = path
        node = data["history"][0]
        for parent in parents:
            node = node[parent]
        node[key] = bad
        file.write_text(json.dumps(data))
        try:
            loaded = load_golden(file)
        except GoldenError as error:
            assert str(error).startswith(f"{file}: ") and f"history[0].{'.'.join(path)}" in str(error)
        else:  # a value of the field's kind: read as written
            assert (path, bad) in _OF_ITS_KIND
            entry = blessed_history(loaded)[0]
            if path[0] == "seal":
                assert entry.seal is not None and entry.seal[path[1]] == bad
            else:
                assert (entry.value(path[1]) if path[0] == "values" else getattr(entry, path[0])) == bad
