"""The environment record: package versions read as importlib.metadata reads them, without importing it."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.environment import distribution_version, environment


def _dist_info(folder: Path, name: str, version: str, header: str = "Version") -> None:
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\n{header}: {version}\n\nVersion: 9.9.9\n")


def _egg_info(folder: Path, name: str, version: str) -> None:
    info = folder / f"{name.replace('-', '_')}-{version}-py3.11.egg-info"
    info.mkdir(parents=True)
    (info / "PKG-INFO").write_text(f"Metadata-Version: 1.1\nName: {name}\nVersion: {version}\n")


def _importlib_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def test_every_installed_distribution_reads_as_importlib_metadata_reads_it():
    names = {dist.metadata["Name"] for dist in importlib.metadata.distributions()}
    assert {"numpy", "onnx", "onnxruntime", "pycocotools"} <= names
    assert {name: distribution_version(name) for name in names} == {name: _importlib_version(name) for name in names}


def test_a_name_is_matched_after_normalization_and_the_first_on_the_path_wins(tmp_path, monkeypatch):
    _dist_info(tmp_path / "first", "My_Pkg.Tools", "1.2.3")
    _dist_info(tmp_path / "second", "my-pkg-tools", "4.5.6")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path / "first"), str(tmp_path / "second")])
    for spelling in ("my-pkg-tools", "My.Pkg_Tools", "MY_PKG_TOOLS"):
        assert distribution_version(spelling) == _importlib_version(spelling) == "1.2.3"


def test_an_egg_or_a_metadata_without_its_version_is_left_to_importlib_metadata(tmp_path, monkeypatch):
    _egg_info(tmp_path / "eggs", "old-pkg", "0.7")
    _dist_info(tmp_path / "odd", "odd-pkg", "2.0", header="X-Version")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "eggs"), str(tmp_path / "odd")])
    assert distribution_version("old-pkg") == _importlib_version("old-pkg") == "0.7"
    assert distribution_version("odd-pkg") == _importlib_version("odd-pkg")  # importlib's answer, whatever it is


def test_a_distribution_not_installed_has_no_version(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert distribution_version("not-installed-anywhere") is None
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("not-installed-anywhere")


def test_the_record_names_python_and_the_packages_that_shape_results_without_importing_importlib_metadata():
    record = dict(environment())
    assert record["numpy"] == importlib.metadata.version("numpy")
    assert record["onnxruntime"] == importlib.metadata.version("onnxruntime")
    code = (
        "import sys; from harness.core.environment import environment; environment(); "
        "print('importlib.metadata' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
