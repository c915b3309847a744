"""The command line's own words: the top-level help, every command's options, and what each exit
status and error line says."""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli.main import COMMANDS, INTERNAL_ERROR, build_parser, failure, main
from harness.core.errors import HarnessError


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_the_top_level_help_says_what_the_tool_does_and_the_first_commands_to_try(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "Accuracy-regression tests for YOLO detectors compiled for Hailo accelerators" in out
    assert "hailo-harness run " in out and "--update-golden" in out and "pytest --onnx=" in out
    assert "``" not in out and "harness.cli" not in out, "no developer docstring in the user's help"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_of_every_command_says_what_it_is_for_and_names_its_value(command):
    parser = _commands(build_parser(command))[command]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        flag = action.option_strings[0] if action.option_strings else action.dest
        assert action.help, f"{command} {flag}: no help"
        if action.nargs != 0 and action.option_strings and not action.choices:
            assert action.metavar, f"{command} {flag}: its value is shown as {action.dest.upper()}, not named"


@pytest.fixture
def inspect_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[BaseException], None]:
    """``hailo-harness inspect`` raises what the test gives it, in an empty working directory."""
    import harness.cli.commands.inspect as command

    monkeypatch.chdir(tmp_path)

    def raising(error: BaseException) -> None:
        def run(args: argparse.Namespace) -> int:
            raise error

        monkeypatch.setattr(command, "run", run)

    return raising


def test_an_internal_error_exits_3_with_one_line_naming_the_log_that_holds_its_traceback(
    inspect_raises, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inspect_raises(RuntimeError("boom\nsecond line"))
    assert main(["inspect", "m.hef"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    prefix = (
        "hailo-harness inspect: internal error of the harness: RuntimeError: boom second line; the traceback is in "
    )
    assert err.startswith(prefix)
    log = Path(err[len(prefix) :].split(" (please report it")[0])
    assert log.parent == tmp_path / ".harness-cache" / "logs"
    text = log.read_text()
    assert "command: hailo-harness inspect m.hef" in text
    assert "Traceback (most recent call last)" in text and "RuntimeError: boom" in text


def test_where_the_working_directory_takes_no_log_it_goes_to_the_temporary_folder(
    inspect_raises, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    inspect_raises(RuntimeError("boom"))
    (tmp_path / ".harness-cache").write_text("a file where the folder would be")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert main(["inspect", "m.hef"]) == 3
    (log,) = (tmp_path / "tmp").iterdir()
    assert str(log) in capsys.readouterr().err and "RuntimeError: boom" in log.read_text()


@pytest.mark.parametrize("error", [RecursionError("maximum recursion depth exceeded"), MemoryError(), KeyError("k")])
def test_recursion_memory_and_other_unexpected_errors_are_internal(error: Exception) -> None:
    assert failure(error)[0] == INTERNAL_ERROR


def test_ctrl_c_exits_130_with_one_line_and_no_traceback(inspect_raises, capsys: pytest.CaptureFixture[str]) -> None:
    inspect_raises(KeyboardInterrupt())
    assert main(["inspect", "m.hef"]) == 130
    assert capsys.readouterr().err == "hailo-harness inspect: interrupted; nothing half-written is kept\n"


@pytest.mark.parametrize(
    ("number", "remedy"),
    [
        (errno.ENOSPC, "free some space on its disk"),
        (errno.EROFS, "the file system is read-only"),
        (errno.EACCES, "make it readable or writable for this user"),
        (errno.ENAMETOOLONG, "choose a shorter folder or dataset name"),
        (errno.ENOENT, "no such file or folder on that path"),
    ],
)
def test_a_file_the_environment_refuses_exits_2_with_one_line_naming_it_and_what_to_do(
    number: int, remedy: str, inspect_raises, capsys: pytest.CaptureFixture[str]
) -> None:
    inspect_raises(OSError(number, os.strerror(number), "reports/latest/report.md"))
    assert main(["inspect", "m.hef"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"hailo-harness inspect: error: cannot use 'reports/latest/report.md': {os.strerror(number)} ("
    )
    assert remedy in err and err.count("\n") == 1


def test_a_name_that_is_not_utf8_is_printed_with_escapes_and_refused_with_a_line_where_it_must_be_encoded(
    monkeypatch: pytest.MonkeyPatch, inspect_raises, capsys: pytest.CaptureFixture[str]
) -> None:
    import harness.cli.commands.inspect as command

    name = os.fsdecode(b"caf\xe9")

    def printing(args: argparse.Namespace) -> int:
        print(f"dataset {name}")
        return 0

    monkeypatch.setattr(command, "run", printing)
    assert main(["inspect", "m.hef"]) == 0
    assert capsys.readouterr().out == "dataset caf\\udce9\n"
    try:
        name.encode()
    except UnicodeEncodeError as error:
        inspect_raises(error)
    assert main(["inspect", "m.hef"]) == 2
    err = capsys.readouterr().err
    assert "'caf\\udce9' holds bytes that are not UTF-8 (a file or folder name?): rename it" in err


def test_usage_errors_exit_2_and_harness_errors_exit_2_with_their_message(
    inspect_raises, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["inspect", "--no-such-option"])
    assert usage.value.code == 2
    inspect_raises(HarnessError("m.hef: not a HEF (magic 0x0, expected 0x01484546)"))
    assert main(["inspect", "m.hef"]) == 2
    assert capsys.readouterr().err.endswith(
        "hailo-harness inspect: error: m.hef: not a HEF (magic 0x0, expected 0x01484546)\n"
    )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["eval", "--iou-threshold", "2"],
            "hailo-harness eval: error: argument --iou-threshold: '2': expected a number from 0 to 1 "
            "(see 'hailo-harness eval --help')",
        ),
        (
            ["eval", "--bogus"],
            "hailo-harness eval: error: unrecognized arguments: --bogus (see 'hailo-harness eval --help')",
        ),
        ([], "hailo-harness: error: the following arguments are required: command (see 'hailo-harness --help')"),
    ],
)
def test_a_usage_error_is_one_line_pointing_to_the_help_not_the_usage_block(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as usage:
        main(argv)
    assert usage.value.code == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"{line}\n")


def test_output_closed_early_ends_the_command_quietly_with_141(tmp_path: Path) -> None:
    script = (
        "import sys, harness.cli.commands.inspect as c\n"
        "def run(args):\n"
        "    for i in range(100_000): print('line', i)\n"
        "    return 0\n"
        "c.run = run\n"
        "from harness.cli.main import main\n"
        "sys.exit(main(['inspect', 'm.hef']))\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()  # as `| head -1` does
    err = process.stderr.read()
    assert process.wait(timeout=60) == 141
    assert err == b"", "no traceback, no line: the reader is gone"


def test_the_command_line_confines_writes_to_the_working_directory_and_the_folders_it_names(tmp_path, monkeypatch):
    from harness.cli.main import _confine
    from harness.core import confine
    from harness.core.defaults import REPORT_DIR

    monkeypatch.delenv(confine.FOLLOW_LINKS_VARIABLE, raising=False)
    monkeypatch.delenv("HARNESS_SHARED_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    try:
        _confine({"report": REPORT_DIR, "golden": tmp_path / "g", "record": tmp_path / "r" / "m.rec"})
        policy = confine.current()
        assert policy is not None and not policy.follow_links
        assert [r.named for r in policy.roots] == [tmp_path, tmp_path / "g", tmp_path / "r"]  # a default names none
        _confine({"follow_links": True})
        assert confine.current().follow_links  # type: ignore[union-attr]
    finally:
        confine.release()
