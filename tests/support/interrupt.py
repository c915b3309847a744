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
    command: Sequence[str], marker: str, *, stream: str = "stdout", cwd: Path | None = None, timeout: float = 240
) -> Interrupted:
    """Run ``command`` and send it SIGINT as soon as ``marker`` shows in its ``stream`` ("stdout" or
    "stderr"); what it printed and its exit status. A command that ends before it says ``marker``
    fails the caller's test with what it printed."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    assert process.stdout is not None and process.stderr is not None
    streams = {"stdout": process.stdout, "stderr": process.stderr}
    seen = {"stdout": b"", "stderr": b""}
    selector = selectors.DefaultSelector()
    for name, pipe in streams.items():
        selector.register(pipe, selectors.EVENT_READ, name)
    deadline = time.monotonic() + timeout
    try:
        while marker.encode() not in seen[stream]:
            if time.monotonic() > deadline or not selector.get_map():
                raise AssertionError(f"{marker!r} never said; stdout: {seen['stdout']!r}, stderr: {seen['stderr']!r}")
            for key, _ in selector.select(timeout=1):
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
