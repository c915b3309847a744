"""``hailo-harness``: one subcommand per module in ``harness.cli.commands``.

Each command module provides ``add_arguments(parser)`` and ``run(args) -> int``; :data:`HELP` says
what each does. :func:`main` alone decides what an exception means (:func:`failure`), and prints it
as one line, never a bare traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import io
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from harness import __version__
from harness.core.confine import make_folder, release
from harness.core.defaults import CACHE_DIR
from harness.core.errors import HarnessError
from harness.core.files import write_atomic

COMMANDS = {
    "calibration-check": "harness.cli.commands.calibration_check",
    "compile": "harness.cli.commands.compile",
    "doctor": "harness.cli.commands.doctor",
    "eval": "harness.cli.commands.eval",
    "inspect": "harness.cli.commands.inspect",
    "merge": "harness.cli.commands.merge",
    "run": "harness.cli.commands.run",
    "verify-decode": "harness.cli.commands.verify_decode",
}
# What each command does, for the top-level help: listing them imports none of them.
HELP = {
    "calibration-check": "before any compile, predict whether a calibration set will cost accuracy (the emulated "
    "quantization on it against the float model and an in-domain calibration), and which images to add",
    "compile": "write and check the DFC model script (.alls) and NMS config for an ONNX, then compile a HEF "
    "with the DFC",
    "doctor": "inject each known failure mode into a run and check that a gate catches it and the diagnosis names it",
    "eval": "run a model through one backend over a labelled dataset and report COCO mAP, box counts and score "
    "distribution (predictions cached per image, so an interrupted run resumes)",
    "inspect": "describe a HEF (architecture, streams, quantization, NMS op) and how its outputs reach the host",
    "merge": "join the stores of every shard of one job (run --shard K/N) and gate and report the union once, "
    "as one run over every image would",
    "run": "run the full gate: the ONNX and the Hailo path (emulated, or a HEF on a device) vs golden baselines, "
    "optionally the Dataflow Compiler's emulation stages of a HAR; reports written",
    "verify-decode": "cut an Ultralytics ONNX export at its six head outputs, decode them, and compare boxes, scores "
    "and detections after NMS with the model's own decoded output",
}


DESCRIPTION = """\
Accuracy-regression tests for YOLO detectors compiled for Hailo accelerators: the ONNX
export and the Hailo path (a HEF on a device, or emulated without one, and labelled so)
on the same labelled images, held against golden baselines, with reports that say why a
run regressed."""
EPILOG = """first steps:
  hailo-harness run                     the main job on the shipped demo (no Hailo hardware needed)
  hailo-harness run --onnx M.onnx --dataset data.yaml --update-golden
                                        bless your model's first baselines into ./golden
  hailo-harness inspect M.hef           what a HEF holds, read without HailoRT
  pytest --onnx=M.onnx --dataset=data.yaml   the same gates as test items in your pytest run

'hailo-harness COMMAND --help' shows a command's options and their defaults."""


class _Parser(argparse.ArgumentParser):
    """A parser whose usage error is one line with a pointer to the help (not argparse's usage block
    before it), exit status 2. ``prog_of_error`` names the command the line is about where the
    top-level parser finds the fault (an option no command has)."""

    prog_of_error: str | None = None

    def error(self, message: str) -> NoReturn:
        prog = self.prog_of_error or self.prog
        self.exit(BAD_INPUT, f"{prog}: error: {message} (see '{prog} --help')\n")


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command listed, and the options of ``chosen`` (None: of every command),
    whose module alone is imported."""
    parser = _Parser(
        prog="hailo-harness",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hailo-harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module_name in COMMANDS.items():
        command = sub.add_parser(name, help=HELP[name], description=HELP[name])
        if chosen is None or name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(command)
            command.set_defaults(run=module.run)
    if chosen in COMMANDS:
        parser.prog_of_error = f"hailo-harness {chosen}"
    return parser


# The exit statuses of every command; OUTPUT_CLOSED is a shell's for a process its closed pipe ended.
PASSED, GATE_FAILED, BAD_INPUT, INTERNAL_ERROR, INTERRUPTED, OUTPUT_CLOSED = 0, 1, 2, 3, 130, 141

# What to do about an OSError the environment raised, by errno; any other errno naming a file is said as is.
_REMEDIES = {
    errno.ENOSPC: "free some space on its disk, or choose a folder on another, and run again",
    errno.EDQUOT: "free some of your disk quota, or choose a folder elsewhere, and run again",
    errno.EROFS: "the file system is read-only: choose a folder that can be written",
    errno.EACCES: "make it readable or writable for this user, or choose another folder",
    errno.EPERM: "make it readable or writable for this user, or choose another folder",
    errno.ENAMETOOLONG: "a name on that path is too long for the file system: choose a shorter folder or dataset name",
    errno.ENOENT: "no such file or folder on that path: check it",
    errno.ENOTDIR: "part of that path is a file, not a folder: check the path",
    errno.EISDIR: "that is a folder, where a file is expected: check the path",
    errno.ELOOP: "symbolic links on that path point in a loop: check the path",
    errno.EIO: "the disk (or network file system) failed to read or write it: check it and run again",
}


def failure(error: Exception) -> tuple[int, str]:
    """The exit status and the words that say what ``error`` means to the user: bad input or an
    environment that refuses a file (:data:`BAD_INPUT`) where they name what to fix, else an internal
    error (:data:`INTERNAL_ERROR`, whose words the caller completes with where its traceback is)."""
    if isinstance(error, HarnessError):
        return BAD_INPUT, str(error)
    if isinstance(error, OSError) and (error.filename is not None or error.errno in _REMEDIES):
        named = (f for f in (error.filename, error.filename2) if f is not None)
        files = " and ".join(repr(os.fsdecode(f) if isinstance(f, bytes) else str(f)) for f in named)
        what = f"cannot use {files}: " if files else ""
        remedy = _REMEDIES.get(error.errno or 0, "check the path and run again")
        return BAD_INPUT, f"{what}{error.strerror or error} ({remedy})"
    if isinstance(error, UnicodeEncodeError) and _undecodable(error):
        name = error.object[max(0, error.start - 40) : error.end + 40]
        return BAD_INPUT, (
            f"{name!r} holds bytes that are not UTF-8 (a file or folder name?): rename it with UTF-8 characters only"
        )
    return INTERNAL_ERROR, f"internal error of the harness: {type(error).__name__}: {_one_line(str(error))}"


def _undecodable(error: UnicodeEncodeError) -> bool:
    """The characters UTF-8 could not encode are the bytes of a name that is not UTF-8, as
    :func:`os.fsdecode` gives them (U+DC80 to U+DCFF)."""
    return all("\udc80" <= c <= "\udcff" for c in error.object[error.start : error.end])


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else f"{line[: limit - 3]}..."


def write_log(command: str, error: BaseException, folder: Path = CACHE_DIR / "logs") -> Path | None:
    """Write ``error``'s traceback, with the ``command`` line and the versions, to ``<time>-<pid>.log``
    in ``folder`` (default ``.harness-cache/logs`` under the working directory), or else in the
    system's temporary folder; its path (None where neither could be written)."""
    import platform  # only where an internal error is logged (tempfile, traceback: 0.012 s of every start)
    import tempfile
    import traceback

    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    text = "".join(
        [
            f"hailo-harness {__version__}: internal error\n",
            f"command: {command}\n",
            f"working directory: {os.getcwd()}\n",
            f"python {sys.version.split()[0]} on {platform.platform()}\n\n",
            *traceback.format_exception(error),
        ]
    )
    for log in (folder / stamp, Path(tempfile.gettempdir()) / f"hailo-harness-{stamp}"):
        try:
            make_folder(log.parent)
            write_atomic(log, text)
        except (OSError, HarnessError):  # a folder a link leads out of the project too: the next one
            continue
        return log.absolute()
    return None


def logged(log: Path | None) -> str:
    """Where an internal error's traceback was written, as the line that reports it says so."""
    return f"the traceback is in {log} (please report it with that file)" if log else "no folder took its traceback"


def _tolerant(stream: TextIO) -> None:
    """Print what UTF-8 cannot hold (a non-UTF-8 file name) as backslash escapes instead of failing."""
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="backslashreplace")


def _confine(values: dict[str, object]) -> None:
    """Where this command may write (:mod:`harness.core.confine`): the working directory and the
    folders its options name, links out of them refused unless ``--follow-links`` is given."""
    from harness.core.confine import confine

    named: list[object] = []
    if any(name in values for name in ("golden", "report", "cache", "record")):  # its module already imported
        from harness.pipeline.options import named_folders

        named += named_folders(values)
    for extra in ("out", "save_predictions"):  # compile's output folder, eval's predictions file
        value = values.get(extra)
        if value is not None:
            named.append(value if extra == "out" else Path(str(value)).parent)
    confine(os.getcwd(), [Path(str(n)) for n in named], bool(values.get("follow_links")))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names; its exit status: 0 passed, 1 a gate failed, 2 usage or bad input
    (or an environment that refuses a file), 3 an internal error (its traceback in a log file), 130
    interrupted, 141 its output closed. Each failure is one line on stderr (none for a closed output)."""
    _tolerant(sys.stdout)
    _tolerant(sys.stderr)
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    prog = f"hailo-harness {chosen}" if chosen in COMMANDS else "hailo-harness"
    try:
        args = build_parser(chosen if chosen in COMMANDS else "").parse_args(argv)  # "": no command's options
        _confine(vars(args))
        try:
            return int(args.run(args))
        finally:
            release()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; nothing half-written is kept", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:  # the reader of stdout went away (a pipe into head): nothing to say, and no one to hear
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit fails no more
        return OUTPUT_CLOSED
    except Exception as error:
        status, words = failure(error)
        if status == INTERNAL_ERROR:
            import shlex

            words = f"{words}; {logged(write_log(shlex.join(['hailo-harness', *argv]), error))}"
        else:
            words = f"error: {words}"
        print(f"{prog}: {words}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
