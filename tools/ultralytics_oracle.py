"""Ultralytics' Hailo decoders as a second oracle for the harness's decoders (a development tool, never a
CI dependency: its results are recorded and ``tests/decode/test_ultralytics_oracle.py`` reads them without Ultralytics).

Two stages in two venvs, from the repository root:

    .venv/bin/python tools/ultralytics_oracle.py inputs
    /work/train-venv/bin/python tools/ultralytics_oracle.py decode

``inputs`` (the harness's venv) letterboxes a few fire/smoke fixture frames to the demo models' 256x256
input and writes what a Hailo host would hand a decoder: the HAILO_NMS_BY_CLASS buffer of the emulated
YOLO11n demo HEF with HailoRT's NMS compiled in, and the six raw head maps of the YOLO26n demo export
(float, cut at its head convolutions), in Ultralytics' Hailo order: the box maps (H, W, 4) of strides 8,
16, 32, then the class maps (H, W, nc). The export holds only its one-to-one head, so both YOLO26
decodings read those maps (a check of the decoders, not of a trained one-to-many head).

``decode`` (Ultralytics' venv: torch, ultralytics; no harness import) runs ``HailoBackend._decode_nms``
and ``_decode_raw`` (one-to-one and one-to-many), the predictor's ``non_max_suppression`` and
``scale_boxes`` on them, as ``DetectionPredictor`` would, and hashes the uint8 input Ultralytics would
feed a HEF for each frame.

Both write into ``tests/support/data/ultralytics_oracle/``: ``inputs.npz``, ``inputs.json`` (stage 1),
``ultralytics.npz``, ``ultralytics.json`` (stage 2), ``provenance.json`` (versions, commands, dates,
file hashes; stage 1 starts it, stage 2 adds its part).

ultralytics 8.4.190: ultralytics/nn/backends/hailo.py (``HailoBackend``), ultralytics/utils/nms.py
(``non_max_suppression``), ultralytics/utils/ops.py (``scale_boxes``), ultralytics/models/yolo/detect/
predict.py (``DetectionPredictor.postprocess``: NMS, then ``scale_boxes`` to the original image).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "support" / "data" / "ultralytics_oracle"
FIXTURES = Path(os.environ.get("HARNESS_FIXTURES", ROOT.parent / "shared" / "fixtures"))
IMAGE_DIR = "datasets/fire_smoke_val/images/val"
# Four geometries: square, wide (scaled up, odd padding), tall, very wide.
IMAGES = ("fire-image_1.jpg", "fire-image_16.jpg", "fire-image_31.jpg", "fire-image_28.jpg")
YOLO11 = ROOT / "harness" / "data" / "demo" / "fire_smoke_yolo11n_256.onnx"
YOLO26 = ROOT / "harness" / "data" / "demo" / "fire_smoke_yolo26n_256.onnx"
CALIBRATION_COUNT = 64
# The emulated HEF's NMS op (the Model Zoo's yolov8 config but a lower score threshold, for more
# detections to compare) and the predictor's settings (Ultralytics' iou and max_det; conf low, same reason).
NMS_SCORE_THRESHOLD, NMS_IOU_THRESHOLD, NMS_MAX_PER_CLASS = 0.05, 0.7, 100
PREDICTOR = {"conf": 0.05, "iou": 0.7, "max_det": 300}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def command_line() -> str:
    """This run's command line, from the repository root."""
    python = Path(sys.executable)
    shown = python.relative_to(ROOT) if python.is_relative_to(ROOT) else python
    return shlex.join([str(shown), os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]])


def fixture_images() -> list[Path]:
    """The frames' fixture files; a clear exit where the fixtures are not found."""
    images = [FIXTURES / IMAGE_DIR / name for name in IMAGES]
    missing = [str(p) for p in images if not p.is_file()]
    if missing:
        raise SystemExit(f"fixture images not found: {missing} (set HARNESS_FIXTURES to the fixtures folder)")
    return images


def stage_record(**extra: Any) -> dict[str, Any]:
    return {
        "command": command_line(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        **extra,
    }


# ---------------------------------------------------------------------------------------------- stage 1


def write_inputs() -> None:
    """The harness's venv: frames -> NMS_BY_CLASS buffers (emulated YOLO11n HEF) and YOLO26n raw maps."""
    import onnxruntime

    from harness.backends.emulator import EmulatorOptions, EmulatorRunner, build_emulated_hef
    from harness.backends.onnx.runner import OnnxRunner
    from harness.families.yolo26.onnx import find_yolo26_heads
    from harness.inputs.onnx_graph import cut_at_heads, load_model, model_input
    from harness.inputs.preprocess import letterbox, load_image, to_nchw_float

    images = fixture_images()
    calibration = sorted((FIXTURES / IMAGE_DIR).glob("*.jpg"))[:CALIBRATION_COUNT]
    options = EmulatorOptions(
        calibration_count=CALIBRATION_COUNT,
        sigmoid_inside=True,
        nms=True,
        score_threshold=NMS_SCORE_THRESHOLD,
        iou_threshold=NMS_IOU_THRESHOLD,
        max_proposals_per_class=NMS_MAX_PER_CLASS,
    )
    hef = build_emulated_hef(YOLO11, calibration, options, ROOT / ".harness-cache" / "emulator", progress=print)
    ((nms_name, nms_spec),) = hef.output_specs.items()
    assert nms_spec.nms is not None

    model = load_model(YOLO26)
    input_name, input_hw = model_input(model)
    if input_hw != hef.input_hw:
        raise SystemExit(f"{YOLO26.name}: input {input_hw}, {YOLO11.name}: {hef.input_hw}; expected one size")
    heads = find_yolo26_heads(model)
    ordered = [h for h in heads if h.role == "box"] + [h for h in heads if h.role == "class"]

    arrays: dict[str, Any] = {}
    frames = []
    with EmulatorRunner(hef, threads=1) as emulated, OnnxRunner(cut_at_heads(model, heads), threads=1) as cut:
        for i, path in enumerate(images):
            image = load_image(path)
            frame, _ = letterbox(image, input_hw)
            arrays[f"nms_{i}"] = emulated.infer({hef.input.name: frame[None]})[nms_name]
            maps = cut.infer({input_name: to_nchw_float(frame)})
            for k, head in enumerate(ordered):
                arrays[f"raw_{i}_{k}"] = maps[head.tensor]
            frames.append(
                {
                    "image": f"{IMAGE_DIR}/{path.name}",
                    "sha256": sha256(path),
                    "original_hw": list(image.shape[:2]),
                }
            )
    np.savez_compressed(OUT / "inputs.npz", **arrays)
    meta = {
        "input_hw": list(input_hw),
        "frames": frames,
        "nms": {
            "output": nms_name,
            "classes": nms_spec.nms.number_of_classes,
            "max_bboxes_per_class": nms_spec.nms.max_bboxes_per_class,
            "score_threshold": NMS_SCORE_THRESHOLD,
            "iou_threshold": NMS_IOU_THRESHOLD,
        },
        "raw": [
            {"tensor": h.tensor, "node": h.node, "role": h.role, "channels": h.channels, "grid": list(h.grid)}
            for h in ordered
        ],
        "predictor": PREDICTOR,
    }
    (OUT / "inputs.json").write_text(json.dumps(meta, indent=1) + "\n")
    git = ["git", "-C", str(ROOT)]
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    changed = subprocess.run([*git, "status", "--porcelain", "harness"], capture_output=True, text=True).stdout
    provenance = {
        "inputs": stage_record(
            onnxruntime=onnxruntime.__version__,
            harness_commit=commit,
            harness_files_uncommitted=sorted(line[3:] for line in changed.splitlines()),
            models={p.name: sha256(p) for p in (YOLO11, YOLO26)},
            emulated_hef=hef.label,
            calibration=f"the first {len(calibration)} of {IMAGE_DIR}/*.jpg, sorted by name",
            fixtures={f"{IMAGE_DIR}/{p.name}": sha256(p) for p in images},
            inputs_npz_sha256=sha256(OUT / "inputs.npz"),
        )
    }
    (OUT / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    print(f"wrote {len(images)} frames into {OUT}")


# ---------------------------------------------------------------------------------------------- stage 2


def per_class_lists(buffer: np.ndarray, classes: int) -> list[np.ndarray]:
    """A HAILO_NMS_BY_CLASS frame as hailo_platform hands it to Ultralytics (``InferVStreams``, not the tf
    format): one ``(n, 5)`` array per class (hailort 4.23: hailort/libhailort/bindings/python/platform/
    hailo_platform/pyhailort/pyhailort.py, ``output_raw_buffer_to_nms_format_single_frame``, copied)."""
    out, offset = [], 0
    for _ in range(classes):
        count = int(buffer[offset])
        offset += 1
        out.append(buffer[offset : offset + 5 * count].reshape(count, 5) if count else np.empty([0, 5]))
        offset += 5 * count
    return out


def decode_with_ultralytics() -> None:
    """Ultralytics' venv: its Hailo backend's decoders, NMS and ``scale_boxes`` on the recorded inputs."""
    import torch
    import torchvision  # Ultralytics' NMS runs torchvision.ops.nms once torchvision is imported, as the predictor has
    import ultralytics
    from ultralytics.data.augment import LetterBox
    from ultralytics.nn.backends.hailo import HailoBackend
    from ultralytics.utils.nms import non_max_suppression
    from ultralytics.utils.ops import scale_boxes
    from ultralytics.utils.patches import imread

    fixture_images()
    if not (OUT / "inputs.json").is_file():
        raise SystemExit(f"{OUT / 'inputs.json'} not found: run the 'inputs' stage first, in the harness's venv")
    meta = json.loads((OUT / "inputs.json").read_text())
    inputs = np.load(OUT / "inputs.npz")
    height, width = meta["input_hw"]
    settings = meta["predictor"]

    def backend(**attributes: Any) -> HailoBackend:
        """The decoders' state without ``load_model`` (no HEF, no hailo_platform)."""
        instance = HailoBackend.__new__(HailoBackend)
        instance.input_info = SimpleNamespace(name="images", shape=(height, width, 3))
        instance._anchors = None
        instance.end2end = False
        instance.metadata = {}
        for key, value in attributes.items():
            setattr(instance, key, value)
        return instance

    def predict(prediction: np.ndarray, end2end: bool, original_hw: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """``DetectionPredictor.postprocess`` on one frame: rows (x1, y1, x2, y2, score, class) in input
        pixels and after ``scale_boxes`` in original-image pixels."""
        (rows,) = non_max_suppression(
            torch.from_numpy(np.ascontiguousarray(prediction)),
            settings["conf"],
            settings["iou"],
            max_det=settings["max_det"],
            end2end=end2end,
        )
        before = rows.clone()
        rows[:, :4] = scale_boxes((height, width), rows[:, :4], tuple(original_hw))
        return before.numpy(), rows.numpy()

    nms_backend = backend(metadata={"nms": True}, end2end=True)
    one2one = backend(end2end=True)
    one2many = backend()
    results: dict[str, Any] = {}
    frames = []
    for i, frame in enumerate(meta["frames"]):
        # What the HEF would be fed: the predictor letterboxes (auto=False for a fixed-size backend), flips
        # BGR to RGB and divides by 255 (ultralytics/engine/predictor.py, ``BasePredictor.pre_transform``,
        # ``preprocess``); HailoBackend.forward multiplies by 255 back into uint8 NHWC.
        letterboxed = LetterBox((height, width), auto=False)(image=imread(str(FIXTURES / frame["image"])))
        im = torch.from_numpy(letterboxed)[None].permute(0, 3, 1, 2).contiguous().flip(1).float().div_(255)
        fed = np.ascontiguousarray(np.clip(im.permute(0, 2, 3, 1).numpy() * 255, 0, 255).astype(np.uint8))
        frames.append({"image": frame["image"], "hef_input_sha256": hashlib.sha256(fed[0].tobytes()).hexdigest()})
        lists = per_class_lists(inputs[f"nms_{i}"], meta["nms"]["classes"])
        maps = [inputs[f"raw_{i}_{k}"][None] for k in range(len(meta["raw"]))]
        predictions = {
            "nms": (nms_backend._decode_nms([lists]), True),
            "one2one": (one2one._decode_raw(maps), True),
            "one2many": (one2many._decode_raw(maps), False),
        }
        for path, (prediction, end2end) in predictions.items():
            before, after = predict(prediction, end2end, frame["original_hw"])
            results[f"{path}_{i}_input"], results[f"{path}_{i}_original"] = before, after
            frames[-1][path] = len(after)
        print(f"{frame['image']}: " + ", ".join(f"{path} {frames[-1][path]}" for path in predictions) + " detections")
    np.savez_compressed(OUT / "ultralytics.npz", **results)
    (OUT / "ultralytics.json").write_text(json.dumps({"frames": frames, "predictor": settings}, indent=1) + "\n")
    provenance = json.loads((OUT / "provenance.json").read_text())
    provenance["ultralytics"] = stage_record(
        ultralytics=ultralytics.__version__,
        torch=torch.__version__,
        torchvision=torchvision.__version__,
        decoded_inputs_npz_sha256=sha256(OUT / "inputs.npz"),
        results_sha256={name: sha256(OUT / name) for name in ("ultralytics.npz", "ultralytics.json")},
    )
    (OUT / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=("inputs", "decode"), help="inputs: harness venv; decode: Ultralytics' venv")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.stage == "inputs":
        write_inputs()
    else:
        decode_with_ultralytics()


if __name__ == "__main__":
    main()
