"""Ultralytics' own ``yolo val`` of an ONNX export, timed stage by stage: the other side of
``python -m tools.bench_eval --parts compare``. Runs in Ultralytics' venv (torch, ultralytics and
onnxruntime, best the harness's version: ``/work/train-venv/bin/pip install onnxruntime==1.32.0`` beside
tools/train_demo.py's packages; never the harness's venv), offline, and writes one JSON file::

    /work/train-venv/bin/python tools/ultralytics_val.py --model M.onnx --data data.yaml --imgsz 256 \\
        --threads 2 --out result.json [--score other.json]

- ``speed``: Ultralytics' own ms per image (``metrics.speed``: preprocess = tensor and /255,
  inference, loss, postprocess = NMS); ``stages``: seconds in image decoding (``imread``), the
  long-side resize (``BaseDataset.load_image`` less ``imread``), the letterbox padding
  (``LetterBox.__call__``), the metrics (``update_metrics`` and ``get_stats``) and the dataset scan
  (``get_dataloader``: listing, label cache); ``val_s``: wall time of ``model.val()``;
- ``map50``/``map50_95``: as ``yolo val`` reports them; ``images``: per image (by file name) the
  ground truth and the predictions in original-image pixels, as ``scale_boxes`` maps them back;
- ``rescored``: Ultralytics' metric (its ``match_predictions`` and ``DetMetrics``) recomputed from
  those original-pixel boxes, and with ``--score``, on another tool's predictions for the same
  images (``{file name: {"boxes": [[x1, y1, x2, y2]], "scores": [], "classes": []}}``).

ultralytics 8.4.190: ultralytics/engine/validator.py (``BaseValidator.__call__``: ``workers`` 0 and
``rect`` off for an ONNX model on the CPU; ``match_predictions``), ultralytics/models/yolo/detect/val.py
(``postprocess``: ``non_max_suppression(multi_label=True)``; ``_prepare_batch``, ``scale_preds``),
ultralytics/data/base.py (``load_image``), ultralytics/utils/metrics.py (``DetMetrics``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# run as a script, tools/ is on the path; bench_stages imports the harness only in its main()
from bench_stages import pin_threads as pin_onnxruntime


class WrapClock:
    """Seconds per stage of Ultralytics' functions, wrapped in place, from any thread; a call inside
    a call of its own stage counts once."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    def wrap(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            active: set[str] = self._local.__dict__.setdefault("active", set())
            if stage in active:
                return function(*args, **kwargs)
            active.add(stage)
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                active.discard(stage)
                with self._lock:
                    self.seconds[stage] = self.seconds.get(stage, 0.0) + elapsed

        return wrapper


CLOCK = WrapClock()
timed = CLOCK.wrap
CAPTURE = "capture"  # this script's own copying of boxes, left out of val_s


def offline(config_dir: Path) -> None:
    """Ultralytics without the internet: settings in a folder of our own, no auto-install, its font
    from matplotlib (check_det_dataset() otherwise downloads Arial.ttf). Before importing it."""
    os.environ["YOLO_CONFIG_DIR"] = str(config_dir)
    os.environ["YOLO_OFFLINE"] = "1"
    os.environ["YOLO_AUTOINSTALL"] = "False"
    os.environ["MPLBACKEND"] = "Agg"
    import matplotlib

    (config_dir / "Ultralytics").mkdir(parents=True, exist_ok=True)
    font = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    shutil.copyfile(font, config_dir / "Ultralytics" / "Arial.ttf")


def pin_threads(threads: int) -> None:
    """torch and every onnxruntime session on ``threads`` intra-op threads (one inter-op)."""
    import torch

    torch.set_num_threads(threads)
    pin_onnxruntime(threads)


class Capture:
    """Per image: ground truth and predictions in original-image pixels, and the validator."""

    def __init__(self) -> None:
        self.images: dict[str, dict[str, Any]] = {}
        self.validator: Any = None

    def install(self) -> None:
        from ultralytics.models.yolo.detect.val import DetectionValidator
        from ultralytics.utils import ops

        capture = self

        def keep(validator: Any, preds: list[dict[str, Any]], batch: dict[str, Any]) -> None:
            capture.validator = validator
            for si, pred in enumerate(preds):
                pbatch = validator._prepare_batch(si, batch)
                scaled = validator.scale_preds(pred, pbatch)
                truth = ops.scale_boxes(
                    pbatch["imgsz"], pbatch["bboxes"].clone(), pbatch["ori_shape"], pbatch["ratio_pad"]
                )
                capture.images[Path(pbatch["im_file"]).name] = {
                    "gt_boxes": truth.cpu().numpy().tolist(),
                    "gt_classes": pbatch["cls"].cpu().numpy().astype(int).tolist(),
                    "boxes": scaled["bboxes"].cpu().numpy().tolist(),
                    "scores": pred["conf"].cpu().numpy().tolist(),
                    "classes": pred["cls"].cpu().numpy().astype(int).tolist(),
                }

        keep, update = timed(CAPTURE, keep), timed("metrics", DetectionValidator.update_metrics)

        def update_metrics(validator: Any, preds: list[dict[str, Any]], batch: dict[str, Any]) -> None:
            keep(validator, preds, batch)
            update(validator, preds, batch)

        DetectionValidator.update_metrics = update_metrics

    def rescore(self, predictions: dict[str, dict[str, Any]], names: dict[int, str]) -> dict[str, float]:
        """Ultralytics' metric of ``predictions`` against the captured ground truth, in original pixels."""
        import torch
        from ultralytics.utils.metrics import DetMetrics, box_iou

        missing = sorted(set(self.images) - set(predictions))
        if missing:
            raise SystemExit(f"--score: no predictions for {len(missing)} images, e.g. {missing[0]}")
        metrics = DetMetrics(names=names)
        niou = len(self.validator.iouv)
        for name, image in self.images.items():
            pred = predictions[name]
            order = np.argsort(-np.asarray(pred["scores"], dtype=np.float64), kind="stable")
            boxes = np.asarray(pred["boxes"], dtype=np.float32).reshape(-1, 4)[order]
            scores = np.asarray(pred["scores"], dtype=np.float32)[order]
            classes = np.asarray(pred["classes"], dtype=np.float32)[order]
            gt_classes = np.asarray(image["gt_classes"], dtype=np.float32)
            tp = np.zeros((len(scores), niou), dtype=bool)
            if len(scores) and len(gt_classes):
                iou = box_iou(torch.tensor(image["gt_boxes"]).reshape(-1, 4), torch.from_numpy(boxes))
                tp = self.validator.match_predictions(torch.from_numpy(classes), torch.from_numpy(gt_classes), iou)
                tp = tp.cpu().numpy()
            metrics.update_stats(
                {
                    "tp": tp,
                    "target_cls": gt_classes,
                    "target_img": np.unique(gt_classes),
                    "conf": scores,
                    "pred_cls": classes,
                    "im_name": name,
                }
            )
        metrics.process()
        return {"map50": float(metrics.box.map50), "map50_95": float(metrics.box.map)}


def install_stage_timers() -> None:
    import ultralytics.data.base as base
    from ultralytics.data.augment import LetterBox
    from ultralytics.models.yolo.detect.val import DetectionValidator

    base.imread = timed("decode image", base.imread)
    base.BaseDataset.load_image = timed("decode + resize", base.BaseDataset.load_image)
    LetterBox.__call__ = timed("letterbox pad", LetterBox.__call__)
    DetectionValidator.get_stats = timed("metrics", DetectionValidator.get_stats)
    DetectionValidator.get_dataloader = timed("dataset scan", DetectionValidator.get_dataloader)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="dataset YAML in Ultralytics' layout")
    parser.add_argument("--imgsz", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--score", type=Path, help="other predictions to score with Ultralytics' metric")
    parser.add_argument("--conf", type=float, default=0.001)
    parser.add_argument("--iou", type=float, default=0.7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ultralytics_val_") as folder:
        work = Path(folder)
        offline(work / "config")
        pin_threads(args.threads)
        import onnxruntime
        import torch
        import ultralytics
        from ultralytics import YOLO

        install_stage_timers()
        capture = Capture()
        capture.install()
        start = time.perf_counter()
        model = YOLO(str(args.model), task="detect")
        load_s = time.perf_counter() - start
        start = time.perf_counter()
        metrics = model.val(
            data=str(args.data),
            imgsz=args.imgsz,
            batch=1,
            conf=args.conf,
            iou=args.iou,
            device="cpu",
            plots=False,
            verbose=False,
            project=str(work / "runs"),
            name="val",
        )
        val_s = time.perf_counter() - start
        names = {int(k): v for k, v in metrics.names.items()}
        rescored = {"ultralytics": capture.rescore(capture.images, names)}
        if args.score is not None:
            rescored["other"] = capture.rescore(json.loads(args.score.read_text()), names)
    result = {
        "versions": {
            "ultralytics": ultralytics.__version__,
            "torch": torch.__version__,
            "onnxruntime": onnxruntime.__version__,
        },
        "torch_threads": torch.get_num_threads(),
        "load_s": load_s,
        "val_s": val_s - CLOCK.seconds.get(CAPTURE, 0.0),
        "speed": dict(metrics.speed),
        "stages": CLOCK.seconds,
        "map50": float(metrics.box.map50),
        "map50_95": float(metrics.box.map),
        "rescored": rescored,
        "images": capture.images,
    }
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
