"""End to end against ``yolo val`` and against another checkout: uncached ``eval`` wall time, interleaved.

    python -m tools.bench_against [--against ROOT] [--case coco640] [--rounds 5] [--threads 2]

Per round, each in its own process and in turn (A B C A B C): this checkout's ``hailo-harness eval --no-cache``
at Ultralytics' protocol (spelled out as options, which every version takes), the other checkout's
(``--against``: its root first on ``PYTHONPATH``, e.g. a worktree at an older commit), and Ultralytics'
``yolo val`` (:mod:`tools.ultralytics_val`) on the same images and threads (:mod:`tools.bench_compare`).
Printed: the median wall time of each, the medians of the per-round ratios (harness / yolo val, other /
yolo val, this / other) and the load average before and after: ratios of interleaved runs hold on busy
cores where seconds do not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def harness_wall(lab: Lab, root: Path, arguments: list[str]) -> float:
    env = dict(lab.env(), PYTHONPATH=str(root))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", *arguments], cwd=lab.work, env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench_against: {root}: eval exited {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds


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
    load_before = os.getloadavg()[0]
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
        for index in range(args.rounds + 1):  # the first round warms the file cache, untimed
            this = harness_wall(lab, ROOT, arguments)
            other = harness_wall(lab, against, arguments) if against else None
            theirs = None
            if yolo:
                result = run_ultralytics(lab, case.onnx, yaml, imgsz, none, lab.work / "u.json")
                theirs = result["process_s"]
            if index:
                times["this"].append(this)
                if other is not None:
                    times["against"].append(other)
                if theirs is not None:
                    times["yolo val"].append(theirs)
    print(
        f"{args.case} ({len(dataset.samples)} images), uncached eval at Ultralytics' protocol, {args.threads} "
        f"threads; medians of {args.rounds} interleaved rounds; load {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after"
    )
    for name, values in times.items():
        if values:
            print(f"  {name:<10} {statistics.median(values):7.2f} s (least {min(values):.2f})")
    pairs = [("this", "yolo val"), ("against", "yolo val"), ("this", "against")]
    for a, b in pairs:
        if times[a] and times[b]:
            ratio = statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))
            print(f"  {a} / {b}: {ratio:.3f}")


if __name__ == "__main__":
    main()
