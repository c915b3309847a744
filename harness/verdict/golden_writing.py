"""A baseline as written: its document (plain JSON, 2-space indent, keys sorted, rounded to
:data:`~harness.verdict.golden.DECIMALS` decimals), sealed, and what a blessing says it changed."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.core import signing
from harness.verdict import history_chain
from harness.verdict.golden import BIN_KEYS, DECIMALS, SCHEMA_VERSION, Golden, GoldenError, is_number


def sealed_document(golden: Golden, key: bytes | None) -> dict[str, Any]:
    """``golden``'s document with its seal: the sha256 of the rest, and its HMAC with ``key``."""
    return signing.with_seal(baseline_document(golden), key)


def baseline_document(golden: Golden) -> dict[str, Any]:
    m = golden.metrics
    return {
        "schema_version": SCHEMA_VERSION,
        "model": golden.model,
        "path": golden.path,
        "dataset": golden.dataset,
        "emulated": golden.emulated,
        "labelled": golden.labelled,
        **({"accepted_weak": list(golden.accepted_weak)} if golden.accepted_weak else {}),
        "release": golden.release,
        "history": [{**history_chain.entry_document(b), "seal": b.seal} for b in golden.history],
        "history_tip": history_chain.tip(golden.history),
        **(
            {
                "agreement": {
                    "matched_share": _number(golden.agreement.matched_share),
                    "score_drift": _number(golden.agreement.score_drift),
                    "score_scale": _scale(golden.agreement.score_scale),
                }
            }
            if golden.agreement is not None
            else {}
        ),
        "metrics": {
            "map50": _number(m.map50),
            "map50_95": _number(m.map50_95),
            "score_threshold": m.score_threshold,
            "n_images": m.n_images,
            "per_class": [
                {
                    "name": c.name,
                    "n_ground_truth": c.n_ground_truth,
                    "n_predictions": c.n_predictions,
                    "ap50": _number(c.ap50),
                    "ap50_95": _number(c.ap50_95),
                    "precision": _number(c.precision),
                    "recall": _number(c.recall),
                }
                for c in m.per_class
            ],
            "box_counts": {
                "mean": _number(golden.box_counts.mean),
                "p95": _number(golden.box_counts.p95),
                "max": golden.box_counts.max,
                "total": golden.box_counts.total,
            },
            "saturation": _number(golden.scores.saturation),
            "score_histogram": {
                **dict(zip(BIN_KEYS, golden.scores.histogram, strict=True)),
                "below_zero": golden.scores.below_zero,
                "above_one": golden.scores.above_one,
            },
        },
        "tolerances": {
            "map50_drop": golden.tolerances.map50_drop,
            "map50_95_drop": golden.tolerances.map50_95_drop,
            "box_count_rel": golden.tolerances.box_count_rel,
            "saturation_abs": golden.tolerances.saturation_abs,
            "agreement_drop": golden.tolerances.agreement_drop,
            "score_drift_rise": golden.tolerances.score_drift_rise,
        },
        "settings": golden.settings.to_dict(),
        "provenance": {
            "model_path": golden.provenance.model_path,
            "model_sha256": golden.provenance.model_sha256,
            "dataset": golden.provenance.dataset,
            "dataset_manifest": golden.provenance.dataset_manifest,
            "harness_version": golden.provenance.harness_version,
            "created": golden.provenance.created,
            "environment": dict(golden.provenance.environment),
            **({"made_from": dict(golden.provenance.made_from)} if golden.provenance.made_from else {}),
        },
    }


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(float(value), DECIMALS)


def _scale(value: float | None) -> float | None:
    """A blessed score scale: null where none was measured."""
    return None if value is None else _number(value)


def dump(document: Mapping[str, Any], fh: Any) -> None:
    json.dump(document, fh, indent=2, sort_keys=True, allow_nan=False)
    fh.write("\n")


_HEADLINE = (
    "metrics.map50",
    "metrics.map50_95",
    "metrics.box_counts.mean",
    "metrics.box_counts.p95",
    "metrics.box_counts.max",
    "metrics.saturation",
    "agreement.matched_share",
    "agreement.score_drift",
    "agreement.score_scale",
)


def created_summary(file: Path, document: Mapping[str, Any]) -> str:
    leaves = _leaves(document)
    lines = [f"created baseline {file}"]
    lines += [f"  {key}: {_show(leaves[key])}" for key in _HEADLINE if key in leaves]
    lines += [f"  {key}: {_show(value)}" for key, value in leaves.items() if key.startswith("tolerances.")]
    return "\n".join(lines)


def changed_summary(
    file: Path, previous: Golden | GoldenError | None, document: Mapping[str, Any], history: Path | None
) -> str:
    head = f"updated baseline {file} (the previous one is kept as {history})"
    if isinstance(previous, GoldenError):
        return f"{head}\n  the previous baseline was unreadable ({previous}); every value is new"
    assert previous is not None
    replaced = baseline_document(previous)
    old, new = _leaves(_unhistoried(replaced)), _leaves(_unhistoried(document))
    ordered = [*(k for k in _HEADLINE if k in new), *sorted((old.keys() | new.keys()) - set(_HEADLINE))]
    changed = [key for key in ordered if old.get(key, "absent") != new.get(key, "absent")]
    lines = [head]
    for key in changed:
        before, after = old.get(key, "absent"), new.get(key, "absent")
        delta = ""
        if is_number(before) and is_number(after):
            delta = f" ({after - before:+.6g})"
        lines.append(f"  {key}: {_show(before)} -> {_show(after)}{delta}")
    lines.append(f"  {len(new) - len(changed)} values unchanged" if changed else "  no value changed")
    if len(document["history"]) > len(replaced["history"]):
        earlier = len(document["history"])
        lines.append(f"  history: {earlier} earlier blessing{'s' * (earlier > 1)}, the replaced one added last")
    return "\n".join(lines)


def _unhistoried(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` without its history and seals (said in a line of its own, not value by value)."""
    return {key: value for key, value in document.items() if key not in ("history", "history_tip", "seal")}


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> leaf value; per-class entries are keyed by class name."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_leaves(value, f"{prefix}{key}."))
        return out
    if isinstance(node, list) and node and all(isinstance(v, dict) and "name" in v for v in node):
        out = {}
        for entry in node:
            out.update(_leaves({k: v for k, v in entry.items() if k != "name"}, f"{prefix}{entry['name']}."))
        return out
    return {prefix[:-1]: node}


def _show(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.6g}" if isinstance(value, float) else str(value)
