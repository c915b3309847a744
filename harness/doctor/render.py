"""The doctor table as text and as JSON-ready data."""

from __future__ import annotations

import math
from typing import Any

from harness.doctor.table import DoctorRow, DoctorTable


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def table_lines(table: DoctorTable) -> list[str]:
    """The doctor table as text: controls, modes, clean runs, and what is wrong, if anything."""
    lines = [
        f"model: {table.model}",
        f"dataset: {table.dataset} ({table.n_images} images)",
        f"Hailo path: {table.hailo_path}",
        *(f"baseline {path}: {source}" for path, source in table.baselines.items()),
        "",
    ]
    header = ("mode", "injected", "gate failed", "top diagnosis", "expected", "correct")
    body = [
        (r.mode, "yes" if r.injected else "no", _yes(r.gate_failed), r.diagnosis or "-", r.expected, _yes(r.correct))
        for r in (*table.controls, *table.rows)
    ]
    widths = [max(len(str(row[i])) for row in (header, *body)) for i in range(len(header))]
    for row in (header, tuple("-" * w for w in widths), *body):
        lines.append("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    lines.append("")
    for r in (*table.controls, *table.rows):
        lines.append(f"{r.mode}: {r.how}")
        if r.gate:
            lines.append(f"    gate: {r.gate.splitlines()[0]}")
        if r.cause:
            lines.append(f"    diagnosis: {r.cause.splitlines()[0]}")
        if r.gap:
            lines.append(f"    known gap: {r.gap}")
    if table.clean_runs:
        lines.append("")
        for c in table.clean_runs:
            iv = c.map50_difference
            difference = (
                "no mAP (no labels)"
                if iv is None
                else f"mAP@0.5 difference {iv.point:+.4f} [{iv.low:+.4f}, {iv.high:+.4f}]"
            )
            lines.append(
                f"clean run seed {c.seed}: {c.n_images} images, agreement {c.matched_share:.1%}, {difference}, "
                f"findings {list(c.findings)}: {'PASS' if c.passed else 'FAIL'}"
            )
    problems = table.problems
    lines.append("")
    lines.extend(f"PROBLEM: {p}" for p in problems)
    ran = [r for r in table.rows if r.injected]
    caught = sum(bool(r.gate_failed) for r in ran)
    named = sum(bool(r.correct) for r in ran)
    lines.append(
        f"{'HEALTHY' if not problems else 'UNHEALTHY'}: {caught} of {len(ran)} injected modes caught by a gate, "
        f"{named} of {len(ran)} named correctly, {len(table.rows) - len(ran)} not run; "
        f"{sum(c.passed for c in table.clean_runs)} of {len(table.clean_runs)} clean runs pass"
    )
    return lines


def table_dict(table: DoctorTable) -> dict[str, Any]:
    """The doctor table as JSON-ready data (NaN as None)."""

    def number(value: float) -> float | None:
        return None if math.isnan(value) else round(value, 6)

    def row(r: DoctorRow) -> dict[str, Any]:
        return {
            "mode": r.mode,
            "expected": r.expected,
            "injected": r.injected,
            "how": r.how,
            "gate_failed": r.gate_failed,
            "gate": r.gate,
            "diagnosis": r.diagnosis,
            "cause": r.cause,
            "correct": r.correct,
            "gap": r.gap,
        }

    return {
        "model": table.model,
        "dataset": table.dataset,
        "n_images": table.n_images,
        "hailo_path": table.hailo_path,
        "baselines": dict(table.baselines),
        "controls": [row(r) for r in table.controls],
        "modes": [row(r) for r in table.rows],
        "clean_runs": [
            {
                "seed": c.seed,
                "n_images": c.n_images,
                "matched_share": number(c.matched_share),
                "map50_difference": None
                if c.map50_difference is None
                else {
                    "point": number(c.map50_difference.point),
                    "low": number(c.map50_difference.low),
                    "high": number(c.map50_difference.high),
                },
                "findings": list(c.findings),
                "passed": c.passed,
            }
            for c in table.clean_runs
        ],
        "problems": table.problems,
    }
