"""The report in a few lines of Markdown (``report-summary.md``), fit for a pull-request comment or a
chat message: the verdict, what changed, the first cause and the gates that moved, with the full
report's name. Built from the JSON report document alone, as the other renderers are."""

from __future__ import annotations

from typing import Any

from harness.report.history_view import what_changed
from harness.report.markdown import code_span, escape
from harness.report.view import first_cause, num, report_view

MOVED_SHOWN = 10  # gates named in a summary (report.md has them all)
# How far a gate's value must be from its baseline to have moved: a thousandth of it (at least 0.001), so
# that a value measured again and rounded to the baseline's decimals has not.
_MOVED = 0.001


def moved(gate: dict[str, Any]) -> bool:
    """A gate that failed, or whose value is off its baseline by more than :data:`_MOVED` of it."""
    if not gate["passed"]:
        return True
    base, seen = gate["baseline"], gate["observed"]
    return base is not None and seen is not None and abs(seen - base) > _MOVED * max(1.0, abs(base))


def render_summary(document: dict[str, Any], full: str = "report.html") -> str:
    """The summary of ``document``; ``full``: the full report's name, said last."""
    gates = document["gates"]
    view = report_view(document)
    mark = {"pass": "", "weak": "⚠ ", "fail": "❌ "}[view.state]
    counted = f" ({len(gates)} of {len(gates)} gates)" if view.state == "pass" else ""
    lines = [f"**{mark}Accuracy report: {escape(view.verdict)}{counted}**"]
    changed = what_changed(document)
    if changed:
        lines += ["", "What changed:", *(f"- {escape(c)}" for c in changed)]
    cause = first_cause(document)
    if cause:
        lines += ["", f"First cause: {escape(cause)}"]
    shifted = [g for g in gates if moved(g)]
    if shifted:
        lines += ["", "Gates that moved (baseline -> this run):"]
        for g in shifted[:MOVED_SHOWN]:
            mark = "pass" if g["passed"] else "**FAIL**"
            lines.append(f"- {code_span(g['name'])}: {num(g['baseline'])} -> {num(g['observed'])}, {mark}")
        if len(shifted) > MOVED_SHOWN:
            lines.append(f"- and {len(shifted) - MOVED_SHOWN} more (report.md names them all)")
    else:
        lines += ["", "No gate moved from its baseline."]
    lines += ["", f"Full report: {code_span(full)}"]
    return "\n".join(lines) + "\n"
