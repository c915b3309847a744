"""A rerun of ``hailo-harness run`` whose predictions are all cached loads nothing it does not use:
no model (onnx, onnxruntime), no chart library (matplotlib), no image codec (OpenCV); it reads the
paired bootstrap and the drawn images the first run kept, and still writes every report."""

import ast
import subprocess
import sys
from pathlib import Path

from harness.inputs.synthetic import Recipe, write_dataset

UNUSED = ("cv2", "matplotlib", "onnx", "onnxruntime")


def _run(folder: Path, *arguments: str) -> tuple[int, list[str], str]:
    """``hailo-harness run ARGUMENTS`` in a fresh interpreter: its status, which of :data:`UNUSED` it
    imported, what it printed on stderr."""
    script = f"""
import contextlib, io, sys
from harness.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main(["run", *{list(arguments)!r}])
print(status, sorted(set({UNUSED!r}) & set(sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=folder, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    status, imported = done.stdout.strip().split(" ", 1)
    return int(status), ast.literal_eval(imported), done.stderr


def test_a_rerun_with_every_prediction_cached_imports_no_model_chart_library_or_image_codec(tmp_path):
    data = tmp_path / "syn"
    write_dataset(data, Recipe(seed=11, train=0, val=8, calib=3))
    options = ("--dataset", str(data), "--calibration", str(data / "images" / "calib"), "--calibration-count", "3")
    status, imported, _ = _run(tmp_path, *options, "--update-golden")
    assert status == 0 and set(imported) == {"cv2", "onnx", "onnxruntime"}  # the first run infers: it needs them
    report = tmp_path / "reports" / "latest" / "report.html"
    report.unlink()
    kept = _kept(tmp_path / ".harness-cache")
    assert len([f for f in kept if f.parent.name == "bootstrap"]) == 1 and kept
    status, imported, said = _run(tmp_path, *options)
    assert "8 images in 0.0 s, 8 from the prediction cache" in said
    assert status == 0 and imported == []
    assert report.stat().st_size > 0
    assert _kept(tmp_path / ".harness-cache") == kept  # the bootstrap and the drawings read, none made again


def _kept(cache: Path) -> dict[Path, tuple[int, int]]:
    """The kept bootstraps and drawn images, each with its inode and modification time."""
    files = [*(cache / "bootstrap").iterdir(), *(cache / "drawings").iterdir()]
    return {f: (f.stat().st_ino, f.stat().st_mtime_ns) for f in files}
