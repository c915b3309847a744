"""The adversarial campaign against the gates: what a careless user, a merge and a flaky runner do
to the files a run reads and writes, each tried through the ``hailo-harness`` command as a user
would, in a process of its own (time and memory bounded).

    python -m tools.campaign [--work DIR] [--only FAMILY ...] [--timeout S]

Families: ``false_pass`` (baselines and recordings that would let a worse model pass), ``bad_input``
(bombs, depth, huge numbers, odd bytes in every file a run reads), ``kill`` (kill -9 while blessing
and recording, two recorders at once, a flipped bit in a recording), ``injection`` (markup in names
reaching report.md), ``faults`` (disk full, read-only folders, odd and long names, links, modes,
Ctrl-C). Each case's outcome is one of: ``refused`` (a clear one-line refusal, exit 2), ``caught``
(a gate failed, exit 1), ``held`` (what had to hold held), ``false pass``, ``traceback`` (a bare
traceback or an internal error, exit 3), ``hang`` (past the timeout or the memory bound), ``data
lost``. The table per family is printed last. Disk-full and read-only cases mount a small tmpfs
(root only; elsewhere they are reported as not run).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).parent / "hailo-harness")
DEMO26 = ROOT / "harness" / "data" / "demo" / "fire_smoke_yolo26n_256.onnx"
FIXTURES = Path(os.environ.get("HARNESS_FIXTURES", ROOT.parent / "shared" / "fixtures"))
MEMORY = 6 << 30  # address space per command: an expanded bomb is stopped here
MODEL = "fire_smoke_yolo11n_256"
DEMO_SET = "synthetic_fire_smoke_seed0"
OUTCOMES = ("refused", "caught", "held", "false pass", "traceback", "hang", "data lost", "not run")


@dataclass
class Ran:
    rc: int | None  # None: killed at the timeout
    out: str
    err: str
    seconds: float

    @property
    def tail(self) -> str:
        lines = [line for line in self.err.strip().splitlines() if line.strip()]
        return lines[-1][:160] if lines else ""


class Campaign:
    def __init__(self, work: Path, timeout: float) -> None:
        self.work, self.timeout = work, timeout
        self.cache = work / "cache"
        self.rows: list[tuple[str, str, str, str]] = []  # family, case, outcome, detail

    # --- running -------------------------------------------------------------------------

    def cli(self, *args: str | Path, cwd: Path, timeout: float | None = None, start: Callable | None = None) -> Ran:
        """``hailo-harness args`` in ``cwd``, bounded in time and memory; ``start(process)`` is called
        once it runs (to signal it)."""

        def bound() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
            # a campaign started in the background (nohup, &) ignores SIGINT, and so would its children: the
            # Ctrl-C case would then test nothing
            signal.signal(signal.SIGINT, signal.SIG_DFL)

        began = time.monotonic()
        process = subprocess.Popen(
            [CLI, *map(os.fsdecode, args)],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=bound,
            start_new_session=True,
        )
        if start is not None:
            start(process)
        try:
            out, err = process.communicate(timeout=timeout or self.timeout)
            rc: int | None = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            rc = None
        return Ran(rc, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - began)

    def places(self, folder: Path) -> tuple[str | Path, ...]:
        """The warm cache, and ``folder``'s own report folder."""
        return ("--cache", self.cache, "--report", folder / "rep")

    def case_dir(self, name: str) -> Path:
        folder = self.work / "cases" / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def record(self, family: str, case: str, ran: Ran | None, expect: str, lost: str | None = None) -> None:
        """Classify ``ran`` against ``expect`` (``refuse``: exit 2; ``fail``: a gate fails or the input
        is refused; ``pass``: exit 0; ``interrupt``: exit 130) and keep the row."""
        if ran is None:
            outcome, detail = "not run", lost or ""
        elif ran.rc is None:
            outcome, detail = "hang", f"killed after {ran.seconds:.0f} s"
        elif ran.rc < 0 or "Traceback (most recent call last)" in ran.err or ran.rc == 3 or "MemoryError" in ran.err:
            outcome, detail = "traceback", f"exit {ran.rc}: {ran.tail}"
        elif lost:
            outcome, detail = "data lost", lost
        elif expect == "refuse":
            outcome = {2: "refused", 1: "caught", 0: "false pass"}.get(ran.rc, "traceback")
            detail = f"exit {ran.rc}: {ran.tail}"
        elif expect == "fail":
            outcome = {2: "refused", 1: "caught", 0: "false pass"}.get(ran.rc, "traceback")
            detail = f"exit {ran.rc}: {ran.tail}"
        elif expect == "interrupt":
            lines = [line for line in ran.err.splitlines() if line.strip()]
            good = ran.rc == 130 and len(lines) <= 2
            outcome, detail = ("held" if good else "traceback"), f"exit {ran.rc}, {len(lines)} stderr lines: {ran.tail}"
        else:
            outcome = "held" if ran.rc in (0, 1) else ("refused" if ran.rc == 2 else "traceback")
            detail = f"exit {ran.rc}: {ran.tail}"
        self.rows.append((family, case, outcome, detail))
        print(f"{family:<10} {case:<34} {outcome:<10} {detail}", flush=True)

    # --- the demo project every case starts from -------------------------------------------

    def prepare(self) -> None:
        """A warm cache (both calibrations) and the demo's blessed baselines in ``golden0``."""
        self.work.mkdir(parents=True, exist_ok=True)
        base = self.work / "base"
        base.mkdir(exist_ok=True)
        print("preparing: the demo run, blessed, and its off-domain run (cached after the first)", flush=True)
        for args in (
            ("run", "--update-golden", "--golden", base / "golden0"),
            ("run", "--calibration", "off-domain", "--golden", base / "golden0"),
        ):
            ran = self.cli(*args, "--cache", self.cache, "--report", base / "rep", cwd=base, timeout=900)
            if ran.rc not in (0, 1):
                raise SystemExit(f"campaign: preparing failed ({ran.rc}): {ran.err[-2000:]}")

    @property
    def golden0(self) -> Path:
        return self.work / "base" / "golden0"

    @property
    def demo_set(self) -> Path:
        return self.cache / "demo-data" / DEMO_SET

    def off_domain(self, folder: Path, golden: Path) -> Ran:
        """The field report's run (a worse model: FAILED without tampering) against ``golden``."""
        return self.cli(
            "run",
            "--calibration",
            "off-domain",
            "--golden",
            golden,
            *self.places(folder),
            cwd=folder,
        )

    def tampered(self, name: str, change: Callable[[str], str], which: str = "emulated-hailo") -> tuple[Path, Path]:
        folder = self.case_dir(name)
        golden = folder / "golden"
        shutil.copytree(self.golden0, golden)
        file = golden / MODEL / f"{DEMO_SET}--{which}.json"
        file.write_text(change(file.read_text()))
        return folder, golden

    def small_set(self, folder: Path, n: int, names: str = "[fire, smoke]") -> Path:
        """A YOLO set of the demo's first ``n`` validation images."""
        data = folder / "set"
        for sub in ("images/val", "labels/val"):
            (data / sub).mkdir(parents=True)
        for image in sorted((self.demo_set / "images" / "val").iterdir())[:n]:
            shutil.copy(image, data / "images" / "val" / image.name)
            label = self.demo_set / "labels" / "val" / f"{image.stem}.txt"
            if label.exists():
                shutil.copy(label, data / "labels" / "val" / label.name)
        (data / "data.yaml").write_text(f"val: images/val\nnames: {names}\n")
        return data

    # --- families ----------------------------------------------------------------------------

    def false_pass(self) -> None:
        family = "false_pass"
        folder, golden = self.case_dir("untampered"), self.golden0
        self.record(family, "untampered (control)", self.off_domain(folder, golden), "fail")

        def edit(path: tuple, value: object) -> Callable[[str], str]:
            def change(text: str) -> str:
                data = json.loads(text)
                node = data
                for key in path[:-1]:
                    node = node[key]
                node[path[-1]] = value
                return json.dumps(data, indent=2)

            return change

        def duplicate(block: str, **values: object) -> Callable[[str], str]:
            def change(text: str) -> str:
                data = json.loads(text)
                second = {**data[block], **values}
                return text.rstrip().removesuffix("}").rstrip() + f',\n  "{block}": {json.dumps(second)}\n}}\n'

            return change

        cases: dict[str, Callable[[str], str]] = {
            "duplicate tolerances block": duplicate(
                "tolerances", map50_drop=1.0, map50_95_drop=1.0, box_count_rel=0.99, saturation_abs=1.0
            ),
            "duplicate metrics block (map 0)": duplicate("metrics", map50=0.0, map50_95=0.0),
            "map50_drop 1.0": edit(("tolerances", "map50_drop"), 1.0),
            "map50_drop 1e6": edit(("tolerances", "map50_drop"), 1e6),
            "saturation_abs 2": edit(("tolerances", "saturation_abs"), 2.0),
            "saturation_abs 0.999": edit(("tolerances", "saturation_abs"), 0.999),
            "box_count_rel 5": edit(("tolerances", "box_count_rel"), 5.0),
            "baseline map50 0.0": edit(("metrics", "map50"), 0.0),
            "model field names another model": edit(("model",), "yolo11n_coco"),
            "score_threshold as a string": edit(("settings", "score_threshold"), "0.2"),
            "input_hw as floats": edit(("settings", "input_hw"), [256.9, 256.2]),
            "unknown nested key": edit(("metrics", "box_counts", "median"), 1),
            "labelled as a string": edit(("labelled",), "false"),
            "NaN literal": lambda text: text.replace('"map50": ', '"map50": NaN, "x": ', 1),
            "deeply nested value": lambda text: text.replace(
                '"environment": ', '"deep": ' + "[" * 5000 + "]" * 5000 + ', "environment": ', 1
            ),
        }
        for name, change in cases.items():
            folder, golden = self.tampered(name.replace(" ", "_"), change)
            self.record(family, name, self.off_domain(folder, golden), "fail")
        # the ONNX path's baseline copied over the Hailo path's (a merge that took the wrong file)
        folder, golden = self.tampered("other_path", lambda text: text)
        model = golden / MODEL
        shutil.copy(model / f"{DEMO_SET}--onnx.json", model / f"{DEMO_SET}--emulated-hailo.json")
        self.record(family, "another path's baseline", self.off_domain(folder, golden), "fail")
        # a 1-image set: its blessing would hold nothing
        folder = self.case_dir("one_image")
        data = self.small_set(folder, 1)
        ran = self.cli(
            "run",
            "--dataset",
            data,
            "--update-golden",
            "--golden",
            folder / "golden",
            *self.places(folder),
            cwd=folder,
        )
        self.record(family, "bless a 1-image set", ran, "refuse")
        # another model's recording replayed as this model's Hailo path
        folder = self.case_dir("other_recording")
        self.cli(
            "run",
            "--record",
            folder / "y11.rec",
            "--cache",
            folder / "cache",
            "--golden",
            self.golden0,
            "--report",
            folder / "rep",
            cwd=folder,
            timeout=600,
        )
        ran = self.cli(
            "run",
            "--onnx",
            DEMO26,
            "--replay",
            folder / "y11.rec",
            "--cache",
            folder / "cache",
            "--golden",
            folder / "golden26",
            "--report",
            folder / "rep",
            cwd=folder,
        )
        self.record(family, "another model's recording", ran, "refuse")
        self.coco_cases(family)

    def coco_cases(self, family: str) -> None:
        """COCO sets that would measure nothing: boxes wholly outside their images, every object crowd."""
        images = sorted((self.demo_set / "images" / "val").iterdir())[:12]
        for name, box, crowd in (
            ("COCO boxes outside their images", [5000, 5000, 20, 20], 0),
            ("an all-crowd COCO set", [10, 10, 40, 40], 1),
        ):
            folder = self.case_dir(name.replace(" ", "_"))
            coco = {
                "images": [
                    dict(zip(("id", "file_name", "width", "height"), (i, p.name, *Image.open(p).size), strict=True))
                    for i, p in enumerate(images)
                ],
                "annotations": [
                    {"id": i, "image_id": i, "category_id": 1, "bbox": box, "area": 400, "iscrowd": crowd}
                    for i in range(len(images))
                ],
                "categories": [{"id": 1, "name": "fire"}, {"id": 2, "name": "smoke"}],
            }
            (folder / "instances.json").write_text(json.dumps(coco))
            ran = self.cli(
                "run",
                "--dataset",
                folder / "instances.json",
                "--images",
                self.demo_set / "images" / "val",
                "--update-golden",
                "--golden",
                folder / "golden",
                *self.places(folder),
                cwd=folder,
            )
            written = list((folder / "golden").rglob("*.json")) if (folder / "golden").exists() else []
            self.record(family, name, ran, "refuse", f"baselines written: {len(written)}" if written else None)

    def bad_input(self) -> None:
        family = "bad_input"
        bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        )
        yaml_cases = {
            "data.yaml alias bomb": bomb + "val: images/val\nnames: [fire, smoke]\n",
            "data.yaml nested 10,000 deep": "val: images/val\nnames: [fire, smoke]\nx: " + "[" * 10000 + "]" * 10000,
            "data.yaml names with mixed key types": "val: images/val\nnames: {0: fire, '1': smoke}\n",
            "data.yaml nc of 5,000 digits": f"val: images/val\nnc: {'9' * 5000}\nnames: [fire, smoke]\n",
            "data.yaml duplicate names": "val: images/val\nnames: [fire, smoke]\nnames: [smoke, fire]\n",
        }
        for name, text in yaml_cases.items():
            folder = self.case_dir(name.replace(" ", "_").replace("'", ""))
            data = self.small_set(folder, 4)
            (data / "data.yaml").write_text(text)
            self.record(
                family,
                name,
                self.cli("run", "--dataset", data, *self.places(folder), cwd=folder),
                "refuse",
            )
        folder = self.case_dir("non_utf8_list")
        data = self.small_set(folder, 4)
        (data / "val.txt").write_bytes(b"images/val/\xff\xfe.jpg\n")
        (data / "data.yaml").write_text("val: val.txt\nnames: [fire, smoke]\n")
        self.record(
            family,
            "non-UTF-8 image list",
            self.cli("run", "--dataset", data / "data.yaml", *self.places(folder), cwd=folder),
            "refuse",
        )
        for name, bbox in (
            ("COCO bbox 1e400", "1e400"),
            ("COCO bbox 10**400", "1" + "0" * 400),
            ("COCO nested 100,000 deep", "[" * 100000 + "]" * 100000),
        ):
            folder = self.case_dir(name.replace(" ", "_").replace("*", ""))
            image = sorted((self.demo_set / "images" / "val").iterdir())[0]
            width, height = Image.open(image).size
            text = (
                f'{{"images": [{{"id": 1, "file_name": "{image.name}", "width": {width}, "height": {height}}}], '
                '"annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3, BBOX], "area": 1, '
                '"iscrowd": 0}], "categories": [{"id": 1, "name": "fire"}, {"id": 2, "name": "smoke"}]}'
            ).replace("BBOX", bbox)
            (folder / "instances.json").write_text(text)
            ran = self.cli(
                "run",
                "--dataset",
                folder / "instances.json",
                "--images",
                self.demo_set / "images" / "val",
                *self.places(folder),
                cwd=folder,
            )
            self.record(family, name, ran, "refuse")
        self.export_cases(family)
        folder = self.case_dir("report_in_proc")
        self.record(
            family,
            "--report /proc/rep",
            self.cli("run", "--cache", self.cache, "--golden", self.golden0, "--report", "/proc/rep", cwd=folder),
            "refuse",
        )
        self.record(family, "inspect /dev/zero", self.cli("inspect", "/dev/zero", cwd=folder), "refuse")
        (folder / "big.hef").write_bytes(b"\0" * (1 << 20))
        self.record(family, "inspect 1 MB of zeros", self.cli("inspect", folder / "big.hef", cwd=folder), "refuse")
        from harness.inputs.demo import DEMO26_ONNX  # a head family HailoRT has no bbox-only op for

        doctor = ("doctor", "--onnx", DEMO26_ONNX, "--bbox-only", "--first", "2", "--cache", self.cache)
        self.record(family, "doctor --bbox-only on YOLO26 heads", self.cli(*doctor, cwd=folder), "refuse")

    def export_cases(self, family: str) -> None:
        """Ultralytics export folders whose metadata.yaml or nms_config.json lie or explode."""
        hef = FIXTURES / "hef_bad" / "hailo8l_yolov8s_nms_truncated.hef"
        if not hef.exists():
            self.record(family, "export folders", None, "refuse", f"no fixture {hef}")
            return
        metadata = (
            "imgsz: [640, 640]\nhailo_arch: hailo8l\nnms: true\nend2end: false\ntask: detect\n"
            "names: {0: a, 1: b, 2: c}\n"
        )
        config = {
            "nms_scores_th": 0.2,
            "nms_iou_th": 0.7,
            "image_dims": [640, 640],
            "max_proposals_per_class": 100,
            "classes": 3,
            "regression_length": 16,
            "background_removal": False,
            "bbox_decoders": [
                {"name": f"bbox_decoder{i}", "stride": s, "reg_layer": f"conv{i}", "cls_layer": f"conv{i + 1}"}
                for i, s in zip((41, 52, 62), (8, 16, 32), strict=True)
            ],
        }
        cases = {
            "metadata.yaml alias bomb": (
                "a: &a [x, x, x, x, x, x, x, x, x]\n"
                + "".join(
                    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
                )
                + metadata,
                json.dumps(config),
            ),
            "metadata.yaml nested deep": (
                metadata + "args: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n",
                json.dumps(config),
            ),
            "nms_config background_removal 'false'": (metadata, json.dumps({**config, "background_removal": "false"})),
            "nms_config nms_scores_th 1e400": (
                metadata,
                json.dumps(config).replace('"nms_scores_th": 0.2', '"nms_scores_th": 1e400'),
            ),
            "nms_config reg_layer path traversal": (
                metadata,
                json.dumps(
                    {
                        **config,
                        "bbox_decoders": [
                            {**config["bbox_decoders"][0], "reg_layer": "../../../etc/passwd"},
                            *config["bbox_decoders"][1:],
                        ],
                    }
                ),
            ),
            "nms_config duplicate key": (metadata, json.dumps(config)[:-1] + ', "nms_iou_th": 0.01}'),
        }
        for name, (meta, nms) in cases.items():
            folder = self.case_dir(name.replace(" ", "_").replace("'", ""))
            export = folder / "m_hailo_model"
            export.mkdir()
            shutil.copy(hef, export / "m.hef")
            (export / "metadata.yaml").write_text(meta)
            (export / "nms_config.json").write_text(nms)
            self.record(
                family, f"inspect --tolerant: {name}", self.cli("inspect", export, "--tolerant", cwd=folder), "refuse"
            )

    def kill(self) -> None:
        family = "kill"
        folder = self.case_dir("kill_bless")
        golden = folder / "golden"
        shutil.copytree(self.golden0, golden)
        rng, torn = random.Random(7), []
        for i in range(8):

            def later(process: subprocess.Popen, delay: float = rng.uniform(0.5, 2.5)) -> None:
                time.sleep(delay)
                os.killpg(process.pid, signal.SIGKILL)

            self.cli(
                "run",
                "--update-golden",
                "--golden",
                golden,
                *self.places(folder),
                cwd=folder,
                start=later,
            )
            check = self.cli("run", "--golden", golden, *self.places(folder), cwd=folder)
            if check.rc != 0:
                torn.append(f"kill {i}: exit {check.rc}: {check.tail}")
        self.record(
            family, "kill -9 while blessing (8x), then gate", Ran(0, "", "", 0), "pass", "; ".join(torn) or None
        )
        self.recording_cases(family)

    def recording_cases(self, family: str) -> None:
        folder = self.case_dir("record")
        cache = folder / "cache"
        shutil.copytree(self.cache / "demo-data", cache / "demo-data")
        for sub in ("emulator", "exports"):
            if (self.cache / sub).exists():
                shutil.copytree(self.cache / sub, cache / sub)
        store = folder / "m.rec"
        args = ("run", "--record", store, "--golden", self.golden0, "--report", folder / "rep")
        full = self.cli(*args, "--cache", cache, cwd=folder, timeout=600)
        if full.rc not in (0, 1) or not store.exists():
            self.record(family, "recording", full, "pass")
            return
        intact = store.read_bytes()
        self.garbage_frames(family, folder, intact)
        # one flipped bit in the middle, then the recording resumed: nothing after it may be lost
        damaged = bytearray(intact)
        damaged[len(damaged) // 20] ^= 0x10
        store.write_bytes(bytes(damaged))
        shutil.rmtree(cache / "predictions", ignore_errors=True)
        resumed = self.cli(*args, "--cache", cache, cwd=folder, timeout=600)
        kept = store.stat().st_size
        lost = None if kept >= len(intact) - 4096 else f"store shrank {len(intact)} -> {kept} bytes"
        self.record(family, "flipped bit in frame ~5, then --record", resumed, "any", lost)
        # two recorders into one store at once
        store.unlink()
        shutil.rmtree(cache / "predictions", ignore_errors=True)
        second_cache = folder / "cache2"
        shutil.copytree(cache, second_cache)
        procs = [
            subprocess.Popen(
                [CLI, *map(str, args), "--cache", str(c)], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            for c in (cache, second_cache)
        ]
        outs = [p.communicate(timeout=600) for p in procs]
        rcs = [p.returncode for p in procs]
        replay = self.cli(
            "run",
            "--replay",
            store,
            "--golden",
            self.golden0,
            "--report",
            folder / "rep",
            "--cache",
            folder / "cache3",
            cwd=folder,
        )
        both = Ran(max(rcs), "", "\n".join(o[1].decode(errors="replace") for o in outs), 0)
        lost = None if replay.rc in (0, 1) else f"replay after two recorders: exit {replay.rc}: {replay.tail}"
        self.record(family, "two recorders into one store", both if 2 in rcs or lost else replay, "any", lost)

    def garbage_frames(self, family: str, folder: Path, intact: bytes) -> None:
        """Replays of a store whose second frame has a valid checksum but content no recorder writes."""
        from harness.backends.replay.store import FRAME_RECORD, JOURNAL
        from harness.core import journal

        found = journal.scan(intact, JOURNAL, folder / "m.rec")
        frame = next(r for r in found.records if r.kind == FRAME_RECORD)
        meta_length = int.from_bytes(frame.payload[:4], "little")
        meta, arrays = bytes(frame.payload[4 : 4 + meta_length]), bytes(frame.payload[4 + meta_length :])
        garbage = {
            "meta not JSON": (b"{not json", arrays),
            "meta without its arrays": (meta.replace(b'"arrays"', b'"arrayz"'), arrays),
            "payload that is not zlib": (meta, b"\x00garbage" * 8),
            "dtype object": (meta.replace(b'"<f4"', b'"|O"').replace(b'"|u1"', b'"|O"'), arrays),
        }
        for name, (new_meta, new_arrays) in garbage.items():
            payload = len(new_meta).to_bytes(4, "little") + new_meta + new_arrays
            bad = intact[: frame.offset] + journal.encode_record(FRAME_RECORD, payload) + intact[frame.end :]
            store = folder / "garbage.rec"
            store.write_bytes(bad)
            ran = self.cli(
                "run",
                "--replay",
                store,
                "--golden",
                self.golden0,
                "--report",
                folder / "rep",
                "--cache",
                folder / "cache-garbage",
                cwd=folder,
            )
            shutil.rmtree(folder / "cache-garbage", ignore_errors=True)
            self.record(family, f"replay frame: {name}", ran, "refuse")

    def injection(self) -> None:
        family = "injection"
        folder = self.case_dir("markup")
        names = "['<script>alert(1)</script>', 'smoke|x']"
        data = self.small_set(folder, 12, names)
        image = next((data / "images" / "val").iterdir())
        image.rename(image.with_name("<img src=x onerror=alert(1)>.jpg"))
        label = data / "labels" / "val" / f"{image.stem}.txt"
        if label.exists():
            label.rename(label.with_name("<img src=x onerror=alert(1)>.txt"))
        ran = self.cli(
            "run",
            "--dataset",
            data,
            "--map-class",
            "<script>alert(1)</script>=fire",
            "--map-class",
            "smoke|x=smoke",
            "--update-golden",
            "--accept-weak-baseline",
            "--golden",
            folder / "golden",
            *self.places(folder),
            cwd=folder,
        )
        report = folder / "rep" / "report.md"
        text = report.read_text(errors="replace") if report.exists() else ""
        raw = [m for m in ("<script>", "<img src") if m in text]
        self.record(
            family,
            "markup in class and file names",
            ran,
            "any",
            f"report.md carries raw {raw}" if raw else (None if text else "no report.md written"),
        )

    def faults(self) -> None:
        family = "faults"
        mounted = self.work / "mnt"
        mounted.mkdir(exist_ok=True)
        if (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mounted)], capture_output=True
            ).returncode
            != 0
        ):
            self.record(family, "disk full / read-only", None, "refuse", "cannot mount a tmpfs here (not root)")
        else:
            try:
                self.full_disk(family, mounted)
            finally:
                subprocess.run(["umount", "-l", str(mounted)], capture_output=True)
        folder = self.case_dir("odd_names")
        data = self.small_set(folder, 12)
        image = next((data / "images" / "val").iterdir())
        image.rename(Path(os.fsdecode(bytes(image.parent) + b"/r\xe9" + image.suffix.encode())))
        label = data / "labels" / "val" / f"{image.stem}.txt"
        label.rename(Path(os.fsdecode(bytes(label.parent) + b"/r\xe9.txt")))
        ran = self.cli(
            "run",
            "--dataset",
            data.name,
            "--update-golden",
            "--accept-weak-baseline",
            "--golden",
            "g",
            "--cache",
            self.cache,
            "--report",
            "rep",
            cwd=folder,
        )
        self.record(family, "non-UTF-8 image name, relative folders", ran, "pass")
        odd = Path(os.fsdecode(bytes(folder) + b"/caf\xe9_set"))
        data.rename(odd)
        ran = self.cli(
            "run",
            "--dataset",
            odd,
            "--update-golden",
            "--accept-weak-baseline",
            "--golden",
            folder / "golden",
            *self.places(folder),
            cwd=folder,
        )
        self.record(family, "non-UTF-8 dataset folder name", ran, "any")
        folder = self.case_dir("long_name")
        data = self.small_set(folder, 12)
        long = data.rename(folder / ("d" * 240))
        ran = self.cli(
            "run",
            "--dataset",
            long,
            "--update-golden",
            "--accept-weak-baseline",
            "--golden",
            folder / "golden",
            *self.places(folder),
            cwd=folder,
        )
        self.record(family, "240-character dataset name", ran, "any")
        folder = self.case_dir("links_and_modes")
        golden = folder / "golden"
        shutil.copytree(self.golden0, golden)
        file = golden / MODEL / f"{DEMO_SET}--onnx.json"
        kept = folder / "kept.json"
        shutil.move(file, kept)
        file.symlink_to(kept)
        (golden / MODEL / f"{DEMO_SET}--emulated-hailo.json").chmod(0o664)
        ran = self.cli("run", "--update-golden", "--golden", golden, *self.places(folder), cwd=folder)
        mode = (golden / MODEL / f"{DEMO_SET}--emulated-hailo.json").stat().st_mode & 0o777
        lost = []
        if not file.is_symlink():
            lost.append("the symlinked baseline became a regular file")
        if mode != 0o664:
            lost.append(f"baseline mode {mode:o}, was 664")
        self.record(family, "symlinked baseline and its mode", ran, "pass", "; ".join(lost) or None)
        folder = self.case_dir("ctrl_c")

        def interrupt(process: subprocess.Popen) -> None:
            time.sleep(3.0)
            os.killpg(process.pid, signal.SIGINT)

        ran = self.cli("run", "--cache", folder / "cache", "--report", folder / "rep", cwd=folder, start=interrupt)
        self.record(family, "Ctrl-C during a run", ran, "interrupt")

    def full_disk(self, family: str, mounted: Path) -> None:
        reports = mounted / "rep"
        first = self.cli("run", "--golden", self.golden0, "--cache", self.cache, "--report", reports, cwd=self.work)
        before = (reports / "report.md").read_bytes() if (reports / "report.md").exists() else b""
        filler = mounted / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
        ran = self.cli("run", "--golden", self.golden0, "--cache", self.cache, "--report", reports, cwd=self.work)
        after = (reports / "report.md").read_bytes() if (reports / "report.md").exists() else b""
        lost = None if before and after == before else f"report.md {len(before)} -> {len(after)} bytes"
        self.record(family, "disk full while writing reports", ran if first.rc in (0, 1) else first, "refuse", lost)
        filler.unlink()
        golden = mounted / "golden"
        shutil.copytree(self.golden0, golden)
        olds = {p: p.read_bytes() for p in golden.rglob("*.json")}
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
        ran = self.cli(
            "run",
            "--calibration",
            "off-domain",
            "--update-golden",
            "--golden",
            golden,
            "--cache",
            self.cache,
            "--report",
            self.work / "cases" / "rep-full",
            cwd=self.work,
        )
        changed = [p.name for p, b in olds.items() if not p.exists() or p.read_bytes() != b]
        self.record(
            family, "disk full while blessing", ran, "refuse", f"baselines changed: {changed}" if changed else None
        )
        filler.unlink()
        subprocess.run(["mount", "-o", "remount,ro", str(mounted)], capture_output=True)
        ran = self.cli(
            "run",
            "--update-golden",
            "--golden",
            golden,
            "--cache",
            self.cache,
            "--report",
            self.work / "cases" / "rep-ro",
            cwd=self.work,
        )
        self.record(family, "read-only golden/ while blessing", ran, "refuse")
        ran = self.cli(
            "run", "--golden", golden, "--cache", self.cache, "--report", self.work / "cases" / "rep-ro", cwd=self.work
        )
        self.record(family, "read-only golden/ while gating", ran, "pass")

    # --- the table ---------------------------------------------------------------------------

    def table(self) -> str:
        families = list(dict.fromkeys(f for f, *_ in self.rows))
        head = ["family", "tried", *OUTCOMES]
        lines = [" | ".join(head), " | ".join("---" for _ in head)]
        for family in families:
            counts = Counter(o for f, _, o, _ in self.rows if f == family)
            tried = sum(counts[o] for o in OUTCOMES if o != "not run")
            lines.append(" | ".join([family, str(tried), *(str(counts[o]) for o in OUTCOMES)]))
        return "\n".join(f"| {line} |" for line in lines)


# Families kept in modules of their own (tools/campaign_<topic>.py), each with ``run(campaign)``.
MODULES: dict[str, str] = {
    "signed": "campaign_signed",
    "plugin": "campaign_plugin",
    "links": "campaign_files",
    "fleet": "campaign_fleet",
    "shared_cache": "campaign_cache",
    "gates": "campaign_gates",
    "calibration": "campaign_calibration",
    "compile": "campaign_compile",
}
FAMILIES = ("false_pass", "bad_input", "kill", "injection", "faults", *MODULES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/harness-campaign"))
    parser.add_argument("--only", nargs="*", choices=FAMILIES, default=FAMILIES)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per command")
    args = parser.parse_args(argv)
    campaign = Campaign(args.work.resolve(), args.timeout)
    campaign.prepare()
    for family in args.only:
        if family in MODULES:
            importlib.import_module(f"tools.{MODULES[family]}").run(campaign)
        else:
            getattr(campaign, family)()
    print()
    print(campaign.table())
    bad = [r for r in campaign.rows if r[2] in ("false pass", "traceback", "hang", "data lost")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
