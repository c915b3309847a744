"""Campaign family ``links``: files a pull request can change and faults in the files a run keeps.

Writes through links that leave the project (``report.md``, ``golden/<model>/history``,
``reports/latest``; ``--follow-links`` honouring them when asked), flipped bits in a recording's
header and in one of its frames, a refused store kept as ``.damaged-*``, and labelled images that
are a link to ``/dev/zero`` or a FIFO under ``--max-unreadable 0``.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from tools.campaign import MODEL, Campaign, Ran

FAMILY = "links"


def run(c: Campaign) -> None:
    _links(c)
    _recordings(c)
    _images(c)


# --- writes through links out of the project ---------------------------------------------------


def _outside(folder: Path) -> Path:
    """A folder beside the case's project: outside it."""
    outside = folder.parent / f"{folder.name}-outside"
    shutil.rmtree(outside, ignore_errors=True)
    outside.mkdir()
    return outside


def _links(c: Campaign) -> None:
    # report.md committed as a link to a file outside the project
    for follow in (False, True):
        name = "report.md linked outside" + (", --follow-links" if follow else "")
        folder = c.case_dir(name.replace(" ", "_").replace(",", "").replace("-", "_"))
        victim = _outside(folder) / "victim.md"
        victim.write_text("not the harness's\n")
        (folder / "rep").mkdir()
        (folder / "rep" / "report.md").symlink_to(victim)
        extra = ("--follow-links",) if follow else ()
        ran = c.cli("run", "--golden", c.golden0, *c.places(folder), *extra, cwd=folder)
        changed = victim.read_text() != "not the harness's\n"
        if follow:
            lost = None if changed else "--follow-links given, but the linked report.md was not written"
            c.record(FAMILY, name, ran, "pass", lost)
        else:
            c.record(FAMILY, name, ran, "refuse", "the file outside was overwritten" if changed else None)
    # golden/<model>/history as a link outside: blessing would write the replaced baselines there
    folder = c.case_dir("history_link")
    golden = folder / "golden"
    shutil.copytree(c.golden0, golden)
    outside = _outside(folder)
    shutil.rmtree(golden / MODEL / "history", ignore_errors=True)
    (golden / MODEL / "history").symlink_to(outside)
    ran = c.cli("run", "--update-golden", "--golden", golden, *c.places(folder), cwd=folder)
    written = sorted(p.name for p in outside.rglob("*"))
    c.record(
        FAMILY,
        "golden/<model>/history linked outside",
        ran,
        "refuse",
        f"written outside: {written}" if written else None,
    )
    # reports/latest (the default report folder) as a link outside
    folder = c.case_dir("latest_link")
    outside = _outside(folder)
    (folder / "reports").mkdir()
    (folder / "reports" / "latest").symlink_to(outside)
    ran = c.cli("run", "--golden", c.golden0, "--cache", c.cache, cwd=folder)
    written = sorted(p.name for p in outside.rglob("*"))
    c.record(FAMILY, "reports/latest linked outside", ran, "refuse", f"written outside: {written}" if written else None)


# --- recordings: flipped bits in the header and in a frame ---------------------------------------


def _recordings(c: Campaign) -> None:
    from harness.backends.replay.store import JOURNAL
    from harness.core import journal

    folder = c.case_dir("links_record")
    cache = folder / "cache"
    shutil.copytree(c.cache / "demo-data", cache / "demo-data")
    for sub in ("emulator", "exports"):
        if (c.cache / sub).exists():
            shutil.copytree(c.cache / sub, cache / sub)
    store = folder / "m.rec"
    record = ("run", "--record", store, "--golden", c.golden0, "--report", folder / "rep", "--cache", cache)
    full = c.cli(*record, cwd=folder, timeout=600)
    if full.rc not in (0, 1) or not store.exists():
        c.record(FAMILY, "recording", full, "pass")
        return
    intact = store.read_bytes()
    found = journal.scan(intact, JOURNAL, store)
    frames = len(found.records) - 1
    header = found.records[0]

    def replay(name: str) -> Ran:
        shutil.rmtree(folder / name, ignore_errors=True)
        return c.cli(
            "run",
            "--replay",
            store,
            "--golden",
            c.golden0,
            "--report",
            folder / "rep",
            "--cache",
            folder / name,
            cwd=folder,
        )

    # one flipped bit in the header's (first) record: every frame must still replay, and resume
    flipped = bytearray(intact)
    flipped[header.offset + journal.HEADER.size + len(header.payload) // 2] ^= 0x08
    store.write_bytes(bytes(flipped))
    ran = replay("cache-h")
    lost = None if ran.rc in (0, 1) else f"replay refused a store whose header lost one bit: {ran.tail}"
    c.record(FAMILY, f"flipped bit in a recording's header: replay ({frames} frames)", ran, "pass", lost)
    store.write_bytes(bytes(flipped))
    ran = c.cli(*record, cwd=folder, timeout=600)
    kept = len(journal.scan(store.read_bytes(), JOURNAL, store).records) - 1
    lost = None if ran.rc in (0, 1) and kept >= frames else f"resume: exit {ran.rc}, {kept} of {frames} frames kept"
    c.record(FAMILY, "flipped bit in a recording's header: resume", ran, "pass", lost)
    # one flipped bit in a frame: that frame alone is lost, named, and recorded again on resume
    frame = found.records[len(found.records) // 2]
    flipped = bytearray(intact)
    flipped[frame.offset + journal.HEADER.size + len(frame.payload) // 2] ^= 0x08
    store.write_bytes(bytes(flipped))
    ran = replay("cache-f")
    said = re.findall(r"(\d+) record\(s\) lost", ran.err)
    lost = None if said == ["1"] else f"replay named {said or 'no'} lost records, expected 1"
    c.record(FAMILY, "flipped bit in one frame: replay names it alone", ran, "refuse", lost)
    ran = c.cli(*record, cwd=folder, timeout=600)
    after = replay("cache-f2")
    kept = len(journal.scan(store.read_bytes(), JOURNAL, store).records) - 1
    lost = None if after.rc in (0, 1) and kept == frames else f"after resume: {kept} of {frames} frames, {after.tail}"
    c.record(
        FAMILY, "flipped bit in one frame: resumed, then replayed", after if ran.rc in (0, 1) else ran, "pass", lost
    )
    # every header copy damaged: refused, and the store kept as found beside it
    store.write_bytes(intact)
    damaged = bytearray(intact)
    slot = header.end - header.offset
    for at in (header.offset, header.offset + slot):
        damaged[at + journal.HEADER.size + 10] ^= 0x08
    store.write_bytes(bytes(damaged))
    for kept_copy in folder.glob("m.rec.damaged-*"):
        kept_copy.unlink()
    ran = replay("cache-d")
    copies = [p for p in folder.glob("m.rec.damaged-*") if p.read_bytes() == bytes(damaged)]
    lost = None if copies and store.read_bytes() == bytes(damaged) else "no .damaged-* copy of the refused store"
    c.record(FAMILY, "a refused store is kept as .damaged-*", ran, "refuse", lost)


# --- images that are a device or a pipe ------------------------------------------------------------


def _images(c: Campaign) -> None:
    for name, make in (
        ("labelled image linked to /dev/zero", lambda p: p.symlink_to("/dev/zero")),
        ("labelled image that is a FIFO", lambda p: os.mkfifo(p)),
    ):
        folder = c.case_dir(name.replace(" ", "_").replace("/", "_"))
        data = c.small_set(folder, 12)
        golden = ("--golden", folder / "golden")
        blessed = c.cli("run", "--dataset", data, "--update-golden", *golden, *c.places(folder), cwd=folder)
        if blessed.rc != 0:
            c.record(FAMILY, f"{name}: blessing the set first", blessed, "pass")
            continue
        make(data / "images" / "val" / "zz_odd.jpg")
        (data / "labels" / "val" / "zz_odd.txt").write_text("0 0.5 0.5 0.4 0.4\n1 0.3 0.3 0.2 0.2\n")
        ran = c.cli(
            "run", "--dataset", data, "--max-unreadable", "0", *golden, *c.places(folder), cwd=folder, timeout=300
        )
        c.record(FAMILY, f"{name}, --max-unreadable 0", ran, "refuse")
