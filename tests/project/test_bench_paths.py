"""The benchmarks refuse a bad folder argument in one line, exit 2, before anything runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(tool: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(ROOT), os.environ.get("PYTHONPATH", ""))))
    command = [sys.executable, "-m", f"tools.{tool}", *arguments]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120)


@pytest.mark.parametrize("tool", ["bench_cached_run", "bench_cache", "bench_shard", "bench_startup"])
def test_a_folder_that_does_not_exist_is_refused_in_one_line(tool: str, tmp_path: Path) -> None:
    missing = tmp_path / "not-made"
    done = _bench(tool, "--dir", str(missing))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"{tool}: --dir {missing}: no such folder (expected an existing folder to work in)"
    ]
    assert not missing.exists()


def test_a_file_is_refused_as_not_a_folder(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    done = _bench("bench_cached_run", "--dir", str(file))
    assert (done.returncode, done.stderr.strip()) == (
        2,
        f"bench_cached_run: --dir {file}: not a folder (expected an existing folder to work in)",
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_folder_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        done = _bench("bench_cached_run", "--dir", str(locked))
    finally:
        locked.chmod(0o700)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == f"bench_cached_run: --dir {locked}: not writable (expected a folder this user can write in)"
    )


def test_against_names_a_checkout(tmp_path: Path) -> None:
    done = _bench("bench_cached_run", "--dir", str(tmp_path), "--against", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"bench_cached_run: --against {tmp_path}: no harness/__init__.py there (expected a checkout's root)"
    ]
