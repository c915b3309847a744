"""Campaign family ``plugin``: the pytest plugin as CI runs it, under pytest-xdist (``pytest -n 2``).

Each bad option is run twice, without pytest-xdist and with ``-n 2``: a usage error must end both
runs with pytest's status for it (4) and the same one ``ERROR:`` line. A run that ends otherwise
(``no tests ran``, status 5, nothing said) is not a refusal: the campaign's table counts it as it
counts any exit it does not expect. ``--hef`` without images must run the HEF's static checks alone
and say what the evaluation gates need.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from tools.campaign import FIXTURES, MEMORY, ROOT, Campaign, Ran

FAMILY = "plugin"
DEMO = ROOT / "harness" / "data" / "demo" / "fire_smoke_yolo11n_256.onnx"
HEF = FIXTURES / "hef" / "hailo8_mnist_cnn.hef"  # a HEF whose input the demo export does not take
DEVICES = ("--hailo-device", "0000:01:00.0", "--hailo-device", "0000:02:00.0")  # the README's several devices
USAGE_ERROR = 4  # pytest.ExitCode.USAGE_ERROR


def pytest(c: Campaign, *args: str | Path, cwd: Path, timeout: float | None = None) -> Ran:
    """``python -m pytest args`` in ``cwd`` (the plugin loaded by its entry point), bounded in time and
    memory as ``Campaign.cli`` bounds a command."""

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    began = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *map(os.fsdecode, args)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=bound,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout or c.timeout)
        rc: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        rc = None
    return Ran(rc, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - began)


def _errors(ran: Ran) -> list[str]:
    return [line for line in ran.err.splitlines() if line.startswith("ERROR:")]


def _last(text: str) -> str:
    lines = [line.strip(" =") for line in text.splitlines() if line.strip(" =")]
    return lines[-1][:120] if lines else "nothing"


def as_refusal(spread: Ran, says: str, alone: Ran | None = None) -> Ran:
    """``spread`` (the ``-n`` run) in the campaign's words: exit 2 where pytest refused it (status 4) with
    one line saying ``says``, the same line as ``alone`` (the run without pytest-xdist) where given;
    otherwise its own status, with what it printed in place of that line."""
    if spread.rc is None:
        return spread
    lines = _errors(spread)
    if spread.rc == USAGE_ERROR and len(lines) == 1 and says in lines[0]:
        if alone is None or _errors(alone) == lines:
            return Ran(2, spread.out, f"{spread.err}\npytest -n: status 4, {lines[0]}", spread.seconds)
        said = f"pytest -n: status 4, {lines[0]}; without -n: status {alone.rc}, {_errors(alone) or 'no line'}"
        return Ran(USAGE_ERROR, spread.out, f"{spread.err}\n{said}", spread.seconds)
    said = f"pytest -n: status {spread.rc}, {lines[0] if lines else 'no ERROR line; stdout ends ' + _last(spread.out)}"
    return Ran(spread.rc if spread.rc != 2 else USAGE_ERROR, spread.out, f"{spread.err}\n{said}", spread.seconds)


def refused_alike(c: Campaign, case: str, args: list[str | Path], says: str, folder: Path, workers: str = "2") -> None:
    """``pytest args`` without pytest-xdist and with ``-n workers``: refused alike, saying ``says``."""
    alone = pytest(c, *args, cwd=folder) if workers == "2" else None
    spread = pytest(c, "-n", workers, *args, cwd=folder)
    c.record(FAMILY, case, as_refusal(spread, says, alone), "refuse")


def static_only(c: Campaign) -> None:
    """``pytest --hef M.hef --onnx demo.onnx``: the HEF's static checks alone (no demo set, no evaluation
    gate), and a line saying what the evaluation gates need. Planning the demo's evaluation gates instead
    is no outcome the table counts as bad (they fail without a device, pass with one): the row's detail
    says what was planned, and the plugin's tests hold it."""
    folder = c.case_dir("plugin-static-only")
    ran = pytest(c, f"--hef={HEF}", f"--onnx={DEMO}", f"--cache={c.cache}", "--collect-only", "-q", cwd=folder)
    items = [line for line in ran.out.splitlines() if line.startswith("hailo-harness::")]
    static = sum("test_hef_static[" in line for line in items)
    said = "said what the evaluation gates need" if "need --onnx M.onnx with --dataset D" in ran.out else "said nothing"
    what = f"{static} static checks, {len(items) - static} evaluation gates planned, {said}, {ran.seconds:.1f} s"
    c.record(FAMILY, "--hef --onnx demo, no --dataset", Ran(ran.rc, ran.out, f"{ran.err}\n{what}", ran.seconds), "pass")


def run(c: Campaign) -> None:
    folder = c.case_dir("plugin")
    data = c.small_set(folder, 4)
    demo = f"--onnx={DEMO}"
    cases: list[tuple[str, list[str | Path], str]] = [
        ("-n 2 --score-threshold=2", [demo, "--score-threshold=2"], "--score-threshold '2': expected a number"),
        ("-n 2 --backend=hailort, no --hef", [demo, "--backend=hailort"], "--backend hailort: needs --hef M.hef"),
        ("-n 2 --hailo-format=int4", [demo, "--hailo-format=int4"], "--hailo-format 'int4': expected one of"),
        ("-n 2 --shard=3/2", [demo, "--shard=3/2"], "--shard '3/2': expected"),
        ("-n 2 --release without blessing", [demo, "--release=v1"], "--release: belongs to --update-golden"),
        ("-n 2 --decoder not importable", ["--decoder=no_such_module:decode"], "cannot import module"),
        ("-n 2 devices alone (README)", [*DEVICES], "--hailo-device is an option of the harness's gates"),
        (
            "-n 2 devices, no --hef (README)",
            [*DEVICES, demo, f"--dataset={data}"],
            "--hailo-device belongs to --backend hailort",
        ),
        (
            "-n 2 devices, hailort, no --hef",
            [*DEVICES, demo, f"--dataset={data}", "--backend=hailort"],
            "--backend hailort: needs --hef M.hef",
        ),
        (
            "-n 2 shard recipe, no --hef",
            [demo, "--shard=1/2", "--hailo-device=0000:01:00.0", f"--report={folder / 'shards' / '1'}"],
            "--hailo-device belongs to --backend hailort",
        ),
        (
            "-n 2 devices, --hef, no --dataset",
            [*DEVICES, demo, f"--hef={HEF}"],
            "--hailo-device is an option of the evaluation gates",
        ),
    ]
    for case, args, says in cases:
        cache = [f"--cache={c.cache}"] if demo in args else []  # the warm cache, where a model is read
        refused_alike(c, case, [*args, *cache], says, folder)
    refused_alike(
        c,
        "-n 3 for 2 devices (README)",
        [*DEVICES, demo, f"--dataset={data}", "--backend=hailort", f"--hef={HEF}", f"--cache={c.cache}"],
        "pytest-xdist worker gw2 has no device of its own",
        folder,
        workers="3",
    )
    ini = c.case_dir("plugin-ini")
    (ini / "pytest.ini").write_text(f"[pytest]\nharness_onnx = {DEMO}\nharness_iou_threshold = 1.5\n")
    refused_alike(c, "-n 2 ini key iou 1.5", [f"--cache={c.cache}"], "--iou-threshold '1.5': expected", ini)
    unnamed = c.small_set(c.case_dir("plugin-no-yaml"), 4)
    (unnamed / "data.yaml").unlink()
    refused_alike(c, "-n 2 dataset without names", [demo, f"--dataset={unnamed}", f"--cache={c.cache}"], "yaml", folder)
    static_only(c)
