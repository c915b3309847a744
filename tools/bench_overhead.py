"""The harness's overhead over the floor of an evaluation: ``eval`` against decoding the same images and
running the same model on them alone.

    python -m tools.bench_overhead [--images 2000] [--batch 8] [--rounds 3] [--paths onnx emulator] [--work DIR]

On the fire/smoke fixture frames repeated to ``--images`` (:mod:`tools.bench_sets`, links in a temporary
folder) and the demo model, each path in rounds that take turns (floor, eval, floor, eval), each a process:

- ``eval``: ``hailo-harness eval --no-cache`` (every image inferred, no prediction read or kept; the export's
  facts and the emulated HEF, made by a first run before the rounds, kept as a project keeps them), timed by
  :mod:`tools.bench_stages`: the command's seconds
  (``command``) and the process's (``process``: the interpreter and the imports too), and its stages;
- ``floor``: cv2, numpy and onnxruntime imported, then the images decoded (``cv2.imread``, on two threads, as
  the harness reads ahead) while the same model runs on batches of the same size and the same threads, fed
  the same images' frames, letterboxed before the timing: the float export (its onnxruntime session made in
  the timing) or the emulated HEF's runner (the one ``eval --backend emulator`` runs, its session opened on
  the first batch, its NMS op run on the host as eval's is). That runner is the floor of the emulated path
  because it is the user's emulated model: the quantized graph an emulated HEF is, with HailoRT's NMS op
  over its outputs as a device's host runs it; what eval does around it (letterbox, reading the NMS
  buffer, the metric) is the harness's.

Printed per path: the medians of command / floor and process / floor (target: command <= 1.10 x floor),
the CPU seconds of each (user and system, every thread: what the harness adds where the cores are busy,
on which wall ratios measure the other tenants' load more than the harness), and the stages of one eval
(the median round's), each over the floor's seconds: what makes up the rest. Decoding images runs on the
read-ahead threads, so its seconds overlap the others'. The load average (1, 5 and 15 minutes) before and
after: on shared cores read the ratios, which interleaved rounds keep comparable. The harness is
byte-compiled first (``__pycache__``, ignored by git), as an installed package is.
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
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tools.bench_paths import writable_folder

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.10
STAGES = ("dataset", "export facts", "decode image", "preprocess", "inference", "decode + NMS", "metrics", "cache")


def floor(path: str, data: Path, cache: Path, batch: int) -> dict[str, float]:
    """Seconds to decode every image of ``data`` while the path's model runs on as many frames (this process),
    the imports of the decoder and the runtime counted (the eval's command imports them too)."""
    begin_imports = time.perf_counter()
    import cv2
    import numpy as np
    import onnxruntime  # noqa: F401

    imports = time.perf_counter() - begin_imports

    from harness.inputs.dataset_yolo import load_yolo
    from harness.inputs.demo import DEMO_ONNX
    from harness.inputs.preprocess import letterbox, load_image, to_nchw_float

    files = [s.path for s in load_yolo(data).samples]
    if path == "onnx":
        from harness.backends.onnx.runner import FullHeadRunner
        from harness.inputs.export_facts import export_facts

        facts = export_facts(DEMO_ONNX)
        name, input_hw = facts.input_name, facts.input_hw
    else:
        runner, name, input_hw = _emulated(data, cache)
    # each image's frame made before the timing: a network's time does not depend on the pixels, but the NMS
    # op an emulated HEF runs does
    made: dict[Path, Any] = {}
    for file in files:
        if file.resolve() not in made:
            canvas = letterbox(load_image(file), input_hw)[0][None]
            made[file.resolve()] = to_nchw_float(canvas) if path == "onnx" else canvas
    frames = [made[file.resolve()] for file in files]
    start = time.perf_counter()
    if path == "onnx":
        runner = FullHeadRunner(DEMO_ONNX)
    decoding = 0.0

    def decode(file: Path) -> float:
        begin = time.perf_counter()
        image = cv2.imread(os.fspath(file))
        if image is None:
            raise SystemExit(f"bench_overhead: {file}: not decoded")
        return time.perf_counter() - begin

    model = 0.0
    with ThreadPoolExecutor(max_workers=2) as pool:
        window = 2 * batch
        reads: list[Future[float]] = [pool.submit(decode, f) for f in files[:window]]
        for first in range(0, len(files), batch):
            count = min(batch, len(files) - first)
            for read in reads[first : first + count]:
                decoding += read.result()
            reads += [pool.submit(decode, f) for f in files[first + window : first + window + count]]
            feed = {name: np.concatenate(frames[first : first + count])}
            begin = time.perf_counter()
            runner.infer_batch(feed)
            model += time.perf_counter() - begin
    return {
        "floor_s": imports + time.perf_counter() - start,
        "decode_s": decoding,
        "model_s": model,
        "imports_s": imports,
    }


_KEPT = ExitStack()  # the floor's emulated runner, open until the child ends


def _emulated(data: Path, cache: Path) -> tuple[Any, str, tuple[int, int]]:
    """The emulated HEF's runner ``eval --backend emulator`` would open on ``data``, its input's name and size."""
    from harness.inputs.demo import DEMO_ONNX
    from harness.pipeline.factory import load_dataset, open_runner, prepare_run
    from harness.pipeline.spec import Backend, PathSpec, SettingsSpec

    spec = PathSpec(Backend.EMULATOR)
    dataset = load_dataset(data, cache_dir=cache)
    run = prepare_run(DEMO_ONNX, dataset, SettingsSpec(), cache, use_cache=False, log=lambda _: None, paths=(spec,))
    opened = _KEPT.enter_context(open_runner(spec, run))  # closed with the process
    ((name, _),) = opened.runner.input_specs.items()
    return opened.runner, name, run.settings.input_hw


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def child(arguments: list[str], cwd: Path) -> dict[str, Any]:
    """One child process's wall seconds, CPU seconds (user and system, every thread) and what it printed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, *arguments], cwd=cwd, env=env, capture_output=True, text=True)
    process = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench_overhead: {' '.join(arguments)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return {"process_s": process, "cpu_s": _children_cpu() - cpu, "stdout": done.stdout}


def eval_once(path: str, data: Path, batch: int, work: Path, cached: bool = False) -> dict[str, Any]:
    """``eval --no-cache`` in ``work``: every image inferred, no prediction read or kept (the export's facts and
    the emulated HEF, facts of the model, read from ``work``'s cache folder where a first ``cached`` run left
    them, as a project keeps them; the repeated images would be served by the prediction cache)."""
    out = work / "stages.json"
    command = ["eval", "--dataset", str(data), "--batch", str(batch), "--json", "--backend", path, "--no-progress"]
    command += [] if cached else ["--no-cache"]
    ran = child(["-m", "tools.bench_stages", str(out), "--", *command], work)
    found = json.loads(out.read_text())
    if found["status"] != 0:
        raise SystemExit(f"bench_overhead: eval --backend {path} exited {found['status']}")
    return {
        "command_s": found["wall_s"],
        "process_s": ran["process_s"],
        "cpu_s": ran["cpu_s"],
        "stages": found["seconds"],
    }


def floor_once(path: str, data: Path, cache: Path, batch: int, work: Path) -> dict[str, Any]:
    arguments = ["-m", "tools.bench_overhead", "--floor", path, "--data", str(data), "--cache", str(cache)]
    ran = child([*arguments, "--batch", str(batch)], work)
    return {**json.loads(ran["stdout"]), "process_s": ran["process_s"], "cpu_s": ran["cpu_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--paths", nargs="+", choices=["onnx", "emulator"], default=["onnx", "emulator"])
    parser.add_argument("--work", type=Path, default=None, help="an existing folder for the temporary files")
    parser.add_argument("--floor", choices=["onnx", "emulator"], help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor is not None:  # a child: one floor, as JSON
        print(json.dumps(floor(args.floor, args.data, args.cache, args.batch)))
        return
    if args.work is not None:
        writable_folder("bench_overhead", "--work", args.work)
    from tools.bench_sets import repeated

    # as installed: pip byte-compiles a package; a checkout run with PYTHONDONTWRITEBYTECODE compiles the
    # harness's modules in every process (0.1-0.3 s of the eval's, none of the floor's timed part)
    compileall.compile_dir(ROOT / "harness", quiet=1)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=args.work, prefix="bench-overhead-") as folder:
        work = Path(folder)
        data = work / "set"
        repeated(args.images, data)
        cache = work / ".harness-cache"  # eval's own in its working folder
        rows = {}
        for path in args.paths:
            eval_once(path, data, args.batch, work, cached=True)  # the export's facts and the emulated HEF made once
            floors, evals = [], []
            for _ in range(args.rounds):
                floors.append(floor_once(path, data, cache, args.batch, work))
                evals.append(eval_once(path, data, args.batch, work))
            rows[path] = (floors, evals)
    load = os.getloadavg()
    print(
        f"{args.images} images (fire/smoke fixtures repeated), demo model, batch {args.batch}; medians of "
        f"{args.rounds} interleaved rounds; load average (1, 5, 15 min) {_load(load_before)} before, "
        f"{_load(load)} after, on {os.cpu_count()} cores"
    )
    for path, (floors, evals) in rows.items():
        ratios = [e["command_s"] / f["floor_s"] for f, e in zip(floors, evals, strict=True)]
        process = [e["process_s"] / f["process_s"] for f, e in zip(floors, evals, strict=True)]
        middle = sorted(range(len(ratios)), key=ratios.__getitem__)[len(ratios) // 2]
        f, e = floors[middle], evals[middle]
        print(
            f"\n{path}: eval {e['command_s']:.2f} s (process {e['process_s']:.2f}), floor {f['floor_s']:.2f} s "
            f"(imports {f['imports_s']:.2f} s, decoding {f['decode_s']:.2f} s on its threads, model "
            f"{f['model_s']:.2f} s); command / floor "
            f"{statistics.median(ratios):.3f} (target <= {TARGET}), process / floor {statistics.median(process):.3f}"
        )
        cpu = [e["cpu_s"] / f["cpu_s"] for f, e in zip(floors, evals, strict=True)]
        print(
            f"  CPU seconds (user + system, every thread): eval {e['cpu_s']:.2f}, floor {f['cpu_s']:.2f}; eval / floor "
            f"{statistics.median(cpu):.3f} (what the harness adds where the cores are busy: wall ratios then "
            "measure the load)"
        )
        seconds = e["stages"]
        shown = "  ".join(f"{s} {seconds.get(s, 0.0) / f['floor_s']:.3f}" for s in STAGES)
        inside = seconds.get("evaluate", 0.0) + seconds.get("dataset", 0.0) + seconds.get("export facts", 0.0)
        print(f"  stages / floor: {shown}  outside the stages {(e['command_s'] - inside) / f['floor_s']:.3f}")
        print(
            f"  the floor's own parts / floor: decoding {f['decode_s'] / f['floor_s']:.3f}, model "
            f"{f['model_s'] / f['floor_s']:.3f}; the eval's inference / the floor's model "
            f"{seconds.get('inference', 0.0) / f['model_s']:.3f}"
        )


def _load(load: tuple[float, float, float]) -> str:
    return "/".join(f"{x:.1f}" for x in load)


if __name__ == "__main__":
    main()
