"""The demo set as a shared-cache entry: generated with a sealed manifest of every file's sha256, used
while every file holds, kept aside and generated anew where one does not, refused where it cannot be."""

import json
import os
from pathlib import Path

import pytest

from harness.core import signing
from harness.core.errors import HarnessError
from harness.core.files import SHARED_CACHE_VARIABLE
from harness.core.shared_entry import EntryState, seal_record
from harness.inputs import demo

TINY = {"seed": 0, "train": 0, "val": 3, "calib": 2, "offdomain_calib": 2, "imgsz": 64}


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A shared cache of its own, and a demo recipe small enough to generate again in a test."""
    monkeypatch.setenv(SHARED_CACHE_VARIABLE, str(tmp_path / "shared"))
    monkeypatch.delenv(signing.KEY_VARIABLE, raising=False)
    monkeypatch.delenv(signing.REQUIRE_VARIABLE, raising=False)
    monkeypatch.setattr(demo, "_RECIPE", TINY)
    return tmp_path / "shared"


def _not_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    def generate(*args: object) -> str:
        raise AssertionError("generated again although the set holds")

    monkeypatch.setattr(demo, "_generate", generate)


def test_the_demo_set_is_generated_with_a_sealed_manifest_and_used_while_every_file_holds(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, built = demo.demo_set(tmp_path / "cache")
    assert root == shared / "demo-data" / demo.DEMO_DATASET_NAME and built.state is EntryState.BUILT
    manifest = json.loads((root / demo.MANIFEST).read_text())
    assert len(manifest["files"]) == 3 + 3 + 2 + 2 + 2 + 1  # val and calib images and labels, off-domain, data.yaml
    assert (root / ".complete").exists()  # what an older harness sharing the cache looks for
    _not_generated(monkeypatch)
    again_root, again = demo.demo_set(tmp_path / "cache")
    assert again_root == root and again.state is EntryState.SEALED and again.sha256 == built.sha256
    assert again.folder == os.fspath(root.parent) and again.name == root.name


@pytest.mark.parametrize(
    "change", ["image", "label", "added", "removed", "manifest edited", "no manifest", "link to /dev/zero"]
)
def test_a_changed_demo_set_is_kept_aside_and_generated_again(
    change: str, shared: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, built = demo.demo_set(tmp_path / "cache")
    images = sorted((root / "images" / "val").iterdir())
    manifest = root / demo.MANIFEST
    if change == "image":
        images[0].write_bytes(images[1].read_bytes())
    elif change == "label":
        (root / "labels" / "val" / f"{images[0].stem}.txt").write_text("0 0.5 0.5 0.9 0.9\n")
    elif change == "added":
        (root / "images" / "val" / "extra.png").write_bytes(images[0].read_bytes())
    elif change == "removed":
        images[0].unlink()
    elif change == "manifest edited":  # a file's sha256 changed to a changed image's, the seal left as it was
        images[0].write_bytes(images[1].read_bytes())
        data = json.loads(manifest.read_text())
        data["files"][f"images/val/{images[0].name}"] = data["files"][f"images/val/{images[1].name}"]
        manifest.write_text(json.dumps(data))
    elif change == "no manifest":
        manifest.unlink()
    else:
        images[0].unlink()
        images[0].symlink_to("/dev/zero")
    again_root, again = demo.demo_set(tmp_path / "cache")
    assert again_root == root and again.state is EntryState.REBUILT and again.sha256 == built.sha256
    (aside,) = root.parent.glob(f"{root.name}.damaged-*")
    assert "kept as " + aside.name in again.detail and "not used" in caplog.text
    said = {
        "image": f"images/val/{images[0].name} changed",
        "label": f"labels/val/{images[0].stem}.txt changed",
        "added": "images/val/extra.png is not in its manifest",
        "removed": f"images/val/{images[0].name} is missing",
        "manifest edited": "unsigned edit",
        "no manifest": "no .manifest.json",
        "link to /dev/zero": f"images/val/{images[0].name} changed: its sha256 is not a regular",
    }[change]
    assert said in again.detail
    assert demo.demo_set(tmp_path / "cache")[1].state is EntryState.SEALED


def test_with_the_key_the_demo_set_is_signed_and_one_resealed_without_it_is_not_used_where_signatures_are_required(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(signing.KEY_VARIABLE, "k" * 32)
    root, built = demo.demo_set(tmp_path / "cache")
    assert built.state is EntryState.BUILT and demo.demo_set(tmp_path / "cache")[1].state is EntryState.SIGNED
    images = sorted((root / "images" / "val").iterdir())
    images[0].write_bytes(images[1].read_bytes())
    manifest = root / demo.MANIFEST
    data = json.loads(manifest.read_text())
    data["files"][f"images/val/{images[0].name}"] = data["files"][f"images/val/{images[1].name}"]
    manifest.write_text(json.dumps(seal_record(data, None)))  # what a writer without the key can make
    assert demo.demo_set(tmp_path / "cache")[1].state is EntryState.SEALED  # named so, used
    monkeypatch.setenv(signing.REQUIRE_VARIABLE, "1")
    again = demo.demo_set(tmp_path / "cache")[1]
    assert again.state is EntryState.REBUILT and "signatures are required" in again.detail


def test_a_changed_demo_set_in_a_cache_this_run_cannot_write_is_refused_in_one_line(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = demo.demo_set(tmp_path / "cache")
    image = sorted((root / "images" / "val").iterdir())[0]
    image.write_bytes(b"changed")

    def read_only(path: Path, now: object = None) -> None:
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr(demo, "set_aside", read_only)
    with pytest.raises(HarnessError) as refused:
        demo.demo_set(tmp_path / "cache")
    said = str(refused.value)
    assert "\n" not in said and f"shared cache entry {root}" in said and f"images/val/{image.name} changed" in said
    assert "Read-only file system" in said and image.read_bytes() == b"changed"
