"""Ultralytics' box metric as its sources write it, loop by loop, in numpy (torch replaced by numpy,
nothing vectorised that is not there): ultralytics 8.4.190 ultralytics/engine/validator.py
``match_predictions``, ultralytics/utils/metrics.py ``box_iou``, ``compute_ap`` and ``ap_per_class``,
ultralytics/models/yolo/detect/val.py ``update_metrics`` (one image at a time, detections in
descending confidence)."""

from __future__ import annotations

import numpy as np

IOUV = np.linspace(0.5, 0.95, 10).astype(np.float32)  # torch.linspace(0.5, 0.95, 10)
_AP_X = np.linspace(0, 1, 101)
_TRAPZ = np.trapezoid  # metrics.py: np.trapz before numpy 2


def box_iou(box1, box2, eps=1e-7):
    box1, box2 = box1.astype(np.float32), box2.astype(np.float32)
    iou = np.zeros((len(box1), len(box2)), np.float32)
    for i, a in enumerate(box1):
        for j, b in enumerate(box2):
            w = max(min(a[2], b[2]) - max(a[0], b[0]), np.float32(0))
            h = max(min(a[3], b[3]) - max(a[1], b[1]), np.float32(0))
            inter = w * h
            iou[i, j] = inter / (
                (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter + np.float32(eps)
            )
    return iou


def match_predictions(pred_classes, true_classes, iou):
    correct = np.zeros((pred_classes.shape[0], IOUV.shape[0])).astype(bool)
    correct_class = true_classes[:, None] == pred_classes
    iou = iou * correct_class
    thresholds = IOUV
    matched = np.zeros((iou.shape[0], len(thresholds)), dtype=bool)
    for j in np.flatnonzero((iou >= thresholds.min()).any(0)):
        available = np.where(matched, 0, iou[:, j, None])
        k = available.argmax(0)
        correct[j] = available[k, range(len(thresholds))] >= thresholds
        matched[k, range(len(thresholds))] |= correct[j]
    return correct


def compute_ap(recall, precision):
    mrec = np.concatenate(([0.0], recall, [recall[-1] if len(recall) else 1.0], [1.0]))
    mpre = np.concatenate(([1.0], precision, [0.0], [0.0]))
    mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))
    return _TRAPZ(np.interp(_AP_X, mrec, mpre), _AP_X)


def ap_per_class(tp, conf, pred_cls, target_cls, eps=1e-16):
    i = np.argsort(-conf)
    tp, conf, pred_cls = tp[i], conf[i], pred_cls[i]
    unique_classes, nt = np.unique(target_cls, return_counts=True)
    ap = np.zeros((unique_classes.shape[0], tp.shape[1]))
    for ci, c in enumerate(unique_classes):
        i = pred_cls == c
        n_l = nt[ci]
        n_p = i.sum()
        if n_p == 0 or n_l == 0:
            continue
        fpc = (1 - tp[i]).cumsum(0)
        tpc = tp[i].cumsum(0)
        recall = tpc / (n_l + eps)
        precision = tpc / (tpc + fpc)
        for j in range(tp.shape[1]):
            ap[ci, j] = compute_ap(recall[:, j], precision[:, j])
    return ap, unique_classes


def validate(truths, preds):
    """(mAP50, mAP50-95, {class id: AP per threshold}, correct flags per image) as ``yolo val``
    computes them from these boxes: each image's detections in descending confidence (stable), crowd
    regions left out (Ultralytics' COCO converter drops them)."""
    stats = {"tp": [], "conf": [], "pred_cls": [], "target_cls": []}
    flags = []
    for truth, pred in zip(truths, preds, strict=True):
        counted = ~truth.crowd
        gt_boxes, gt_cls = truth.boxes[counted], truth.class_ids[counted].astype(np.float32)
        order = np.argsort(-pred.scores.astype(np.float32), kind="stable")
        boxes = pred.boxes[order]
        conf = pred.scores.astype(np.float32)[order]
        cls = pred.class_ids[order].astype(np.float32)
        tp = np.zeros((len(conf), len(IOUV)), bool)
        if len(gt_cls) and len(conf):
            tp = match_predictions(cls, gt_cls, box_iou(gt_boxes, boxes))
        flags.append(tp)
        stats["tp"].append(tp)
        stats["conf"].append(conf)
        stats["pred_cls"].append(cls)
        stats["target_cls"].append(gt_cls)
    stats = {k: np.concatenate(v, 0) for k, v in stats.items()}
    ap, classes = ap_per_class(stats["tp"], stats["conf"], stats["pred_cls"], stats["target_cls"])
    if not len(ap):
        return 0.0, 0.0, {}, flags
    return float(ap[:, 0].mean()), float(ap.mean()), {int(c): ap[i] for i, c in enumerate(classes)}, flags
