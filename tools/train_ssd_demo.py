"""Train a small SSD-style 2-class (fire, smoke) detector from scratch and export it to ONNX with the decode
tail of TensorFlow's Object Detection API.

A one-off development tool, not part of the package: torch lives in a separate venv and is never a
runtime dependency of the harness. Nothing is downloaded: the backbone and neck are YOLOv5n's layout at
width 0.125 as ``tools/train_yolov5_demo.py`` builds it (its P3, P4 and P5 outputs: grids 32, 16 and 8 at a
256 input), the head is SSD's (tensorflow/models: research/object_detection/predictors/
convolutional_box_predictor.py, ``ConvolutionalBoxPredictor``: per layer a 3x3 box convolution of ``4 x na``
channels and a 3x3 class convolution of ``na x (1 + nc)``, the background class first), trained with SSD's
loss (anchors matched to objects by IoU >= 0.5 and each object's best anchor, smooth L1 on the coded offsets,
sigmoid focal loss on the classes with the background) on the harness's synthetic set (the YOLOv5 demo's
data, augmentation, optimizer and schedule), and any attempt to open an internet connection raises.

    PYTHONPATH=. nice -n 10 /work/train-venv/bin/python tools/train_ssd_demo.py

writes ``tests/support/data/fire_smoke_ssd_256.onnx`` (float32, opset 17, input ``images`` 1x3x256x256 RGB
/ 255, outputs ``raw_detection_boxes`` [1, rows, 4]: ``ymin, xmin, ymax, xmax`` as fractions of the input,
and ``raw_detection_scores`` [1, rows, 3]: sigmoids, background first), its SSD config file
``fire_smoke_ssd_256.ssd.json`` (HailoRT's words: ``bbox_decoders``, the scale factors, the background
index) and ``MODEL_CARD_ssd.md``, after checking the export: onnxruntime against torch, the harness's
``find_ssd_heads`` with the config (the decode tail run on its own against the config's coding), and the mAP
of the ONNX file on the synthetic validation split through the harness's own metric.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import platform
import time
from pathlib import Path

import numpy as np

from harness.core.detections import Detections, unletterbox
from harness.core.settings import SsdConfig
from harness.families.ssd.onnx import find_ssd_heads
from harness.inputs.export_facts import onnx_class_names
from harness.verdict.metrics.coco import CocoMetrics, evaluate
from tools.train_demo import RECIPE, _blocked, _forbid_internet
from tools.train_yolov5_demo import (
    BETAS,
    CLOSE_MOSAIC,
    CONF,
    HYP,
    IMGSZ,
    IOU,
    LR0,
    MAX_DET,
    MAX_NMS,
    NAMES,
    SCORE_THRESHOLD,
    TRAIN_SEED,
    WIDTH,
    _batch,
    _model_classes,
    _nms,
    run_facts,
    trained,
    training_args,
    training_data,
)
from tools.train_yolox_demo import BACKBONE_OUTPUTS, BATCH, EVAL_EVERY

ROOT = Path(__file__).resolve().parent.parent
MODEL_NAME = "fire_smoke_ssd_256.onnx"
CONFIG_NAME = "fire_smoke_ssd_256.ssd.json"
CARD_NAME = "MODEL_CARD_ssd.md"
OPSET = 17
MAX_ONNX_BYTES = 3 * 1024 * 1024
NC = len(NAMES) + 1  # the background class first (TF OD API: class 0 is the background)
STRIDES = (8, 16, 32)
GRIDS = tuple(IMGSZ // s for s in STRIDES)
# Per layer (grid 32, 16, 8), each anchor's (width, height) as a fraction of the input: SSD's anchors
# (research/object_detection/anchor_generators/multiple_grid_anchor_generator.py: per layer a scale s_k, aspect
# ratios 1, 2 and 1/2, and one more square anchor of sqrt(s_k * s_k+1)), at scales 0.12, 0.24, 0.45 (then 0.85),
# the synthetic objects being 0.06 to 0.5 of the input wide and 0.5 to 2.8 times as tall as wide
SCALES = (0.12, 0.24, 0.45, 0.85)
ANCHORS = tuple(
    (
        (s, s),
        (round(s / math.sqrt(2), 4), round(s * math.sqrt(2), 4)),
        (round(s * math.sqrt(2), 4), round(s / math.sqrt(2), 4)),
        (round(math.sqrt(s * n), 4),) * 2,
    )
    for s, n in itertools.pairwise(SCALES)
)
NA = tuple(len(a) for a in ANCHORS)
ROWS = sum(n * g * g for n, g in zip(NA, GRIDS, strict=True))
# research/object_detection/box_coders/faster_rcnn_box_coder.py: ty, tx scaled by 10, th, tw by 5
CENTERS_SCALE, DIMENSIONS_SCALE = 10, 5
# research/object_detection/matchers/argmax_matcher.py as the SSD configs set it: matched at IoU >= 0.5,
# unmatched below, and force_match_for_each_row (each object's best anchor)
MATCH_IOU = 0.5
# research/object_detection/core/losses.py: SigmoidFocalClassificationLoss (gamma 2, alpha 0.25),
# WeightedSmoothL1LocalizationLoss (delta 1); both summed and divided by the number of matched anchors
FOCAL_GAMMA, FOCAL_ALPHA, HUBER_DELTA = 2.0, 0.25, 1.0
PRIOR_PROB = 0.01  # RetinaNet's class bias init; the background channel at 1 - 0.01
BOXES, SCORES = "raw_detection_boxes", "raw_detection_scores"
METADATA = {"names": str(dict(enumerate(NAMES)))}  # the classes but the background, as the harness reads them
HEAD_CONVS = tuple(f"/head/{branch}.{i}/Conv" for i in range(len(GRIDS)) for branch in ("box_preds", "cls_preds"))


def config_document() -> dict[str, object]:
    """The SSD config file (HailoRT's words, ``SsdConfig.from_dict``; hailort: libhailort/hef.proto,
    ``ProtoHEFSSDNmsOp``): the export's anchors per layer, its box coder's scale factors, ty, tx, th, tw in
    channels 0 to 3, the background class first."""
    return {
        "centers_scale_factor": CENTERS_SCALE,
        "bbox_dimensions_scale_factor": DIMENSIONS_SCALE,
        "ty": 0,
        "tx": 1,
        "th": 2,
        "tw": 3,
        "background_removal_index": 0,
        "bbox_decoders": [{"w": [a[0] for a in layer], "h": [a[1] for a in layer]} for layer in ANCHORS],
    }


def anchor_table() -> np.ndarray:
    """Per row (layer, cell row by row, anchor), its anchor ``ycenter, xcenter, h, w`` as fractions of the
    input, the cell's centre (grid_anchor_generator.py), float32 ``(ROWS, 4)``."""
    blocks = []
    for grid, layer in zip(GRIDS, ANCHORS, strict=True):
        row, col = np.divmod(np.arange(grid * grid), grid)
        cells = np.repeat(np.stack([(row + 0.5) / grid, (col + 0.5) / grid], 1), len(layer), axis=0)
        sizes = np.tile(np.array([(h, w) for w, h in layer]), (grid * grid, 1))
        blocks.append(np.concatenate([cells, sizes], 1))
    return np.concatenate(blocks).astype(np.float32)


# ---------------------------------------------------------------------------------------------- model


def _ssd_class():  # torch is imported only here, in the training venv
    import torch
    from torch import nn

    yolov5_model, _ = _model_classes()

    class SSDHead(nn.Module):
        """ConvolutionalBoxPredictor (kernel 3, no extra depth): per layer ``box_preds`` (4 x na) and
        ``cls_preds`` (na x (1 + nc)). Training: the raw maps per layer as rows (B, rows, 4) and (B, rows, 1 + nc);
        inference: those rows decoded as the Object Detection API's postprocessor decodes them."""

        def __init__(self, in_channels: list[int]) -> None:
            super().__init__()
            self.box_preds = nn.ModuleList(nn.Conv2d(c, 4 * n, 3, 1, 1) for c, n in zip(in_channels, NA, strict=True))
            self.cls_preds = nn.ModuleList(nn.Conv2d(c, NC * n, 3, 1, 1) for c, n in zip(in_channels, NA, strict=True))
            prior = -math.log((1 - PRIOR_PROB) / PRIOR_PROB)
            for conv in self.cls_preds:
                nn.init.constant_(conv.bias, prior)
                conv.bias.data.view(-1, NC)[:, 0] = -prior  # the background likely everywhere at the start
            self.register_buffer("anchors", torch.from_numpy(anchor_table())[None])

        def forward(self, xin: list[torch.Tensor]):
            box_rows, class_rows = [], []
            for k, x in enumerate(xin):  # box_head.py / class_head.py: the NHWC map reshaped to rows
                b = x.shape[0]
                box_rows.append(self.box_preds[k](x).permute(0, 2, 3, 1).reshape(b, -1, 4))
                class_rows.append(self.cls_preds[k](x).permute(0, 2, 3, 1).reshape(b, -1, NC))
            encodings, logits = torch.cat(box_rows, 1), torch.cat(class_rows, 1)
            if self.training:
                return encodings, logits
            return self.decode(encodings), torch.sigmoid(logits)

        def decode(self, encodings: torch.Tensor) -> torch.Tensor:
            """faster_rcnn_box_coder.py ``_decode``, op for op as tests/support/ssd_exports.py writes it."""
            yca, xca, ha, wa = (self.anchors[..., k : k + 1] for k in range(4))
            ty, tx, th, tw = (encodings[..., k : k + 1] for k in range(4))
            ty, tx = ty / CENTERS_SCALE, tx / CENTERS_SCALE
            th, tw = th / DIMENSIONS_SCALE, tw / DIMENSIONS_SCALE
            w, h = torch.exp(tw) * wa, torch.exp(th) * ha
            ycenter, xcenter = ty * ha + yca, tx * wa + xca
            half_h, half_w = h / 2, w / 2
            return torch.cat([ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w], 2)

    class SSD(nn.Module):
        """YOLOv5n's layout at width 0.125 up to its P3, P4 and P5 outputs (its Detect layer left out) as the
        feature extractor, then the SSD head."""

        def __init__(self) -> None:
            super().__init__()
            self.backbone = yolov5_model()
            layers = self.backbone.model
            in_channels = [layers[i].cv3.conv.out_channels for i in BACKBONE_OUTPUTS]
            layers[-1] = nn.Identity()  # the list [P3, P4, P5] the Detect layer took, as it comes
            self.head = SSDHead(in_channels)

        def forward(self, x: torch.Tensor):
            return self.head(self.backbone(x))

    return SSD


# ---------------------------------------------------------------------------------------------- loss


def _anchor_corners():
    """Every anchor as ``xmin, ymin, xmax, ymax`` fractions of the input, and its ``ycenter, xcenter, h, w``."""
    import torch

    table = torch.from_numpy(anchor_table())
    yc, xc, h, w = table.unbind(1)
    return torch.stack([xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2], 1), table


def _iou(a, b):
    """IoU of every box in ``a`` (n, 4) with every box in ``b`` (m, 4), both xyxy."""
    import torch

    lt, rb = torch.max(a[:, None, :2], b[:, :2]), torch.min(a[:, None, 2:], b[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(2)
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])  # noqa: E731
    return inter / (area(a)[:, None] + area(b) - inter)


def _encode(gt_xywh, table):
    """faster_rcnn_box_coder.py ``_encode``: ``ty, tx, th, tw`` of boxes (cx, cy, w, h) against anchors."""
    import torch

    yca, xca, ha, wa = table.unbind(1)
    return torch.stack(
        [
            CENTERS_SCALE * (gt_xywh[:, 1] - yca) / ha,
            CENTERS_SCALE * (gt_xywh[:, 0] - xca) / wa,
            DIMENSIONS_SCALE * torch.log(gt_xywh[:, 3] / ha),
            DIMENSIONS_SCALE * torch.log(gt_xywh[:, 2] / wa),
        ],
        1,
    )


def _loss(outputs, targets, corners, table):
    """SSD's loss over a batch: per image each anchor matched to the object of its highest IoU where that is
    >= 0.5, and each object to its best anchor (force_match_for_each_row); smooth L1 (delta 1) on the matched
    anchors' coded offsets; sigmoid focal loss over every anchor and class column, the background column's
    target 1 on the unmatched anchors; each summed and divided by the number of matched anchors."""
    import torch
    import torch.nn.functional as F

    encodings, logits = outputs
    class_t = torch.zeros_like(logits)
    class_t[..., 0] = 1
    box_p, box_t = [], []
    for b in range(logits.shape[0]):
        mine = targets[targets[:, 0] == b]
        if not len(mine):
            continue
        xywh = mine[:, 2:6].clamp(min=1e-4)
        xyxy = torch.cat([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], 1)
        ious = _iou(xyxy, corners)  # (objects, anchors)
        best, owner = ious.max(0)
        matched = best >= MATCH_IOU
        forced = ious.argmax(1)
        owner[forced] = torch.arange(len(mine))
        matched[forced] = True
        rows = matched.nonzero().squeeze(1)
        class_t[b, rows, 0] = 0
        class_t[b, rows, 1 + mine[owner[rows], 1].long()] = 1
        box_p.append(encodings[b, rows])
        box_t.append(_encode(xywh[owner[rows]], table[rows]))
    num = max(sum(len(p) for p in box_p), 1)
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, class_t, reduction="none")
    p_t = class_t * p + (1 - class_t) * (1 - p)
    alpha = class_t * FOCAL_ALPHA + (1 - class_t) * (1 - FOCAL_ALPHA)
    loss_cls = (alpha * (1 - p_t) ** FOCAL_GAMMA * ce).sum() / num
    if box_p:
        loss_box = F.smooth_l1_loss(torch.cat(box_p), torch.cat(box_t), beta=HUBER_DELTA, reduction="sum") / num
    else:
        loss_box = torch.zeros(())
    return loss_box + loss_cls, torch.stack([loss_box, loss_cls, torch.tensor(float(num))]).detach()


# ---------------------------------------------------------------------------------------------- decode


def decode(boxes: np.ndarray, scores: np.ndarray) -> Detections:
    """One image's rows (``[ymin, xmin, ymax, xmax]`` fractions, sigmoid scores with the background first) ->
    detections in input pixels: every class but the background over CONF, class-aware NMS (the YOLOv5 demo's
    thresholds)."""
    fg = scores[:, 1:]
    row, cls = np.nonzero(fg > CONF)
    score = fg[row, cls]
    order = np.argsort(-score, kind="stable")[:MAX_NMS]
    row, cls, score = row[order], cls[order], score[order]
    xyxy = boxes[row][:, [1, 0, 3, 2]] * IMGSZ
    keep = _nms(xyxy + cls[:, None] * (4 * IMGSZ), IOU)[:MAX_DET]
    return Detections(xyxy[keep], score[keep], cls[keep])


def _metrics(outputs: tuple[np.ndarray, np.ndarray], samples, geometries) -> CocoMetrics:
    predictions = [unletterbox(decode(b, s), g) for b, s, g in zip(outputs[0], outputs[1], geometries, strict=True)]
    return evaluate([s.ground_truth for s in samples], predictions, NAMES, SCORE_THRESHOLD)


def _torch_outputs(model, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import torch

    model.eval()
    with torch.no_grad():
        parts = [model(torch.from_numpy(x[i : i + 25])) for i in range(0, len(x), 25)]
    return np.concatenate([p[0].numpy() for p in parts]), np.concatenate([p[1].numpy() for p in parts])


# ---------------------------------------------------------------------------------------------- train


def _train(model, frames, val, epochs: int) -> tuple[object, list[dict[str, float]], float]:
    """The YOLOv5 demo's loop (its optimizer groups, warmup, linear decay, EMA and augmentation) with SSD's
    loss."""
    import torch

    rng = np.random.default_rng(TRAIN_SEED)
    corners, table = _anchor_corners()
    decay, no_decay, biases = [], [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            (biases if name == "bias" else no_decay if isinstance(module, torch.nn.BatchNorm2d) else decay).append(p)
    optimizer = torch.optim.AdamW(biases, lr=LR0, betas=BETAS, weight_decay=0.0)
    optimizer.add_param_group({"params": decay, "weight_decay": HYP["weight_decay"]})
    optimizer.add_param_group({"params": no_decay, "weight_decay": 0.0})
    ema = copy.deepcopy(model).eval()
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
            loss, items = _loss(model(images), targets, corners, table)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
            optimizer.step()
            updates += 1
            d = 0.9999 * (1 - math.exp(-updates / 2000))  # yolov5 ModelEMA
            with torch.no_grad():
                msd = model.state_dict()
                for name, v in ema.state_dict().items():
                    if v.dtype.is_floating_point:
                        v.mul_(d).add_(msd[name].detach(), alpha=1 - d)
            losses += items
        row = {"epoch": epoch + 1} | {key: float(losses[i] / per_epoch) for i, key in enumerate(("box", "cls", "pos"))}
        if (epoch + 1) % EVAL_EVERY == 0 or epoch + 1 == epochs:
            metrics = _metrics(_torch_outputs(ema, val[0]), val[2], val[1])
            row |= {"map50": metrics.map50, "map": metrics.map50_95}
        row["time"] = time.perf_counter() - started
        history.append(row)
        print(
            f"epoch {epoch + 1}/{epochs} {row['time']:.0f} s box {row['box']:.3f} cls {row['cls']:.3f} "
            f"matched {row['pos']:.0f}"
            + (f" mAP@0.5 {row['map50']:.3f} mAP@0.5:0.95 {row['map']:.3f}" if "map" in row else ""),
            flush=True,
        )
    return ema, history, time.perf_counter() - started


# ---------------------------------------------------------------------------------------------- export


def _export(model, target: Path) -> None:
    """The model in eval mode (BatchNorm folded by the exporter), a 1x3x256x256 dummy input, the
    TorchScript-based exporter at opset 17, static shapes, outputs named as the Object Detection API's
    exported graphs name the raw detections; then the metadata ``names``."""
    import onnx
    import torch

    model = copy.deepcopy(model).eval()
    torch.onnx.export(
        model,
        torch.randn(1, 3, IMGSZ, IMGSZ),
        str(target),
        opset_version=OPSET,
        input_names=["images"],
        output_names=[BOXES, SCORES],
        dynamo=False,
    )
    exported = onnx.load(str(target))
    for key, value in METADATA.items():
        meta = exported.metadata_props.add()
        meta.key, meta.value = key, value
    onnx.save(exported, str(target))


def _check_onnx(path: Path, config: SsdConfig) -> dict[str, object]:
    import onnx

    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    shape = lambda v: [d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
    inputs, outputs = [(v.name, shape(v)) for v in model.graph.input], [(v.name, shape(v)) for v in model.graph.output]
    expected = [(BOXES, [1, ROWS, 4]), (SCORES, [1, ROWS, NC])]
    if inputs != [("images", [1, 3, IMGSZ, IMGSZ])] or outputs != expected:
        raise SystemExit(f"{path}: inputs {inputs}, outputs {outputs}; expected images 1x3x256x256 -> {expected}")
    heads = find_ssd_heads(model, config)  # the tail run on its own against the config's coding
    if tuple(h.node for h in heads) != HEAD_CONVS:
        raise SystemExit(f"{path}: SSD heads {[h.node for h in heads]}, expected {HEAD_CONVS}")
    if any(i.data_type != onnx.TensorProto.FLOAT for i in model.graph.initializer if i.dims):
        raise SystemExit(f"{path}: non-float32 weights found; expected a float model")
    size = path.stat().st_size
    if size > MAX_ONNX_BYTES:
        raise SystemExit(f"{path}: {size} bytes, expected at most {MAX_ONNX_BYTES}")
    if onnx_class_names(model, str(path)) != NAMES:
        raise SystemExit(f"{path}: metadata names {onnx_class_names(model, str(path))}, expected {NAMES}")
    return {
        "opset": model.opset_import[0].version,
        "bytes": size,
        "heads": [(h.node, h.tensor, h.channels, h.grid) for h in heads],
        "ops": sorted({n.op_type for n in model.graph.node}),
        "nodes": len(model.graph.node),
    }


def _verify(path: Path, trained, val) -> dict[str, object]:
    """onnxruntime against torch on the validation frames, and the mAP of the ONNX file."""
    import onnxruntime as ort

    x, geometries, samples = val
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    runs = [session.run([BOXES, SCORES], {"images": x[i : i + 1]}) for i in range(len(x))]
    onnx_out = (np.concatenate([r[0] for r in runs]), np.concatenate([r[1] for r in runs]))
    torch_out = _torch_outputs(trained, x)
    return {
        "box_diff": float(np.abs(onnx_out[0] - torch_out[0]).max()),
        "score_diff": float(np.abs(onnx_out[1] - torch_out[1]).max()),
        "metrics": _metrics(onnx_out, samples, geometries),
    }


# ---------------------------------------------------------------------------------------------- card


def _model_card(facts: dict) -> str:
    r, onnx_facts, check = RECIPE, facts["onnx"], facts["check"]
    metrics: CocoMetrics = check["metrics"]
    per_class = "\n".join(
        f"| {c.name} | {c.n_ground_truth} | {c.ap50:.3f} | {c.ap50_95:.3f} | {c.precision:.3f} | {c.recall:.3f} |"
        for c in metrics.per_class
    )
    epochs = "\n".join(
        f"| {int(h['epoch'])} | {h['time']:.0f} | {h['box']:.3f} | {h['cls']:.3f} | {h['pos']:.0f} | "
        + (f"{h['map50']:.3f} | {h['map']:.3f} |" if "map" in h else "| |")
        for h in facts["history"]
    )
    heads = "\n".join(
        f"  - `{node}` -> `{t}` {ch} channels, grid {g[0]}x{g[1]}" for node, t, ch, g in onnx_facts["heads"]
    )
    anchors = "\n".join(
        f"  - grid {g}x{g} (stride {s}): " + ", ".join(f"({w}, {h})" for w, h in layer)
        for g, s, layer in zip(GRIDS, STRIDES, ANCHORS, strict=True)
    )
    no_aug = round(CLOSE_MOSAIC * facts["epochs"])
    return f"""# Test model: fire/smoke SSD-style (anchors, background class, TF OD API decode), 256x256

`{MODEL_NAME}` is a two-class detector (fire, smoke, after a background class) with SSD's head, trained from
scratch on the harness's own synthetic data, kept as test data so that the harness's SSD head family (per
layer a box map of 4 x anchors and a class map of anchors x (1 + nc), the anchors and box coding in an SSD
config file: what HailoRT's `SSDPostProcessOp` decodes) is tested on a real export without downloading
anything. It is small and briefly trained: it knows only synthetic flames and smoke and is not a fire
detector for real use.

## The file

- an SSD-style ONNX export made by `tools/train_ssd_demo.py` (eval mode, TorchScript-based exporter, opset
  {onnx_facts["opset"]}, constant folding, BatchNorm folded by the exporter, static shapes, no NMS, not
  simplified), float32 weights (not quantized), {onnx_facts["nodes"]} nodes; metadata `names`
  `{METADATA["names"]}` (the classes but the background, as the harness reads class names)
- input `images` float32 1x3x{IMGSZ}x{IMGSZ}: RGB scaled to [0, 1] (/255), letterboxed centred with grey 114
- outputs, as TensorFlow's Object Detection API decodes (tensorflow/models: research/object_detection/
  box_coders/faster_rcnn_box_coder.py `_decode`, meta_architectures/ssd_meta_arch.py `postprocess`), op for
  op as `tests/support/ssd_exports.py` writes it: `{BOXES}` float32 [1, {ROWS}, 4], per row `ymin, xmin,
  ymax, xmax` as fractions of the input (`ty / 10 * ha + ycenter_a`, `exp(th / 5) * ha`, ...), and
  `{SCORES}` float32 [1, {ROWS}, {NC}], the sigmoid of each class logit, background (0), fire (1), smoke (2).
  Rows: grid 32, then 16, then 8; within a grid cell by cell, row by row, then anchor by anchor (the NHWC
  reshape of box_head.py / class_head.py)
- its SSD config file `{CONFIG_NAME}` (`--ssd-config`; HailoRT's words, `SsdConfig.from_dict`):
  `centers_scale_factor` {CENTERS_SCALE}, `bbox_dimensions_scale_factor` {DIMENSIONS_SCALE}, `ty, tx, th, tw` 0, 1, 2,
  3, `background_removal_index` 0, one `bbox_decoders` entry per layer, largest grid first, each anchor's
  (width, height) as fractions of the input (SSD's anchors: per layer a scale, aspect ratios 1, 2 and 1/2,
  and a square one between this scale and the next; scales {", ".join(map(str, SCALES))}):
{anchors}
- the network: backbone and neck are YOLOv5n's layout (`models/yolov5n.yaml`, layers 0-23: C3 blocks, SPPF,
  the PAN) at depth 0.33, width {WIDTH}, built by `tools/train_yolov5_demo.py`, its P3, P4, P5 outputs the
  feature maps; the head is the Object Detection API's `ConvolutionalBoxPredictor` (kernel 3, no extra
  layers): per layer a 3x3 box convolution of 4 x anchors and a 3x3 class convolution of anchors x {NC}
  channels; {facts["parameters"]:,} parameters
- the six head convolutions (raw box codes and class logits), as `find_ssd_heads` finds them with the config:
{heads}
- ops in the graph: {", ".join(onnx_facts["ops"])}
- {onnx_facts["bytes"]:,} bytes, sha256 `{facts["sha256"]}`

## How it was made

```bash
{facts["command"]}
```

- data: `harness.inputs.synthetic`, the same as `python -m harness.inputs.synthetic --out DIR --seed {r.seed}
  --train {r.train} --val {r.val} --calib {r.calib} --offdomain-calib {r.offdomain_calib} --imgsz {r.imgsz}`
  (the demo's set; train on `train`, validate on `val`)
- model: built from scratch (no pretrained weights), PyTorch's default init, the class biases at prior
  {PRIOR_PROB} (the background's at {1 - PRIOR_PROB})
- loss: SSD's as the Object Detection API's SSD configs set it: each anchor matched to the object of its
  highest IoU where that is >= {MATCH_IOU}, unmatched below, and every object to its best anchor
  (`argmax_matcher.py`, `force_match_for_each_row`); smooth L1 (delta {HUBER_DELTA}) on the matched anchors'
  `ty, tx, th, tw` coded with the [10, 10, 5, 5] box coder (`faster_rcnn_box_coder.py` `_encode`);
  **sigmoid focal loss** (gamma {FOCAL_GAMMA}, alpha {FOCAL_ALPHA}; no hard negative mining) over every anchor and
  all {NC} class columns, the background column's target 1 on unmatched anchors; both summed and divided by
  the number of matched anchors, weight 1 each
- training (the YOLOv5 demo's loop and augmentation, as the YOLOX test model was trained): {facts["epochs"]}
  epochs, batch {BATCH}, imgsz {IMGSZ}, seed {TRAIN_SEED}, AdamW lr0 {LR0}, betas {BETAS}, weight decay
  {HYP["weight_decay"]}, {HYP["warmup_epochs"]:.0f} warmup epochs (at least 100 steps), linear decay to lrf
  {HYP["lrf"]}, EMA of the weights (exported), gradient norm clipped at 10; augmentation: mosaic, scale
  {HYP["scale"]}, translate {HYP["translate"]}, HSV ({HYP["hsv_h"]}, {HYP["hsv_s"]}, {HYP["hsv_v"]}), left-right
  flip {HYP["fliplr"]}; mosaic off for the last {no_aug} epochs
- versions: torch {facts["torch"]}, numpy {facts["numpy"]}, onnx {facts["onnx_version"]}, onnxruntime
  {facts["onnxruntime"]}, OpenCV {facts["cv2"]}, Python {platform.python_version()}
- machine: {facts["cpus"]} CPU cores (shared, nice 10, 2 torch threads), no GPU; training wall time
  {facts["train_s"]:.0f} s (1-minute load average {facts["load"][0]:.1f} at the start of training,
  {facts["load"][1]:.1f} at its end)
- network access attempts during the run: {facts["blocked"]}

## Checks of the export

- onnxruntime against the trained torch model (EMA weights, BatchNorm not fused) on the {metrics.n_images}
  validation frames: max abs difference {check["box_diff"]:.2e} in the box fractions and {check["score_diff"]:.2e}
  in the scores
- `harness.families.ssd.onnx.find_ssd_heads` with `{CONFIG_NAME}`: the six head convolutions found, and the
  decode tail, run on its own at zero codes and at codes 0.1, 0.2, 0.3, 0.4, gives every row the box the
  config's coding gives

## Accuracy (the ONNX file in onnxruntime on the synthetic val split, {metrics.n_images} images)

Measured by `tools/train_ssd_demo.py` as the YOLOv5 demo's card measures: frames letterboxed by the harness
(`harness.inputs.preprocess`), the rows decoded in numpy (every class but the background over {CONF},
class-aware NMS at IoU {IOU}, at most {MAX_DET} boxes), boxes mapped back to the original image, COCO mAP by
the harness's `harness.verdict.metrics.coco.evaluate`; precision and recall at IoU 0.5 for scores >=
{SCORE_THRESHOLD}.

| class | objects | mAP@0.5 | mAP@0.5:0.95 | precision | recall |
|---|---|---|---|---|---|
| all | {sum(c.n_ground_truth for c in metrics.per_class)} | {metrics.map50:.3f} | {metrics.map50_95:.3f} | | |
{per_class}

Per epoch (cumulative seconds since the start of training; losses per batch, matched anchors per batch;
validation of the EMA weights in torch every {EVAL_EVERY} epochs):

| epoch | time s | box | cls | matched | mAP@0.5 | mAP@0.5:0.95 |
|---|---|---|---|---|---|---|
{epochs}
"""


def main(argv: list[str] | None = None) -> int:
    args, command = training_args(argv, __doc__, "train_ssd_demo.py", 40, "folder for the ONNX, config and card")
    _forbid_internet()
    frames, val = training_data("train_ssd_demo_")
    ema, history, train_s, load = trained(_ssd_class()(), _train, frames, val, args.epochs)
    args.out.mkdir(parents=True, exist_ok=True)
    target, config_path = args.out / MODEL_NAME, args.out / CONFIG_NAME
    config_path.write_text(json.dumps(config_document(), indent=2) + "\n")
    config = SsdConfig.from_dict(json.loads(config_path.read_text()), str(config_path))
    _export(ema, target)
    onnx_facts = _check_onnx(target, config)
    check = _verify(target, ema, val)
    facts = {**run_facts(command, args.epochs, ema, history, train_s, target, load), "onnx": onnx_facts, "check": check}
    (args.out / CARD_NAME).write_text(_model_card(facts))
    metrics = check["metrics"]
    print(f"{target}: {onnx_facts['bytes']:,} bytes, mAP@0.5 {metrics.map50:.3f}, mAP@0.5:0.95 {metrics.map50_95:.3f}")
    print(f"onnxruntime vs torch: boxes {check['box_diff']:.2e}, scores {check['score_diff']:.2e}")
    if _blocked:
        print("blocked network attempts:", *_blocked, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
