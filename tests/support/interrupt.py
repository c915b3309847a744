"""A command interrupted as a terminal's Ctrl-C would, once it says it is at work."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Interrupted:
    returncode: int
    said_before: str  # what the watched stream held when SIGINT was sent
    out: str
    err: str


def interrupt_at(
    command: Sequence[str],
    marker: str,
    *,
    stream: str = "stdout",
    cwd: Path | None = None,
    timeout: float = 240,
    sentinel: Path | None = None,
) -> Interrupted:
    """Run ``command`` and send it SIGINT as soon as ``marker`` shows in its ``stream`` ("stdout" or
    "stderr"), or, with ``sentinel``, as soon as that file exists (what :func:`slow_inference` touches:
    no pipe or buffer between); what it printed and its exit status. A command that ends before it says
    ``marker`` fails the caller's test with what it printed."""
    # SIGINT as a terminal's Ctrl-C finds it: handled, even where this runner ignores it (a job a
    # non-interactive shell started in the background ignores SIGINT, and its children inherit that)
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdout is not None and process.stderr is not None
    streams = {"stdout": process.stdout, "stderr": process.stderr}
    seen = {"stdout": b"", "stderr": b""}
    selector = selectors.DefaultSelector()
    for name, pipe in streams.items():
        selector.register(pipe, selectors.EVENT_READ, name)
    deadline = time.monotonic() + timeout

    def ready() -> bool:
        return sentinel.exists() if sentinel is not None else marker.encode() in seen[stream]

    try:
        while not ready():
            if time.monotonic() > deadline or not selector.get_map():
                raise AssertionError(f"{marker!r} never said; stdout: {seen['stdout']!r}, stderr: {seen['stderr']!r}")
            for key, _ in selector.select(timeout=0.2):
                data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                if data:
                    seen[key.data] += data
                else:
                    selector.unregister(key.fileobj)
        said_before = seen[stream].decode(errors="replace")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=timeout)
    finally:
        selector.close()
        if process.poll() is None:
            process.kill()
            process.wait()
    return Interrupted(
        process.returncode,
        said_before,
        (seen["stdout"] + out).decode(errors="replace"),
        (seen["stderr"] + err).decode(errors="replace"),
    )


_SLOW_INFERENCE = """
import pathlib, runpy, sys, time
from harness.pipeline import detect
sentinel = pathlib.Path(sys.argv.pop(1))
def _slow(self, images, _batch=detect.OnnxPath.detect_batch):
    sentinel.touch()
    time.sleep(120)
    return _batch(self, images)
detect.OnnxPath.detect_batch = _slow
runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
"""


def slow_inference(sentinel: Path, module: str, *args: str) -> list[str]:
    """``python -m module args`` whose ONNX path touches ``sentinel`` and sleeps before each batch it infers:
    a run still inferring when SIGINT comes (``interrupt_at(..., sentinel=sentinel)``), however loaded the
    machine (a real one of a few images may end before it lands)."""
    import sys

    return [sys.executable, "-c", _SLOW_INFERENCE, str(sentinel), module, *args]
