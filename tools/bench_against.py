"""End to end against ``yolo val`` and against another checkout: uncached ``eval`` wall time, interleaved.

    python -m tools.bench_against [--against ROOT] [--case coco640] [--rounds 5] [--threads 2]

Per round, each in its own process and in turn (A B C A B C): this checkout's ``hailo-harness eval --no-cache``
at Ultralytics' protocol (spelled out as options, which every version takes), the other checkout's
(``--against``: its root first on ``PYTHONPATH``, e.g. a worktree at an older commit), and Ultralytics'
``yolo val`` (:mod:`tools.ultralytics_val`) on the same images and threads (:mod:`tools.bench_compare`).
Printed: the median wall time and CPU seconds (user and system, every thread) of each, the medians of the
per-round ratios of both (harness / yolo val, other / yolo val, this / other) and the load average (1, 5 and
15 minutes) before and after: ratios of interleaved runs hold on busy cores where seconds do not, and CPU
seconds where the cores are shared at all. Beside them, what the peer was: Ultralytics', torch's and
onnxruntime's versions, torch's threads, and its seconds loading the model and in ``val``; and what importing
onnx costs this interpreter (ml_dtypes 0.7.0, which onnx imports, takes 0.6 s of CPU where 0.6.0 took 0.005 s:
part of an uncached run's cost that no harness commit changed). On 16 images
a process's start (the interpreter, the imports) is most of either side's time: each checkout's harness is
byte-compiled first (``__pycache__``, ignored by git), as an installed package is, so that a checkout run
with ``PYTHONDONTWRITEBYTECODE`` set does not compile its modules in every round.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.inputs.onnx_graph import load_model, model_input
from tools.bench_compare import (
    HARNESS_PROTOCOL,
    ROOT,
    Lab,
    dataset_of,
    known_cases,
    lend_onnxruntime,
    no_predictions,
    run_ultralytics,
    ultralytics_set,
)
from tools.bench_paths import checkout, writable_folder


def children_cpu() -> float:
    """CPU seconds (user and system) of the children waited for so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def entry_point(root: Path) -> str:
    """The ``hailo-harness`` console script of checkout ``root``, as ``module:function`` from its own
    pyproject.toml (the module moved: ``harness.cli`` before ``harness.cli.main``)."""
    import tomllib  # Python 3.11, as the benchmarks' environment

    try:
        with (root / "pyproject.toml").open("rb") as file:
            return str(tomllib.load(file)["project"]["scripts"]["hailo-harness"])
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        found = root / "pyproject.toml"
        raise SystemExit(f"bench_against: {found}: no project.scripts hailo-harness ({error})") from error


def harness_wall(lab: Lab, root: Path, arguments: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``hailo-harness ARGUMENTS`` run from checkout ``root``; a run that ends in
    neither a pass nor a failed gate, or prints no JSON report, is refused rather than timed."""
    module, function = entry_point(root).split(":")
    call = f"import sys; from {module} import {function}; sys.exit({function}())"
    env = dict(lab.env(), PYTHONPATH=str(root))
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", call, *arguments], cwd=lab.work, env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    try:
        json.loads(done.stdout)
        reported = True
    except ValueError:
        reported = False
    if done.returncode not in (0, 1) or not reported:
        raise SystemExit(
            f"bench_against: {root}: eval exited {done.returncode}"
            + ("" if reported else ", with no JSON report")
            + f":\n{done.stderr[-2000:]}"
        )
    return seconds, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=Path, help="another checkout's root")
    parser.add_argument("--case", choices=sorted(known_cases()), default="coco640")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ultralytics-python", type=Path, default=Path("/work/train-venv/bin/python"))
    parser.add_argument("--work", type=Path, help="an existing folder for the temporary files")
    args = parser.parse_args()
    against = checkout("bench_against", "--against", args.against) if args.against else None
    if args.work is not None:
        writable_folder("bench_against", "--work", args.work)
    for root in (ROOT, against):
        if root is not None:
            compileall.compile_dir(root / "harness", quiet=1)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=args.work, prefix="bench-against-") as folder:
        lab = Lab(Path(folder), args.threads, args.ultralytics_python)
        case = known_cases()[args.case]
        dataset = dataset_of(lab, case)
        arguments = ["eval", "--onnx", str(case.onnx), "--dataset", str(dataset.root), *HARNESS_PROTOCOL]
        arguments += ["--no-cache", "--json"]
        yolo = args.ultralytics_python.is_file()
        if yolo:
            lab = lend_onnxruntime(lab)
            _, (imgsz, _) = model_input(load_model(case.onnx))
            yaml = ultralytics_set(dataset, lab.work / "ultralytics")
            none = no_predictions(dataset, lab.work / "none.json")
        times: dict[str, list[float]] = {"this": [], "against": [], "yolo val": []}
        cpu: dict[str, list[float]] = {"this": [], "against": [], "yolo val": []}
        peer: list[dict[str, Any]] = []
        for index in range(args.rounds + 1):  # the first round warms the file cache, untimed
            ran = {"this": harness_wall(lab, ROOT, arguments)}
            if against:
                ran["against"] = harness_wall(lab, against, arguments)
            if yolo:
                used = children_cpu()
                result = run_ultralytics(lab, case.onnx, yaml, imgsz, none, lab.work / "u.json")
                ran["yolo val"] = (result["process_s"], children_cpu() - used)
                peer.append(result)
            if index:
                for name, (wall, seconds) in ran.items():
                    times[name].append(wall)
                    cpu[name].append(seconds)
    load = os.getloadavg()
    print(
        f"{args.case} ({len(dataset.samples)} images), uncached eval at Ultralytics' protocol, {args.threads} "
        f"threads; medians of {args.rounds} interleaved rounds; load average (1, 5, 15 min) {_load(load_before)} "
        f"before, {_load(load)} after, on {os.cpu_count()} cores"
    )
    print(f"  this interpreter: {onnx_import_cost()}, paid by every run that reads an export's graph")
    if peer:
        last = peer[-1]
        versions = ", ".join(f"{k} {v}" for k, v in last["versions"].items())
        print(
            f"  yolo val: {versions}; torch threads {last['torch_threads']} (Ultralytics' select_device sets "
            f"min(8, cores - 1) on the CPU, whatever was pinned; the ONNX model runs in onnxruntime); model load "
            f"{statistics.median(p['load_s'] for p in peer[1:] or peer):.2f} s, val "
            f"{statistics.median(p['val_s'] for p in peer[1:] or peer):.2f} s (the rest: the interpreter and imports)"
        )
    for name, values in times.items():
        if values:
            print(
                f"  {name:<10} {statistics.median(values):7.2f} s (least {min(values):.2f}), CPU "
                f"{statistics.median(cpu[name]):.2f} s"
            )
    pairs = [("this", "yolo val"), ("against", "yolo val"), ("this", "against")]
    for a, b in pairs:
        if times[a] and times[b]:
            ratio = statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))
            cpu_ratio = statistics.median(x / y for x, y in zip(cpu[a], cpu[b], strict=True))
            print(f"  {a} / {b}: {ratio:.3f} wall, {cpu_ratio:.3f} CPU seconds")


def onnx_import_cost() -> str:
    """What importing onnx costs this interpreter (a run that reads an export's graph imports it): its CPU
    seconds in a fresh process, numpy imported first, and the ml_dtypes it pulls in (0.7.0 registers its
    types for 0.6 s of CPU where 0.6.0 takes 0.005 s)."""
    code = (
        "import time, numpy\n"
        "start = time.process_time()\n"
        "import onnx, ml_dtypes\n"
        "print(onnx.__version__, ml_dtypes.__version__, time.process_time() - start)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        return "onnx not importable here"
    onnx_version, ml_dtypes_version, seconds = done.stdout.split()
    return f"import onnx {onnx_version} (ml_dtypes {ml_dtypes_version}) {float(seconds):.2f} s of CPU"


def _load(load: tuple[float, float, float]) -> str:
    return "/".join(f"{x:.1f}" for x in load)


if __name__ == "__main__":
    main()
