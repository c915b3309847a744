"""The documentation is held to the code: the generated reference pages are current, ARCHITECTURE.md names
modules that exist and every room, the README is short and its test command is what CI runs, and every
example of README.md and docs/ is run (or, where it needs a device or a compiler, checked against the real
parsers), its output checked where the page shows it.

The examples of a page run in one project folder holding ``models/m.onnx`` (the demo export),
``data/data.yaml`` (the first 40 images of the demo's validation set, labelled) and ``calib/`` (the demo's
in-domain calibration images), with ``hailo-harness``, ``pytest`` and ``python`` of this checkout. The pages
whose examples take minutes (:data:`SLOW_PAGES`) run where ``HARNESS_DOCS_SLOW=1`` (as ``.ci/run`` sets);
their examples are checked everywhere."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.docs_examples import (
    ROOT,
    RUN_LANGUAGES,
    Block,
    blocks,
    commands,
    expected_lines,
    missing_output,
    pages,
)

# Pages whose examples run inferences over whole sets (minutes on 2 cores): run where HARNESS_DOCS_SLOW=1.
SLOW_PAGES = ("README.md", "getting-started.md", "ci.md", "decoders.md", "baselines.md", "diagnosis.md", "settings.md")
SLOW = os.environ.get("HARNESS_DOCS_SLOW") == "1"
PYTEST_OWN_OPTIONS = ("-q", "-n", "-p", "-m", "-k", "-x", "-rs", "--junitxml", "--durations")
README_LINES = 150


# ------------------------------------------------------------------------------------------ generated pages


def test_the_generated_reference_pages_are_what_the_code_says():
    done = subprocess.run(
        [sys.executable, "-m", "tools.docs_gen", "--check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr + "\nregenerate: python -m tools.docs_gen"


def test_the_generator_check_fails_on_a_page_out_of_date(tmp_path):
    from tools import docs_gen

    shutil.copytree(ROOT / "docs" / "reference", tmp_path / "docs" / "reference")
    assert docs_gen.stale(tmp_path) == []
    page = tmp_path / "docs" / "reference" / "cli.md"
    page.write_text(page.read_text().replace("--score-threshold", "--score-threshld", 1))
    assert docs_gen.stale(tmp_path) == [page]
    assert docs_gen.main(["--check", "--root", str(tmp_path)]) == 1


def test_the_cli_reference_has_every_command_and_every_option_with_its_default_and_backends():
    from harness.cli.main import COMMANDS, build_parser

    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    for name in COMMANDS:
        assert f"## `hailo-harness {name}`" in page
        parser = build_parser(name)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for action in sub.choices[name]._actions:
            for flag in action.option_strings:
                assert flag in page or flag in ("-h", "--help"), (name, flag)
    assert "| `--hef M.hef` |  | hailort, replay | yes |" in page  # the backends that take it
    assert "| `--calibration-count N` | `64` |" in page


# ------------------------------------------------------------------------------------------ ARCHITECTURE.md


def _architecture_rooms() -> dict[str, list[str]]:
    """The rooms table of ARCHITECTURE.md: room -> the modules its row names."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    table = text.split("## The rooms", 1)[1].split("\n## ", 1)[0]
    rooms = {}
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rooms[cells[0].strip("`")] = [m.strip().strip("`") for m in cells[1].split(",")]
    return rooms


def _missing(rooms: dict[str, list[str]], package: Path) -> list[str]:
    """The rooms of ``package`` the table leaves out, the rooms it names that are not there, and the modules
    it names that are not there."""
    on_disk = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    missing = [f"room {r} not named" for r in sorted(on_disk - set(rooms))]
    missing += [f"room {r} not in the package" for r in sorted(set(rooms) - on_disk)]
    for room, modules in rooms.items():
        for module in modules:
            where = package / room / module
            if not (where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()):
                missing.append(f"harness.{room}.{module}")
    return missing


def test_architecture_names_every_room_of_the_package_and_only_modules_that_exist():
    rooms = _architecture_rooms()
    assert len(rooms) >= 12
    assert _missing(rooms, ROOT / "harness") == []


def test_the_architecture_check_finds_a_room_left_out_and_a_module_that_is_gone():
    rooms = _architecture_rooms()
    rooms["pipeline"] = [*rooms["pipeline"], "specs_gone"]
    del rooms["formats"]
    assert _missing(rooms, ROOT / "harness") == ["room formats not named", "harness.pipeline.specs_gone"]


def test_architecture_is_one_page():
    lines = (ROOT / "ARCHITECTURE.md").read_text().splitlines()
    assert len(lines) <= 80 and max(len(line) for line in lines) <= 400


# ------------------------------------------------------------------------------------------------ README


def test_the_readme_is_short_and_its_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_LINES
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    ci_command = ci[ci.index("# The README's test command:") + 1]
    assert ci_command.startswith("python3 -m venv .venv") and ci_command in readme.splitlines()
    first = next(b for b in blocks(ROOT / "README.md") if b.language == "bash")
    assert ci_command in first.text.splitlines() and "hailo-harness run" in first.text


# ------------------------------------------------------------------------------------------ the examples


def _plugin_options() -> tuple[set[str], set[str], set[str]]:
    """The plugin's flags, its ini keys, and the flags whose value is a path."""
    from harness.cli import plugin
    from harness.pipeline.options import JOB_OPTIONS, OPTIONS
    from tools.docs_gen import _PluginOptions

    recorder = _PluginOptions()
    plugin.pytest_addoption(recorder)  # type: ignore[arg-type]
    paths = {OPTIONS[n].flag for n in JOB_OPTIONS if OPTIONS[n].is_path}
    return {flag for flag, _, _ in recorder.options}, recorder.ini, paths


def _check_command(words: list[str], where: str) -> None:
    """A ``hailo-harness`` or ``pytest`` command of an example: its command exists and each option is one
    the command takes; a pytest path option is written ``--name=PATH``."""
    if words[0] == "hailo-harness":
        from harness.cli.main import COMMANDS, build_parser

        assert len(words) > 1 and words[1] in COMMANDS, f"{where}: {' '.join(words)}: no such command"
        parser = build_parser(words[1])
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        known = set(sub.choices[words[1]]._option_string_actions)
        for word in words[2:]:
            if word.startswith("--"):
                assert word.split("=", 1)[0] in known, f"{where}: hailo-harness {words[1]} has no option {word}"
    elif words[0] == "pytest":
        flags, _, paths = _plugin_options()
        for word in words[1:]:
            flag = word.split("=", 1)[0]
            if word.startswith("--") and flag not in PYTEST_OWN_OPTIONS:
                assert flag in flags, f"{where}: the plugin has no option {flag}"
                if flag in paths:
                    assert "=" in word, f"{where}: write {flag}=PATH (the plugin refuses {flag} PATH)"


def _check_shell(text: str, where: str, synopsis: bool = False) -> None:
    if synopsis:
        text = text.replace("[", " ").replace("]", " ")
    syntax = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, f"{where}: {syntax.stderr}"
    for words in commands(text):
        _check_command(words, where)


def _run_steps(document: object) -> list[str]:
    """The shell lines of a CI file: every ``run`` (GitHub Actions) and ``script`` (GitLab CI) value."""
    found: list[str] = []
    if isinstance(document, dict):
        for key, value in document.items():
            if key == "run" and isinstance(value, str):
                found.append(value)
            elif key == "script" and isinstance(value, list):
                found += [v for v in value if isinstance(v, str)]
            else:
                found += _run_steps(value)
    elif isinstance(document, list):
        for value in document:
            found += _run_steps(value)
    return found


def check_block(block: Block) -> None:
    """A block that is not run, held to the real parsers."""
    if block.language == "bash":
        _check_shell(block.text, block.where, synopsis="synopsis" in block.note)
    elif block.language == "python":
        compile(block.text, block.where, "exec")
    elif block.language == "yaml":
        for step in _run_steps(yaml.safe_load(block.text)):
            _check_shell(step.replace("${{", "").replace("}}", ""), block.where)
    elif block.language == "toml":
        _, ini, _ = _plugin_options()
        keys = re.findall(r"^(harness_\w+)\s*=", block.text, re.MULTILINE)  # tomllib: Python 3.11 on
        assert keys, f"{block.where}: no harness_ ini key"
        unknown = [k for k in keys if k not in ini]
        assert not unknown, f"{block.where}: no such ini key {unknown}"


ALL_BLOCKS = [b for page in pages() for b in blocks(page)]


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if not b.runs and not b.is_output], ids=lambda b: b.where)
def test_each_example_not_run_is_held_to_the_real_parsers(block):
    check_block(block)


def test_each_shell_and_python_example_runs_or_is_a_file_or_says_why_not():
    for block in ALL_BLOCKS:
        if block.language in RUN_LANGUAGES and not (block.runs or block.file_name):
            assert re.fullmatch(r"not run \(.+\)", block.note), f"{block.where}: not run, and not saying why"


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.runs and b.language == "bash"], ids=lambda b: b.where)
def test_each_shell_example_that_runs_names_real_commands_and_options(block):
    _check_shell(block.text, block.where)


def test_every_output_block_follows_an_example_that_runs():
    for page in pages():
        previous = None
        for block in blocks(page):
            if block.is_output:
                assert block.language == "text" and previous is not None and previous.runs, block.where
            previous = block


def test_the_checks_refuse_a_stale_option_and_the_space_form_of_a_path_option():
    with pytest.raises(AssertionError, match="has no option --hef-file"):
        _check_shell("hailo-harness run --hef-file m.hef\n", "page:1")
    with pytest.raises(AssertionError, match="write --hef=PATH"):
        _check_shell("pytest --hef m.hef --onnx=m.onnx\n", "page:1")
    with pytest.raises(AssertionError, match="no option --decoder-heads"):
        _check_shell("pytest --decoder-heads=yolov5\n", "page:1")
    assert missing_output(["PASSED", "9 of 9"], "x\nPASSED: 9 of 9 gates passed\n") == "9 of 9"  # in order, a line each
    assert missing_output(["FAILED", "9 of 9"], "FAILED: 1 of 9\nPASSED: 9 of 9\n") is None


@pytest.fixture(scope="module")
def example_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project folder as the examples name its files, and a ``bin/`` of this checkout's commands."""
    from harness.inputs.demo import DEMO_ONNX, demo_data

    base = tmp_path_factory.mktemp("docs-examples")
    demo = demo_data(base / "demo-cache")
    template = base / "template"
    (template / "models").mkdir(parents=True)
    shutil.copyfile(DEMO_ONNX, template / "models" / "m.onnx")
    for kind in ("images", "labels"):
        (template / "data" / kind / "val").mkdir(parents=True)
    for image in sorted((demo / "images" / "val").iterdir())[:40]:
        (template / "data" / "images" / "val" / image.name).symlink_to(image)
        label = demo / "labels" / "val" / f"{image.stem}.txt"
        (template / "data" / "labels" / "val" / label.name).symlink_to(label)
    (template / "data" / "data.yaml").write_text("path: .\nval: images/val\nnames: [fire, smoke]\n")
    (template / "calib").mkdir()
    for image in sorted((demo / "images" / "calib").iterdir()):
        (template / "calib" / image.name).symlink_to(image)
    commands_dir = base / "bin"
    commands_dir.mkdir()
    for name, module in (("hailo-harness", "harness.cli.main"), ("pytest", "pytest"), ("python", None)):
        shim = commands_dir / name
        run = f'exec "{sys.executable}" -m {module} "$@"' if module else f'exec "{sys.executable}" "$@"'
        shim.write_text(f"#!/bin/sh\n{run}\n")
        shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return base


def _run_page(page: Path, project: Path, folder: Path) -> None:
    shutil.copytree(project / "template", folder, symlinks=True)
    env = dict(os.environ)
    env["PATH"] = f"{project / 'bin'}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(folder)])
    env.pop("PYTEST_XDIST_WORKER", None)
    printed = ""
    for block in blocks(page):
        if block.file_name:
            (folder / block.file_name).write_text(block.text)
        elif block.is_output:
            missing = missing_output(expected_lines(block), printed)
            assert missing is None, f"{block.where}: {missing!r} not printed; printed:\n{printed[-3000:]}"
        elif block.runs:
            program = (
                ["bash", "-eo", "pipefail", "-c", block.text]
                if block.language == "bash"
                else [sys.executable, "-c", block.text]
            )
            done = subprocess.run(
                program, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False
            )
            printed = done.stdout + done.stderr
            assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{printed[-3000:]}"


def _page_param(page: Path) -> object:
    slow = pytest.mark.skipif(
        page.name in SLOW_PAGES and not SLOW,
        reason=f"{page.name}: its examples take minutes; HARNESS_DOCS_SLOW=1 runs them (.ci/run does)",
    )
    return pytest.param(page, id=page.name, marks=[slow])


@pytest.mark.fixtures
@pytest.mark.parametrize("page", [_page_param(p) for p in pages() if any(b.runs for b in blocks(p))])
def test_the_examples_of_each_page_run_and_print_what_it_shows(
    page, example_project, tmp_path, shared_fixtures, monkeypatch
):
    monkeypatch.setenv("HARNESS_FIXTURES", str(shared_fixtures))
    _run_page(page, example_project, tmp_path / "project")
