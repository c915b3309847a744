"""A job spread over shards and merged gives the single run's verdict to the bit: the emulated and
the replayed Hailo path, in 2 and 4 shards; stores that do not belong together are refused in one
line naming the file and the field."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli
from harness.core import journal, signing
from harness.core.errors import HarnessError
from harness.core.files import SHARED_CACHE_VARIABLE
from harness.inputs.dataset import Sample
from harness.pipeline import cache as cache_module
from harness.pipeline.cache import JOURNAL, KEY_RECORD, detection_code, key_digest
from harness.pipeline.job import JobResult, run_job
from harness.pipeline.options import from_text, job_config
from harness.pipeline.shard import MANIFEST, merge_job, run_shard
from harness.pipeline.shard_share import Shard

# What differs between two runs of one job, the merge or not: when a path's result was made and how
# many of its predictions came from a prediction cache (the merge serves every one from the stores).
# What each run did on its own: when, what it read from the prediction cache, and which shared-cache entries
# it opened and how it found them (built by the first run, sealed for the next; a merge opens no model).
TIMING_FIELDS = ("created", "from_cache", "shared_cache")


def _config(values: dict[str, Any], report: Path) -> Any:
    return job_config({**values, "report": report}, invocation=("hailo-harness", "run"), progress=False)


def _sharded(values: dict[str, Any], tmp: Path, count: int) -> tuple[JobResult, list[Path]]:
    stores = []
    for index in range(1, count + 1):
        store = tmp / f"shard-{index}-of-{count}"
        run_shard(_config(values, store), Shard(index, count), values, log=lambda line: None)
        stores.append(store)
    merge = {k: v for k, v in values.items() if k == "cache"} | {"report": tmp / f"merged-{count}"}
    return merge_job(list(reversed(stores)), merge, ("hailo-harness", "merge"), log=lambda line: None), stores


def _document(job: JobResult) -> dict[str, Any]:
    document = json.loads(job.reports["json"].read_text())
    for path in document["paths"]:
        for name in TIMING_FIELDS:
            path["provenance"].pop(name)
    return document


def _same_verdict(single: JobResult, merged: JobResult) -> None:
    for one, other in zip(single.results, merged.results, strict=True):
        assert one.image_ids == other.image_ids
        for a, b in zip(one.predictions, other.predictions, strict=True):
            assert (a.boxes.tobytes(), a.scores.tobytes(), a.class_ids.tobytes()) == (
                b.boxes.tobytes(),
                b.scores.tobytes(),
                b.class_ids.tobytes(),
            )
        assert (one.cells, one.box_counts, one.settings, one.kind) == (
            other.cells,
            other.box_counts,
            other.settings,
            other.kind,
        )
    gates = [[(g.name, g.passed, g.observed, g.baseline, g.text) for g in job.gates] for job in (single, merged)]
    assert gates[0] == gates[1]
    assert _document(single) == _document(merged)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shards")


@pytest.fixture(scope="module")
def emulated(folder: Path) -> tuple[dict[str, Any], JobResult]:
    values: dict[str, Any] = {"cache": folder / "cache"}
    return values, run_job(_config(values, folder / "single"), log=lambda line: None)


@pytest.mark.parametrize("count", [2, 4])
def test_shards_of_the_emulated_job_merge_to_the_single_runs_verdict_bit_for_bit(
    emulated: tuple[dict[str, Any], JobResult], folder: Path, count: int
) -> None:
    values, single = emulated
    merged, stores = _sharded(values, folder / f"emulated-{count}", count)
    assert single.passed and [g.name for g in merged.gates] == [g.name for g in single.gates]
    _same_verdict(single, merged)
    shares = [json.loads((s / MANIFEST).read_text()) for s in stores]
    assert [m["shard"] for m in shares] == [f"{k}/{count}" for k in range(1, count + 1)]


def test_shards_of_a_replayed_job_merge_to_the_single_runs_verdict_bit_for_bit(
    emulated: tuple[dict[str, Any], JobResult], folder: Path
) -> None:
    values, _ = emulated
    store = folder / "outputs.rec"
    run_job(_config({**values, "record": store}, folder / "recording"), log=lambda line: None)
    replay = {**values, "replay": store}
    single = run_job(_config(replay, folder / "replayed"), log=lambda line: None)
    assert single.results[-1].replayed
    for count in (2, 4):
        merged, _ = _sharded(replay, folder / f"replayed-{count}", count)
        _same_verdict(single, merged)


def test_a_shard_takes_every_nth_image_by_name_whatever_order_it_is_listed_in() -> None:
    samples = [Sample(Path(f"{i}.jpg"), f"img{i:03d}.jpg", f"{i:064x}", (1, 1), None) for i in range(10)]  # type: ignore[arg-type]
    for count in (1, 3, 4):
        shares = [Shard(k, count).share(samples) for k in range(1, count + 1)]
        assert sorted(s.image_id for share in shares for s in share) == [s.image_id for s in samples]
        assert {len(share) for share in shares} <= {10 // count, -(-10 // count)}
        shuffled = random.Random(count).sample(samples, len(samples))
        again = [Shard(k, count).share(shuffled) for k in range(1, count + 1)]
        assert [{s.image_id for s in a} for a in again] == [{s.image_id for s in b} for b in shares]
    assert [s.image_id for s in Shard(2, 4).share(samples)] == ["img001.jpg", "img005.jpg", "img009.jpg"]
    with pytest.raises(HarnessError, match=r"--shard 11/11: the dataset has 10 readable images, fewer than 11"):
        Shard(11, 11).share(samples)


@pytest.mark.parametrize("text", ["0/2", "3/2", "2", "a/b", "1/0", "-1/2", "1/2/3"])
def test_a_shard_that_is_not_k_of_n_is_refused_naming_the_option(text: str) -> None:
    with pytest.raises(HarnessError, match=rf"^--shard {text!r}: expected K/N"):
        from_text("shard", text)
    assert from_text("shard", " 2/4") == Shard(2, 4)


def test_a_shard_blesses_nothing_the_merge_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--shard", "1/2", "--update-golden"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--update-golden: a shard blesses nothing" in err
    assert "hailo-harness merge STORE... --update-golden" in err


def test_run_with_a_bad_shard_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:  # argparse's own usage error
        cli.main(["run", "--shard", "5/4"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--shard: '5/4': expected K/N with K from 1 to N (e.g. 2/4), got K 5 of N 4" in err


def _store(folder: Path, values: dict[str, Any], index: int, count: int, name: str) -> Path:
    store = folder / name
    run_shard(_config(values, store), Shard(index, count), values, log=lambda line: None)
    return store


def test_stores_that_do_not_make_one_job_are_refused_naming_the_file_and_the_field(
    emulated: tuple[dict[str, Any], JobResult], folder: Path
) -> None:
    values, _ = emulated
    tmp = folder / "refused"
    first = _store(tmp, values, 1, 2, "a")
    second = _store(tmp, values, 2, 2, "b")
    other = _store(tmp, {**values, "score_threshold": 0.3}, 2, 2, "c")
    again = _store(tmp, values, 1, 2, "d")
    merge = {"cache": values["cache"], "report": tmp / "merged"}

    def refusal(stores: list[Path]) -> str:
        with pytest.raises(HarnessError) as error:
            merge_job(stores, merge, ("hailo-harness", "merge"), log=lambda line: None)
        assert "\n" not in str(error.value)
        return str(error.value)

    assert refusal([first, other]).startswith(
        f"not the shards of one job: {other / MANIFEST}: settings.score_threshold 0.3 vs {first / MANIFEST}: 0.2; "
    )
    assert refusal([first, again]) == (
        f"{again / MANIFEST}: shard 1/2 given twice (also {first / MANIFEST}); expected each shard once"
    )
    assert refusal([second]).startswith(f"{second / MANIFEST}: shard 2/2 of 2; shards ['1/2'] missing")
    assert refusal([first, tmp]).startswith(f"{tmp / MANIFEST}: not found")
    manifest = json.loads((second / MANIFEST).read_text())
    manifest["dataset"]["manifest"] = "0" * 64
    (second / MANIFEST).write_text(json.dumps(manifest))
    assert refusal([first, second]) == (
        f"{second / MANIFEST}: changed after it was written (its sha256 no longer holds); refused (the harness "
        "writes it: make it again, do not edit it)"
    )
    _resealed(second / MANIFEST, manifest)
    assert refusal([first, second]).startswith(
        f"not the shards of one job: {second / MANIFEST}: dataset.manifest '{'0' * 16}...' vs {first / MANIFEST}: "
    )
    manifest = json.loads((first / MANIFEST).read_text())
    manifest["paths"][1]["model_sha256"] = "1" * 64
    _resealed(second / MANIFEST, manifest | {"shard": "2/2"})
    assert f"but {second / MANIFEST} states '{'1' * 16}...'; expected the predictions its manifest names" in refusal(
        [first, second]
    )
    _resealed(second / MANIFEST, manifest | {"shard": "2/2", "extra": 1})
    assert "has unknown keys ['extra']" in refusal([first, second])


def _resealed(file: Path, document: dict[str, Any]) -> None:
    """``document`` written to ``file`` with a seal that holds (as someone who recomputes the digest would)."""
    document = {k: v for k, v in document.items() if k != "seal"}
    file.write_text(json.dumps(document | {"seal": signing.seal_document(document, None)}))


def test_merge_on_the_command_line_gates_the_union_and_exits_as_run_does(
    emulated: tuple[dict[str, Any], JobResult], folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values, single = emulated
    cache = str(values["cache"])
    stores = [str(folder / "cli" / f"s{k}") for k in (1, 2)]
    for k, store in enumerate(stores, 1):
        assert cli.main(["run", "--cache", cache, "--report", store, "--shard", f"{k}/2"]) == 0
        assert f"shard {k}/2: 50 of 100 images, onnx and emulated-hailo, stored in {store}" in capsys.readouterr().out
    assert cli.main(["merge", *stores, "--cache", cache, "--report", str(folder / "cli" / "merged")]) == 0
    assert f"PASSED: {len(single.gates)} of {len(single.gates)} gates passed" in capsys.readouterr().out
    assert cli.main(["merge", stores[0], "--cache", cache]) == 2
    assert "shards ['2/2'] missing" in capsys.readouterr().err


def test_the_merge_blesses_the_union_and_the_whole_run_then_passes_against_it(
    emulated: tuple[dict[str, Any], JobResult], folder: Path
) -> None:
    values, _ = emulated
    tmp, golden = folder / "blessing", folder / "blessing" / "golden"
    stores = [_store(tmp, values, index, 2, f"s{index}") for index in (1, 2)]
    merge = {"cache": values["cache"], "report": tmp / "merged", "golden": golden, "update_golden": True}
    blessed = merge_job(stores, merge, ("hailo-harness", "merge"), log=lambda line: None)
    assert blessed.golden_changes and blessed.passed
    assert sorted(p.name for p in golden.rglob("*.json")) == [
        "synthetic_fire_smoke_seed0--emulated-hailo.json",
        "synthetic_fire_smoke_seed0--onnx.json",
    ]
    rerun = run_job(_config({**values, "golden": golden}, tmp / "rerun"), log=lambda line: None)
    assert rerun.passed and [g.name for g in rerun.gates] == [g.name for g in blessed.gates]


def test_a_damaged_or_incomplete_store_is_refused_naming_its_predictions_file(
    emulated: tuple[dict[str, Any], JobResult], folder: Path
) -> None:
    values, _ = emulated
    tmp = folder / "damaged"
    stores = [_store(tmp, values, index, 2, f"s{index}") for index in (1, 2)]
    merge = {"cache": values["cache"], "report": tmp / "merged"}
    file = next((stores[1] / "predictions").glob("emulated-hailo-*.bin"))
    data = bytearray(file.read_bytes())
    data[-10] ^= 0xFF  # a flipped bit in the last batch of predictions
    file.write_bytes(bytes(data))
    with pytest.raises(HarnessError, match=rf"^{file}: .*\(damaged; run shard 2/2 again\)$"):
        merge_job(stores, merge, ("hailo-harness", "merge"), log=lambda line: None)
    file.unlink()
    with pytest.raises(HarnessError, match=r"paths\[emulated-hailo\]\.file: .* not found \(run that shard again\)$"):
        merge_job(stores, merge, ("hailo-harness", "merge"), log=lambda line: None)


def test_the_options_a_shard_keeps_read_back_as_the_command_line_gave_them(tmp_path: Path) -> None:
    from harness.cli.main import build_parser
    from harness.pipeline.shard import KEPT_OPTIONS, kept_options, option_values

    (tmp_path / "m.hef").write_bytes(b"")
    argv = ["run", "--onnx", "m.onnx", "--hef", str(tmp_path / "m.hef"), "--dataset", "d", "--calibration", "in-domain"]
    argv += ["--calibration-count", "32", "--batch", "4", "--score-threshold", "0.3", "--iou-threshold", "0.65"]
    argv += ["--nms", "ultralytics", "--preprocess", "resize", "--metric", "ultralytics", "--max-unreadable", "0.1"]
    argv += ["--map-class", "smoke=fire", "--map-class", "a=b=c", "--map-class", "steam=", "--hailo-format", "uint8"]
    argv += ["--shard", "2/3", "--hailo-device", "0000:01:00.0", "--record", "out.rec", "--output-bits", "8"]
    values = vars(build_parser("run").parse_args(argv))
    kept = kept_options(values)
    assert "shard" not in kept and "hailo_device" not in kept and "record" not in kept
    assert kept["map_class"] == ["smoke=fire", "a=b=c", "steam="] and kept["output_bits"] == "8"
    again = option_values(json.loads(json.dumps(kept)), tmp_path / MANIFEST)
    assert again == {k: v for k, v in values.items() if k in kept} and set(kept) <= set(KEPT_OPTIONS)
    with pytest.raises(HarnessError, match=r"shard.json: options.record: not an option a shard keeps"):
        option_values({"record": "x"}, tmp_path / MANIFEST)
    with pytest.raises(HarnessError, match=r"shard.json: options.batch: --batch '0': expected a whole number"):
        option_values({"batch": "0"}, tmp_path / MANIFEST)


def _identity_edited(store: Path, path: str, change: Callable[[dict[str, Any]], None]) -> Path:
    """``path``'s prediction file in ``store`` with its key changed by ``change``, every checksum made
    again, renamed as its new key names it, and the manifest naming it resealed: only the identity differs."""
    file = next((store / "predictions").glob(f"{path}-*.bin"))
    found = journal.scan(file.read_bytes(), JOURNAL, file)
    key = json.loads(bytes(found.records[0].payload))
    change(key)
    payload = json.dumps(key, sort_keys=True, separators=(",", ":")).encode()
    records = [journal.encode_record(KEY_RECORD, payload)]
    records += [journal.encode_record(r.kind, bytes(r.payload)) for r in found.records[1:]]
    new = file.with_name(f"{path}-{key_digest(key)[:24]}.bin")
    file.unlink()
    new.write_bytes(JOURNAL.preamble + b"".join(records))
    manifest = json.loads((store / MANIFEST).read_text())
    for entry in manifest["paths"]:
        if entry["name"] == path:
            entry["file"] = new.name
    _resealed(store / MANIFEST, manifest)
    return new


def _refused(stores: list[Path], merge: dict[str, Any]) -> str:
    with pytest.raises(HarnessError) as error:
        merge_job(stores, merge, ("hailo-harness", "merge"), log=lambda line: None)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_a_shard_from_other_code_another_runtime_or_harness_version_is_refused_naming_store_field_and_values(
    emulated: tuple[dict[str, Any], JobResult], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, _ = emulated
    tmp = folder / "identity"
    first = _store(tmp, values, 1, 2, "a")
    with monkeypatch.context() as patched:  # the second shard's runner holds other detection code
        patched.setattr(cache_module, "detection_code", lambda: "f" * 64)
        other_code = _store(tmp, values, 2, 2, "b")
    merge = {"cache": values["cache"], "report": tmp / "merged"}
    said = _refused([first, other_code], merge)
    ours = next((first / "predictions").glob("emulated-hailo-*.bin"))
    theirs = next((other_code / "predictions").glob("emulated-hailo-*.bin"))
    real = detection_code()[:16]
    assert said.startswith("not the shards of one job: ")
    assert f"{theirs}: paths[emulated-hailo].key.code '{'f' * 16}...' vs {ours}: '{real}...'" in said
    assert f"{theirs}: paths[emulated-hailo].key.code '{'f' * 16}...' vs this merge's harness: '{real}...'" in said

    second = _store(tmp, values, 2, 2, "c")
    assert merge_job([first, second], merge, ("hailo-harness", "merge"), log=lambda line: None).passed
    runtime = _identity_edited(second, "emulated-hailo", lambda key: key["environment"].update(onnxruntime="0.0.1"))
    said = _refused([second, first], merge)
    assert f"{runtime}: paths[emulated-hailo].key.environment.onnxruntime '0.0.1' vs {ours}: " in said
    assert "key.code" not in said

    version = _store(tmp, values, 2, 2, "d")
    _identity_edited(version, "onnx", lambda key: key.update(harness="0.0.0"))
    manifest = json.loads((version / MANIFEST).read_text())
    _resealed(version / MANIFEST, manifest | {"harness_version": "0.0.0"})
    said = _refused([first, version], merge)
    assert f"{version / MANIFEST}: harness_version '0.0.0' vs {first / MANIFEST}: " in said
    assert "paths[onnx].key.harness '0.0.0' vs this merge's harness: " in said


def test_a_shard_whose_notes_differ_is_refused_and_a_signed_fleet_merges_under_require_signed(
    emulated: tuple[dict[str, Any], JobResult], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, _ = emulated
    tmp = folder / "notes"
    monkeypatch.setenv(signing.KEY_VARIABLE, "r" * 32)
    stores = [_store(tmp, values, k, 2, f"s{k}") for k in (1, 2)]
    merge = {"cache": values["cache"], "report": tmp / "merged", "golden": tmp / "golden"}
    merge_job(stores, merge | {"update_golden": True}, ("hailo-harness", "merge"), log=lambda line: None)
    monkeypatch.setenv(signing.REQUIRE_VARIABLE, "1")  # the baselines just blessed are signed too
    assert merge_job(stores, merge, ("hailo-harness", "merge"), log=lambda line: None).passed
    monkeypatch.delenv(signing.KEY_VARIABLE)
    assert _refused(stores, merge).startswith(
        f"{stores[0] / MANIFEST}: not signed with the release key (signed with key"
    )
    monkeypatch.delenv(signing.REQUIRE_VARIABLE)
    manifest = json.loads((stores[1] / MANIFEST).read_text())
    _resealed(stores[1] / MANIFEST, manifest | {"calibration": "64 images of another set"})
    said = _refused(stores, merge)
    assert f"{stores[1] / MANIFEST}: calibration '64 images of another set' vs {stores[0] / MANIFEST}: " in said


def test_a_shard_run_deletes_nothing_it_did_not_write(
    emulated: tuple[dict[str, Any], JobResult], folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values, _ = emulated
    tmp, cache = folder / "own", str(values["cache"])
    mine = tmp / "out" / "predictions" / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine\n")
    assert cli.main(["run", "--cache", cache, "--report", str(tmp / "out"), "--shard", "1/2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{mine} was not written by a shard run (it is kept)" in err
    assert mine.read_text() == "mine\n"

    kept = sorted((values["cache"] / "predictions").iterdir())
    assert cli.main(["run", "--cache", cache, "--report", cache, "--shard", "1/2"]) == 2
    assert "predictions/ is the prediction cache of --cache" in capsys.readouterr().err
    assert sorted((values["cache"] / "predictions").iterdir()) == kept

    (tmp / "notes").mkdir()
    (tmp / "notes" / MANIFEST).write_text("{}\n")
    assert cli.main(["run", "--cache", cache, "--report", str(tmp / "notes"), "--shard", "1/2"]) == 2
    assert f"{MANIFEST} is not a shard manifest this harness wrote" in capsys.readouterr().err
    assert (tmp / "notes" / MANIFEST).read_text() == "{}\n"

    store = _store(tmp, values, 1, 2, "s1")
    before = sorted(p.name for p in (store / "predictions").iterdir())
    again = _store(tmp, values, 1, 2, "s1")  # its own files replaced
    assert sorted(p.name for p in (again / "predictions").iterdir()) == before and len(before) == 3


def test_a_merge_refuses_before_any_image_is_read_where_its_cache_lacks_the_shards_demo_set(
    emulated: tuple[dict[str, Any], JobResult], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, _ = emulated
    tmp = folder / "no-cache"
    stores = [_store(tmp, values, k, 2, f"s{k}") for k in (1, 2)]
    monkeypatch.delenv(SHARED_CACHE_VARIABLE)  # the demo set where --cache names it, not the suite's shared one
    said = _refused(stores, {"cache": tmp / "empty", "report": tmp / "merged"})
    assert said.startswith(f"--cache {tmp / 'empty'}: the shards ran on the demo set, which is not in it")
    assert not (tmp / "empty").exists()


def test_a_files_place_in_an_option_or_a_note_is_not_a_shards_identity_but_its_name_is() -> None:
    from harness.pipeline.shard_identity import _placeless

    note = "64 images of the demo set's in-domain frames /runner-1/cache/demo-data/set/images/calib (ranges)"
    assert _placeless(note) == _placeless(note.replace("/runner-1/cache", "/home/ci/work/.harness-cache"))
    assert _placeless(note) != _placeless(note.replace("images/calib", "images/offdomain"))
    assert _placeless(["smoke=fire", "exports/m.onnx"]) == ["smoke=fire", "m.onnx"]
    assert _placeless("0.25") == "0.25" and _placeless(True) is True


def test_a_manifest_of_format_1_without_a_seal_still_merges_and_is_named_unsealed(
    emulated: tuple[dict[str, Any], JobResult], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, _ = emulated
    tmp = folder / "format-1"
    stores = [_store(tmp, values, k, 2, f"s{k}") for k in (1, 2)]
    for store in stores:
        document = json.loads((store / MANIFEST).read_text())
        document.pop("seal")
        (store / MANIFEST).write_text(json.dumps(document | {"format": 1}))
    lines: list[str] = []
    merge = {"cache": values["cache"], "report": tmp / "merged"}
    assert merge_job(stores, merge, ("hailo-harness", "merge"), log=lines.append).passed
    assert any(line.endswith("(manifests unsealed)") for line in lines)
    monkeypatch.setenv(signing.REQUIRE_VARIABLE, "1")
    assert _refused(stores, merge).startswith(f"{stores[0] / MANIFEST}: not signed with the release key (no seal")
