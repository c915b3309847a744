"""A calibration check (:class:`~harness.doctor.calibration_check.CalibrationCheck`) in lines and as JSON."""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

from harness.doctor.calibration_check import Accuracy, CalibrationCheck, TensorCover

SCHEMA = 1


def _accuracy(a: Accuracy) -> str:
    return f"mAP@0.5 {a.map50:.4f}  mAP@0.5:0.95 {a.map50_95:.4f}  {a.path}"


def _cover(c: TensorCover) -> str:
    (cl, ch), (el, eh) = c.calibration, c.evaluated
    what = f"{c.role} output" if c.role else "layer"
    ranges = f"calibrated [{cl:.4g}, {ch:.4g}], evaluated [{el:.4g}, {eh:.4g}]"
    return f"  {c.uncovered:6.1%} missed  {what} {c.tensor}: {ranges}"


def check_lines(check: CalibrationCheck) -> list[str]:
    """The verdict first, then the evidence: accuracy, the class outputs' ceiling, the ranges, what to add."""
    head = "FIT" if check.fit else f"UNFIT ({check.verdict})"
    lines = [f"calibration {check.calibration} ({check.images} images): {head}: {check.reason}"]
    lines += [f"finding: {f}" for f in check.findings]
    lines.append("predicted accuracy on the evaluated images:")
    lines += [f"  {_accuracy(a)}" for a in (check.float_model, check.calibrated, check.in_domain)]
    if check.with_additions is not None:
        lines.append(f"  {_accuracy(check.with_additions)}")
    if check.score_ceiling is not None:
        lines.append(
            f"highest score the class outputs can represent: {check.score_ceiling:.3f} (threshold "
            f"{check.score_threshold:g}; {check.capped} of the float model's {check.float_boxes} boxes score above it)"
        )
    lines.append("head outputs, the share of the evaluated images' range the calibration misses:")
    lines += [_cover(c) for c in check.heads]
    if check.worst_layers:
        lines.append("layers missing the most:")
        lines += [_cover(c) for c in check.worst_layers]
    if check.additions:
        lines.append(f"add these {len(check.additions)} images (listed in {os.fspath(check.written[0])}):")
        lines += [f"  {os.fspath(p)}" for p in check.additions]
        lines.append(f"the set with them, to pass as --calibration: {os.fspath(check.written[1])}")
    elif not check.fit:
        lines.append("no image of the pool closes the gap: add images of the task that show the classes")
    lines.append(f"checked in {check.seconds:.1f} s")
    return lines


def check_dict(check: CalibrationCheck) -> dict[str, Any]:
    """The check as plain JSON data (``schema``: this layout's version)."""
    data = asdict(check)
    data["additions"] = [os.fspath(p) for p in check.additions]
    data["written"] = [os.fspath(p) for p in check.written]
    data["fit"] = check.fit
    return {"schema": SCHEMA, **data}
