"""The command line's own words: the top-level help and every command's options."""

from __future__ import annotations

import argparse

import pytest

from harness.cli.main import COMMANDS, build_parser, main


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
