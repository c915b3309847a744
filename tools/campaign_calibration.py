"""Campaign family ``calibration``: ``hailo-harness calibration-check`` attacked.

- The off-domain calibration must be unfit (exit 1), also where the cached activation ranges of its images were
  edited to claim the evaluated images' whole range: unsealed (the seal no longer holds) or resealed as the harness
  would (the verdict rests on the emulated accuracy and the score ceiling, not on the ranges).
- A list file naming a missing file, a folder or nothing at all, an empty calibration folder, and a pool that is not a
  folder are refused in one line.
- ``--copy-to`` onto a file of the same name with other content, or onto a name that links to a file outside, is
  refused and nothing is written through it; the default report folder linked out of the project is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tools.campaign import Campaign

FAMILY = "calibration"


def run(c: Campaign) -> None:
    off_domain(c)
    forged_ranges(c)
    bad_lists(c)
    copy_to(c)


def _check(c: Campaign, folder: Path, *args: str | Path) -> object:
    return c.cli("calibration-check", *args, "--cache", folder / "cache", "--report", folder / "rep", cwd=folder)


def _warm(c: Campaign, folder: Path) -> None:
    """The campaign's warm demo set and emulator entries, copied into the case's own cache."""
    import shutil

    for sub in ("demo-data", "emulator", "exports"):
        if (c.cache / sub).exists():
            shutil.copytree(c.cache / sub, folder / "cache" / sub)


def off_domain(c: Campaign) -> None:
    folder = c.case_dir("calibration_off_domain")
    _warm(c, folder)
    c.record(FAMILY, "off-domain set", _check(c, folder, "--calibration", "off-domain"), "fail")


def forged_ranges(c: Campaign) -> None:
    """Every cached range record rewritten to the widest range any record holds: first left unsealed, then with
    its seal made again as the harness makes it."""
    from harness.core import signing

    folder = c.case_dir("calibration_forged_ranges")
    _warm(c, folder)
    first = _check(c, folder, "--calibration", "off-domain")
    records = sorted((folder / "cache" / "ranges").rglob("*.json"))
    if first.rc != 1 or not records:  # type: ignore[attr-defined]
        c.record(FAMILY, "ranges forged: setup", first, "fail")  # type: ignore[arg-type]
        return
    documents = [json.loads(r.read_text()) for r in records]
    low = [min(v) for v in zip(*(d["low"] for d in documents), strict=True)]
    high = [max(v) for v in zip(*(d["high"] for d in documents), strict=True)]
    for record, document in zip(records, documents, strict=True):
        record.write_text(json.dumps({**document, "low": low, "high": high}))
    c.record(FAMILY, "ranges forged, unsealed", _check(c, folder, "--calibration", "off-domain"), "fail")
    for record, document in zip(records, documents, strict=True):
        forged = {k: v for k, v in document.items() if k != "seal"} | {"low": low, "high": high}
        record.write_text(json.dumps(signing.with_seal(forged, None)))
    c.record(FAMILY, "ranges forged, resealed", _check(c, folder, "--calibration", "off-domain"), "fail")


def bad_lists(c: Campaign) -> None:
    folder = c.case_dir("calibration_bad_lists")
    (folder / "a_folder.png").mkdir()
    (folder / "empty").mkdir()
    cases = {
        "list names a missing image": "missing.png\n",
        "list names a folder": "a_folder.png\n",
        "list of comments only": "# nothing here\n\n",
        "list names a file out of the tree": "../../../../../../../../etc/passwd\n",
    }
    for case, text in cases.items():
        listing = folder / f"{len(text)}-{abs(hash(case)) % 1000}.txt"
        listing.write_text(text)
        c.record(FAMILY, case, _check(c, folder, "--calibration", listing), "refuse")
    c.record(FAMILY, "empty calibration folder", _check(c, folder, "--calibration", folder / "empty"), "refuse")
    c.record(
        FAMILY,
        "pool that is not a folder",
        _check(c, folder, "--calibration", "off-domain", "--pool", folder / "none"),
        "refuse",
    )


def copy_to(c: Campaign) -> None:
    folder = c.case_dir("calibration_copy_to")
    _warm(c, folder)
    target = folder / "chosen"
    target.mkdir()
    # the first image the off-domain check recommends is not known beforehand: every val image name taken
    names = sorted(p.name for p in (c.demo_set / "images" / "val").iterdir())
    for name in names:
        (target / name).write_bytes(b"the user's own file")
    ran = _check(c, folder, "--calibration", "off-domain", "--copy-to", target)
    kept = all((target / n).read_bytes() == b"the user's own file" for n in names)
    c.record(FAMILY, "--copy-to over other files", ran, "refuse", None if kept else "a user file was overwritten")
    # a name in the folder that is a link to a file outside (committed in a pull request): never written through
    linked = c.case_dir("calibration_copy_to_link")
    _warm(c, linked)
    outside = linked / "outside.png"
    outside.write_bytes(b"a file outside the chosen folder")
    chosen = linked / "chosen"
    chosen.mkdir()
    for name in names:
        os.symlink(outside, chosen / name)
    ran = _check(c, linked, "--calibration", "off-domain", "--copy-to", chosen)
    changed = outside.read_bytes() != b"a file outside the chosen folder"
    lost = "the linked file was overwritten" if changed else None
    c.record(FAMILY, "--copy-to names linked out", ran, "refuse", lost)
    # the report folder (where the lists go) a link out of the project: refused unless links are followed
    report = c.case_dir("calibration_report_link")
    _warm(c, report)
    away = report.parent / "calibration_report_link_away"
    away.mkdir(exist_ok=True)
    (report / "reports").mkdir()
    os.symlink(away, report / "reports" / "latest")
    ran = c.cli("calibration-check", "--calibration", "off-domain", "--cache", report / "cache", cwd=report)
    written = [p.name for p in away.iterdir()]
    c.record(FAMILY, "default report folder linked out", ran, "refuse", f"wrote {written}" if written else None)
