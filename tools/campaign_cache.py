"""Campaign family ``shared_cache``: the shared cache (``HARNESS_SHARED_CACHE``) as several projects, CI
jobs and test workers share it, and as anyone who can write to it may leave it: another calibration's
quantized model copied over an entry (its record copied and patched too, with and without the signing
key), a truncated or garbage model, a changed image or label in the shared demo set, a damaged entry in
a shared cache this run cannot write to.

Each case runs the demo's off-domain run (honestly red) or in-domain run (green) against the blessed
baselines with its own copy of the shared cache and a project cache without the emulated path's
predictions, so that the shared entry is what the emulated path runs. An entry that is used although
it is not what the run asked for is a false pass; a rebuilt one leaves the run as red or green as it
honestly is; a damaged entry that cannot be rebuilt is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

from tools.campaign import DEMO_SET, Campaign, Ran

FAMILY = "shared_cache"
KEY = "campaign-release-key-0123456789abcdef"


@contextlib.contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """``values`` set in this process's environment (None: unset) while the block runs (the commands
    ``Campaign.cli`` starts inherit it)."""
    old = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def project_cache(c: Campaign, folder: Path) -> Path:
    """The warm project cache without what the shared cache holds and without the emulated path's
    predictions (so that the emulated path runs the shared entry)."""
    cache = folder / "cache"
    shutil.copytree(
        c.cache,
        cache,
        ignore=lambda _, names: [n for n in names if n in ("emulator", "demo-data") or n.startswith("emulated-")],
    )
    return cache


def run_demo(
    c: Campaign,
    folder: Path,
    shared: Path,
    *extra: str,
    off_domain: bool = True,
    golden: Path | None = None,
    **env: str | None,
) -> Ran:
    args: list[str | Path] = ["run"]
    if off_domain:
        args += ["--calibration", "off-domain"]
    args += [*extra, "--golden", golden or c.golden0, "--cache", project_cache(c, folder), "--report", folder / "rep"]
    with environment(HARNESS_SHARED_CACHE=os.fspath(shared), **env):
        return c.cli(*args, cwd=folder, timeout=max(c.timeout, 600))


def template(c: Campaign, name: str, **env: str | None) -> Path:
    """A shared cache of the demo set and both calibrations' emulated HEFs, as this harness writes them
    (under ``env``): the warm cache's, read once by an in-domain and an off-domain run (whatever this
    harness does not trust in them is rebuilt then)."""
    shared = c.work / f"shared-{name}"
    shutil.rmtree(shared, ignore_errors=True)
    shared.mkdir(parents=True)
    # the demo set alone: the warm cache's emulator holds the quantized models of every family run
    # before this one (other settings, other calibrations), and these two runs make exactly their two
    shutil.copytree(c.cache / "demo-data", shared / "demo-data")
    for off in (False, True):
        with environment(HARNESS_SHARED_CACHE=os.fspath(shared), **env):
            args = ("--calibration", "off-domain") if off else ()
            ran = c.cli("run", *args, "--golden", c.golden0, *c.places(c.work / "base"), cwd=c.work / "base")
        if ran.rc not in (0, 1):
            raise SystemExit(f"campaign: the shared cache {name} could not be made ({ran.rc}): {ran.err[-2000:]}")
    for kept in [p for p in shared.rglob("*") if ".damaged-" in p.name]:  # what an older harness left: not a case's
        shutil.rmtree(kept) if kept.is_dir() else kept.unlink()
    return shared


def entries(shared: Path) -> tuple[Path, Path]:
    """The in-domain and the off-domain calibration's quantized models: made in that order."""
    models = sorted((shared / "emulator").glob("*.onnx"), key=lambda p: p.stat().st_mtime)
    if len(models) != 2:
        raise SystemExit(f"campaign: {shared}/emulator holds {len(models)} quantized models, expected 2")
    return models[0], models[1]


def case(c: Campaign, name: str, source: Path) -> tuple[Path, Path, Path, Path]:
    """A case folder with its own copy of the shared cache ``source``; the in-domain and off-domain models."""
    folder = c.case_dir(f"shared_{name}")
    shared = folder / "shared"
    shutil.copytree(source, shared)
    inside, outside = entries(shared)
    return folder, shared, inside, outside


def poison(inside: Path, outside: Path, record: Callable[[dict], dict] | None) -> None:
    """The in-domain model copied over the off-domain entry; with ``record``: its record too, as
    ``record`` patches it (else the off-domain entry's record is left as it was)."""
    shutil.copy(inside, outside)
    if record is not None:
        data = json.loads(inside.with_suffix(".json").read_text())
        outside.with_suffix(".json").write_text(json.dumps(record(data)))


def kept_aside(shared: Path) -> int:
    return sum(1 for p in shared.rglob("*") if ".damaged-" in p.name)


def rebuilt(c: Campaign, case_name: str, ran: Ran, shared: Path, expect: str) -> None:
    """Record ``ran``; a run that did not keep the bad entry aside (``.damaged-<time>``) and is not
    refused has used it: recorded as data lost where its outcome would hide that."""
    lost = None
    if ran.rc in (0, 1) and not kept_aside(shared):
        lost = "the bad entry was neither rebuilt (no .damaged- copy kept) nor refused"
    c.record(FAMILY, case_name, ran, expect, None if ran.rc == 0 else lost)


def report_manifest(folder: Path) -> str | None:
    try:
        return json.loads((folder / "rep" / "report.json").read_text())["dataset"]["manifest"]
    except (OSError, ValueError, KeyError):
        return None


def run(c: Campaign) -> None:
    plain = template(c, "plain", HARNESS_SIGNING_KEY=None, HARNESS_REQUIRE_SIGNED=None)

    folder, shared, _, _ = case(c, "control", plain)
    c.record(FAMILY, "untouched shared cache (control)", run_demo(c, folder, shared), "fail")

    # another calibration's model copied over the entry, its record left as it was
    folder, shared, inside, outside = case(c, "poisoned", plain)
    poison(inside, outside, None)
    rebuilt(c, "in-domain model over off-domain", run_demo(c, folder, shared), shared, "fail")

    # ... its record removed: nothing says what the model was built from
    folder, shared, inside, outside = case(c, "poisoned_no_record", plain)
    poison(inside, outside, None)
    outside.with_suffix(".json").unlink()
    rebuilt(c, "poisoned, its record removed", run_demo(c, folder, shared), shared, "fail")

    # ... its record copied too, its key patched to the off-domain entry's name
    def patch_key(data: dict) -> dict:
        return {**data, "key": outside.stem}

    folder, shared, inside, outside = case(c, "poisoned_key_patched", plain)
    poison(inside, outside, patch_key)
    rebuilt(c, "poisoned, record's key patched", run_demo(c, folder, shared), shared, "fail")

    # ... and what it was built from patched to the off-domain entry's (its seal left as it was)
    def patch_all(data: dict) -> dict:
        theirs = json.loads(outside_record)
        return {k: (theirs[k] if k in ("key", "built_from") and k in theirs else v) for k, v in data.items()}

    folder, shared, inside, outside = case(c, "poisoned_record_patched", plain)
    outside_record = outside.with_suffix(".json").read_text()
    poison(inside, outside, patch_all)
    rebuilt(c, "poisoned, record's inputs patched", run_demo(c, folder, shared), shared, "fail")

    # damaged models
    for name, damage in (
        ("truncated model", lambda b: b[: len(b) // 2]),
        ("garbage model", lambda b: os.urandom(len(b))),
        ("empty model", lambda b: b""),
    ):
        folder, shared, _, outside = case(c, name.replace(" ", "_"), plain)
        outside.write_bytes(damage(outside.read_bytes()))
        rebuilt(c, name, run_demo(c, folder, shared), shared, "fail")

    # a truncated model under a record sealed again to its sha256 (a writer without the key can): refused
    def vouching(data: dict) -> dict:
        from harness.core import signing

        body = {k: v for k, v in data.items() if k != "seal"}
        body["model_sha256"] = hashlib.sha256(outside.read_bytes()).hexdigest()
        return {**body, "seal": signing.seal_document(body, None)} if "seal" in data else body

    folder, shared, _, outside = case(c, "truncated_record_vouching", plain)
    outside.write_bytes(outside.read_bytes()[:100_000])
    record = outside.with_suffix(".json")
    record.write_text(json.dumps(vouching(json.loads(record.read_text()))))
    c.record(FAMILY, "truncated model, record resealed", run_demo(c, folder, shared), "refuse")

    # a damaged entry in a shared cache this run cannot write: refused, never used, never exit 3
    read_only(c, plain)

    # with the release key: the entries signed; a patched record's signature does not hold
    signed = template(c, "signed", HARNESS_SIGNING_KEY=KEY, HARNESS_REQUIRE_SIGNED=None)
    folder, shared, inside, outside = case(c, "signed_poisoned_record_patched", signed)
    outside_record = outside.with_suffix(".json").read_text()
    poison(inside, outside, patch_all)
    rebuilt(c, "signed: record patched", run_demo(c, folder, shared, HARNESS_SIGNING_KEY=KEY), shared, "fail")

    # ... its signature stripped and its digest recomputed (what a writer without the key can do)
    def forged(data: dict) -> dict:
        from harness.core import signing  # the seal as a writer without the key would compute it

        body = patch_all(data)
        body.pop("seal", None)
        return {**body, "seal": signing.seal_document(body, None)}

    folder, shared, inside, outside = case(c, "signed_forged_unsigned", signed)
    # baselines blessed with the key, so that signatures required refuse nothing but the entry
    golden, blessing = folder / "golden-signed", folder / "bless"
    blessing.mkdir()
    blessed = run_demo(c, blessing, shared, "--update-golden", off_domain=False, golden=golden, HARNESS_SIGNING_KEY=KEY)
    if blessed.rc != 0:
        raise SystemExit(f"campaign: blessing signed baselines failed ({blessed.rc}): {blessed.err[-2000:]}")
    outside_record = outside.with_suffix(".json").read_text()
    poison(inside, outside, forged)
    ran = run_demo(c, folder, shared, golden=golden, HARNESS_SIGNING_KEY=KEY, HARNESS_REQUIRE_SIGNED="1")
    rebuilt(c, "forged unsigned record, signatures required", ran, shared, "fail")

    # the shared demo set: a changed image, a changed label
    pristine = None
    folder, shared, _, _ = case(c, "demo_control", plain)
    if run_demo(c, folder, shared, off_domain=False).rc in (0, 1):
        pristine = report_manifest(folder)
    for name, change in (
        ("changed demo-set image", _swap_image),
        ("changed demo-set label", _clear_label),
    ):
        folder, shared, _, _ = case(c, name.replace(" ", "_"), plain)
        change(shared / "demo-data" / DEMO_SET)
        ran = run_demo(c, folder, shared, off_domain=False)
        used = ran.rc in (0, 1) and (pristine is None or report_manifest(folder) != pristine)
        # the changed set measured: at best caught by the baseline's manifest; else rebuilt and green
        c.record(FAMILY, name, ran, "fail" if used else "pass")
    # the off-domain calibration frames replaced by the in-domain ones: the off-domain run would pass
    folder, shared, _, _ = case(c, "changed_demo_calibration", plain)
    images = shared / "demo-data" / DEMO_SET / "images"
    for inside, outside in zip(
        sorted((images / "calib").iterdir()), sorted((images / "calib_offdomain").iterdir()), strict=False
    ):
        shutil.copy(inside, outside)
    c.record(FAMILY, "off-domain calibration frames changed", run_demo(c, folder, shared), "fail")


def _swap_image(root: Path) -> None:
    images = sorted((root / "images" / "val").iterdir())
    shutil.copy(images[1], images[0])


def _clear_label(root: Path) -> None:
    labels = sorted(p for p in (root / "labels" / "val").iterdir() if p.stat().st_size)
    labels[0].write_text("")


def read_only(c: Campaign, source: Path) -> None:
    mounted = c.work / "mnt-shared"
    mounted.mkdir(exist_ok=True)
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(mounted)], capture_output=True
    ).returncode:
        c.record(FAMILY, "damaged entry, read-only cache", None, "refuse", "cannot mount a tmpfs here (not root)")
        return
    try:
        shared = mounted / "shared"
        shutil.copytree(source, shared)
        _, outside = entries(shared)
        outside.write_bytes(outside.read_bytes()[:1000])
        subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True, capture_output=True)
        folder = c.case_dir("shared_read_only")
        c.record(FAMILY, "damaged entry, read-only cache", run_demo(c, folder, shared), "refuse")
    finally:
        subprocess.run(["umount", "-l", str(mounted)], capture_output=True)
