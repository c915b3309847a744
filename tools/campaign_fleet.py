"""The campaign's ``fleet`` family: identity across the runners of one job. Shards made by other
harness code, another runtime or other settings merged with sound ones; a recording re-checksummed
to claim a device origin; a shard's ``--report`` over a folder holding the user's files or the
prediction cache; and the refusals a merge or an eval owes before any image is read, timed."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.campaign import ROOT, Campaign, Ran

FAMILY = "fleet"
QUICK = 15.0  # seconds: a refusal owed before any image is read (the interpreter's start included)


def _rechecksummed(file: Path, fmt: Any, change: Callable[[bytes, bytes], bytes]) -> None:
    """``file`` rewritten with ``change(kind, payload)`` applied to each record and every checksum made
    again: only what the change touched differs, the framing holds."""
    from harness.core import journal

    found = journal.scan(file.read_bytes(), fmt, file)
    body = b"".join(journal.encode_record(r.kind, change(r.kind, bytes(r.payload))) for r in found.records)
    file.write_bytes(fmt.preamble + body)


def _key_edit(**values: Any) -> Callable[[bytes, bytes], bytes]:
    """A prediction file's key record with ``values`` set in it (nested keys as ``a__b``)."""
    from harness.pipeline.cache import KEY_RECORD

    def change(kind: bytes, payload: bytes) -> bytes:
        if kind != KEY_RECORD:
            return payload
        key = json.loads(payload)
        for name, value in values.items():
            *outer, last = name.split("__")
            target = key
            for part in outer:
                target = target[part]
            target[last] = value
        return json.dumps(key, sort_keys=True, separators=(",", ":")).encode()

    return change


def _shards(c: Campaign, folder: Path, *extra: str | Path, env: dict[str, str] | None = None) -> list[Ran]:
    """Both shards of the demo job into ``folder/s1`` and ``folder/s2``."""
    ran = []
    for k in (1, 2):
        args = ("run", "--shard", f"{k}/2", "--cache", c.cache, "--report", folder / f"s{k}", *extra)
        ran.append(_with_env(env, lambda a=args: c.cli(*a, cwd=folder, timeout=600)))  # type: ignore[misc]
    return ran


def _with_env(env: dict[str, str] | None, call: Callable[[], Ran]) -> Ran:
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        return call()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _merge(c: Campaign, folder: Path, *stores: Path, timeout: float | None = None) -> Ran:
    return c.cli(
        "merge",
        *stores,
        "--cache",
        c.cache,
        "--golden",
        c.golden0,
        "--report",
        folder / "rep",
        cwd=folder,
        timeout=timeout,
    )


def _predictions(store: Path, path: str = "emulated-hailo") -> Path:
    return next((store / "predictions").glob(f"{path}-*.bin"))


def _resealed(manifest: Path, document: dict[str, Any]) -> None:
    """``document`` written as ``manifest``, its seal made again where it has one (by digest: no key)."""
    if "seal" in document:
        from harness.core import signing

        document = {k: v for k, v in document.items() if k != "seal"}
        document["seal"] = signing.seal_document(document, None)
    manifest.write_text(json.dumps(document, indent=1) + "\n")


def _identity_edited(store: Path, edit: Callable[[bytes, bytes], bytes]) -> None:
    """The emulated path's predictions in ``store`` with their key edited and re-checksummed, renamed
    as the new key names them, and the manifest naming them resealed: only the identity differs."""
    from harness.pipeline.cache import JOURNAL, KEY_RECORD, _digest

    file = _predictions(store)
    _rechecksummed(file, JOURNAL, edit)
    key = json.loads(bytes(next(r for r in _records(file, JOURNAL) if r.kind == KEY_RECORD).payload))
    new = file.with_name(f"emulated-hailo-{_digest(key)[:24]}.bin")
    file.rename(new)
    manifest = store / "shard.json"
    document = json.loads(manifest.read_text())
    for entry in document["paths"]:
        if entry["file"] == file.name:
            entry["file"] = new.name
    _resealed(manifest, document)


def _records(file: Path, fmt: Any) -> list[Any]:
    from harness.core import journal

    return journal.scan(file.read_bytes(), fmt, file).records


def merge_cases(c: Campaign) -> Path | None:
    """Sound shards, then each with one shard changed; returns the sound shards' folder."""
    folder = c.case_dir("fleet-shards")
    ran = _shards(c, folder)
    if any(r.rc != 0 for r in ran):
        c.record(FAMILY, "sound shards", next(r for r in ran if r.rc != 0), "pass")
        return None
    c.record(FAMILY, "sound shards merged (control)", _merge(c, folder, folder / "s1", folder / "s2"), "pass")

    # a runner keeping its files elsewhere (its own cache folder) is still one of the job's
    elsewhere = c.case_dir("fleet-elsewhere")
    shutil.copytree(c.cache, elsewhere / "cache", ignore=shutil.ignore_patterns("predictions"))
    moved = c.cli(
        "run",
        "--shard",
        "2/2",
        "--cache",
        elsewhere / "cache",
        "--report",
        elsewhere / "s2",
        cwd=elsewhere,
        timeout=600,
    )
    merged = _merge(c, elsewhere, folder / "s1", elsewhere / "s2") if moved.rc == 0 else moved
    c.record(FAMILY, "shard run from another cache folder (control)", merged, "pass")

    # a shard from a copy of the package whose letterbox pads with 100, not 114
    other = c.case_dir("fleet-changed-code")
    package = other / "pkg"
    shutil.copytree(ROOT / "harness", package / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    preprocess = package / "harness" / "inputs" / "preprocess.py"
    preprocess.write_text(preprocess.read_text().replace("pad_value: int = 114", "pad_value: int = 100"))
    changed = _with_env(
        {"PYTHONPATH": str(package)},
        lambda: c.cli("run", "--shard", "2/2", "--cache", c.cache, "--report", other / "s2", cwd=other, timeout=600),
    )
    if changed.rc != 0:
        c.record(FAMILY, "shard from changed code (letterbox 100)", changed, "pass")
    else:
        c.record(
            FAMILY, "shard from changed code (letterbox 100)", _merge(c, other, folder / "s1", other / "s2"), "refuse"
        )

    # only the predictions' identity changed, each file re-checksummed
    edits = {
        "shard whose code digest differs": _key_edit(code="0" * 64),
        "shard from another runtime": _key_edit(environment__onnxruntime="0.0.1"),
        "shard from another harness version": _key_edit(harness="0.0.0"),
    }
    for case, edit in edits.items():
        where = c.case_dir(f"fleet-{case.replace(' ', '-')}")
        for k in (1, 2):
            shutil.copytree(folder / f"s{k}", where / f"s{k}")
        _identity_edited(where / "s2", edit)
        c.record(FAMILY, case, _merge(c, where, where / "s1", where / "s2"), "refuse")

    # the second shard run with other settings and other thresholds notes
    where = c.case_dir("fleet-other-settings")
    shutil.copytree(folder / "s1", where / "s1")
    second = c.cli(
        "run",
        "--shard",
        "2/2",
        "--max-total",
        "50",
        "--cache",
        c.cache,
        "--report",
        where / "s2",
        cwd=where,
        timeout=600,
    )
    if second.rc != 0:
        c.record(FAMILY, "shard with other settings", second, "pass")
    else:
        c.record(FAMILY, "shard with other settings", _merge(c, where, where / "s1", where / "s2"), "refuse")

    # a shard manifest whose notes differ from the first's (the calibration note), re-sealed where sealed
    where = c.case_dir("fleet-other-notes")
    for k in (1, 2):
        shutil.copytree(folder / f"s{k}", where / f"s{k}")
    manifest = where / "s2" / "shard.json"
    document = json.loads(manifest.read_text())
    _resealed(manifest, {**document, "calibration": "calibrated on 64 images of another set"})
    c.record(FAMILY, "shard whose notes differ", _merge(c, where, where / "s1", where / "s2"), "refuse")
    return folder


def deletion_cases(c: Campaign) -> None:
    """``run --shard --report DIR`` over a folder holding what it did not write."""
    folder = c.case_dir("fleet-report-over-predictions")
    mine = folder / "out" / "predictions" / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("the user's own file\n")
    ran = c.cli("run", "--shard", "1/2", "--cache", c.cache, "--report", folder / "out", cwd=folder, timeout=600)
    lost = None if mine.exists() else f"{mine} deleted"
    c.record(FAMILY, "--shard --report over predictions/", ran, "refuse", lost)

    folder = c.case_dir("fleet-report-into-cache")
    cache = folder / ".harness-cache"
    shutil.copytree(c.cache, cache, ignore=shutil.ignore_patterns("*.lock"))
    before = sorted(p.name for p in (cache / "predictions").iterdir())
    ran = c.cli("run", "--shard", "1/2", "--report", ".harness-cache", cwd=folder, timeout=600)
    after = set(p.name for p in (cache / "predictions").iterdir()) if (cache / "predictions").exists() else set()
    gone = [name for name in before if name not in after]
    lost = f"{len(gone)} of {len(before)} prediction cache files deleted" if gone else None
    c.record(FAMILY, "--shard --report .harness-cache", ran, "refuse", lost)

    # a shard run again into its own store: its own files replaced, nothing refused
    folder = c.case_dir("fleet-shard-again")
    first = c.cli("run", "--shard", "1/2", "--cache", c.cache, "--report", folder / "s1", cwd=folder, timeout=600)
    again = c.cli("run", "--shard", "1/2", "--cache", c.cache, "--report", folder / "s1", cwd=folder, timeout=600)
    c.record(FAMILY, "shard run again into its store", again if first.rc == 0 else first, "pass")


def timing_cases(c: Campaign, shards: Path | None) -> None:
    """Refusals owed before the demo set is made: bounded at :data:`QUICK` seconds."""
    if shards is not None:
        folder = c.case_dir("fleet-merge-no-cache")
        ran = c.cli(
            "merge",
            shards / "s1",
            shards / "s2",
            "--golden",
            c.golden0,
            "--report",
            folder / "rep",
            cwd=folder,
            timeout=QUICK,
        )
        c.record(FAMILY, "merge without --cache", ran, "refuse")
    folder = c.case_dir("fleet-eval-bad-hef")
    (folder / "BADFOLDER").mkdir()
    (folder / "BADFOLDER" / "model.hef").write_bytes(b"not a HEF\n")  # no metadata.yaml: not an export
    ran = c.cli("eval", "--backend", "hailort", "--hef", folder / "BADFOLDER", cwd=folder, timeout=QUICK)
    c.record(FAMILY, "eval --hef BADFOLDER (timed)", ran, "refuse")


def store_cases(c: Campaign) -> None:
    """A recording of the emulated path whose header is re-checksummed to claim the device."""
    from harness.backends.replay.store import HEADER_RECORD, JOURNAL

    folder = c.case_dir("fleet-store")
    store = folder / "m.rec"
    ran = c.cli(
        "run",
        "--record",
        store,
        "--cache",
        c.cache,
        "--golden",
        c.golden0,
        "--report",
        folder / "rep",
        cwd=folder,
        timeout=600,
    )
    if ran.rc not in (0, 1) or not store.exists():
        c.record(FAMILY, "recording", ran, "pass")
        return

    def device(kind: bytes, payload: bytes) -> bytes:
        if kind != HEADER_RECORD:
            return payload
        header = json.loads(payload)
        header["emulated"] = False
        return json.dumps(header, sort_keys=True, separators=(",", ":")).encode()

    claimed = folder / "device.rec"
    shutil.copy(store, claimed)
    _rechecksummed(claimed, JOURNAL, device)
    replay = c.cli(
        "run",
        "--replay",
        claimed,
        "--cache",
        folder / "cache2",
        "--golden",
        c.golden0,
        "--report",
        folder / "rep2",
        cwd=folder,
    )
    c.record(FAMILY, "store re-checksummed as device", replay, "refuse")

    # the same claim with the header's digest made again too (no key: a digest is all it has)
    def resealed(kind: bytes, payload: bytes) -> bytes:
        if kind != HEADER_RECORD:
            return payload
        header = json.loads(device(kind, payload))
        if "seal" in header:
            from harness.core import signing

            header.pop("seal")
            header["seal"] = signing.seal_document(header, None)
        return json.dumps(header, sort_keys=True, separators=(",", ":")).encode()

    shutil.copy(store, claimed)
    _rechecksummed(claimed, JOURNAL, resealed)
    replay = c.cli(
        "run",
        "--replay",
        claimed,
        "--cache",
        folder / "cache3",
        "--golden",
        c.golden0,
        "--report",
        folder / "rep3",
        cwd=folder,
    )
    labelled = "device origin is not vouched for" in replay.out
    # an unsigned device claim replayed without saying so is a false pass
    c.record(FAMILY, "store resealed as device: labelled", replay, "pass" if labelled else "refuse")
    required = _with_env(
        {"HARNESS_REQUIRE_SIGNED": "1"},
        lambda: c.cli(
            "run",
            "--replay",
            claimed,
            "--cache",
            folder / "cache4",
            "--golden",
            c.golden0,
            "--report",
            folder / "rep4",
            cwd=folder,
        ),
    )
    c.record(FAMILY, "unsigned store under require-signed", required, "refuse")


def run(c: Campaign) -> None:
    shards = merge_cases(c)
    deletion_cases(c)
    timing_cases(c, shards)
    store_cases(c)
