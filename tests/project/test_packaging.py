"""The package as a user installs it: the built wheel in a fresh virtual environment, run from an
empty folder (the README's first command), with nothing read from or written to the checkout."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What a build does not need: the checkout's own state (its .gitignore) and its history.
NOT_SOURCES = (".git", ".venv", ".tox", "build", "dist", "*.egg-info", ".harness-cache", "reports", "__pycache__")


def _run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel alone; its dependencies are this environment's (no download)."""
    tmp = tmp_path_factory.mktemp("packaging")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCES))
    pip = (sys.executable, "-m", "pip")
    _run(*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp / "wheel", source, cwd=tmp)
    (wheel,) = (tmp / "wheel").glob("hailo_harness-*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp)
    python = venv / "bin" / "python"
    purelib = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp).stdout.strip()
    )
    (purelib / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(*pip, "--python", python, "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp)
    return venv


def _site_files(venv: Path) -> set[Path]:
    return {p.relative_to(venv) for p in venv.rglob("*") if "__pycache__" not in p.parts}


def test_the_wheel_carries_the_demo_and_runs_the_main_job_from_an_empty_folder_writing_only_there(installed, tmp_path):
    where = _run(installed / "bin" / "python", "-c", "import harness; print(harness.__file__)", cwd=tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(installed), "the harness must come from the wheel"
    before = _site_files(installed)
    project = tmp_path / "project"
    project.mkdir()
    done = _run(installed / "bin" / "hailo-harness", "run", cwd=project)
    assert "PASSED: 9 of 9 gates passed" in done.stdout
    assert _site_files(installed) == before, "a run wrote into the install"
    assert not (project / "golden").exists(), "reading the shipped baselines must not copy them"
    report = json.loads((project / "reports" / "latest" / "report.json").read_text())
    read = {b["path"]: Path(b["file"]) for b in report["baselines"]}
    assert all(f.is_relative_to(installed) and f.exists() for f in read.values()), read

    blessed = _run(installed / "bin" / "hailo-harness", "run", "--update-golden", cwd=project)
    assert "PASSED" in blessed.stdout
    assert sorted(p.name for p in (project / "golden" / "fire_smoke_yolo11n_256").glob("*.json")) == [
        "synthetic_fire_smoke_seed0--emulated-hailo.json",
        "synthetic_fire_smoke_seed0--onnx.json",
    ]
    assert _site_files(installed) == before, "a blessing wrote into the install"
    report = json.loads((project / "reports" / "latest" / "report.json").read_text())
    assert {Path(b["file"]).parent.parent for b in report["baselines"]} == {Path("golden")}
