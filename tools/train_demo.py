"""Train a shipped demo detector: a 2-class (fire, smoke) YOLO11n or YOLO26n from scratch on the synthetic set.

A one-off development tool, not part of the package: Ultralytics and torch live in a separate venv
and are never runtime dependencies of the harness. Nothing is downloaded: the model is built from
``yolo11n.yaml`` / ``yolo26n.yaml`` (no pretrained weights), Ultralytics runs offline with auto-install off, its font is
provided locally, and any attempt to open an internet connection raises.

    python3 -m venv /work/train-venv
    /work/train-venv/bin/pip install torch==2.14.1 torchvision==0.29.1
    /work/train-venv/bin/pip install ultralytics pillow numpy pyyaml onnx
    PYTHONPATH=. nice -n 10 /work/train-venv/bin/python tools/train_demo.py [--arch yolo26n]

writes ``harness/data/demo/fire_smoke_yolo11n_256.onnx`` (float32, opset 17, input 1x3x256x256, output
1x6x1344) and ``MODEL_CARD.md``; with ``--arch yolo26n`` ``fire_smoke_yolo26n_256.onnx`` (the one-to-one
head exported end to end: output 1x300x6) and ``MODEL_CARD_yolo26n.md``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import platform
import shlex
import shutil
import socket
import sys
import tempfile
import time
import traceback
from pathlib import Path

from harness.inputs.synthetic import Recipe, write_dataset

ROOT = Path(__file__).resolve().parent.parent
ARCHS = {
    # arch: (the head's layer, its box and class conv branches, export arguments, the output the export has)
    "yolo11n": ("model.23", ("cv2", "cv3"), {}, (6, sum((256 // s) ** 2 for s in (8, 16, 32)))),
    "yolo26n": ("model.23", ("one2one_cv2", "one2one_cv3"), {"end2end": True}, (300, 6)),
}
RECIPE = Recipe(seed=0, train=300, val=100, calib=64, offdomain_calib=64, imgsz=256)
TRAIN_SEED = 0
IMGSZ = 256
BATCH = 16
WORKERS = 0
OPSET = 17


def head_convs(arch: str) -> list[str]:
    layer, branches, _, _ = ARCHS[arch]
    return [f"/{layer}/{branch}.{i}/{branch}.{i}.2/Conv" for branch in branches for i in range(3)]


def model_name(arch: str) -> str:
    return f"fire_smoke_{arch}_256.onnx"


def card_name(arch: str) -> str:
    return "MODEL_CARD.md" if arch == "yolo11n" else f"MODEL_CARD_{arch}.md"


MAX_ONNX_BYTES = 15 * 1024 * 1024

_blocked: list[str] = []


def _forbid_internet() -> None:
    """Make any DNS lookup or TCP/UDP connect raise, and remember it (local Unix sockets stay allowed)."""
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: object) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _blocked.append(f"connect {address}, from:\n{''.join(traceback.format_stack(limit=12)[:-1])}")
            raise OSError(f"network access blocked by train_demo: connect {address}")
        real_connect(self, address)

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> list:
        _blocked.append(f"getaddrinfo {host}, from:\n{''.join(traceback.format_stack(limit=12)[:-1])}")
        raise socket.gaierror(f"network access blocked by train_demo: getaddrinfo {host}")

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]


def _offline_ultralytics(config_dir: Path) -> None:
    """Settings that keep Ultralytics from reaching the internet; call before importing it."""
    config_dir.mkdir(parents=True, exist_ok=True)
    os.environ["YOLO_CONFIG_DIR"] = str(config_dir)
    os.environ["YOLO_OFFLINE"] = "1"
    os.environ["YOLO_AUTOINSTALL"] = "False"
    os.environ["MPLBACKEND"] = "Agg"
    import matplotlib

    # check_det_dataset() looks for Arial.ttf in USER_CONFIG_DIR (YOLO_CONFIG_DIR/Ultralytics) and else downloads it.
    font = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    (config_dir / "Ultralytics").mkdir(exist_ok=True)
    shutil.copyfile(font, config_dir / "Ultralytics" / "Arial.ttf")


def _epoch_rows(results_csv: Path) -> list[dict[str, str]]:
    with results_csv.open() as f:
        return [{k.strip(): v.strip() for k, v in row.items()} for row in csv.DictReader(f)]


def _check_onnx(path: Path, arch: str) -> dict[str, object]:
    import onnx

    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    shape = lambda v: [d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
    inputs, outputs = [(v.name, shape(v)) for v in model.graph.input], [(v.name, shape(v)) for v in model.graph.output]
    expected = [("output0", [1, *ARCHS[arch][3]])]
    if outputs != expected or inputs != [("images", [1, 3, IMGSZ, IMGSZ])]:
        raise SystemExit(f"{path}: inputs {inputs}, outputs {outputs}; expected images 1x3x256x256 -> {expected}")
    nodes = {n.name for n in model.graph.node}
    missing = [name for name in head_convs(arch) if name not in nodes]
    if missing:
        raise SystemExit(f"{path}: head convs {missing} not found")
    if any(i.data_type != onnx.TensorProto.FLOAT for i in model.graph.initializer if i.dims):
        raise SystemExit(f"{path}: non-float32 weights found; expected a float model")
    size = path.stat().st_size
    if size > MAX_ONNX_BYTES:
        raise SystemExit(f"{path}: {size} bytes, expected at most {MAX_ONNX_BYTES}")
    return {"inputs": inputs, "outputs": outputs, "opset": model.opset_import[0].version, "bytes": size}


def _model_card(facts: dict[str, object]) -> str:
    rows = facts["epochs_table"]
    table = "\n".join(
        f"| {r['epoch']} | {float(r['time']):.0f} | {float(r['metrics/mAP50(B)']):.3f} "
        f"| {float(r['metrics/mAP50-95(B)']):.3f} |"
        for r in rows  # type: ignore[union-attr]
    )
    r, arch = RECIPE, str(facts["arch"])
    opset = facts["onnx"]["opset"]  # type: ignore[index]
    if arch == "yolo11n":
        title, export_extra, nms_note = "YOLO11n", "", "external NMS"
        lines = [
            f"- Ultralytics ONNX export, float32 weights (not quantized), opset {opset}, no NMS, static shapes,",
            "  not simplified",
            f"- input `images` float32 1x3x{IMGSZ}x{IMGSZ} (RGB, /255, letterboxed with grey 114); output `output0` "
            "float32 1x6x1344",
            "  (x, y, w, h in input pixels, then two sigmoid class scores; anchors 32x32 + 16x16 + 8x8)",
            "- the six head convolutions `/model.23/cv2.{0,1,2}/cv2.x.2/Conv` (boxes, 64 channels) and",
            "  `/model.23/cv3.{0,1,2}/cv3.x.2/Conv` (classes, 2 channels) are inside",
        ]
    else:
        title, export_extra, nms_note = (
            "YOLO26n",
            ", end2end=True",
            "no NMS: the one-to-one head's top-k is in the graph",
        )
        lines = [
            "- Ultralytics ONNX export of the one-to-one head end to end (`end2end=True`), float32 weights",
            f"  (not quantized), opset {opset}, no NMS, static shapes, not simplified",
            f"- input `images` float32 1x3x{IMGSZ}x{IMGSZ} (RGB, /255, letterboxed with grey 114); output `output0` "
            "float32 1x300x6",
            "  (x1, y1, x2, y2 in input pixels, score, class: the 300 best (anchor, class) pairs, no NMS)",
            "- the six head convolutions `/model.23/one2one_cv2.{0,1,2}/one2one_cv2.x.2/Conv` (boxes, 4 channels:",
            "  reg_max 1, no DFL) and `/model.23/one2one_cv3.{0,1,2}/one2one_cv3.x.2/Conv` (classes, 2 channels,",
            "  logits) are inside",
        ]
    the_file = "\n".join(lines)
    return f"""# Demo model: fire/smoke {title}, 256x256

`{model_name(arch)}` is a two-class detector (0 = fire, 1 = smoke) trained from scratch on the harness's own
synthetic data, shipped so that the harness can be demonstrated and tested end to end on a real
Ultralytics export without downloading anything. It knows only synthetic flames and smoke: it is
not a fire detector for real use.

## The file

{the_file}
- {facts["onnx"]["bytes"]:,} bytes, sha256 `{facts["sha256"]}`

## How it was made

```bash
{facts["command"]}
```

- data: `harness.inputs.synthetic`, the same as `python -m harness.inputs.synthetic --out DIR --seed {r.seed}
  --train {r.train} --val {r.val} --calib {r.calib} --offdomain-calib {r.offdomain_calib} --imgsz {r.imgsz}`
  (PNG frames 240..480 px wide, ~15 % empty; train on `train`, validate on `val`)
- model `{arch}.yaml` built from scratch (`pretrained=False`), nc=2
- training: epochs {facts["epochs"]}, imgsz {IMGSZ}, batch {BATCH}, workers {WORKERS}, seed {TRAIN_SEED}, deterministic,
  `amp=False`, `plots=False`, device cpu, all other settings Ultralytics defaults (optimizer auto, mosaic closed for
  the last 10 epochs)
- export: `format="onnx", imgsz={IMGSZ}, opset={OPSET}, simplify=False, dynamic=False{export_extra}` ({nms_note})
- versions: Ultralytics {facts["ultralytics"]}, torch {facts["torch"]}, torchvision {facts["torchvision"]},
  numpy {facts["numpy"]}, Pillow {facts["pillow"]}, onnx {facts["onnx_version"]}, Python {platform.python_version()}
- machine: {facts["cpus"]} CPU cores, no GPU; training wall time {facts["train_s"]:.0f} s
  ({facts["train_s"] / facts["epochs"]:.1f} s per epoch, validation included)
- network access attempts during the run: {facts["blocked"]}

## Accuracy (best.pt on the synthetic val split, 100 images, Ultralytics val at imgsz {IMGSZ})

| class | mAP@0.5 | mAP@0.5:0.95 |
|---|---|---|
| all | {facts["map50"]:.3f} | {facts["map"]:.3f} |
| fire | {facts["per_class"][0][0]:.3f} | {facts["per_class"][0][1]:.3f} |
| smoke | {facts["per_class"][1][0]:.3f} | {facts["per_class"][1][1]:.3f} |

Per epoch (cumulative seconds since the start of training, validation mAP during training):

| epoch | time s | mAP@0.5 | mAP@0.5:0.95 |
|---|---|---|---|
{table}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--arch", choices=sorted(ARCHS), default="yolo11n")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "harness" / "data" / "demo", help="folder for the ONNX and card"
    )
    raw = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(raw)
    command = shlex.join(["nice", "-n", "10", "/work/train-venv/bin/python", "tools/train_demo.py", *raw])
    command = f"PYTHONPATH=. {command}"

    _forbid_internet()
    with tempfile.TemporaryDirectory(prefix="train_demo_") as tmp:
        work = Path(tmp)
        _offline_ultralytics(work / "ultralytics_config")
        data_yaml = write_dataset(work / "data", RECIPE)

        import numpy
        import onnx
        import PIL
        import torch
        import torchvision
        import ultralytics
        from ultralytics import YOLO, settings

        settings.update({"sync": False})
        model = YOLO(f"{args.arch}.yaml")
        started = time.perf_counter()
        model.train(
            data=str(data_yaml),
            epochs=args.epochs,
            imgsz=IMGSZ,
            batch=BATCH,
            workers=WORKERS,
            seed=TRAIN_SEED,
            deterministic=True,
            pretrained=False,
            amp=False,
            plots=False,
            device="cpu",
            project=str(work / "runs"),
            name="demo",
            exist_ok=True,
            verbose=True,
        )
        train_s = time.perf_counter() - started
        run_dir = work / "runs" / "demo"
        best = YOLO(str(run_dir / "weights" / "best.pt"))
        metrics = best.val(data=str(data_yaml), imgsz=IMGSZ, batch=BATCH, workers=WORKERS, plots=False, device="cpu")
        extra = ARCHS[args.arch][2]
        exported = Path(
            best.export(format="onnx", imgsz=IMGSZ, opset=OPSET, simplify=False, dynamic=False, device="cpu", **extra)
        )
        args.out.mkdir(parents=True, exist_ok=True)
        target = args.out / model_name(args.arch)
        shutil.copyfile(exported, target)
        facts: dict[str, object] = {
            "arch": args.arch,
            "command": command,
            "epochs": args.epochs,
            "epochs_table": _epoch_rows(run_dir / "results.csv"),
            "train_s": train_s,
            "map50": float(metrics.box.map50),
            "map": float(metrics.box.map),
            "per_class": [(float(metrics.box.ap50[i]), float(metrics.box.ap[i])) for i in range(2)],
            "onnx": _check_onnx(target, args.arch),
            "sha256": hashlib.sha256(target.read_bytes()).hexdigest(),
            "ultralytics": ultralytics.__version__,
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "numpy": numpy.__version__,
            "pillow": PIL.__version__,
            "onnx_version": onnx.__version__,
            "cpus": os.cpu_count(),
            "blocked": len(_blocked),
        }
        (args.out / card_name(args.arch)).write_text(_model_card(facts))
    print(f"{target}: mAP@0.5 {facts['map50']:.3f}, mAP@0.5:0.95 {facts['map']:.3f}, {train_s:.0f} s")
    if _blocked:
        print("blocked network attempts:", *_blocked, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
