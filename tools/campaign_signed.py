"""The campaign's ``signed`` family: the sign-off's files edited by hand, as a pull request can.

A baseline's ``accepted_weak`` typed by hand (with vacuous tolerances) must not let a worse model
pass, nor make the summary quote a flag never given; each edit of a baseline's blessed history
(an entry deleted, duplicated, reordered, future-dated, given an invented value) must be named in
the report ("history edited by hand") and refused under ``--require-signed``; a baseline whose seal
was forged or whose signed content was edited is refused when the key is set; and
``--require-signed`` refuses a baseline that is not signed with the key in hand.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tools.campaign import DEMO_SET, MODEL, Campaign, Ran

FAMILY = "signed"
KEY = "campaign-release-key-0123456789abcdef"
OTHER_KEY = "an-attacker-key-fedcba9876543210"
WEAK_CODES = ["map50_cannot_fail", "map50_95_cannot_fail", "saturation_cannot_fail", "box_count_cannot_fail"]
VACUOUS = {"map50_drop": 1.0, "map50_95_drop": 1.0, "box_count_rel": 1.0, "saturation_abs": 1.0}
NEVER_GIVEN = "blessed with --accept-weak-baseline"
HISTORY_NAMED = "history edited by hand"


@contextmanager
def signing_key(key: str | None) -> Iterator[None]:
    """``HARNESS_SIGNING_KEY`` as the commands started inside see it (unset where ``key`` is None)."""
    before = os.environ.get("HARNESS_SIGNING_KEY")
    if key is None:
        os.environ.pop("HARNESS_SIGNING_KEY", None)
    else:
        os.environ["HARNESS_SIGNING_KEY"] = key
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HARNESS_SIGNING_KEY", None)
        else:
            os.environ["HARNESS_SIGNING_KEY"] = before


def baseline(golden: Path, which: str = "emulated-hailo") -> Path:
    return golden / MODEL / f"{DEMO_SET}--{which}.json"


def edit(file: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(file.read_text())
    change(data)
    file.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def weak_by_hand(data: dict[str, Any]) -> None:
    data["tolerances"].update(VACUOUS)
    data["accepted_weak"] = list(WEAK_CODES)


def run(c: Campaign) -> None:
    hand_typed_weak(c)
    history_edits(c)
    forged_seals(c)
    require_signed(c)


def judged(c: Campaign, case: str, ran: Ran, expect: str, bad: str | None) -> None:
    """``c.record``, then the row made a false pass where ``bad`` says what the run vouched for."""
    c.record(FAMILY, case, ran, expect)
    family, name, outcome, detail = c.rows[-1]
    if bad is not None and outcome in ("refused", "caught", "held"):
        c.rows[-1] = (family, name, "false pass", f"{bad} ({detail})")
        print(f"{'':<10} {'':<34} -> false pass: {bad}", flush=True)


def hand_typed_weak(c: Campaign) -> None:
    for case, off_domain in (("accepted_weak typed by hand", True), ("accepted_weak by hand, in-domain", False)):
        folder = c.case_dir(case.replace(" ", "_").replace(",", ""))
        golden = folder / "golden"
        shutil.copytree(c.golden0, golden)
        edit(baseline(golden), weak_by_hand)
        if off_domain:
            ran = c.off_domain(folder, golden)
        else:
            ran = c.cli("run", "--golden", golden, *c.places(folder), cwd=folder)
        said = ran.out + ran.err + _report(folder)
        judged(c, case, ran, "refuse", f"says '{NEVER_GIVEN}', a flag never given" if NEVER_GIVEN in said else None)


def _report(folder: Path) -> str:
    report = folder / "rep" / "report.md"
    return report.read_text(errors="replace") if report.exists() else ""


def _blessed_thrice(c: Campaign, folder: Path) -> Path:
    """golden0 blessed again as v1, v2 and v3 with the release key: a signed history of at least three
    entries under the v3 baseline."""
    golden = folder / "golden"
    shutil.copytree(c.golden0, golden)
    for release in ("v1", "v2", "v3"):
        with signing_key(KEY):
            ran = c.cli(
                "run", "--update-golden", "--release", release, "--golden", golden, *c.places(folder), cwd=folder
            )
        if ran.rc != 0:
            raise SystemExit(f"campaign: blessing {release} failed ({ran.rc}): {ran.err[-2000:]}")
    return golden


def history_edits(c: Campaign) -> None:
    prepared = c.case_dir("signed_history_base")
    golden0 = _blessed_thrice(c, prepared)
    if len(json.loads(baseline(golden0).read_text())["history"]) < 3:
        c.record(FAMILY, "history edits", None, "pass", "three blessings made a history of fewer than three entries")
        return

    def moved(data: dict[str, Any], i: int, j: int) -> None:
        h = data["history"]
        h[i], h[j] = h[j], h[i]

    edits: dict[str, Callable[[dict[str, Any]], None]] = {
        "history entry deleted": lambda d: d["history"].pop(1),
        "history last entry deleted": lambda d: d["history"].pop(),
        "history entry duplicated": lambda d: d["history"].insert(1, json.loads(json.dumps(d["history"][0]))),
        "history reordered": lambda d: moved(d, 0, 1),
        "history future-dated": lambda d: d["history"][2].update(created="2099-01-01T00:00:00+00:00"),
        "history invented value": lambda d: d["history"][0]["values"].update(map=0.99),
    }
    for case, change in edits.items():  # read as a pull request's job reads them: without the key
        folder = c.case_dir(case.replace(" ", "_"))
        golden = folder / "golden"
        shutil.copytree(golden0, golden)
        edit(baseline(golden), change)
        ran = c.cli("run", "--golden", golden, *c.places(folder), cwd=folder)
        said = ran.out + ran.err + _report(folder)
        judged(c, case, ran, "pass", None if HISTORY_NAMED in said else "the report shows the edited history as is")
    # a key holder's hand edit: the history reordered and the file signed again over it
    from harness.core import signing

    folder = c.case_dir("history_edit_required_signed")
    golden = folder / "golden"
    shutil.copytree(golden0, golden)

    def reordered_and_signed(data: dict[str, Any]) -> None:
        edits["history reordered"](data)
        data["seal"] = signing.seal_document({k: v for k, v in data.items() if k != "seal"}, KEY.encode())

    edit(baseline(golden), reordered_and_signed)
    with signing_key(KEY):
        ran = c.cli("run", "--require-signed", "--golden", golden, *c.places(folder), cwd=folder)
    judged(c, "history reordered, signed, --require-signed", ran, "refuse", _not_named(ran))


def _not_named(ran: Ran) -> str | None:
    """What a refusal under --require-signed failed to name: the history's edit."""
    return None if ran.rc != 2 or HISTORY_NAMED in ran.err else "refused, but not for the edited history"


def forged_seals(c: Campaign) -> None:
    from harness.core import signing

    prepared = c.case_dir("signed_key_base")
    golden0 = prepared / "golden"
    shutil.copytree(c.golden0, golden0)
    with signing_key(KEY):
        ran = c.cli("run", "--update-golden", "--golden", golden0, *c.places(prepared), cwd=prepared)
    if ran.rc != 0:
        c.record(FAMILY, "bless with a key", ran, "pass")
        return

    def forged(data: dict[str, Any]) -> None:
        """Weak by hand, the digest recomputed and an HMAC made with another key."""
        weak_by_hand(data)
        content = {k: v for k, v in data.items() if k != "seal"}
        data["seal"] = signing.seal_document(content, OTHER_KEY.encode())
        if isinstance(ran_seal := json.loads(baseline(golden0).read_text()).get("seal"), dict):
            data["seal"]["key_id"] = ran_seal.get("key_id")

    def recomputed(data: dict[str, Any]) -> None:
        """Weak by hand and the digest recomputed, the signature left as it was."""
        weak_by_hand(data)
        content = {k: v for k, v in data.items() if k != "seal"}
        old = data.get("seal") or {}
        data["seal"] = {**signing.seal_document(content, None), "hmac": old.get("hmac"), "key_id": old.get("key_id")}

    cases: dict[str, Callable[[dict[str, Any]], None]] = {
        "forged seal (another key), key set": forged,
        "digest recomputed, key set": recomputed,
        "signed baseline edited, key set": lambda d: d["tolerances"].update(map50_drop=0.5),
    }
    for case, change in cases.items():
        folder = c.case_dir(case.replace(" ", "_").replace(",", "").replace("(", "").replace(")", ""))
        golden = folder / "golden"
        shutil.copytree(golden0, golden)
        edit(baseline(golden), change)
        with signing_key(KEY):
            ran = c.off_domain(folder, golden)
        said = ran.out + ran.err + _report(folder)
        judged(c, case, ran, "refuse", f"says '{NEVER_GIVEN}', a flag never given" if NEVER_GIVEN in said else None)
    # the control: the signed baselines, untouched, pass under --require-signed with the key
    folder = c.case_dir("signed_control")
    with signing_key(KEY):
        ran = c.cli("run", "--require-signed", "--golden", golden0, *c.places(folder), cwd=folder)
    c.record(FAMILY, "signed, --require-signed (control)", ran, "pass")


def require_signed(c: Campaign) -> None:
    for case, key in (("unsigned baseline, --require-signed", None), ("unsigned, key set, --require-signed", KEY)):
        folder = c.case_dir(case.replace(" ", "_").replace(",", ""))
        with signing_key(key):
            ran = c.cli("run", "--require-signed", "--golden", c.golden0, *c.places(folder), cwd=folder)
        c.record(FAMILY, case, ran, "refuse")
