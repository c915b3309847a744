"""Benchmark: how fast the CLI starts, above all on a fully cached rerun of ``hailo-harness run``.

    python -m tools.bench_startup [--repeat R] [--hef HEF] [--dir DIR]

In a fresh project folder (under ``--dir``, default a temporary one) the demo job runs once (it fills
the prediction cache, the emulated HEF and the export's facts), then ``--repeat`` times again with
every prediction cached. Each command runs in its own process; printed are the median wall time,
the start-up (until the first path starts: the ``onnx: predicting`` line), the peak RSS and whether
onnx or onnxruntime was imported (``-X importtime``). Beside it: ``--help``, ``inspect HEF``, and the
pytest plugin's import (alone, and on top of pytest, which loads it). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tools.bench_paths import writable_folder

CLI = [sys.executable, "-m", "harness.cli.main"]
FIRST_PATH = "onnx: predicting"


@dataclass(frozen=True)
class Run:
    wall: float  # seconds
    start: float | None  # seconds until the first path started, where the command has one
    rss: float  # peak RSS, MiB


def imported_by(command: list[str], cwd: Path) -> tuple[str, ...]:
    """Which of onnx, onnxruntime and matplotlib ``command`` imports (read from ``-X importtime``)."""
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    found = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return tuple(m for m in ("onnx", "onnxruntime", "matplotlib") if m in found)


def timed_start(command: list[str], cwd: Path) -> Run:
    """``command`` with its stderr read as it comes: the start-up is when the first path's line arrives."""
    begin = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    start = None
    tail = []
    for line in process.stderr:
        if start is None and FIRST_PATH in line:
            start = time.perf_counter() - begin
        tail.append(line)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - begin
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{''.join(tail[-20:])}")
    return Run(wall, start, usage.ru_maxrss / 1024)


def plugin_import_ms(with_pytest: bool) -> float:
    """``harness.cli.plugin``'s cumulative import time (ms), alone or after pytest (as pytest loads it)."""
    code = "import pytest; import harness.cli.plugin" if with_pytest else "import harness.cli.plugin"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True)
    line = next(x for x in done.stderr.splitlines() if x.rstrip().endswith("| harness.cli.plugin"))
    return int(line.split("|")[1]) / 1000


def report(name: str, runs: list[Run]) -> None:
    starts = [r.start for r in runs if r.start is not None]
    start = f"  start-up {statistics.median(starts):.3f} s" if starts else ""
    print(
        f"{name:<28} wall {statistics.median(r.wall for r in runs):.3f} s (min {min(r.wall for r in runs):.3f}){start}"
        f"  peak RSS {max(r.rss for r in runs):.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--hef", type=Path, help="a HEF for the inspect row (default: none)")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    if args.dir is not None:
        writable_folder("bench_startup", "--dir", args.dir)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        project = Path(folder)
        first = timed_start([*CLI, "run"], project)
        report("run (first: fills caches)", [first])
        reruns = [timed_start([*CLI, "run"], project) for _ in range(args.repeat)]
        report("run (every prediction cached)", reruns)
        imported = imported_by([*CLI, "run"], project)
        print(
            f"{'':<28} imported by the cached rerun: {', '.join(imported) or 'none'} (of onnx, onnxruntime, matplotlib)"
        )
        report("--help", [timed_start([*CLI, "--help"], project) for _ in range(args.repeat)])
        if args.hef is not None:
            report(
                f"inspect {args.hef.name}",
                [timed_start([*CLI, "inspect", str(args.hef)], project) for _ in range(args.repeat)],
            )
    alone = statistics.median(plugin_import_ms(False) for _ in range(args.repeat))
    loaded = statistics.median(plugin_import_ms(True) for _ in range(args.repeat))
    print(
        f"{'plugin import':<28} {alone:.1f} ms alone (pytest's own import included), {loaded:.1f} ms on top of pytest"
    )


if __name__ == "__main__":
    main()
