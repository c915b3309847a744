"""The report's blessed history and what changed along it, from the JSON report document: what this
run and each blessing were made from (:mod:`harness.verdict.changes`), in words; each gate's values
as a sparkline for the gates table; one table per baseline of every blessing with what changed and
its gated values; each gate's trend and table, folded."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from harness.report.blocks import Code, Inline, Num, Para, Section, Spark, Table, Text, Trend
from harness.verdict.changes import change_sentence, change_words, changes, facts

HISTORY_NOTE = (
    "Each gate's metric at every blessing of its baseline, oldest first, then this run's: shown for the "
    "sign-off, never gated on (a gate holds this run to the last blessing, the baseline in force, alone). "
    "A blessing of another export of the model shows its sha256; one of other images or another mAP "
    "protocol than this run's says so."
)
HISTORY_HEADER = ("release", "blessed", "model sha256", "value", "note")
HISTORY_EDITED = "history edited by hand"  # verdict.history_chain.EDITED: the report reads the document alone
# The gated values a blessing keeps (verdict.history.HISTORY_KINDS), in a table's words.
VALUE_HEADERS = {
    "map": "mAP@0.5",
    "map50_95": "mAP@0.5:0.95",
    "score_saturation": "scores >= 0.99",
    "box_count": "boxes/image",
    "path_agreement": "agreement",
}


def blessing_facts(blessing: Mapping[str, Any]) -> dict[str, str]:
    """What a history entry of report.json was made from (model, images and protocol included)."""
    return facts(
        blessing.get("made_from") or {},
        model_sha256=blessing["model_sha256"],
        dataset_manifest=blessing["dataset_manifest"],
        metric=blessing["metric"],
    )


def run_facts(path: Mapping[str, Any]) -> dict[str, str]:
    """What a path of report.json was made from, as :func:`blessing_facts` says it of a blessing."""
    prov = path["provenance"]
    return facts(
        prov.get("made_from") or {},
        model_sha256=prov["model_sha256"],
        dataset_manifest=prov["dataset_manifest"],
        metric=path["settings"].get("metric", "coco"),
    )


def _label(blessing: Mapping[str, Any]) -> str:
    return blessing["release"] or f"blessed {blessing['created'][:10]}"


def _histories(document: Mapping[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(baseline, its path's result) of each path held to a baseline with a history."""
    runs = {p["path"]: p for p in document["paths"]}
    return [(b, runs[b["path"]]) for b in document["baselines"] if b.get("history") and b["path"] in runs]


def history_changes(history: list[dict[str, Any]]) -> list[str]:
    """Each blessing after the first against the one before it, in words (the first: "first blessing")."""
    said = [f"{_label(history[0])}: first blessing"] if history else []
    for before, after in itertools.pairwise(history):
        said.append(change_sentence(_label(after), blessing_facts(before), blessing_facts(after)))
    return said


def what_changed(document: Mapping[str, Any]) -> list[str]:
    """For each path held to a baseline with a history, the path's name first: this run against that
    baseline, and the baseline against the blessing before it, one sentence each where anything
    recorded changed; one sentence where nothing did on any path."""
    said, held = [], []
    for baseline, run in _histories(document):
        history = baseline["history"]
        last = history[-1]
        held.append(_label(last))
        if changes(blessing_facts(last), run_facts(run)):
            now = change_sentence(f"this run against {_label(last)}", blessing_facts(last), run_facts(run))
            said.append(f"{baseline['path']}: {now}")
        if len(history) > 1 and changes(blessing_facts(history[-2]), blessing_facts(last)):
            said.append(f"{baseline['path']}: {history_changes(history)[-1]}")
    if held and not said:
        releases = ", ".join(dict.fromkeys(held))
        said.append(f"nothing recorded changed: this run is made from what its baselines ({releases}) were")
    return said


def sparks(document: Mapping[str, Any]) -> dict[str, Spark]:
    """Each gate held to a baseline with a history: its blessed values and this run's, by gate name."""
    histories = {b["path"]: b["history"] for b, _ in _histories(document)}
    found = {}
    for gate in document["gates"]:
        history = histories.get(gate.get("path"))
        if history and any(gate["kind"] in b["values"] for b in history):
            blessed = tuple(b["values"].get(gate["kind"]) for b in history)
            found[gate["name"]] = Spark(blessed, gate["observed"], gate["passed"])
    return found


def history_sections(document: Mapping[str, Any], num: Any) -> list[Section]:
    """The blessed history: per baseline, one table of every blessing (what changed, its gated values)
    and this run; then each gate's trend and table of release, date, model sha256 and value, folded.
    ``num``: how the report writes a value."""
    held_paths = _histories(document)
    if not held_paths:
        return []
    edited = [
        Para((Text(f"{HISTORY_EDITED} ({b['path']}): {'; '.join(b['history_problems'])}."),))
        for b in document["baselines"]
        if b.get("history_problems")
    ]
    blocks: list[Para | Table] = [Para((Text(HISTORY_NOTE),)), *edited]
    gates = {(g.get("path"), g["kind"]): g for g in document["gates"]}
    for baseline, run in held_paths:
        history = baseline["history"]
        kinds = [k for k in VALUE_HEADERS if any(k in b["values"] for b in history)]
        changed = history_changes(history)
        rows: list[tuple[Inline, ...]] = [
            (
                Text(b["release"] or "-"),
                Text(b["created"][:10]),
                Text(said.partition(": ")[2]),
                *(Num(num(b["values"].get(k))) for k in kinds),
            )
            for b, said in zip(history, changed, strict=True)
        ]
        now = change_words(blessing_facts(history[-1]), run_facts(run))
        observed = [gates.get((baseline["path"], k)) for k in kinds]
        rows.append(
            (
                Text("this run"),
                Text(run["provenance"]["created"][:10]),
                Text(now),
                *(Num(num(g["observed"] if g else None)) for g in observed),
            )
        )
        blocks += [
            Para((Text(f"{baseline['path']}:"),)),
            Table(("release", "blessed", "what changed", *(VALUE_HEADERS[k] for k in kinds)), tuple(rows)),
        ]
    sections = [Section((Text("Blessed history"),), tuple(blocks))]
    return sections + _gate_sections(document, num)


def _gate_sections(document: Mapping[str, Any], num: Any) -> list[Section]:
    """Each gate held to a baseline with a history: its trend and its table, folded."""
    baselines = {b["path"]: b for b, _ in _histories(document)}
    runs = {p["path"]: p for p in document["paths"]}
    sections = []
    for gate in document["gates"]:
        baseline = baselines.get(gate.get("path"))
        if baseline is None or not any(gate["kind"] in b["values"] for b in baseline["history"]):
            continue
        history, run = baseline["history"], runs[gate["path"]]
        rows = [
            _blessing_row(b, gate["kind"], run, document, num, last=i == len(history) - 1)
            for i, b in enumerate(history)
        ]
        prov = run["provenance"]
        rows.append(
            (
                Text("this run"),
                Text(prov["created"]),
                Code(prov["model_sha256"][:12]),
                Num(num(gate["observed"])),
                Text("signed off now: " + ("passed" if gate["passed"] else "FAILED")),
            )
        )
        trend = Trend(
            f"{gate['name']}: blessed values and this run's",
            tuple((b["release"] or b["created"][:10], b["values"].get(gate["kind"])) for b in history),
            ("this run", gate["observed"]),
            gate["passed"],
        )
        blocks = (trend, Table(HISTORY_HEADER, tuple(rows)))
        sections.append(Section((Code(gate["name"]),), blocks, level=3, folded=True))
    return sections


def _blessing_row(
    blessing: dict[str, Any], kind: str, run: dict[str, Any], document: Mapping[str, Any], num: Any, last: bool
) -> tuple[Inline, ...]:
    notes = ["the baseline this run is held to"] if last else []
    if blessing["dataset_manifest"] != document["dataset"]["manifest"]:
        notes.append("other images than this run's")
    metric = run["settings"].get("metric", "coco")
    if blessing["metric"] != metric:
        notes.append(f"mAP protocol {blessing['metric']}, this run's {metric}")
    return (
        Text(blessing["release"] or "-"),
        Text(blessing["created"]),
        Code(blessing["model_sha256"][:12]),
        Num(num(blessing["values"].get(kind))),
        Text("; ".join(notes)),
    )
