"""The report as one JSON document: the data the Markdown and HTML reports are rendered from.

Strict JSON (NaN, e.g. the AP of a class without ground truth, is ``null``), 2-space indent,
keys sorted. ``paths[0]`` is the reference path the others were compared with.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.core import defaults
from harness.inputs.dataset import Dataset
from harness.verdict.gates import GateResult, causes_lines, shared_causes
from harness.verdict.golden import Golden, blessed_history
from harness.verdict.history import blessing_document
from harness.verdict.result import PathResult, result_json, strict_json
from harness.verdict.stages import first_degraded_stage, stage_results

# 2: paths[].fps, stages; 3: calibration, baselines, diagnoses, gates[].allowed/text, highest_score; 4: thresholds;
# 5: gates[].weak, baselines[].blessed_sha256/blessed/run_sha256/accepted_weak;
# 6: paths[].kind (float, emulated, device, replayed) and recorded_kind (a replayed path's, else null);
# 7: paths[] are verdict.result.result_json (eval --json's form): n_images added;
# 8: paths[].settings.metric, the mAP protocol (coco or ultralytics);
# 9: gates[].kind/path (its GateId), baselines[].release and baselines[].history (each blessing of the baseline,
#    oldest first, ending with the baseline the gates held: release, created, model_sha256, dataset_manifest,
#    metric, values by gate kind; shown, never gated on)
# 10: baselines[].seal (state: signed, sealed, unverified, unsigned edit, unsealed; detail),
#     baselines[].history_problems (each way the history is not as its blessings wrote it), and
#     paths[].provenance.shared_cache: the shared-cache entries the path used (the demo set, an emulated HEF),
#     each its folder, name, content sha256, state (signed, sealed, unverified, built, rebuilt) and detail
# 11: paths[].provenance.made_from and baselines[].history[].made_from (what each was made from beyond the model
#     and images: HEF, calibration, settings, harness code, HailoRT, DFC, device; harness.verdict.changes.FACTS;
#     absent from a blessing written before it was recorded)
SCHEMA_VERSION = 11


def report_document(
    results: Sequence[PathResult],
    gates: Sequence[GateResult],
    dataset: Dataset,
    worst_layers: Sequence[dict[str, Any]] = (),
    calibration: str | None = None,
    baselines: Mapping[str, tuple[Path, Golden | None]] | None = None,
    thresholds: str | None = None,
    stage_drop: float = defaults.STAGE_DROP,
) -> dict[str, Any]:
    document = {
        "schema_version": SCHEMA_VERSION,
        "passed": all(g.passed for g in gates),
        "calibration": calibration,
        "thresholds": thresholds,
        "baselines": [_baseline(path, file, golden, results) for path, (file, golden) in (baselines or {}).items()],
        "dataset": {
            "root": str(dataset.root),
            "names": list(dataset.names),
            "n_images": len(dataset.samples),
            "n_boxes": dataset.n_boxes,
            "manifest": dataset.manifest,
            "labelled": dataset.labelled,
            "missing_labels": len(dataset.missing_labels),
            "unreadable": [asdict(u) for u in dataset.unreadable],
        },
        "gates": [_gate(g) for g in gates],
        # The failing gates' likely causes, once per group of gates that share them.
        "diagnoses": [{"gates": list(names), "lines": causes_lines(causes)} for names, causes in shared_causes(gates)],
        "paths": [result_json(r) for r in results],
        # Per-tensor SQNR of the emulated HEF against its float graph, worst first (backends/emulator/localisation)
        "worst_layers": [dict(row) for row in worst_layers],
        "stages": _stages(results, stage_drop),
    }
    return strict_json(document)


def _stages(results: Sequence[PathResult], tolerance: float) -> dict[str, Any] | None:
    """mAP@0.5 per stage (float -> fp_optimized -> quantized -> hardware) and the first stage past
    ``tolerance``; None unless the float model and at least one later stage were measured."""
    staged = stage_results(results)
    if "float" not in staged or len(staged) < 2:
        return None
    maps = {stage: r.metrics.map50 for stage, r in staged.items()}
    found = first_degraded_stage(maps, tolerance)
    rows = [
        {"stage": stage, "label": r.label, "map50": maps[stage], "drop": maps["float"] - maps[stage]}
        for stage, r in staged.items()
    ]
    return {
        "tolerance": tolerance,
        "rows": rows,
        "first_degraded": None if found is None else {"stage": found.stage, "message": found.message},
    }


def json_text(document: dict[str, Any]) -> str:
    """``document`` as the report's JSON text (ASCII: a non-UTF-8 file name's bytes are ``\\u`` escapes)."""
    return json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n"


def _gate(gate: GateResult) -> dict[str, Any]:
    return {
        "name": gate.name,
        "kind": gate.id.kind,
        "path": gate.id.path,
        "passed": gate.passed,
        "baseline": gate.baseline,
        "observed": gate.observed,
        "tolerance": gate.tolerance,
        "allowed": gate.allowed,
        "interval": asdict(gate.interval) if gate.interval else None,
        "causes": [asdict(c) for c in gate.causes],
        "text": gate.text,
        "message": gate.message,
        "weak": gate.weak,
    }


def _baseline(path: str, file: Path, golden: Golden | None, results: Sequence[PathResult]) -> dict[str, Any]:
    """A path's baseline file, and where it was read (``golden``, as the gates held it), the export it
    was blessed from beside this run's (a new version of the model is the normal case; the report names both)."""
    entry: dict[str, Any] = {"path": path, "file": str(file), "exists": golden is not None}
    run = next((r.provenance.model_sha256 for r in results if r.path == path), None)
    if golden is not None:
        entry.update(
            blessed_sha256=golden.provenance.model_sha256,
            blessed=golden.provenance.created,
            run_sha256=run,
            accepted_weak=list(golden.accepted_weak),
            release=golden.release,
            history=[blessing_document(b) for b in blessed_history(golden)],
            seal=None if golden.seal is None else {"state": golden.seal.state.value, "detail": golden.seal.detail},
            history_problems=list(golden.history_problems),
        )
    return entry
