"""The blessed history as a hash chain: each edit a hand can make to it is named, entry by entry."""

import json
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest

from harness.core import signing
from harness.verdict.golden import GoldenError, golden_path
from harness.verdict.golden_blessing import golden_from_result, write_golden
from harness.verdict.golden_reading import load_golden
from harness.verdict.history import Blessing
from harness.verdict.history_chain import appended, digest, entry_document, problems, tip

from support import synthetic_results as sr

KEY = "a-release-key-for-the-tests-0123456789"
TIMES = ("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z", "2025-04-01T00:00:00Z")


@pytest.fixture(autouse=True)
def no_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key and no --require-signed unless a test sets them (and none left behind)."""
    monkeypatch.setenv(signing.KEY_VARIABLE, "")  # set, so that its undo removes what a test sets
    monkeypatch.setenv(signing.REQUIRE_VARIABLE, "0")  # require_signed() sets it: undone after
    monkeypatch.setattr(signing, "_required_by_option", False)


@pytest.fixture(scope="module")
def runs():
    truths = sr.truths()
    made = []
    for i, created in enumerate(TIMES):
        preds = sr.predictions(truths)
        preds[:i] = [p.select(slice(0, 0)) for p in preds[:i]]  # each blessing a little worse: values differ
        made.append(sr.result(preds, truths, created=created, model_sha256=f"{i + 1}" * 64))
    return made


def _blessed(tmp_path, runs) -> Any:
    """Four blessings v1..v4: a baseline (v4) with a history of three entries."""
    file = golden_path(tmp_path, runs[0].provenance.model_path, runs[0].path, runs[0].provenance.dataset)
    for i, run in enumerate(runs):
        write_golden(file, golden_from_result(run, release=f"v{i + 1}"))
    return file


def _edit(file, change: Callable[[dict], object]) -> None:
    data = json.loads(file.read_text())
    change(data)
    file.write_text(json.dumps(data, indent=2))


def test_a_history_as_blessed_is_chained_sealed_and_named_nowhere(tmp_path, runs):
    file = _blessed(tmp_path, runs)
    data = json.loads(file.read_text())
    history = data["history"]
    assert [e["release"] for e in history] == ["v1", "v2", "v3"]
    assert history[0]["previous"] is None and all(e["seal"]["sha256"] for e in history)
    loaded = load_golden(file)
    assert [e.previous for e in loaded.history[1:]] == [digest(e) for e in loaded.history[:-1]]
    assert data["history_tip"] == digest(loaded.history[-1])
    assert loaded.history_problems == () and loaded.history_note is None
    assert loaded.seal is not None and loaded.seal.state is signing.SealState.SEALED


def _swap(data: dict) -> None:
    h = data["history"]
    h[0], h[1] = h[1], h[0]


EDITS: dict[str, tuple[Callable[[dict], object], str]] = {
    "deleted": (lambda d: d["history"].pop(1), r"entry 2 \(v3, .*the entry it was chained after is not there"),
    "last deleted": (lambda d: d["history"].pop(), r"its last entry was deleted or changed"),
    "duplicated": (lambda d: d["history"].insert(1, dict(d["history"][0])), r"entry 2 \(v1, .*a duplicate of entry 1"),
    "reordered": (_swap, r"entry 1 \(v2, .*chained after entry 2, which now follows it: reordered"),
    "re-dated out of order": (
        lambda d: d["history"][1].update(created="2024-01-01T00:00:00Z"),
        r"entry 2 \(v2, .*dated before entry 1",
    ),
    "future-dated": (
        lambda d: d["history"][2].update(created="2099-01-01T00:00:00Z"),
        r"entry 3 \(v3, blessed 2099.*future-dated",
    ),
    "invented value": (
        lambda d: d["history"][0]["values"].update(map=0.99),
        r"entry 1 \(v1, .*changed after it was written \(its sha256 no longer holds\)",
    ),
}


@pytest.mark.parametrize("edit", EDITS)
def test_each_hand_edit_of_the_history_is_named_in_what_the_report_shows(tmp_path, runs, edit):
    file = _blessed(tmp_path, runs)
    change, named = EDITS[edit]
    _edit(file, change)
    loaded = load_golden(file)  # shown, never gated on: read, with its gates
    assert loaded.history_note is not None and loaded.history_note.startswith("history edited by hand: ")
    assert any(re.search(named, p) for p in loaded.history_problems), loaded.history_problems
    assert loaded.seal is not None and loaded.seal.state is signing.SealState.UNSIGNED_EDIT


def _resealed(data: dict, key: bytes | None) -> None:
    """The file's seal made again over its content, as a hand holding ``key`` (or none) could."""
    content = {k: v for k, v in data.items() if k != "seal"}
    data["seal"] = signing.seal_document(content, key)


@pytest.mark.parametrize("edit", EDITS)
def test_under_require_signed_an_edited_history_is_refused_even_in_a_signed_file(tmp_path, runs, edit, monkeypatch):
    monkeypatch.setenv(signing.KEY_VARIABLE, KEY)
    file = _blessed(tmp_path, runs)
    change, _ = EDITS[edit]
    _edit(file, lambda d: (change(d), _resealed(d, KEY.encode())))
    assert load_golden(file).history_problems  # without the option: read, and named
    signing.require_signed()
    with pytest.raises(GoldenError, match=rf"^{file}: history edited by hand: .*refused under --require-signed$"):
        load_golden(file)


def test_an_invented_value_with_every_digest_made_again_is_named_by_the_kept_copy(tmp_path, runs):
    file = _blessed(tmp_path, runs)

    def invent(data: dict) -> None:
        history = data["history"]
        history[0]["values"]["map"] = 0.99
        previous = None
        for entry in history:  # the chain made again by hand, as anyone without the key can
            entry["previous"] = previous
            blessing = _blessing(entry)
            entry["seal"] = signing.seal_document(entry_document(blessing), None)
            previous = digest(blessing)
        data["history_tip"] = previous
        _resealed(data, None)

    _edit(file, invent)
    loaded = load_golden(file)
    assert loaded.seal is not None and loaded.seal.state is signing.SealState.SEALED  # the digests all hold
    (found,) = loaded.history_problems
    assert (
        found.startswith("entry 1 (v1, ")
        and "map 0.99 (kept " in found
        and "differ from the replaced baseline kept as 20250101T" in found
    )


def _blessing(entry: dict) -> Blessing:
    return Blessing(
        release=entry["release"],
        created=entry["created"],
        model=entry["model"],
        dataset=entry["dataset"],
        path=entry["path"],
        model_sha256=entry["model_sha256"],
        dataset_manifest=entry["dataset_manifest"],
        metric=entry["metric"],
        values=tuple(entry["values"].items()),
        previous=entry["previous"],
    )


def test_a_history_written_before_the_chain_is_read_and_the_next_blessing_chains_to_it(tmp_path, runs):
    file = _blessed(tmp_path, runs[:2])

    def schema_3(data: dict) -> None:
        data.update(schema_version=3)
        for key in ("seal", "history_tip"):
            data.pop(key)
        for entry in data["history"]:
            entry.pop("previous"), entry.pop("seal")

    _edit(file, schema_3)
    old = load_golden(file)
    assert old.seal is not None and old.seal.state is signing.SealState.UNSEALED and old.history_problems == ()
    write_golden(file, golden_from_result(runs[2], release="v3"))
    new = load_golden(file)
    assert new.history_problems == () and new.seal is not None and new.seal.trusted
    first, second = new.history
    assert first.seal is None and first.previous is None  # kept as read: never sealed after the fact
    # appended over an unsealed file: linked, but not vouched for
    assert second.previous == digest(first) and second.seal is None


def test_the_chain_names_nothing_in_a_history_of_no_entries() -> None:
    assert problems((), None, True, TIMES[0], None) == ()
    assert problems((), "0" * 64, True, TIMES[0], None) == (
        "its last entry was deleted or changed (the baseline names an end entry that is not there)",
    )


def test_a_baseline_dated_in_the_future_is_named() -> None:
    now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    (found,) = problems((), None, True, "2030-01-01T00:00:00Z", None, now=now)
    assert "dated 2030-01-01T00:00:00Z, in the future" in found


def _entry(created: str, value: float) -> Blessing:
    return Blessing(None, created, "m", "d", "hailo", "1" * 64, "2" * 64, "coco", (("map", value),))


def test_two_machines_clocks_a_little_apart_are_not_named_but_a_day_back_is():
    first = appended((), _entry("2025-01-01T00:01:00Z", 0.5), None, True)
    close = appended(first, _entry("2025-01-01T00:00:30Z", 0.6), None, True)
    assert problems(close, tip(close), True, "2025-01-01T00:02:00Z", None) == ()
    back = appended(first, _entry("2024-12-31T00:01:00Z", 0.6), None, True)
    (found,) = problems(back, tip(back), True, "2025-01-01T00:02:00Z", None)
    assert found.startswith("entry 2 (no release, blessed 2024-12-31T00:01:00Z): dated before entry 1")
