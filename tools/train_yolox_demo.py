"""Train a small YOLOX-style (anchor-free) 2-class (fire, smoke) detector from scratch and export it to ONNX.

A one-off development tool, not part of the package: torch lives in a separate venv and is never a
runtime dependency of the harness. Nothing is downloaded: the backbone and neck are YOLOv5n's layout at
width 0.125 as ``tools/train_yolov5_demo.py`` builds it (its C3 blocks are YOLOX's CSPLayer, its PAN the
neck of YOLOX's YOLOPAFPN), the head is YOLOX's decoupled head (Megvii-BaseDetection/YOLOX
yolox/models/yolo_head.py: per stride a 1x1 stem, two 3x3 convs on the class branch and two on the box
branch, ``cls_preds`` (nc), ``reg_preds`` (4) and ``obj_preds`` (1)), trained from scratch with YOLOX's
loss and SimOTA assignment on the harness's synthetic set (the same data, augmentation and frames as the
YOLOv5 demo), exported as YOLOX's tools/export_onnx.py exports with ``decode_in_inference``, and any
attempt to open an internet connection raises.

    PYTHONPATH=. nice -n 10 /work/train-venv/bin/python tools/train_yolox_demo.py

writes ``tests/support/data/fire_smoke_yolox_256.onnx`` (float32, opset 11, input ``images`` 1x3x256x256
RGB / 255, output ``output`` 1x1344x7: x, y, w, h in input pixels, objectness, two class probabilities)
and ``MODEL_CARD_yolox.md``, after checking the export: onnxruntime against torch, the nine raw head maps
decoded as HailoRT's YOLOX op decodes them against ``output``, and the mAP of the ONNX file on the
synthetic validation split through the harness's own metric.
"""

from __future__ import annotations

import copy
import math
import platform
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness.inputs.export_facts import onnx_class_names
from harness.verdict.metrics.coco import CocoMetrics
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
    NAMES,
    SCORE_THRESHOLD,
    TRAIN_SEED,
    WIDTH,
    _batch,
    _metrics,
    _model_classes,
    run_facts,
    trained,
    training_args,
    training_data,
)

ROOT = Path(__file__).resolve().parent.parent
MODEL_NAME = "fire_smoke_yolox_256.onnx"
CARD_NAME = "MODEL_CARD_yolox.md"
OPSET = 11  # YOLOX tools/export_onnx.py: --opset default 11
MAX_ONNX_BYTES = 3 * 1024 * 1024
BATCH = 16
EVAL_EVERY = 10
STRIDES = (8, 16, 32)
NC = len(NAMES)
NO = NC + 5
N_CELLS = sum((IMGSZ // s) ** 2 for s in STRIDES)  # 32*32 + 16*16 + 8*8 = 1344
BACKBONE_OUTPUTS = (17, 20, 23)  # YOLOv5n's P3, P4, P5 layers (models/yolov5n.yaml)
HEAD_WIDTH = int(256 * WIDTH)  # YOLOX YOLOXHead: hidden channels int(256 * width)
PRIOR_PROB = 0.01  # YOLOX YOLOXHead.initialize_biases
# YOLOX yolox/models/yolo_head.py get_assignments / simota_matching / get_losses
CENTER_RADIUS, TOPK_IOU, IOU_COST, REG_WEIGHT = 1.5, 10, 3.0, 5.0
METADATA = {"stride": str(max(STRIDES)), "names": str(dict(enumerate(NAMES)))}  # as the harness reads names
HEAD_CONVS = tuple(
    f"/head/{branch}.{i}/Conv" for i in range(len(STRIDES)) for branch in ("reg_preds", "obj_preds", "cls_preds")
)


# ---------------------------------------------------------------------------------------------- model


def _yolox_class():  # torch is imported only here, in the training venv
    import torch
    from torch import nn

    yolov5_model, _ = _model_classes()

    class YOLOXHead(nn.Module):
        """Megvii-BaseDetection/YOLOX yolox/models/yolo_head.py YOLOXHead (no depthwise): per stride a 1x1
        ``stems`` BaseConv, ``cls_convs`` and ``reg_convs`` of two 3x3 BaseConvs, then ``cls_preds`` (nc),
        ``reg_preds`` (4) on the box branch and ``obj_preds`` (1) beside it. Training: the raw maps per stride;
        inference: ``cat([reg, obj.sigmoid(), cls.sigmoid()])``, flattened, decoded (``decode_outputs``)."""

        def __init__(self, conv: type[nn.Module], in_channels: Sequence[int]) -> None:
            super().__init__()
            w = HEAD_WIDTH
            self.stems = nn.ModuleList(conv(c, w, 1, 1) for c in in_channels)
            self.cls_convs = nn.ModuleList(nn.Sequential(conv(w, w, 3, 1), conv(w, w, 3, 1)) for _ in in_channels)
            self.reg_convs = nn.ModuleList(nn.Sequential(conv(w, w, 3, 1), conv(w, w, 3, 1)) for _ in in_channels)
            self.cls_preds = nn.ModuleList(nn.Conv2d(w, NC, 1) for _ in in_channels)
            self.reg_preds = nn.ModuleList(nn.Conv2d(w, 4, 1) for _ in in_channels)
            self.obj_preds = nn.ModuleList(nn.Conv2d(w, 1, 1) for _ in in_channels)
            for conv_list in (self.cls_preds, self.obj_preds):  # initialize_biases(prior_prob=1e-2)
                for pred in conv_list:
                    nn.init.constant_(pred.bias, -math.log((1 - PRIOR_PROB) / PRIOR_PROB))

        def forward(self, xin: list[torch.Tensor]):
            outputs = []
            for k, x in enumerate(xin):
                x = self.stems[k](x)
                cls_feat, reg_feat = self.cls_convs[k](x), self.reg_convs[k](x)
                cls_output, reg_output = self.cls_preds[k](cls_feat), self.reg_preds[k](reg_feat)
                obj_output = self.obj_preds[k](reg_feat)
                if self.training:
                    outputs.append(torch.cat([reg_output, obj_output, cls_output], 1))
                else:
                    outputs.append(torch.cat([reg_output, obj_output.sigmoid(), cls_output.sigmoid()], 1))
            if self.training:
                return outputs
            hw = [x.shape[-2:] for x in outputs]
            flat = torch.cat([x.flatten(start_dim=2) for x in outputs], dim=2).permute(0, 2, 1)
            return self.decode_outputs(flat, hw)

        @staticmethod
        def decode_outputs(outputs: torch.Tensor, hw) -> torch.Tensor:
            grids, strides = [], []
            for (hsize, wsize), stride in zip(hw, STRIDES, strict=True):
                yv, xv = torch.meshgrid([torch.arange(hsize), torch.arange(wsize)], indexing="ij")
                grid = torch.stack((xv, yv), 2).view(1, -1, 2)
                grids.append(grid)
                strides.append(torch.full((*grid.shape[:2], 1), stride))
            grids_t = torch.cat(grids, dim=1).type(outputs.dtype)
            strides_t = torch.cat(strides, dim=1).type(outputs.dtype)
            return torch.cat(
                [(outputs[..., 0:2] + grids_t) * strides_t, torch.exp(outputs[..., 2:4]) * strides_t, outputs[..., 4:]],
                dim=-1,
            )

    class YOLOX(nn.Module):
        """YOLOX's ``backbone`` then ``head`` (yolox/models/yolox.py). The backbone is YOLOv5n's layout at width
        0.125 up to its P3, P4 and P5 outputs (its Detect layer left out)."""

        def __init__(self) -> None:
            super().__init__()
            self.backbone = yolov5_model()
            layers = self.backbone.model
            in_channels = [layers[i].cv3.conv.out_channels for i in BACKBONE_OUTPUTS]
            conv = type(layers[0])  # yolov5 Conv: YOLOX's BaseConv (conv without bias, BatchNorm, SiLU)
            layers[-1] = nn.Identity()  # the list [P3, P4, P5] the Detect layer took, as it comes
            self.head = YOLOXHead(conv, in_channels)

        def forward(self, x: torch.Tensor):
            return self.head(self.backbone(x))

    return YOLOX


# ---------------------------------------------------------------------------------------------- loss


def _grids():
    """Per cell of every stride (stride ascending, row-major): its (column, row) and its stride."""
    import torch

    grids, strides = [], []
    for s in STRIDES:
        n = IMGSZ // s
        yv, xv = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
        grids.append(torch.stack((xv, yv), 2).view(-1, 2).float())
        strides.append(torch.full((n * n,), float(s)))
    return torch.cat(grids), torch.cat(strides)


def _pairwise_iou(a, b):
    """IoU of every box in ``a`` (n, 4) with every box in ``b`` (m, 4), both cx, cy, w, h (YOLOX bboxes_iou)."""
    import torch

    tl = torch.max(a[:, None, :2] - a[:, None, 2:] / 2, b[:, :2] - b[:, 2:] / 2)
    br = torch.min(a[:, None, :2] + a[:, None, 2:] / 2, b[:, :2] + b[:, 2:] / 2)
    inter = (br - tl).clamp(min=0).prod(2)
    return inter / (a[:, None, 2:].prod(2) + b[:, 2:].prod(1) - inter)


def _iou_loss(pred, target):
    """YOLOX yolox/models/losses.py IOUloss(loss_type="iou"): 1 - IoU^2 of matching rows (cx, cy, w, h)."""
    import torch

    tl = torch.max(pred[:, :2] - pred[:, 2:] / 2, target[:, :2] - target[:, 2:] / 2)
    br = torch.min(pred[:, :2] + pred[:, 2:] / 2, target[:, :2] + target[:, 2:] / 2)
    inter = (br - tl).prod(1) * (tl < br).all(1).float()
    iou = inter / (pred[:, 2:].prod(1) + target[:, 2:].prod(1) - inter + 1e-16)
    return 1 - iou**2


def _simota(boxes, obj, cls, gt_boxes, gt_classes, centres, strides):
    """YOLOX get_assignments for one image: candidates are the cells whose centre lies within 1.5 strides of a
    box's centre (get_geometry_constraint); cost = BCE(sqrt(cls x obj), one-hot) + 3 x -log(IoU), 1e6 off the
    candidate area; each box takes its dynamic k (the sum of its 10 best IoUs, at least 1) cheapest cells, and a
    cell taken twice goes to its cheapest box (simota_matching). Returns the foreground mask over all cells,
    each foreground cell's box index and its IoU with that box."""
    import torch
    import torch.nn.functional as F

    near = ((centres[None] - gt_boxes[:, None, :2]).abs() < CENTER_RADIUS * strides[None, :, None]).all(2)
    fg = near.any(0)
    ious = _pairwise_iou(gt_boxes, boxes[fg])
    iou_cost = -torch.log(ious + 1e-8)
    with torch.no_grad():
        p = (cls[fg].float().sigmoid() * obj[fg].float().sigmoid()[:, None]).sqrt()
        one_hot = F.one_hot(gt_classes, NC).float()
        cls_cost = F.binary_cross_entropy(
            p[None].expand(len(gt_boxes), -1, -1), one_hot[:, None].expand(-1, p.shape[0], -1), reduction="none"
        ).sum(-1)
    cost = cls_cost + IOU_COST * iou_cost + 1e6 * (~near[:, fg]).float()
    matching = torch.zeros_like(cost)
    ks = torch.topk(ious, min(TOPK_IOU, ious.shape[1]), dim=1)[0].sum(1).int().clamp(min=1)
    for g in range(len(gt_boxes)):
        matching[g, torch.topk(cost[g], int(ks[g]), largest=False)[1]] = 1
    twice = matching.sum(0) > 1
    if twice.any():
        matching[:, twice] = 0
        matching[cost[:, twice].argmin(0), twice] = 1
    taken = matching.sum(0) > 0
    fg_cells = fg.nonzero().squeeze(1)[taken]
    mask = torch.zeros_like(fg)
    mask[fg_cells] = True
    matched = matching[:, taken].argmax(0)
    return mask, matched, (matching * ious).sum(0)[taken]


def _loss(outputs, targets, use_l1: bool, grid, strides):
    """YOLOX get_losses: per image SimOTA, then over all foreground cells IoU loss (x 5), BCE objectness over
    every cell, BCE classes (target one-hot x the matched IoU) and, with ``use_l1`` (the no-augmentation
    epochs), L1 on the raw box outputs; each summed and divided by the number of foreground cells."""
    import torch
    import torch.nn.functional as F

    raw = torch.cat([o.flatten(2) for o in outputs], 2).permute(0, 2, 1)  # (B, cells, 5 + nc)
    boxes = torch.cat([(raw[..., :2] + grid) * strides[:, None], torch.exp(raw[..., 2:4]) * strides[:, None]], -1)
    centres = (grid + 0.5) * strides[:, None]
    obj_t = torch.zeros(raw.shape[:2])
    fg_boxes, box_t, cls_p, cls_t, raw_fg, l1_t = [], [], [], [], [], []
    for b in range(raw.shape[0]):
        mine = targets[targets[:, 0] == b]
        if not len(mine):
            continue
        gt_boxes, gt_classes = mine[:, 2:6] * IMGSZ, mine[:, 1].long()
        with torch.no_grad():
            mask, matched, iou = _simota(
                boxes[b].detach(), raw[b, :, 4].detach(), raw[b, :, 5:].detach(), gt_boxes, gt_classes, centres, strides
            )
        obj_t[b, mask] = 1
        fg_boxes.append(boxes[b, mask])
        box_t.append(gt_boxes[matched])
        cls_p.append(raw[b, mask, 5:])
        cls_t.append(F.one_hot(gt_classes[matched], NC).float() * iou[:, None])
        raw_fg.append(raw[b, mask, :4])
        s = strides[mask][:, None]
        target_box = gt_boxes[matched]
        l1_t.append(torch.cat([target_box[:, :2] / s - grid[mask], torch.log(target_box[:, 2:] / s + 1e-8)], 1))
    num_fg = max(sum(len(x) for x in fg_boxes), 1)
    loss_obj = F.binary_cross_entropy_with_logits(raw[..., 4], obj_t, reduction="sum") / num_fg
    if fg_boxes:
        loss_iou = _iou_loss(torch.cat(fg_boxes), torch.cat(box_t)).sum() / num_fg
        loss_cls = F.binary_cross_entropy_with_logits(torch.cat(cls_p), torch.cat(cls_t), reduction="sum") / num_fg
        loss_l1 = (torch.cat(raw_fg) - torch.cat(l1_t)).abs().sum() / num_fg if use_l1 else torch.zeros(())
    else:
        loss_iou = loss_cls = loss_l1 = torch.zeros(())
    total = REG_WEIGHT * loss_iou + loss_obj + loss_cls + loss_l1
    items = torch.stack([REG_WEIGHT * loss_iou, loss_obj, loss_cls, loss_l1]).detach()
    return total, items


# ---------------------------------------------------------------------------------------------- train


def _torch_outputs(model, x: np.ndarray) -> np.ndarray:
    import torch

    model.eval()
    with torch.no_grad():
        return np.concatenate([model(torch.from_numpy(x[i : i + 25])).numpy() for i in range(0, len(x), 25)])


def _train(model, frames, val, epochs: int) -> tuple[object, list[dict[str, float]], float]:
    """The YOLOv5 demo's loop (the same optimizer, schedule, EMA and augmentation) with YOLOX's loss; the
    L1 loss joins in the last epochs, when mosaic is off (YOLOX: ``use_l1`` from the no-augmentation epochs)."""
    import torch

    rng = np.random.default_rng(TRAIN_SEED)
    grid, strides = _grids()
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
        losses = torch.zeros(4)
        for k in range(per_epoch):
            ni = k + per_epoch * epoch
            for group in optimizer.param_groups:
                group["lr"] = LR0 * lf * min(ni / warmup, 1.0)
            images, targets = _batch(frames, order[k * BATCH : (k + 1) * BATCH], mosaic, rng)
            loss, items = _loss(model(images), targets, not mosaic, grid, strides)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
            optimizer.step()
            updates += 1
            d = 0.9999 * (1 - math.exp(-updates / 2000))  # YOLOX ModelEMA: decay 0.9999, ramp 2000 updates
            with torch.no_grad():
                msd = model.state_dict()
                for name, v in ema.state_dict().items():
                    if v.dtype.is_floating_point:
                        v.mul_(d).add_(msd[name].detach(), alpha=1 - d)
            losses += items
        row = {"epoch": epoch + 1} | {
            key: float(losses[i] / per_epoch) for i, key in enumerate(("iou", "obj", "cls", "l1"))
        }
        if (epoch + 1) % EVAL_EVERY == 0 or epoch + 1 == epochs:
            metrics = _metrics(_torch_outputs(ema, val[0]), val[2], val[1])
            row |= {"map50": metrics.map50, "map": metrics.map50_95}
        row["time"] = time.perf_counter() - started
        history.append(row)
        print(
            f"epoch {epoch + 1}/{epochs} {row['time']:.0f} s iou {row['iou']:.3f} obj {row['obj']:.3f} "
            f"cls {row['cls']:.3f} l1 {row['l1']:.3f}"
            + (f" mAP@0.5 {row['map50']:.3f} mAP@0.5:0.95 {row['map']:.3f}" if "map" in row else ""),
            flush=True,
        )
    return ema, history, time.perf_counter() - started


# ---------------------------------------------------------------------------------------------- export


def _export(model, target: Path) -> None:
    """YOLOX tools/export_onnx.py: the model in eval mode with ``decode_in_inference``, a 1x3x256x256 dummy
    input, the TorchScript-based exporter at opset 11 with its defaults (constant folding, BatchNorm folded
    into the convolutions in eval mode), input ``images``, output ``output``, static shapes; its SiLU swap
    (``replace_module(model, nn.SiLU, SiLU)``, x * sigmoid(x)) is what the exporter writes for ``nn.SiLU``
    anyway. Then the metadata ``names`` as the harness reads class names (YOLOX writes none)."""
    import onnx
    import torch

    model = copy.deepcopy(model).eval()
    torch.onnx.export(
        model,
        torch.randn(1, 3, IMGSZ, IMGSZ),
        str(target),
        opset_version=OPSET,
        input_names=["images"],
        output_names=["output"],
        dynamo=False,
    )
    exported = onnx.load(str(target))
    for key, value in METADATA.items():
        meta = exported.metadata_props.add()
        meta.key, meta.value = key, value
    onnx.save(exported, str(target))


def _check_onnx(path: Path) -> dict[str, object]:
    import onnx

    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    shape = lambda v: [d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
    inputs, outputs = [(v.name, shape(v)) for v in model.graph.input], [(v.name, shape(v)) for v in model.graph.output]
    if inputs != [("images", [1, 3, IMGSZ, IMGSZ])] or outputs != [("output", [1, N_CELLS, NO])]:
        raise SystemExit(f"{path}: inputs {inputs}, outputs {outputs}; expected images 1x3x256x256 -> output 1x1344x7")
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: shape(v) for v in inferred.graph.value_info}
    heads = {}
    for name in HEAD_CONVS:
        node = next((n for n in model.graph.node if n.name == name and n.op_type == "Conv"), None)
        if node is None:
            raise SystemExit(f"{path}: head conv {name} not found")
        heads[name] = (node.output[0], shapes.get(node.output[0]))
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
        "heads": heads,
        "ops": sorted({n.op_type for n in model.graph.node}),
        "nodes": len(model.graph.node),
    }


def _raw_heads_decoded(raw: dict[str, np.ndarray]) -> np.ndarray:
    """The nine raw head maps decoded as HailoRT's YOLOX op decodes a cell (hailort:
    hailort/libhailort/src/net_flow/ops/yolox_post_process.cpp ``decode``: x = (tx + col) / grid width,
    w = exp(tw) / grid width; objectness and classes sigmoided here, as the HEF's compiled sigmoid does), in
    input pixels, rows as ``output`` holds them."""
    rows = []
    for i, s in enumerate(STRIDES):
        box, obj, cls = (
            raw[f"/head/{b}.{i}/Conv"][0].astype(np.float64) for b in ("reg_preds", "obj_preds", "cls_preds")
        )
        n = IMGSZ // s
        row, col = np.divmod(np.arange(n * n), n)
        t = box.reshape(4, -1).T
        xy = (t[:, :2] + np.stack([col, row], 1)) / n * IMGSZ
        wh = np.exp(t[:, 2:]) / n * IMGSZ
        scores = 1 / (1 + np.exp(-np.concatenate([obj.reshape(1, -1), cls.reshape(NC, -1)]).T))
        rows.append(np.concatenate([xy, wh, scores], 1))
    return np.concatenate(rows)


def _verify(path: Path, trained, val, heads: dict[str, tuple[str, object]]) -> dict[str, object]:
    """onnxruntime against torch on the validation frames, the raw heads against ``output``, and the mAP."""
    import onnx
    import onnxruntime as ort

    x, geometries, samples = val
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    onnx_out = np.concatenate([session.run(["output"], {"images": x[i : i + 1]})[0] for i in range(len(x))])
    diff = np.abs(onnx_out - _torch_outputs(trained, x))
    model = onnx.load(str(path))
    tensors = [t for t, _ in heads.values()]
    model.graph.output.extend(onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None) for t in tensors)
    cut = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    raw_diff = 0.0
    for i in range(len(x)):
        out = cut.run(["output", *tensors], {"images": x[i : i + 1]})
        decoded = _raw_heads_decoded(dict(zip(heads, out[1:], strict=True)))
        raw_diff = max(raw_diff, float(np.abs(decoded - out[0][0]).max()))
    return {
        "xywh_diff": float(diff[..., :4].max()),
        "score_diff": float(diff[..., 4:].max()),
        "raw_diff": raw_diff,
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
        f"| {int(h['epoch'])} | {h['time']:.0f} | {h['iou']:.3f} | {h['obj']:.3f} | {h['cls']:.3f} | {h['l1']:.3f} | "
        + (f"{h['map50']:.3f} | {h['map']:.3f} |" if "map" in h else "| |")
        for h in facts["history"]
    )
    heads = "\n".join(f"  - `{conv}` -> `{t}` {s}" for conv, (t, s) in onnx_facts["heads"].items())
    no_aug = round(CLOSE_MOSAIC * facts["epochs"])
    return f"""# Test model: fire/smoke YOLOX-style (anchor-free, objectness), 256x256

`{MODEL_NAME}` is a two-class detector (0 = fire, 1 = smoke) with YOLOX's decoupled head, trained from
scratch on the harness's own synthetic data, kept as test data so that the harness's YOLOX head family
(per stride a box map of 4, an objectness map of 1 and a class map of nc; score objectness x class; what
HailoRT's `YOLOXPostProcessOp` decodes) is tested on a real export without downloading anything. It is small
and briefly trained: it knows only synthetic flames and smoke and is not a fire detector for real use.

## The file

- a YOLOX-style ONNX export made by `tools/train_yolox_demo.py` the way Megvii-BaseDetection/YOLOX
  `tools/export_onnx.py` exports with `--decode_in_inference` (eval mode, TorchScript-based exporter at its
  default opset {onnx_facts["opset"]}, constant folding, BatchNorm folded by the exporter, static shapes, no NMS,
  `--no-onnxsim`: not simplified), float32 weights (not quantized), {onnx_facts["nodes"]} nodes; metadata
  `names` `{METADATA["names"]}` and `stride` `{METADATA["stride"]}` (YOLOX writes no metadata; `names` is how
  the harness reads class names)
- input `images` float32 1x3x{IMGSZ}x{IMGSZ}: **RGB scaled to [0, 1] (/255)**, letterboxed centred with grey 114,
  as the harness's ONNX path feeds every export. YOLOX's own models take BGR 0-255 without /255 (its
  `ValTransform`, padded bottom-right); this one was trained on RGB / 255 so that the harness feeds it what it
  expects.
- output `output` float32 1x{N_CELLS}x{NO}: per row x, y, w, h (box centre and size) in input pixels,
  objectness, then the two class probabilities (both after sigmoid; a detection's score is objectness x
  class). Rows: stride 8, then 16, then 32; within a stride the cells row by row (YOLOX's `flatten(start_dim=2)`,
  `cat`, `permute(0, 2, 1)`, then `decode_outputs`: `(xy + grid) * stride`, `exp(wh) * stride`, the grid at
  the cell's corner)
- the network: backbone and neck are YOLOv5n's layout (`models/yolov5n.yaml`, layers 0-23: C3 blocks, SPPF,
  the PAN) at depth 0.33, width {WIDTH}, built by `tools/train_yolov5_demo.py` (YOLOX's CSPDarknet and
  YOLOPAFPN are the same design: CSPLayer = C3; YOLOX has a Focus stem and SPP where this has a 6x6 conv and
  SPPF); the head is YOLOX's `YOLOXHead` (not depthwise) at width {WIDTH}: per stride a 1x1 stem to {HEAD_WIDTH}
  channels, `cls_convs` and `reg_convs` of two 3x3 convs each, `cls_preds` ({NC}), `reg_preds` (4) and
  `obj_preds` (1) 1x1 convs; {facts["parameters"]:,} parameters
- the nine head convolutions (raw logits and raw box values) and their outputs:
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
- model: built from scratch (no pretrained weights), PyTorch's default init, BatchNorm eps 1e-3 and momentum
  0.03 (YOLOX `init_yolo`), the class and objectness biases at prior 0.01 (`initialize_biases`)
- loss: YOLOX's (`yolo_head.py` `get_losses`) with **SimOTA** assignment as YOLOX does it (`get_assignments`,
  `simota_matching`): candidate cells within {CENTER_RADIUS} strides of a box's centre; cost BCE(sqrt(class x
  objectness), one-hot) + {IOU_COST} x -log IoU; each box takes its dynamic k (sum of its {TOPK_IOU} best IoUs) cheapest
  cells, a cell taken twice goes to its cheapest box. IoU loss (1 - IoU^2) x {REG_WEIGHT}, BCE objectness over every
  cell (target: foreground), BCE classes (target: one-hot x matched IoU), L1 on the raw box outputs in the last
  {no_aug} epochs (YOLOX's `use_l1` in its no-augmentation epochs); all divided by the number of foreground cells
- training (the YOLOv5 demo's loop and augmentation, not YOLOX's SGD recipe, so the two test models are
  trained alike in the few minutes this one may take): {facts["epochs"]} epochs, batch {BATCH}, imgsz {IMGSZ},
  seed {TRAIN_SEED}, AdamW lr0 {LR0}, betas {BETAS}, weight decay {HYP["weight_decay"]},
  {HYP["warmup_epochs"]:.0f} warmup epochs (at least 100 steps), linear decay to lrf {HYP["lrf"]}, EMA of
  the weights (exported), gradient norm clipped at 10; augmentation: mosaic, scale {HYP["scale"]},
  translate {HYP["translate"]}, HSV ({HYP["hsv_h"]}, {HYP["hsv_s"]}, {HYP["hsv_v"]}), left-right flip
  {HYP["fliplr"]} (YOLOX's mixup left out); mosaic off and L1 on for the last {no_aug} epochs
- versions: torch {facts["torch"]}, numpy {facts["numpy"]}, onnx {facts["onnx_version"]}, onnxruntime
  {facts["onnxruntime"]}, OpenCV {facts["cv2"]}, Python {platform.python_version()}
- machine: {facts["cpus"]} CPU cores (shared, nice 10, 2 torch threads), no GPU; training wall time
  {facts["train_s"]:.0f} s (1-minute load average {facts["load"][0]:.1f} at the start of training,
  {facts["load"][1]:.1f} at its end)
- network access attempts during the run: {facts["blocked"]}

## Checks of the export

- onnxruntime against the trained torch model (EMA weights, BatchNorm not fused) on the {metrics.n_images}
  validation frames: max abs difference {check["xywh_diff"]:.2e} px in x, y, w, h and {check["score_diff"]:.2e} in
  objectness and class probabilities
- the nine head maps read from the same file and decoded in numpy as HailoRT's YOLOX op decodes a cell
  (hailort/libhailort/src/net_flow/ops/yolox_post_process.cpp `decode`, objectness and classes sigmoided)
  against `output`: max abs difference {check["raw_diff"]:.2e}

## Accuracy (the ONNX file in onnxruntime on the synthetic val split, {metrics.n_images} images)

Measured by `tools/train_yolox_demo.py` as the YOLOv5 demo's card measures (its decode, imported): frames
letterboxed by the harness (`harness.inputs.preprocess`), `output` decoded in numpy (score objectness x class
probability over {CONF}, class-aware NMS at IoU {IOU}, at most {MAX_DET} boxes), boxes mapped back to the
original image, COCO mAP by the harness's `harness.verdict.metrics.coco.evaluate`; precision and recall at
IoU 0.5 for scores >= {SCORE_THRESHOLD}.

| class | objects | mAP@0.5 | mAP@0.5:0.95 | precision | recall |
|---|---|---|---|---|---|
| all | {sum(c.n_ground_truth for c in metrics.per_class)} | {metrics.map50:.3f} | {metrics.map50_95:.3f} | | |
{per_class}

Per epoch (cumulative seconds since the start of training; losses as YOLOX logs them, the IoU loss with its
weight; validation of the EMA weights in torch every {EVAL_EVERY} epochs):

| epoch | time s | iou | obj | cls | l1 | mAP@0.5 | mAP@0.5:0.95 |
|---|---|---|---|---|---|---|---|
{epochs}
"""


def main(argv: list[str] | None = None) -> int:
    args, command = training_args(argv, __doc__, "train_yolox_demo.py", 30, "folder for the ONNX and card")
    _forbid_internet()
    frames, val = training_data("train_yolox_demo_")
    ema, history, train_s, load = trained(_yolox_class()(), _train, frames, val, args.epochs)
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
    print(f"raw heads decoded vs output: {check['raw_diff']:.2e}")
    if _blocked:
        print("blocked network attempts:", *_blocked, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
