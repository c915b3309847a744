"""Train a small YOLOv5-style (anchor-based) 2-class (fire, smoke) detector from scratch and export it to ONNX.

A one-off development tool, not part of the package: torch lives in a separate venv and is never a
runtime dependency of the harness (OpenCV and xxhash are there for the harness's own letterbox, dataset
reader and metric, which this tool uses). Nothing is downloaded: the network is YOLOv5n's layout
(ultralytics/yolov5 models/yolov5n.yaml) at width 0.125, written out here with YOLOv5's own modules
(models/common.py: Conv, C3, SPPF; models/yolo.py: Detect), built from scratch (no pretrained weights),
trained with YOLOv5's loss (utils/loss.py ComputeLoss) on the harness's synthetic set, and any attempt
to open an internet connection raises.

    python3 -m venv /work/train-venv
    /work/train-venv/bin/pip install torch==2.14.1
    /work/train-venv/bin/pip install numpy onnx onnxruntime pillow pyyaml opencv-python-headless xxhash
    PYTHONPATH=. nice -n 10 /work/train-venv/bin/python tools/train_yolov5_demo.py

writes ``tests/support/data/fire_smoke_yolov5_256.onnx`` (float32, opset 17, input ``images`` 1x3x256x256,
output ``output0`` 1x4032x7: x, y, w, h in input pixels, objectness, two class probabilities, YOLOv5's
export-mode decode in the graph) and ``MODEL_CARD_yolov5.md``, after checking the export: onnxruntime
against torch, the three raw head maps decoded as HailoRT's YOLOv5 op decodes them against ``output0``,
and the mAP of the ONNX file on the synthetic validation split through the harness's own metric.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import math
import os
import platform
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.core.detections import Detections, unletterbox
from harness.inputs.dataset import Sample
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.export_facts import onnx_class_names
from harness.inputs.preprocess import letterbox, load_image
from harness.inputs.synthetic import write_dataset
from harness.verdict.metrics.coco import CocoMetrics, evaluate
from tools.train_demo import RECIPE, _blocked, _forbid_internet

ROOT = Path(__file__).resolve().parent.parent
MODEL_NAME = "fire_smoke_yolov5_256.onnx"
CARD_NAME = "MODEL_CARD_yolov5.md"
NAMES = ("fire", "smoke")
IMGSZ = 256
OPSET = 17
MAX_ONNX_BYTES = 3 * 1024 * 1024
TRAIN_SEED = 0
BATCH = 16
EVAL_EVERY = 5  # epochs between validations during training (and the last epoch)

# ultralytics/yolov5 models/yolov5n.yaml: the default anchors in input pixels, (w, h) pairs per stride
ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119), (116, 90, 156, 198, 373, 326))
STRIDES = (8, 16, 32)
NA = len(ANCHORS[0]) // 2
NO = len(NAMES) + 5
N_BOXES = NA * sum((IMGSZ // s) ** 2 for s in STRIDES)  # 3 * (32*32 + 16*16 + 8*8) = 4032
DEPTH, WIDTH = 0.33, 0.125  # yolov5n is 0.33, 0.25; half its width keeps the file under 3 MB
# ultralytics/yolov5 models/yolov5n.yaml, backbone then head: (from, number, module, args)
LAYERS: tuple[tuple[int | list[int], int, str, list[object]], ...] = (
    (-1, 1, "Conv", [64, 6, 2, 2]),  # 0-P1/2
    (-1, 1, "Conv", [128, 3, 2]),  # 1-P2/4
    (-1, 3, "C3", [128]),
    (-1, 1, "Conv", [256, 3, 2]),  # 3-P3/8
    (-1, 6, "C3", [256]),
    (-1, 1, "Conv", [512, 3, 2]),  # 5-P4/16
    (-1, 9, "C3", [512]),
    (-1, 1, "Conv", [1024, 3, 2]),  # 7-P5/32
    (-1, 3, "C3", [1024]),
    (-1, 1, "SPPF", [1024, 5]),  # 9
    (-1, 1, "Conv", [512, 1, 1]),
    (-1, 1, "Upsample", []),
    ([-1, 6], 1, "Concat", []),  # cat backbone P4
    (-1, 3, "C3", [512, False]),  # 13
    (-1, 1, "Conv", [256, 1, 1]),
    (-1, 1, "Upsample", []),
    ([-1, 4], 1, "Concat", []),  # cat backbone P3
    (-1, 3, "C3", [256, False]),  # 17 (P3/8-small)
    (-1, 1, "Conv", [256, 3, 2]),
    ([-1, 14], 1, "Concat", []),  # cat head P4
    (-1, 3, "C3", [512, False]),  # 20 (P4/16-medium)
    (-1, 1, "Conv", [512, 3, 2]),
    ([-1, 10], 1, "Concat", []),  # cat head P5
    (-1, 3, "C3", [1024, False]),  # 23 (P5/32-large)
    ([17, 20, 23], 1, "Detect", []),  # Detect(P3, P4, P5)
)
DETECT = len(LAYERS) - 1
METADATA = {"stride": str(max(STRIDES)), "names": str(dict(enumerate(NAMES)))}  # as yolov5 export.py writes it
HEAD_CONVS = tuple(f"/model.{DETECT}/m.{i}/Conv" for i in range(len(STRIDES)))

# ultralytics/yolov5 data/hyps/hyp.scratch-low.yaml; box, cls and obj scaled as train.py scales them
# (box * 3/nl, cls * nc/80 * 3/nl, obj * (imgsz/640)^2 * 3/nl)
HYP = {
    "lrf": 0.01,
    "weight_decay": 0.0005,
    "warmup_epochs": 3.0,
    "box": 0.05,
    "cls": 0.5 * len(NAMES) / 80,
    "obj": 1.0 * (IMGSZ / 640) ** 2,
    "anchor_t": 4.0,
    "hsv_h": 0.015,
    "hsv_s": 0.7,
    "hsv_v": 0.4,
    "translate": 0.1,
    "scale": 0.5,
    "fliplr": 0.5,
}
# the optimizer Ultralytics' "auto" picks for a short run (ultralytics/engine/trainer.py build_optimizer):
# AdamW, lr0 = round(0.002 * 5 / (4 + nc), 6), betas (0.9, 0.999), warmup_bias_lr 0 ("no higher than 0.01 for Adam")
LR0 = round(0.002 * 5 / (4 + len(NAMES)), 6)
BETAS = (0.9, 0.999)
CLOSE_MOSAIC = 0.2  # the last fifth of the epochs trains on single letterboxed frames, as validation sees them
# YOLOv5's val.py thresholds for mAP: conf 0.001, NMS IoU 0.6, at most 300 boxes per image
CONF, IOU, MAX_DET, MAX_NMS = 0.001, 0.6, 300, 3000
SCORE_THRESHOLD = 0.25  # precision and recall are read at this score (YOLOv5 detect.py's default)


# ---------------------------------------------------------------------------------------------- model


def _model_classes():  # torch is imported only here, in the training venv
    import torch
    from torch import nn

    class Conv(nn.Module):
        """ultralytics/yolov5 models/common.py Conv: conv (no bias), BatchNorm, SiLU."""

        def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, p: int | None = None) -> None:
            super().__init__()
            self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p, bias=False)
            self.bn: nn.Module = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)  # yolov5: initialize_weights
            self.act = nn.SiLU(inplace=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.act(self.bn(self.conv(x)))

        def fuse(self) -> None:
            """Fold the BatchNorm into the convolution (yolov5 utils/torch_utils.py fuse_conv_and_bn), as its
            export does (export.py loads with fuse=True)."""
            bn, conv = self.bn, self.conv
            fused = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding)
            scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            with torch.no_grad():
                fused.weight.copy_(conv.weight * scale[:, None, None, None])
                fused.bias.copy_(bn.bias - bn.running_mean * scale)
            self.conv, self.bn = fused, nn.Identity()

    class Bottleneck(nn.Module):
        def __init__(self, c1: int, c2: int, shortcut: bool = True, e: float = 0.5) -> None:
            super().__init__()
            c_ = int(c2 * e)
            self.cv1 = Conv(c1, c_, 1, 1)
            self.cv2 = Conv(c_, c2, 3, 1)
            self.add = shortcut and c1 == c2

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))

    class C3(nn.Module):
        def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = True, e: float = 0.5) -> None:
            super().__init__()
            c_ = int(c2 * e)
            self.cv1 = Conv(c1, c_, 1, 1)
            self.cv2 = Conv(c1, c_, 1, 1)
            self.cv3 = Conv(2 * c_, c2, 1)
            self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut, e=1.0) for _ in range(n)))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))

    class SPPF(nn.Module):
        def __init__(self, c1: int, c2: int, k: int = 5) -> None:
            super().__init__()
            c_ = c1 // 2
            self.cv1 = Conv(c1, c_, 1, 1)
            self.cv2 = Conv(c_ * 4, c2, 1, 1)
            self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.cv1(x)
            y1 = self.m(x)
            y2 = self.m(y1)
            return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))

    class Concat(nn.Module):
        def forward(self, x: list[torch.Tensor]) -> torch.Tensor:
            return torch.cat(x, 1)

    class Detect(nn.Module):
        """ultralytics/yolov5 models/yolo.py Detect (v7.0): one 1x1 conv per stride to na * (5 + nc) channels;
        in inference the export-mode decode, kept as YOLOv5 writes it."""

        export = False

        def __init__(self, nc: int, anchors: Sequence[Sequence[int]], ch: Sequence[int]) -> None:
            super().__init__()
            self.nc, self.no, self.nl, self.na = nc, nc + 5, len(anchors), len(anchors[0]) // 2
            self.grid = [torch.empty(0) for _ in range(self.nl)]
            self.anchor_grid = [torch.empty(0) for _ in range(self.nl)]
            self.register_buffer("anchors", torch.tensor(anchors).float().view(self.nl, -1, 2))
            self.stride = torch.ones(self.nl)  # set by Model from a dry run
            self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)

        def forward(self, x: list[torch.Tensor]):
            z = []
            for i in range(self.nl):
                x[i] = self.m[i](x[i])
                bs, _, ny, nx = x[i].shape  # x(bs,21,32,32) to x(bs,3,32,32,7)
                x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
                if not self.training:
                    if self.grid[i].shape[2:4] != x[i].shape[2:4]:
                        self.grid[i], self.anchor_grid[i] = self._make_grid(nx, ny, i)
                    xy, wh, conf = x[i].sigmoid().split((2, 2, self.nc + 1), 4)
                    xy = (xy * 2 + self.grid[i]) * self.stride[i]
                    wh = (wh * 2) ** 2 * self.anchor_grid[i]
                    y = torch.cat((xy, wh, conf), 4)
                    z.append(y.view(bs, self.na * nx * ny, self.no))
            return x if self.training else (torch.cat(z, 1),) if self.export else (torch.cat(z, 1), x)

        def _make_grid(self, nx: int, ny: int, i: int) -> tuple[torch.Tensor, torch.Tensor]:
            d, t = self.anchors[i].device, self.anchors[i].dtype
            shape = 1, self.na, ny, nx, 2
            y, x = torch.arange(ny, device=d, dtype=t), torch.arange(nx, device=d, dtype=t)
            yv, xv = torch.meshgrid(y, x, indexing="ij")
            grid = torch.stack((xv, yv), 2).expand(shape) - 0.5  # y = 2.0 * x - 0.5
            anchor_grid = (self.anchors[i] * self.stride[i]).view((1, self.na, 1, 1, 2)).expand(shape)
            return grid, anchor_grid

    class Model(nn.Module):
        """LAYERS built as yolov5 models/yolo.py parse_model builds a yaml, run as BaseModel._forward_once."""

        def __init__(self) -> None:
            super().__init__()
            ch, layers, self.froms, save = [3], [], [], set()
            for i, (f, n, kind, args) in enumerate(LAYERS):
                n = max(round(n * DEPTH), 1) if n > 1 else n
                c1 = ch[f] if isinstance(f, int) else 0
                if kind in ("Conv", "C3", "SPPF"):
                    c2 = math.ceil(int(args[0]) * WIDTH / 8) * 8  # yolov5 make_divisible(c2 * gw, 8)
                    if kind == "Conv":
                        module = Conv(c1, c2, *args[1:])
                    elif kind == "C3":
                        module = C3(c1, c2, n, *args[1:])
                    else:
                        module = SPPF(c1, c2, *args[1:])
                elif kind == "Upsample":
                    module, c2 = nn.Upsample(None, 2, "nearest"), c1
                elif kind == "Concat":
                    module, c2 = Concat(), sum(ch[x] for x in f)
                else:
                    module, c2 = Detect(len(NAMES), ANCHORS, [ch[x] for x in f]), 0
                save |= {x % i for x in ([f] if isinstance(f, int) else f) if x != -1}
                layers.append(module)
                self.froms.append(f)
                ch = [c2] if i == 0 else [*ch, c2]
            self.model = nn.Sequential(*layers)
            self.save = save
            detect = self.model[-1]
            detect.stride = torch.tensor([IMGSZ / x.shape[-2] for x in self.forward(torch.zeros(1, 3, IMGSZ, IMGSZ))])
            if tuple(int(s) for s in detect.stride) != STRIDES:
                raise SystemExit(f"model strides {detect.stride.tolist()}, expected {STRIDES}")
            detect.anchors /= detect.stride.view(-1, 1, 1)  # anchors in grid units, as yolov5 keeps them
            # yolov5 _initialize_biases: objectness for 8 objects per 640 image, classes at 0.6 / (nc - 0.99)
            for conv, s in zip(detect.m, detect.stride, strict=True):
                b = conv.bias.view(detect.na, -1)
                b.data[:, 4] += math.log(8 / (640 / s) ** 2)
                b.data[:, 5:] += math.log(0.6 / (detect.nc - 0.999999))

        def forward(self, x: torch.Tensor):
            y: list[torch.Tensor | None] = []
            for i, (module, f) in enumerate(zip(self.model, self.froms, strict=True)):
                if f != -1:
                    x = y[f] if isinstance(f, int) else [x if j == -1 else y[j] for j in f]
                x = module(x)
                y.append(x if i in self.save else None)
            return x

        def fuse(self) -> Model:
            for module in self.modules():
                if isinstance(module, Conv):
                    module.fuse()
            return self

    return Model, Detect


# ---------------------------------------------------------------------------------------------- loss


def _ciou(box1, box2, eps: float = 1e-7):
    """yolov5 utils/metrics.py bbox_iou(xywh=True, CIoU=True) of matching rows."""
    import torch

    (x1, y1, w1, h1), (x2, y2, w2, h2) = box1.chunk(4, -1), box2.chunk(4, -1)
    b1_x1, b1_x2, b1_y1, b1_y2 = x1 - w1 / 2, x1 + w1 / 2, y1 - h1 / 2, y1 + h1 / 2
    b2_x1, b2_x2, b2_y1, b2_y2 = x2 - w2 / 2, x2 + w2 / 2, y2 - h2 / 2, y2 + h2 / 2
    inter = (b1_x2.minimum(b2_x2) - b1_x1.maximum(b2_x1)).clamp(0) * (
        b1_y2.minimum(b2_y2) - b1_y1.maximum(b2_y1)
    ).clamp(0)
    union = w1 * h1 + w2 * h2 - inter + eps
    iou = inter / union
    cw = b1_x2.maximum(b2_x2) - b1_x1.minimum(b2_x1)
    ch = b1_y2.maximum(b2_y2) - b1_y1.minimum(b2_y1)
    c2 = cw**2 + ch**2 + eps
    rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2) ** 2 + (b2_y1 + b2_y2 - b1_y1 - b1_y2) ** 2) / 4
    v = (4 / math.pi**2) * (torch.atan(w2 / (h2 + eps)) - torch.atan(w1 / (h1 + eps))).pow(2)
    with torch.no_grad():
        alpha = v / (v - iou + (1 + eps))
    return iou - (rho2 / c2 + v * alpha)


class ComputeLoss:
    """yolov5 utils/loss.py ComputeLoss: targets matched to anchors whose w/h ratio is under anchor_t, in
    their cell and the two nearest neighbouring cells; CIoU box loss, BCE objectness (target: the IoU) and
    BCE classes; objectness balanced 4.0, 1.0, 0.4 over P3, P4, P5."""

    def __init__(self, detect) -> None:
        import torch
        from torch import nn

        self.bce = nn.BCEWithLogitsLoss()
        self.balance = (4.0, 1.0, 0.4)
        self.na, self.nc, self.nl, self.anchors = detect.na, detect.nc, detect.nl, detect.anchors
        self.off = torch.tensor([[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1]]).float() * 0.5

    def __call__(self, p, targets):
        import torch

        lcls, lbox, lobj = torch.zeros(1), torch.zeros(1), torch.zeros(1)
        tcls, tbox, indices, anchors = self.build_targets(p, targets)
        for i, pi in enumerate(p):
            b, a, gj, gi = indices[i]
            tobj = torch.zeros(pi.shape[:4], dtype=pi.dtype)
            if n := b.shape[0]:
                pxy, pwh, _, pcls = pi[b, a, gj, gi].split((2, 2, 1, self.nc), 1)
                pxy = pxy.sigmoid() * 2 - 0.5
                pwh = (pwh.sigmoid() * 2) ** 2 * anchors[i]
                iou = _ciou(torch.cat((pxy, pwh), 1), tbox[i]).squeeze(-1)
                lbox += (1.0 - iou).mean()
                tobj[b, a, gj, gi] = iou.detach().clamp(0).type(tobj.dtype)
                t = torch.zeros_like(pcls)  # label smoothing 0: positives 1, negatives 0
                t[range(n), tcls[i]] = 1.0
                lcls += self.bce(pcls, t)
            lobj += self.bce(pi[..., 4], tobj) * self.balance[i]
        bs = p[0].shape[0]
        loss = lbox * HYP["box"] + lobj * HYP["obj"] + lcls * HYP["cls"]
        return loss * bs, torch.cat((lbox * HYP["box"], lobj * HYP["obj"], lcls * HYP["cls"])).detach()

    def build_targets(self, p, targets):
        """``targets`` (n, 6): image, class, x, y, w, h (normalised)."""
        import torch

        na, nt = self.na, targets.shape[0]
        tcls, tbox, indices, anch = [], [], [], []
        gain = torch.ones(7)
        ai = torch.arange(na).float().view(na, 1).repeat(1, nt)
        targets = torch.cat((targets.repeat(na, 1, 1), ai[..., None]), 2)
        g = 0.5
        for i in range(self.nl):
            anchors, shape = self.anchors[i], p[i].shape
            gain[2:6] = torch.tensor(shape)[[3, 2, 3, 2]]
            t = targets * gain
            if nt:
                r = t[..., 4:6] / anchors[:, None]
                j = torch.max(r, 1 / r).max(2)[0] < HYP["anchor_t"]
                t = t[j]
                gxy = t[:, 2:4]
                gxi = gain[[2, 3]] - gxy
                left, top = ((gxy % 1 < g) & (gxy > 1)).T  # the neighbouring cells nearest the centre
                right, bottom = ((gxi % 1 < g) & (gxi > 1)).T
                j = torch.stack((torch.ones_like(left), left, top, right, bottom))
                t = t.repeat((5, 1, 1))[j]
                offsets = (torch.zeros_like(gxy)[None] + self.off[:, None])[j]
            else:
                t = targets[0]
                offsets = 0
            bc, gxy, gwh, a = t.chunk(4, 1)
            a, (b, c) = a.long().view(-1), bc.long().T
            gij = (gxy - offsets).long()
            gi, gj = gij.T
            indices.append((b, a, gj.clamp_(0, shape[2] - 1), gi.clamp_(0, shape[3] - 1)))
            tbox.append(torch.cat((gxy - gij, gwh), 1))
            anch.append(anchors[a])
            tcls.append(c)
        return tcls, tbox, indices, anch


# ---------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Frame:
    """A training image resized so its long side is IMGSZ, its boxes (n, 4) pixel xyxy and classes (n,)."""

    image: np.ndarray
    boxes: np.ndarray
    classes: np.ndarray


def _training_frames(samples: Sequence[Sample]) -> list[Frame]:
    import cv2

    frames = []
    for sample in samples:
        image = load_image(sample.path)
        r = IMGSZ / max(image.shape[:2])  # yolov5 LoadImagesAndLabels.load_image
        size = (round(image.shape[1] * r), round(image.shape[0] * r))
        image = cv2.resize(image, size, interpolation=cv2.INTER_LINEAR)
        frames.append(Frame(image, sample.ground_truth.boxes * r, sample.ground_truth.class_ids))
    return frames


def _mosaic(frames: Sequence[Frame], index: int, rng: np.random.Generator) -> Frame:
    """yolov5 utils/dataloaders.py load_mosaic: four frames around a random centre of a 2*IMGSZ canvas."""
    s = IMGSZ
    yc, xc = (int(v) for v in rng.uniform(s // 2, 2 * s - s // 2, 2))
    canvas = np.full((2 * s, 2 * s, 3), 114, np.uint8)
    boxes, classes = [], []
    for i, k in enumerate([index, *rng.integers(0, len(frames), 3)]):
        frame = frames[int(k)]
        h, w = frame.image.shape[:2]
        if i == 0:  # top left
            x1a, y1a, x2a, y2a = max(xc - w, 0), max(yc - h, 0), xc, yc
            x1b, y1b, x2b, y2b = w - (x2a - x1a), h - (y2a - y1a), w, h
        elif i == 1:  # top right
            x1a, y1a, x2a, y2a = xc, max(yc - h, 0), min(xc + w, s * 2), yc
            x1b, y1b, x2b, y2b = 0, h - (y2a - y1a), min(w, x2a - x1a), h
        elif i == 2:  # bottom left
            x1a, y1a, x2a, y2a = max(xc - w, 0), yc, xc, min(s * 2, yc + h)
            x1b, y1b, x2b, y2b = w - (x2a - x1a), 0, w, min(y2a - y1a, h)
        else:  # bottom right
            x1a, y1a, x2a, y2a = xc, yc, min(xc + w, s * 2), min(s * 2, yc + h)
            x1b, y1b, x2b, y2b = 0, 0, min(w, x2a - x1a), min(y2a - y1a, h)
        canvas[y1a:y2a, x1a:x2a] = frame.image[y1b:y2b, x1b:x2b]
        boxes.append(frame.boxes + np.array([x1a - x1b, y1a - y1b] * 2, np.float32))
        classes.append(frame.classes)
    return Frame(canvas, np.clip(np.concatenate(boxes), 0, 2 * s), np.concatenate(classes))


def _letterboxed(frame: Frame) -> Frame:
    h, w = frame.image.shape[:2]
    top, left = (IMGSZ - h) // 2, (IMGSZ - w) // 2
    canvas = np.full((IMGSZ, IMGSZ, 3), 114, np.uint8)
    canvas[top : top + h, left : left + w] = frame.image
    return Frame(canvas, frame.boxes + np.array([left, top] * 2, np.float32), frame.classes)


def _random_affine(frame: Frame, border: int, rng: np.random.Generator) -> Frame:
    """yolov5 utils/augmentations.py random_perspective with degrees, shear and perspective 0: scale and
    translate into an IMGSZ frame; boxes kept as box_candidates keeps them (over 2 px, 10 % of their area)."""
    import cv2

    h0, w0 = frame.image.shape[:2]
    height, width = h0 + 2 * border, w0 + 2 * border
    centre = np.array([[1, 0, -w0 / 2], [0, 1, -h0 / 2], [0, 0, 1]])
    s = rng.uniform(1 - HYP["scale"], 1 + HYP["scale"])
    scale = np.diag([s, s, 1.0])
    tx, ty = rng.uniform(0.5 - HYP["translate"], 0.5 + HYP["translate"], 2)
    translate = np.array([[1, 0, tx * width], [0, 1, ty * height], [0, 0, 1]])
    m = (translate @ scale @ centre)[:2]
    image = cv2.warpAffine(frame.image, m, dsize=(width, height), borderValue=(114, 114, 114))
    corners = frame.boxes[:, [0, 1, 2, 1, 2, 3, 0, 3]].reshape(-1, 2)  # four corners of each box
    moved = (corners @ m[:, :2].T + m[:, 2]).reshape(-1, 8)
    xs, ys = moved[:, 0::2], moved[:, 1::2]
    boxes = np.stack([xs.min(1), ys.min(1), xs.max(1), ys.max(1)], 1)
    boxes = np.clip(boxes, 0, [width, height, width, height]).astype(np.float32)
    w1, h1 = (frame.boxes[:, 2] - frame.boxes[:, 0]) * s, (frame.boxes[:, 3] - frame.boxes[:, 1]) * s
    w2, h2 = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    keep = (w2 > 2) & (h2 > 2) & (w2 * h2 / (w1 * h1 + 1e-16) > 0.1)
    return Frame(image, boxes[keep], frame.classes[keep])


def _colour_and_flip(frame: Frame, rng: np.random.Generator) -> Frame:
    """yolov5 augment_hsv (hue, saturation, value gains) and a left-right flip with probability fliplr."""
    import cv2

    r = rng.uniform(-1, 1, 3) * [HYP["hsv_h"], HYP["hsv_s"], HYP["hsv_v"]] + 1
    hue, sat, val = cv2.split(cv2.cvtColor(frame.image, cv2.COLOR_RGB2HSV))
    x = np.arange(256, dtype=r.dtype)
    luts = ((x * r[0]) % 180, np.clip(x * r[1], 0, 255), np.clip(x * r[2], 0, 255))
    hsv = cv2.merge([cv2.LUT(c, lut.astype(np.uint8)) for c, lut in zip((hue, sat, val), luts, strict=True)])
    image, boxes = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB), frame.boxes
    if rng.random() < HYP["fliplr"]:
        image = np.ascontiguousarray(image[:, ::-1])
        boxes = np.stack([IMGSZ - boxes[:, 2], boxes[:, 1], IMGSZ - boxes[:, 0], boxes[:, 3]], 1)
    return Frame(image, boxes, frame.classes)


def _batch(frames: Sequence[Frame], indices: np.ndarray, mosaic: bool, rng: np.random.Generator):
    """Images (B, 3, IMGSZ, IMGSZ) float 0..1 and targets (n, 6): image, class, x, y, w, h normalised."""
    import torch

    images, targets = [], []
    for b, index in enumerate(indices):
        if mosaic:
            frame = _random_affine(_mosaic(frames, int(index), rng), -IMGSZ // 2, rng)
        else:
            frame = _random_affine(_letterboxed(frames[int(index)]), 0, rng)
        frame = _colour_and_flip(frame, rng)
        images.append(frame.image)
        xywh = np.concatenate(
            [(frame.boxes[:, :2] + frame.boxes[:, 2:]) / 2, frame.boxes[:, 2:] - frame.boxes[:, :2]], 1
        )
        targets.append(np.column_stack([np.full(len(xywh), b), frame.classes, xywh / IMGSZ]))
    x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float() / 255
    return x, torch.from_numpy(np.concatenate(targets).astype(np.float32))


# ---------------------------------------------------------------------------------------------- decode


def _xyxy(xywh: np.ndarray) -> np.ndarray:
    return np.concatenate([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], 1)


def _nms(boxes: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Greedy NMS of ``boxes`` (n, 4) xyxy sorted by descending score: the indices kept."""
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    order, keep = np.arange(len(boxes)), []
    while order.size:
        i, rest = order[0], order[1:]
        keep.append(i)
        lt = np.maximum(boxes[i, :2], boxes[rest, :2])
        rb = np.minimum(boxes[i, 2:], boxes[rest, 2:])
        inter = np.prod(np.clip(rb - lt, 0, None), axis=1)
        order = rest[inter / (areas[i] + areas[rest] - inter + 1e-9) <= iou_threshold]
    return np.array(keep, dtype=np.int64)


def decode(output: np.ndarray) -> Detections:
    """One image's ``output0`` rows (4032, 7) -> detections in input pixels: score objectness x class
    probability for every class over CONF, class-aware NMS (yolov5 utils/general.py non_max_suppression,
    multi_label)."""
    scores = output[:, 4:5] * output[:, 5:]
    anchor, cls = np.nonzero(scores > CONF)
    score = scores[anchor, cls]
    order = np.argsort(-score, kind="stable")[:MAX_NMS]
    anchor, cls, score = anchor[order], cls[order], score[order]
    boxes = _xyxy(output[anchor, :4])
    keep = _nms(boxes + cls[:, None] * (4 * IMGSZ), IOU)[:MAX_DET]  # classes apart: NMS within a class
    return Detections(boxes[keep], score[keep], cls[keep])


def _val_inputs(samples: Sequence[Sample]):
    frames, geometries = [], []
    for sample in samples:
        frame, geometry = letterbox(load_image(sample.path), (IMGSZ, IMGSZ))
        frames.append(frame)
        geometries.append(geometry)
    return np.stack(frames).transpose(0, 3, 1, 2).astype(np.float32) / 255, geometries


def _metrics(outputs: np.ndarray, samples: Sequence[Sample], geometries) -> CocoMetrics:
    predictions = [unletterbox(decode(o), g) for o, g in zip(outputs, geometries, strict=True)]
    return evaluate([s.ground_truth for s in samples], predictions, NAMES, SCORE_THRESHOLD)


def _torch_outputs(model, x: np.ndarray) -> np.ndarray:
    import torch

    model.eval()
    with torch.no_grad():
        return np.concatenate([model(torch.from_numpy(x[i : i + 25]))[0].numpy() for i in range(0, len(x), 25)])


# ---------------------------------------------------------------------------------------------- train


def _train(model, frames: Sequence[Frame], val, epochs: int) -> tuple[object, list[dict[str, float]], float]:
    """YOLOv5's training loop (train.py) on the CPU: warmup, linear LR decay, EMA; the EMA model is returned."""
    import torch

    rng = np.random.default_rng(TRAIN_SEED)
    detect = model.model[-1]
    loss_fn = ComputeLoss(detect)
    decay, no_decay, biases = [], [], []  # yolov5 utils/torch_utils.py smart_optimizer's three groups
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            (biases if name == "bias" else no_decay if isinstance(module, torch.nn.BatchNorm2d) else decay).append(p)
    optimizer = torch.optim.AdamW(biases, lr=LR0, betas=BETAS, weight_decay=0.0)
    optimizer.add_param_group({"params": decay, "weight_decay": HYP["weight_decay"]})
    optimizer.add_param_group({"params": no_decay, "weight_decay": 0.0})
    ema = copy.deepcopy(model).eval()  # yolov5 ModelEMA: decay 0.9999 * (1 - exp(-updates / 2000))
    for p in ema.parameters():
        p.requires_grad_(False)
    per_epoch = math.ceil(len(frames) / BATCH)
    warmup = max(round(HYP["warmup_epochs"] * per_epoch), 100)
    history: list[dict[str, float]] = []
    started, updates = time.perf_counter(), 0
    for epoch in range(epochs):
        model.train()
        lf = (1 - epoch / epochs) * (1.0 - HYP["lrf"]) + HYP["lrf"]
        mosaic = epoch < epochs - round(CLOSE_MOSAIC * epochs)
        order = rng.permutation(len(frames))
        losses = torch.zeros(3)
        for k in range(per_epoch):
            ni = k + per_epoch * epoch
            for group in optimizer.param_groups:
                group["lr"] = LR0 * lf * min(ni / warmup, 1.0)
            images, targets = _batch(frames, order[k * BATCH : (k + 1) * BATCH], mosaic, rng)
            loss, items = loss_fn(model(images), targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
            optimizer.step()
            updates += 1
            d = 0.9999 * (1 - math.exp(-updates / 2000))
            with torch.no_grad():
                msd = model.state_dict()
                for name, v in ema.state_dict().items():
                    if v.dtype.is_floating_point:
                        v.mul_(d).add_(msd[name].detach(), alpha=1 - d)
            losses += items
        row = {"epoch": epoch + 1, "box": float(losses[0] / per_epoch), "obj": float(losses[1] / per_epoch)}
        row["cls"] = float(losses[2] / per_epoch)
        if (epoch + 1) % EVAL_EVERY == 0 or epoch + 1 == epochs:
            metrics = _metrics(_torch_outputs(ema, val[0]), val[2], val[1])
            row |= {"map50": metrics.map50, "map": metrics.map50_95}
        row["time"] = time.perf_counter() - started
        history.append(row)
        print(
            f"epoch {epoch + 1}/{epochs} {row['time']:.0f} s box {row['box']:.4f} obj {row['obj']:.4f} "
            f"cls {row['cls']:.4f}"
            + (f" mAP@0.5 {row['map50']:.3f} mAP@0.5:0.95 {row['map']:.3f}" if "map" in row else ""),
            flush=True,
        )
    return ema, history, time.perf_counter() - started


# ---------------------------------------------------------------------------------------------- export


def _export(model, target: Path) -> None:
    """yolov5 export.py export_onnx: the fused model in eval mode, Detect.export, two dry runs, then the
    TorchScript-based exporter with constant folding (the grids become constants of the graph), and the
    metadata ``stride`` and ``names`` (``str()`` of an int and of a dict)."""
    import onnx
    import torch

    model = copy.deepcopy(model).fuse().eval()
    model.model[-1].export = True
    im = torch.zeros(1, 3, IMGSZ, IMGSZ)
    for _ in range(2):
        model(im)
    torch.onnx.export(
        model,
        im,
        str(target),
        opset_version=OPSET,
        do_constant_folding=True,
        input_names=["images"],
        output_names=["output0"],
        dynamo=False,
    )
    exported = onnx.load(str(target))
    for key, value in METADATA.items():
        meta = exported.metadata_props.add()
        meta.key, meta.value = key, value
    onnx.save(exported, str(target))


def _head_chains(model_proto) -> dict[str, list[str]]:
    """For each head conv: the nodes on a path from it to ``output0``, in graph order, each as its op type,
    its integer attributes, its constant inputs (a value when it has at most 8 elements, else its shape) and
    its name."""
    from onnx import AttributeProto, helper, numpy_helper

    nodes = list(model_proto.graph.node)
    constants = {i.name: numpy_helper.to_array(i) for i in model_proto.graph.initializer}
    constants |= {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in nodes if n.op_type == "Constant"}
    producers = {out: n for n in nodes for out in n.output}
    reaches_output: set[str] = set()  # node names with a path to output0
    frontier = [producers["output0"]]
    while frontier:
        node = frontier.pop()
        if node.name not in reaches_output:
            reaches_output.add(node.name)
            frontier += [producers[i] for i in node.input if i in producers]
    consumers = {n.name: [m for m in nodes if set(m.input) & set(n.output)] for n in nodes}

    def step(node) -> str:
        values = [constants[i] for i in node.input if i in constants]
        shown = [
            f"{a.name}={helper.get_attribute_value(a)}"
            for a in node.attribute
            if a.type in (AttributeProto.INT, AttributeProto.INTS)
        ]
        shown += [str(v.tolist()) if v.size <= 8 else f"constant {list(v.shape)}" for v in values]
        return f"{node.op_type}({', '.join(shown)}) {node.name}" if shown else f"{node.op_type} {node.name}"

    chains = {}
    for conv in HEAD_CONVS:
        below, frontier = set(), [conv]
        while frontier:
            name = frontier.pop()
            if name not in below:
                below.add(name)
                frontier += [m.name for m in consumers[name]]
        chains[conv] = [step(n) for n in nodes if n.name in below & reaches_output and n.name != conv]
    return chains


def _check_onnx(path: Path) -> dict[str, object]:
    import onnx

    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    shape = lambda v: [d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
    inputs, outputs = [(v.name, shape(v)) for v in model.graph.input], [(v.name, shape(v)) for v in model.graph.output]
    if inputs != [("images", [1, 3, IMGSZ, IMGSZ])] or outputs != [("output0", [1, N_BOXES, NO])]:
        raise SystemExit(f"{path}: inputs {inputs}, outputs {outputs}; expected images 1x3x256x256 -> output0 1x4032x7")
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: shape(v) for v in inferred.graph.value_info}
    heads = {}
    for name, stride in zip(HEAD_CONVS, STRIDES, strict=True):
        node = next((n for n in model.graph.node if n.name == name and n.op_type == "Conv"), None)
        expected = [1, NA * NO, IMGSZ // stride, IMGSZ // stride]
        if node is None or shapes.get(node.output[0]) != expected:
            raise SystemExit(f"{path}: head conv {name} with output {expected} not found")
        heads[name] = node.output[0]
    if any(i.data_type != onnx.TensorProto.FLOAT for i in model.graph.initializer if i.dims):
        raise SystemExit(f"{path}: non-float32 weights found; expected a float model")
    size = path.stat().st_size
    if size > MAX_ONNX_BYTES:
        raise SystemExit(f"{path}: {size} bytes, expected at most {MAX_ONNX_BYTES}")
    if onnx_class_names(model, str(path)) != NAMES:  # the harness reads the class names as it reads them
        raise SystemExit(f"{path}: metadata names {onnx_class_names(model, str(path))}, expected {NAMES}")
    ops = sorted({n.op_type for n in model.graph.node})
    return {"opset": model.opset_import[0].version, "bytes": size, "heads": heads, "chains": _head_chains(model)} | {
        "ops": ops,
        "nodes": len(model.graph.node),
    }


def _raw_heads_decoded(raw: Sequence[np.ndarray]) -> np.ndarray:
    """The three raw head maps (1, na * 7, ny, nx) decoded as HailoRT's YOLOv5 op decodes a cell (hailort:
    hailort/libhailort/src/net_flow/ops/yolov5_post_process.cpp decode: x = (2 tx - 0.5 + col) / grid width,
    w = (2 tw)^2 * anchor w / image width, after sigmoid), in input pixels, rows in ``output0``'s order."""
    rows = []
    for maps, anchors in zip(raw, ANCHORS, strict=True):
        _, _, ny, nx = maps.shape
        p = 1 / (1 + np.exp(-maps[0].reshape(NA, NO, ny, nx).transpose(0, 2, 3, 1).astype(np.float64)))
        col, row = np.meshgrid(np.arange(nx), np.arange(ny))
        wh = np.array(anchors, np.float64).reshape(NA, 1, 1, 2)
        xy = (p[..., :2] * 2 - 0.5 + np.stack([col, row], -1)) / [nx, ny] * IMGSZ
        rows.append(np.concatenate([xy, (2 * p[..., 2:4]) ** 2 * wh, p[..., 4:]], -1).reshape(-1, NO))
    return np.concatenate(rows)


def _verify(path: Path, trained, val, heads: dict[str, str]) -> dict[str, object]:
    """onnxruntime against torch on the validation frames, the raw heads against output0, and the mAP."""
    import onnx
    import onnxruntime as ort

    x, geometries, samples = val
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    onnx_out = np.concatenate([session.run(["output0"], {"images": x[i : i + 1]})[0] for i in range(len(x))])
    torch_out = _torch_outputs(trained, x)
    diff = np.abs(onnx_out - torch_out)
    # the same file with the head convs' outputs exposed too
    model = onnx.load(str(path))
    model.graph.output.extend(
        onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None) for t in heads.values()
    )
    cut = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    raw_diff = 0.0
    for i in range(len(x)):
        out = cut.run(["output0", *heads.values()], {"images": x[i : i + 1]})
        raw_diff = max(raw_diff, float(np.abs(_raw_heads_decoded(out[1:]) - out[0][0]).max()))
    metrics = _metrics(onnx_out, samples, geometries)
    shown = []
    for k in range(3):  # the first three labelled frames: each object's best detection over SCORE_THRESHOLD
        truth, found = samples[k].ground_truth, unletterbox(decode(onnx_out[k]), geometries[k])
        sure = found.scores >= SCORE_THRESHOLD
        for box, cls in zip(truth.boxes, truth.class_ids, strict=True):
            mine = sure & (found.class_ids == cls)
            ious = _iou(box, found.boxes[mine])
            if ious.size and ious.max() > 0:
                best = int(ious.argmax())
                hit = (found.boxes[mine][best], float(ious[best]), float(found.scores[mine][best]))
                shown.append((samples[k].image_id, NAMES[cls], box, *hit))
            else:
                shown.append((samples[k].image_id, NAMES[cls], box, None, 0.0, 0.0))
    return {
        "xywh_diff": float(diff[..., :4].max()),
        "score_diff": float(diff[..., 4:].max()),
        "raw_diff": raw_diff,
        "metrics": metrics,
        "shown": shown,
    }


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    lt, rb = np.maximum(box[:2], boxes[:, :2]), np.minimum(box[2:], boxes[:, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=1)
    area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])  # noqa: E731
    return inter / (area(box) + area(boxes) - inter)


# ---------------------------------------------------------------------------------------------- card


def _model_card(facts: dict) -> str:
    r, onnx_facts, check = RECIPE, facts["onnx"], facts["check"]
    metrics: CocoMetrics = check["metrics"]
    per_class = "\n".join(
        f"| {c.name} | {c.n_ground_truth} | {c.ap50:.3f} | {c.ap50_95:.3f} | {c.precision:.3f} | {c.recall:.3f} |"
        for c in metrics.per_class
    )
    epochs = "\n".join(
        f"| {int(h['epoch'])} | {h['time']:.0f} | {h['box']:.4f} | {h['obj']:.4f} | {h['cls']:.4f} | "
        + (f"{h['map50']:.3f} | {h['map']:.3f} |" if "map" in h else "| |")
        for h in facts["history"]
    )
    chains = "\n".join(
        f"- `{conv}` -> `{onnx_facts['heads'][conv]}` [1, 21, {IMGSZ // s}, {IMGSZ // s}], then: "
        + ", ".join(f"`{step.rsplit(' ', 1)[0]}`" for step in onnx_facts["chains"][conv])
        for conv, s in zip(HEAD_CONVS, STRIDES, strict=True)
    )
    anchors = "; ".join(
        f"P{3 + i} stride {s}: {list(a)}" for i, (s, a) in enumerate(zip(STRIDES, ANCHORS, strict=True))
    )
    pixels = lambda box: "[" + ", ".join(f"{float(v):.1f}" for v in box) + "]"  # noqa: E731
    shown = "\n".join(
        f"| {image} | {name} | {pixels(box)} | "
        + (f"{pixels(found)} | {iou:.2f} | {score:.2f} |" if found is not None else "none | | |")
        for image, name, box, found, iou, score in check["shown"]
    )
    epoch_s = np.diff([0.0, *(h["time"] for h in facts["history"])])
    return f"""# Test model: fire/smoke YOLOv5-style (anchor-based), 256x256

`{MODEL_NAME}` is a two-class detector (0 = fire, 1 = smoke) with YOLOv5's anchor-based head, trained
from scratch on the harness's own synthetic data, kept as test data so that the harness's YOLOv5/v7 head
family (anchors per stride, objectness x class, the v5 box formula: what HailoRT's `YOLOv5PostProcessOp`
decodes) is tested on a real export without downloading anything. It is small and briefly trained: it
knows only synthetic flames and smoke and is not a fire detector for real use.

## The file

- a YOLOv5-style ONNX export made by `tools/train_yolov5_demo.py` the way ultralytics/yolov5 `export.py`
  exports (Conv+BatchNorm fused, `Detect.export`, TorchScript-based exporter, constant folding, no NMS,
  static shapes, not simplified), float32 weights (not quantized), opset {onnx_facts["opset"]},
  {onnx_facts["nodes"]} nodes; metadata as YOLOv5's export writes it: `stride` `{METADATA["stride"]}`, `names`
  `{METADATA["names"]}`
- input `images` float32 1x3x{IMGSZ}x{IMGSZ} (RGB, /255, letterboxed with grey 114); output `output0` float32
  1x{N_BOXES}x{NO}: per row x, y, w, h in input pixels, objectness, then the two class probabilities (all
  after sigmoid; a detection's score is objectness x class). Rows: stride 8, then 16, then 32; within a
  stride anchor by anchor, each anchor's cells row by row (YOLOv5's `view(bs, na * nx * ny, no)`)
- the network: YOLOv5n's layout (`models/yolov5n.yaml`) at depth {DEPTH}, width {WIDTH} (channels 8..128),
  {facts["parameters"]:,} parameters
- anchors in input pixels (YOLOv5's defaults), (w, h) pairs: {anchors}
- the three head convolutions (1x1, 3 anchors x 7 = 21 channels, raw logits) and the ops from each to
  `output0` (YOLOv5 `Detect.forward` in export mode: view, permute, sigmoid, split, `xy = (xy * 2 + grid) *
  stride` with grid = meshgrid - 0.5, `wh = (wh * 2) ** 2 * anchor_grid`, cat, view; the grid and
  anchor_grid are constants of the graph):
{chains}
- ops in the graph: {", ".join(onnx_facts["ops"])}
- {onnx_facts["bytes"]:,} bytes, sha256 `{facts["sha256"]}`

## How it was made

```bash
{facts["command"]}
```

- data: `harness.inputs.synthetic`, the same as `python -m harness.inputs.synthetic --out DIR --seed {r.seed}
  --train {r.train} --val {r.val} --calib {r.calib} --offdomain-calib {r.offdomain_calib} --imgsz {r.imgsz}`
  (the demo's set; train on `train`, validate on `val`)
- model: built from scratch (no pretrained weights), YOLOv5's weight init and `_initialize_biases`
- loss: YOLOv5's `ComputeLoss` (utils/loss.py): targets matched to anchors with w/h ratio under
  anchor_t {HYP["anchor_t"]}, in their cell and the two nearest neighbouring cells; CIoU box loss, BCE
  objectness (target: the CIoU) balanced 4.0/1.0/0.4 over P3/P4/P5, BCE classes; gains box
  {HYP["box"]}, obj {HYP["obj"]:.2f}, cls {HYP["cls"]:.4f} (hyp.scratch-low scaled as YOLOv5's train.py scales them)
- training: {facts["epochs"]} epochs, batch {BATCH} (one optimizer step per batch), imgsz {IMGSZ}, seed {TRAIN_SEED},
  AdamW lr0 {LR0} (Ultralytics' "auto" choice for short runs), betas {BETAS}, weight decay
  {HYP["weight_decay"]}, {HYP["warmup_epochs"]:.0f} warmup epochs (at least 100 steps), linear decay to lrf
  {HYP["lrf"]}, EMA of the weights (exported), gradient norm clipped at 10; augmentation as YOLOv5's defaults:
  mosaic, scale {HYP["scale"]}, translate {HYP["translate"]}, HSV ({HYP["hsv_h"]}, {HYP["hsv_s"]}, {HYP["hsv_v"]}),
  left-right flip {HYP["fliplr"]}; mosaic off for the last {round(CLOSE_MOSAIC * facts["epochs"])} epochs
- versions: torch {facts["torch"]}, numpy {facts["numpy"]}, onnx {facts["onnx_version"]}, onnxruntime
  {facts["onnxruntime"]}, OpenCV {facts["cv2"]}, Python {platform.python_version()}
- machine: {facts["cpus"]} CPU cores (shared, nice 10, 2 torch threads), no GPU; training wall time
  {facts["train_s"]:.0f} s ({facts["train_s"] / facts["epochs"]:.1f} s per epoch, validations included; epochs took
  {epoch_s.min():.1f} to {epoch_s.max():.1f} s as other work shared the cores: 1-minute load average
  {facts["load"][0]:.1f} at the start of training, {facts["load"][1]:.1f} at its end)
- network access attempts during the run: {facts["blocked"]}

## Checks of the export

- onnxruntime against the trained torch model (EMA weights, BatchNorm not fused) on the {metrics.n_images}
  validation frames: max abs difference {check["xywh_diff"]:.2e} px in x, y, w, h and {check["score_diff"]:.2e} in
  objectness and class probabilities
- the three head maps read from the same file and decoded in numpy as HailoRT's YOLOv5 op decodes a cell
  (hailort/libhailort/src/net_flow/ops/yolov5_post_process.cpp `decode`) with the anchors above, against
  `output0`: max abs difference {check["raw_diff"]:.2e}

## Accuracy (the ONNX file in onnxruntime on the synthetic val split, {metrics.n_images} images)

Measured by `tools/train_yolov5_demo.py`: frames letterboxed by the harness (`harness.inputs.preprocess`),
`output0` decoded in numpy (score objectness x class probability over {CONF}, class-aware NMS at IoU {IOU},
at most {MAX_DET} boxes), boxes mapped back to the original image, COCO mAP by the harness's
`harness.verdict.metrics.coco.evaluate`; precision and recall at IoU 0.5 for scores >= {SCORE_THRESHOLD}.

| class | objects | mAP@0.5 | mAP@0.5:0.95 | precision | recall |
|---|---|---|---|---|---|
| all | {sum(c.n_ground_truth for c in metrics.per_class)} | {metrics.map50:.3f} | {metrics.map50_95:.3f} | | |
{per_class}

Each labelled object of the first three val frames and its best detection of its class scoring >= {SCORE_THRESHOLD}
(original image pixels, x1, y1, x2, y2):

| image | class | label | detection | IoU | score |
|---|---|---|---|---|---|
{shown}

Per epoch (cumulative seconds since the start of training; losses as YOLOv5 logs them, gains applied;
validation of the EMA weights in torch every {EVAL_EVERY} epochs):

| epoch | time s | box | obj | cls | mAP@0.5 | mAP@0.5:0.95 |
|---|---|---|---|---|---|---|
{epochs}
"""


def training_args(
    argv: list[str] | None, doc: str, script: str, epochs: int, out_help: str
) -> tuple[argparse.Namespace, str]:
    """A trainer's ``--epochs`` (default ``epochs``, at least 1) and ``--out``, described by the first line of
    its ``doc``, and the command that reruns it."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "support" / "data", help=out_help)
    raw = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(raw)
    if args.epochs < 1:
        raise SystemExit(f"--epochs is {args.epochs}, expected at least 1")
    command = shlex.join(["nice", "-n", "10", "/work/train-venv/bin/python", f"tools/{script}", *raw])
    return args, f"PYTHONPATH=. {command}"


def training_data(prefix: str) -> tuple[list[Frame], tuple[object, object, Sequence[Sample]]]:
    """The harness's synthetic set (written to a temporary folder, read, and deleted): its training frames, and
    its validation inputs (the letterboxed images, their geometries and the samples); torch seeded first."""
    import torch

    torch.set_num_threads(2)
    torch.manual_seed(TRAIN_SEED)
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        data_yaml = write_dataset(Path(tmp) / "data", RECIPE)
        frames = _training_frames(load_yolo(data_yaml, "train").samples)
        val_samples = load_yolo(data_yaml, "val").samples
        x, geometries = _val_inputs(val_samples)
    return frames, (x, geometries, val_samples)


def trained(
    model, train, frames, val, epochs: int
) -> tuple[object, list[dict[str, float]], float, tuple[float, float]]:
    """``train(model, frames, val, epochs)``'s EMA weights, history and seconds, and the load before and after."""
    load_before = os.getloadavg()[0]
    ema, history, train_s = train(model, frames, val, epochs)
    return ema, history, train_s, (load_before, os.getloadavg()[0])


def run_facts(command: str, epochs: int, ema, history, train_s: float, target: Path, load) -> dict[str, object]:
    """What a model card records of a run besides the checks: how it was made, on what, and the file's sha256."""
    import cv2
    import onnx
    import onnxruntime
    import torch

    return {
        "command": command,
        "epochs": epochs,
        "history": history,
        "train_s": train_s,
        "parameters": sum(p.numel() for p in ema.parameters()),
        "sha256": hashlib.sha256(target.read_bytes()).hexdigest(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "onnx_version": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "cv2": cv2.__version__,
        "cpus": os.cpu_count(),
        "load": load,
        "blocked": len(_blocked),
    }


def main(argv: list[str] | None = None) -> int:
    args, command = training_args(argv, __doc__, "train_yolov5_demo.py", 40, "folder for the ONNX and card")
    _forbid_internet()
    frames, val = training_data("train_yolov5_demo_")
    model_class, _ = _model_classes()
    ema, history, train_s, load = trained(model_class(), _train, frames, val, args.epochs)
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / MODEL_NAME
    _export(ema, target)
    onnx_facts = _check_onnx(target)
    check = _verify(target, ema, val, onnx_facts["heads"])
    facts = {**run_facts(command, args.epochs, ema, history, train_s, target, load), "onnx": onnx_facts, "check": check}
    (args.out / CARD_NAME).write_text(_model_card(facts))
    metrics = check["metrics"]
    print(f"{target}: {onnx_facts['bytes']:,} bytes, mAP@0.5 {metrics.map50:.3f}, mAP@0.5:0.95 {metrics.map50_95:.3f}")
    print(f"onnxruntime vs torch: {check['xywh_diff']:.2e} px, {check['score_diff']:.2e}", end="; ")
    print(f"raw heads decoded vs output0: {check['raw_diff']:.2e}")
    for conv, chain in onnx_facts["chains"].items():
        print(conv, "->", " | ".join(chain))
    if _blocked:
        print("blocked network attempts:", *_blocked, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
