"""Benchmark: a run that evaluates nothing new, end to end (issue 26: <= 0.5 s cached or replayed,
<= 0.3 s for a replay of 200 images without the prediction cache).

    python -m tools.bench_cached_run [--repeat R] [--dir DIR] [--against ROOT] [--from-source]

In a fresh project folder (under ``--dir``, default a temporary one) the demo job runs once (it fills
the prediction cache, the emulated HEF and the export's facts) and records its Hailo path
(``run --record``); ``eval --backend emulator --record`` records the 200 fixture frames of
``fire_smoke_val`` (``HARNESS_FIXTURES``). Then, in interleaved rounds, each command in its own process:

- ``run``: every prediction cached;
- ``run --replay STORE``: the Hailo path served from the store (its predictions cached after the first);
- ``eval --dataset fire_smoke_val --replay STORE --no-cache``: 200 frames replayed, decoded and scored.

Printed per command: the median and least wall time; where ``--against ROOT`` names another checkout
(its ``harness/`` is put first on ``PYTHONPATH``), its median beside and the ratio of the medians of
the same rounds; one run's stage clock (:mod:`tools.bench_stages`: dataset, export facts, evaluate,
metrics, cache, reports; "other" is the rest of the command, imports mostly); the imports
(``-X importtime``: their total, and which of onnx, onnxruntime, matplotlib and cv2 it loaded).

Each child compiles the harness once into a bytecode folder of its own and reuses it, as an installed
package does (``PYTHONDONTWRITEBYTECODE`` is lifted for them); ``--from-source`` compiles every module
on every run instead (what a checkout with ``PYTHONDONTWRITEBYTECODE=1`` pays). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tools.bench_paths import checkout, writable_folder

HEAVY = ("onnx", "onnxruntime", "matplotlib", "cv2")
FIRE_SMOKE = "fire_smoke_val"


@dataclass(frozen=True)
class Code:
    """A checkout whose harness is timed: its name and the environment its children run in."""

    name: str
    env: dict[str, str]


ROOT = Path(__file__).resolve().parent.parent  # the checkout this bench lies in


def code_of(name: str, root: Path, bytecode: Path | None) -> Code:
    """``root``'s harness (put first on ``PYTHONPATH``, before an installed one) and its bytecode folder."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return Code(name, env)


def harness(arguments: list[str]) -> list[str]:
    return [sys.executable, "-m", "harness.cli.main", *arguments]


def wall(code: Code, arguments: list[str], cwd: Path) -> float:
    """Seconds the command takes as a process; a status other than 0 or 1 stops the bench."""
    begin = time.perf_counter()
    done = subprocess.run(harness(arguments), cwd=cwd, env=code.env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - begin
    if done.returncode not in (0, 1):
        raise SystemExit(
            f"{code.name}: hailo-harness {' '.join(arguments)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        )
    return seconds


def stages(code: Code, arguments: list[str], cwd: Path) -> tuple[dict[str, float], float]:
    """One run under the stage clock (:mod:`tools.bench_stages`): seconds per stage, the command's."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "stages.json"
        env = dict(code.env, PYTHONPATH=os.pathsep.join((code.env["PYTHONPATH"], str(ROOT))))
        command = [sys.executable, "-m", "tools.bench_stages", str(out), "--", *arguments]
        subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=True)
        found = json.loads(out.read_text())
    return found["seconds"], found["wall_s"]


def imports(code: Code, arguments: list[str], cwd: Path) -> tuple[float, tuple[str, ...]]:
    """The imports' seconds (the top-level imports' cumulative times) and which of :data:`HEAVY` they hold."""
    env = dict(code.env, PYTHONPROFILEIMPORTTIME="1")
    done = subprocess.run(harness(arguments), cwd=cwd, env=env, capture_output=True, text=True, check=False)
    rows = [line.split("|") for line in done.stderr.splitlines() if line.startswith("import time:")]
    rows = [r for r in rows if r[1].strip().isdigit()]
    total = sum(int(r[1]) for r in rows if not r[2].startswith("  ")) / 1e6  # "| name": top level, "|   name": nested
    names = {r[2].strip() for r in rows}
    return total, tuple(m for m in HEAVY if m in names)


def prepare(project: Path, fixtures: Path, code: Code) -> dict[str, list[str]]:
    """Fill the project's caches and record both stores; the commands to time, by label."""
    store, store200 = project / "demo.rec", project / "fire_smoke.rec"
    dataset = fixtures / "datasets" / FIRE_SMOKE
    for arguments in (
        ["run"],
        ["run", "--record", str(store)],
        ["run", "--replay", str(store)],  # fills the prediction cache of the replayed path
        ["eval", "--dataset", str(dataset), "--backend", "emulator", "--record", str(store200), "--no-cache"],
    ):
        wall(code, arguments, project)
    return {
        "run (every prediction cached)": ["run"],
        "run --replay STORE": ["run", "--replay", str(store)],
        f"eval --replay, {FIRE_SMOKE}, --no-cache": [
            "eval",
            "--dataset",
            str(dataset),
            "--replay",
            str(store200),
            "--no-cache",
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--dir", type=Path, default=None, help="where the project folder is made")
    parser.add_argument("--against", type=Path, help="another checkout's root, timed beside this one")
    parser.add_argument("--from-source", action="store_true", help="compile every module on every run")
    args = parser.parse_args()
    if args.dir is not None:
        writable_folder("bench_cached_run", "--dir", args.dir)
    if args.against is not None:
        args.against = checkout("bench_cached_run", "--against", args.against)
    fixtures = Path(os.environ.get("HARNESS_FIXTURES", "/work/shared/fixtures"))
    if not (fixtures / "datasets" / FIRE_SMOKE).is_dir():
        raise SystemExit(f"bench_cached_run: no {fixtures / 'datasets' / FIRE_SMOKE} (set HARNESS_FIXTURES)")
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        work = Path(folder)

        def bytecode(name: str) -> Path | None:
            return None if args.from_source else work / f"bytecode-{name}"

        codes = [code_of("this", ROOT, bytecode("this"))]
        if args.against is not None:
            codes.append(code_of("against", args.against, bytecode("against")))
        projects = {}
        commands: dict[str, list[str]] = {}
        for code in codes:  # each its own project: caches keyed by the code's digest stay apart
            projects[code.name] = work / f"project-{code.name}"
            projects[code.name].mkdir()
            found = prepare(projects[code.name], fixtures, code)
            commands = commands or found
        times: dict[tuple[str, str], list[float]] = {(c.name, label): [] for c in codes for label in commands}
        for _ in range(args.repeat):
            for label, arguments in commands.items():
                for code in codes:
                    times[code.name, label].append(wall(code, _in(arguments, projects, code), projects[code.name]))
        compiled = "compiling every module on every run" if args.from_source else "bytecode compiled once"
        load = os.getloadavg()[0]
        print(f"median of {args.repeat} interleaved rounds, wall seconds per process ({compiled}), load {load:.1f}")
        for label in commands:
            mine = times["this", label]
            line = f"{label:<44} {statistics.median(mine):.3f} s (least {min(mine):.3f})"
            if args.against is not None:
                theirs = times["against", label]
                ratio = statistics.median(t / m for t, m in zip(theirs, mine, strict=True))
                line += f"   against {statistics.median(theirs):.3f} s (least {min(theirs):.3f}), {ratio:.2f}x as fast"
            print(line)
        for code in codes:
            print(f"\n{code.name}: one run's stage clock, and its imports")
            for label, arguments in commands.items():
                project = projects[code.name]
                seconds, command_s = stages(code, _in(arguments, projects, code), project)
                taken = sum(seconds.get(k, 0.0) for k in ("dataset", "export facts", "evaluate", "reports"))
                parts = "  ".join(f"{k} {v:.3f}" for k, v in seconds.items())
                imported, heavy = imports(code, _in(arguments, projects, code), project)
                print(f"  {label}: command {command_s:.3f} s: {parts}  other {command_s - taken:.3f}")
                print(f"  {'':<4}imports {imported:.3f} s; of {', '.join(HEAVY)}: {', '.join(heavy) or 'none'}")


def _in(arguments: list[str], projects: dict[str, Path], code: Code) -> list[str]:
    """``arguments`` with the stores of the first code's project taken from ``code``'s project."""
    first = next(iter(projects.values()))
    return [a.replace(str(first), str(projects[code.name])) if a.startswith(str(first)) else a for a in arguments]


if __name__ == "__main__":
    main()
