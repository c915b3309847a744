"""The shipped default: the demo model and its synthetic fire/smoke set (val and both calibration
splits), generated once into the cache, deterministically (harness/data/demo/MODEL_CARD.md: seed 0).

The model and its baselines ship inside the package (package data); everything a run writes goes to
the user's project, never to the install."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from harness.core import confine
from harness.core.documents import DocumentError, parse_json, read_bytes
from harness.core.environment import code_digest
from harness.core.files import shared_cache, write_atomic
from harness.core.shared_entry import (
    EntryState,
    EntryUse,
    entry_lock,
    record_seal,
    refused,
    seal_record,
    set_aside,
    signable,
    state_of,
    untrusted,
)
from harness.core.signing import SealCheck, SigningPolicy, canonical, policy

logger = logging.getLogger(__name__)

PACKAGE_DATA = Path(__file__).resolve().parents[1] / "data"
DEMO_ONNX = PACKAGE_DATA / "demo" / "fire_smoke_yolo11n_256.onnx"
DEMO26_ONNX = PACKAGE_DATA / "demo" / "fire_smoke_yolo26n_256.onnx"  # YOLO26n, the one-to-one head end to end
# The demo's baselines as shipped: read where a project has not blessed its own (never written).
SHIPPED_GOLDEN = PACKAGE_DATA / "golden"
DEMO_SEED = 0
DEMO_DATASET_NAME = f"synthetic_fire_smoke_seed{DEMO_SEED}"
# The demo set's calibration splits, by name: frames of the classes, and frames that show none of them.
IN_DOMAIN, OFF_DOMAIN = "in-domain", "off-domain"
_SPLITS = {IN_DOMAIN: "calib", OFF_DOMAIN: "calib_offdomain"}


def demo_root(cache_dir: Path) -> Path:
    """Where the demo set lies: ``demo-data/`` in the shared cache (:func:`~harness.core.files.shared_cache`:
    ``cache_dir`` unless one is named); nothing is generated."""
    return shared_cache(cache_dir) / "demo-data" / DEMO_DATASET_NAME


# Everything that decides the demo set's bytes (harness.inputs.synthetic.Recipe).
_RECIPE = {"seed": DEMO_SEED, "train": 0, "val": 100, "calib": 64, "offdomain_calib": 64, "imgsz": 256}
MANIFEST = ".manifest.json"  # the set's sealed record: every file's sha256
_COMPLETE = ".complete"  # what an older harness sharing the cache looks for
_KIND, _FORMAT = "hailo-harness demo set", 1


def demo_data(cache_dir: Path, log: Callable[[str], None] | None = None) -> Path:
    """The demo set's folder, verified against its manifest (:func:`demo_set`)."""
    return demo_set(cache_dir, log)[0]


def demo_set(cache_dir: Path, log: Callable[[str], None] | None = None) -> tuple[Path, EntryUse]:
    """The demo set's folder and how it stands as a shared-cache entry: used where every file is as its
    sealed manifest says; else (a changed, added or missing file, no manifest, a manifest whose seal does
    not hold) generated anew, the set found kept aside as ``<name>.damaged-<UTC time>``; generated when
    first asked for too (``log`` is told). A new set is written into a folder of its own and renamed
    into place whole, under the entry's lock, so that a reader (another process sharing the cache
    included) sees the whole set or none. Refused in one line where the cache cannot take a new one."""
    out = demo_root(cache_dir)
    rules = policy()
    signable(out, rules)
    problem = None
    if out.exists() or out.is_symlink():
        check, problem, digest = _verify(out, rules)
        if problem is None and check is not None:
            return out, EntryUse(os.fspath(out.parent), out.name, digest, state_of(check))
    with ExitStack() as stack:
        try:
            stack.enter_context(entry_lock(out.parent, out.name))
        except OSError as error:
            raise refused(out, problem, error) from None
        if out.exists() or out.is_symlink():  # made meanwhile by another worker?
            check, problem, digest = _verify(out, rules)
            if problem is None and check is not None:
                return out, EntryUse(os.fspath(out.parent), out.name, digest, state_of(check))
        try:
            if problem is not None:
                logger.warning("demo set %s not used (%s): generating it again", out, problem)
            digest, aside = _generate(out, rules, log, replace=problem is not None)
        except OSError as error:
            raise refused(out, problem, error) from None
    if problem is None:
        return out, EntryUse(os.fspath(out.parent), out.name, digest, EntryState.BUILT)
    kept = aside.name if aside is not None else "nothing (gone meanwhile)"
    return out, EntryUse(
        os.fspath(out.parent), out.name, digest, EntryState.REBUILT, f"{problem}; the one found kept as {kept}"
    )


def _generate(
    out: Path, rules: SigningPolicy, log: Callable[[str], None] | None, replace: bool
) -> tuple[str, Path | None]:
    """Generate the set into ``out`` with its sealed manifest: the digest of its files, and where
    ``replace``, where the set found was kept aside. The new set is made whole beside it first, so that
    the set found is moved aside only the moment before the new one takes its name (another process
    reading the set meanwhile reads the old files, then the new, identical ones)."""
    import shutil

    from harness.inputs.synthetic import Recipe, write_dataset  # the generator, when the set is missing

    recipe = Recipe(**_RECIPE)
    if log is not None:
        total = recipe.val + recipe.calib + recipe.offdomain_calib
        log(f"demo set: generating {total} images (seed {DEMO_SEED}, once) into {out}")
    start = time.monotonic()
    confine.check(out, "generating the demo set")
    making = out.with_name(f".{out.name}.{os.getpid()}.making")
    shutil.rmtree(making, ignore_errors=True)  # this process's own, left by an earlier try
    try:
        write_dataset(making, recipe)
        files = _files(making)
        body = {
            "kind": _KIND,
            "format": _FORMAT,
            "recipe": _RECIPE,
            "generator": code_digest("inputs/synthetic.py"),
            "files": files,
        }
        write_atomic(making / MANIFEST, json.dumps(seal_record(body, rules.key), sort_keys=True, indent=1))
        (making / _COMPLETE).touch()
        aside = set_aside(out) if replace else None
        os.rename(making, out)
    finally:
        shutil.rmtree(making, ignore_errors=True)
    if log is not None:
        log(f"demo set: written in {time.monotonic() - start:.1f} s")
    return _digest(files), aside


def _files(root: Path) -> dict[str, str]:
    """Every file of the set but its manifest and marker, by path relative to ``root``: its sha256 (a
    link or any other file that is not a regular one: ``not a regular file``)."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            file = Path(folder, name)
            relative = file.relative_to(root).as_posix()
            if relative in (MANIFEST, _COMPLETE):
                continue
            # a link (to /dev/zero, to another project's file) is never read: it matches no sha256
            regular = stat.S_ISREG(os.lstat(file).st_mode)
            found[relative] = hashlib.sha256(file.read_bytes()).hexdigest() if regular else "not a regular file"
    return dict(sorted(found.items()))


def _digest(files: dict[str, str]) -> str:
    return hashlib.sha256(canonical(files)).hexdigest()


def _verify(root: Path, rules: SigningPolicy) -> tuple[SealCheck | None, str | None, str]:
    """How the set in ``root`` stands against its manifest: the manifest's seal, why the set may not be
    used (None: it may) and the digest of its files."""
    manifest = root / MANIFEST
    if root.is_symlink() or not root.is_dir():
        return None, "not a folder", ""
    if not manifest.is_file():
        return None, f"no {MANIFEST} (half-written, or made by an older harness or by hand)", ""
    try:
        record = parse_json(read_bytes(manifest, "demo set manifest"), str(manifest))
        files = _files(root)
    except (OSError, DocumentError) as error:
        return None, f"cannot be read ({error})", ""
    if not isinstance(record, dict):
        return None, f"{MANIFEST} is not a JSON object", ""
    check = record_seal(record, rules.key)
    why = untrusted(check, rules)
    if why is not None:
        return check, f"{MANIFEST}: {why}", ""
    for name, value in (("kind", _KIND), ("format", _FORMAT), ("recipe", _RECIPE)):
        if record.get(name) != value:
            return (
                check,
                f"{MANIFEST}: {name} is {json.dumps(record.get(name))[:120]}, expected {json.dumps(value)}",
                "",
            )
    listed = record.get("files")
    if not isinstance(listed, dict):
        return check, f"{MANIFEST}: files is not an object of sha256 by file", ""
    for name in sorted(set(listed) | set(files)):
        if name not in files:
            return check, f"{name} is missing (its manifest lists it)", ""
        if name not in listed:
            return check, f"{name} is not in its manifest (added)", ""
        if listed[name] != files[name]:
            return (
                check,
                f"{name} changed: its sha256 is {files[name][:16]}, its manifest says {str(listed[name])[:16]}",
                "",
            )
    return check, None, _digest(files)


def demo_split(cache_dir: Path, which: str) -> Path:
    """The demo set's in-domain or off-domain calibration folder."""
    return demo_data(cache_dir) / "images" / _SPLITS[which]
