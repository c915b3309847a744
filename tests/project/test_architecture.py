"""The layers as contracts: each room of the package knows nothing of the rooms above it, the
backends nothing of each other, and Hailo packages are imported only inside their backend
(.importlinter, checked by import-linter)."""

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import harness

ROOT = Path(__file__).resolve().parents[2]


def test_every_import_contract_of_the_package_is_kept():
    program = (
        "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(config_filename='.importlinter'))"
    )
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Contracts: \d+ kept, 0 broken\.", done.stdout), done.stdout


def test_the_public_api_loads_each_name_from_its_room_when_first_used():
    assert harness.run_job.__module__ == "harness.pipeline.job"
    assert harness.evaluate_spec.__module__ == "harness.pipeline.factory"
    assert harness.read_hef.__module__ == "harness.inputs.hef.reader"
    assert {name for name in harness.__all__ if name != "__version__"} == set(harness._API)
    try:
        harness.no_such_name  # noqa: B018
    except AttributeError as error:
        assert "no attribute 'no_such_name'" in str(error)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_the_plugin_and_the_command_list_load_without_the_evaluation():
    """The plugin is loaded by every pytest run where the package is installed, and the command list
    by every ``hailo-harness --help``: neither may pay for numpy, onnx, onnxruntime, OpenCV or pycocotools."""
    heavy = ("numpy", "onnx", "onnxruntime", "cv2", "pycocotools", "matplotlib")
    program = (
        "import sys, harness.cli.plugin, harness.cli.main as cli; cli.build_parser(''); "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"


def test_a_renamed_public_name_still_works_and_warns_its_new_name():
    with pytest.warns(DeprecationWarning, match=r"^harness.evaluate is renamed harness.evaluate_spec \(the old"):
        value = harness.evaluate
    assert value is harness.evaluate_spec


@pytest.mark.parametrize(
    ("old", "name", "public"),
    [
        ("harness.detections", "Detections", "harness.Detections"),
        ("harness.specs", "OutputSpec", "harness.OutputSpec"),
        ("harness.settings", "DecodeConfig", "harness.DecodeConfig"),
        ("harness.specs", "NmsShape", "harness.core.specs.NmsShape"),
    ],
)
def test_a_decoder_authors_old_import_still_works_and_warns_where_the_name_lives_now(old, name, public):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"^{old}\.{name} moved: import {re.escape(public)}$"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(public.rpartition(".")[0]), name)
    with pytest.raises(AttributeError, match=rf"module '{old}' has no attribute 'nothing'"):
        module.nothing  # noqa: B018
