"""The report's view model: its sections, built once from the JSON report document, in words and
numbers; the Markdown and HTML renderers each render it section by section and decide nothing else.

Text is typed by where it came from: :class:`Text` (words, the run's or from outside it: names, paths,
messages) is always escaped by a renderer, :class:`Code` is shown as code (a gate's name, a digest, a
file), :class:`Pre` keeps a message's lines. A renderer never sees a raw string it could read as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from harness.core import defaults
from harness.core.path_names import PathKind
from harness.core.settings import MetricProtocol
from harness.inputs.demo import SHIPPED_GOLDEN
from harness.report.blocks import (
    Block,
    Code,
    Facts,
    Figures,
    Inline,
    Mark,
    Num,
    Para,
    PathName,
    Pre,
    ReportView,
    Section,
    Spark,
    Table,
    Text,
)
from harness.report.history_view import HISTORY_EDITED, history_sections, sparks, what_changed


def report_view(document: dict[str, Any]) -> ReportView:
    """The sections of the report of ``document`` (:func:`harness.report.json_report.report_document`):
    first what a reviewer decides on (the verdict, what changed, the first cause, the gates with
    their trends), then what was run, the history, the paths, the pictures and the provenance."""
    dataset, gates, paths = document["dataset"], document["gates"], document["paths"]
    failed = [g for g in gates if not g["passed"]]
    state: Literal["pass", "weak", "fail"] = (
        "fail" if failed or not document["passed"] else "weak" if any(g["weak"] for g in gates) else "pass"
    )
    passed = "WEAK PASS" if state == "weak" else "PASSED"  # a pass on baselines that cannot fail is not a pass
    verdict = (passed if document["passed"] else f"FAILED ({len(failed)} of {len(gates)} gates)") + weak_note(gates)
    changed = what_changed(document)
    decision: list[Block] = [Para((Text("What changed: " + " ".join(f"{c}." for c in changed)),))] if changed else []
    cause = first_cause(document)
    if cause:
        decision.append(Para((Text(f"First cause: {cause}"),)))
    run = (
        Para((Text(f"Paths: {', '.join(p['label'] for p in paths)}"),)),
        Para(
            (
                Text(
                    f"Dataset {dataset['root']}: {dataset['n_images']} images, {dataset['n_boxes']} labelled "
                    f"boxes, classes {', '.join(dataset['names'])}; manifest "
                ),
                Code(dataset["manifest"]),
            )
        ),
        *_inputs(document),
    )
    sections = [Section((Text("Gates"),), (_gate_table(gates, sparks(document)),), lead=True)]
    sections += (
        [
            Section((Text("Failures"),), ()),
            *(Section((Code(g["name"]),), (Pre(tuple(g["text"].splitlines())),), level=3) for g in failed),
        ]
        if failed
        else []
    )
    if document["diagnoses"]:
        blocks: list[Block] = []
        for d in document["diagnoses"]:
            names = [part for n in d["gates"] for part in (Code(n), Text(", "))][:-1]
            blocks += [Para((Text("Of "), *names, Text(":"))), Pre(tuple(d["lines"]))]
        sections.append(Section((Text("Likely causes"),), tuple(blocks)))
    sections.append(Section((Text("What was run"),), run))
    sections += history_sections(document, num)
    if document["stages"]:
        stages = document["stages"]
        rows = tuple(tuple(Text(cell) for cell in row) for row in stage_rows(stages))
        sections.append(
            Section(
                (Text("Stages (float -> fp_optimized -> quantized -> hardware)"),),
                (Para((Text(stage_verdict(stages)),)), Table(STAGE_HEADER, rows)),
            )
        )
    if document["worst_layers"]:
        rows = tuple(tuple(Text(cell) for cell in row) for row in layer_rows(document["worst_layers"]))
        sections.append(
            Section(
                (Text("Worst layers (emulated HEF vs float graph, per-tensor SQNR)"),),
                (Para((Text(LAYER_NOTE),)), Table(LAYER_HEADER, rows)),
            )
        )
    sections += [
        Section((Text("Paths"),), (_path_table(paths), *(Para((Text(note),)) for note in cap_notes(paths)))),
        Section((Text("Per class"),), (_class_table(paths),), folded=True),
        Section((Text("Plots"),), (Figures("charts"),)),
        Section((Text("Images where the paths disagree most"),), (Figures("images"),), folded=True),
        Section((Text("Provenance and environment"),), tuple(_facts(p) for p in paths), folded=True),
    ]
    return ReportView(document["passed"], verdict, tuple(decision), tuple(sections), state)


def first_cause(document: dict[str, Any]) -> str | None:
    """The most specific likely cause of the first failing gate that has one, with its fix, in one
    line; None where no gate failed or no known cause matched."""
    for gate in document["gates"]:
        if not gate["passed"] and gate["causes"]:
            cause = gate["causes"][0]
            return f"{cause['cause']} (fix: {cause['fix']})"
    return None


# The gates table's columns a narrow screen keeps: gate, result, observed value and trend.
_NARROW_GATES = (0, 1, 3, 6)


def _gate_table(gates: Sequence[dict[str, Any]], trends: dict[str, Spark]) -> Table:
    header = ("gate", "result", "baseline", "observed", "allowed", "bootstrap interval (vs reference)")
    return Table(
        (*header, "trend (blessed, then this run)") if trends else header,
        tuple(
            (
                Code(g["name"], short=" ".join(filter(None, (g["kind"], g["path"])))),
                Mark(g["passed"]),
                Num(num(g["baseline"])),
                Num(num(g["observed"])),
                Num(g["allowed"] or "-"),
                Num(interval(g["interval"])),
                *((trends.get(g["name"]) or Text("-"),) if trends else ()),
            )
            for g in gates
        ),
        _NARROW_GATES if trends else _NARROW_GATES[:-1],
    )


def _path_table(paths: Sequence[dict[str, Any]]) -> Table:
    header = ("path", "runs on", "mAP@0.5", "mAP@0.5:0.95", "boxes", "boxes/image mean", "p95", "max")
    return Table(
        (*header, "scores >= 0.99", "highest score", "frames/s"),
        tuple(
            (
                path_name(p),
                Text(path_kind(p)),
                Num(num(p["metrics"]["map50"])),
                Num(num(p["metrics"]["map50_95"])),
                Num(str(p["box_counts"]["total"])),
                Num(num(p["box_counts"]["mean"], 2)),
                Num(num(p["box_counts"]["p95"], 1)),
                Num(str(p["box_counts"]["max"])),
                Num(f"{p['scores']['saturation']:.1%}"),
                Num(num(p["highest_score"], 3)),
                Num(fps(p)),
            )
            for p in paths
        ),
    )


def _class_table(paths: Sequence[dict[str, Any]]) -> Table:
    return Table(
        ("path", "class", "ground truth", "predictions", "AP50", "AP50:95", "precision", "recall"),
        tuple(
            (
                Text(p["label"]),
                Text(c["name"]),
                Num(str(c["n_ground_truth"])),
                Num(str(c["n_predictions"])),
                Num(num(c["ap50"])),
                Num(num(c["ap50_95"])),
                Num(num(c["precision"])),
                Num(num(c["recall"])),
            )
            for p in paths
            for c in p["metrics"]["per_class"]
        ),
    )


def _facts(path: dict[str, Any]) -> Facts:
    prov = path["provenance"]
    environment = ", ".join(f"{k} {v}" for k, v in sorted(prov["environment"].items())) or "not recorded"
    rows: tuple[tuple[str, tuple[Inline, ...]], ...] = (
        ("model", (Text(prov["model_path"]),)),
        ("model sha256", (Code(prov["model_sha256"]),)),
        ("dataset", (Text(f"{prov['dataset']}, manifest "), Code(prov["dataset_manifest"]))),
        ("harness", (Text(prov["harness_version"]),)),
        ("measured", (Text(f"{prov['created']} by {prov['runtime']} ({_cached(prov['from_cache'], path)})"),)),
        ("environment", (Text(environment),)),
        ("settings", (Text(settings(path["settings"])),)),
    )
    # schema 10: the shared-cache entries the path used
    entries = tuple(("shared cache", (Text(_entry(e)),)) for e in prov.get("shared_cache", ()))
    return Facts(path_name(path), rows + entries)


def _entry(entry: dict[str, Any]) -> str:
    """A shared-cache entry in words: its name, folder, content sha256 and how it stood."""
    words = f"{entry['name']} in {entry['folder']}, sha256 {entry['sha256'][:16]}, {entry['state']}"
    return f"{words} ({entry['detail']})" if entry.get("detail") else words


LABEL_FREE = (
    "Label-free run: these images have no labels, so mAP, precision and recall cannot be known and no "
    "gate holds them. The Hailo path is held to the ONNX path (boxes matched, score drift) and both to "
    "their label-free baselines (boxes per image, score saturation); a model wrong in the same way on "
    "both paths (a bad export, wrong class names) is not caught without labels."
)


def _inputs(document: dict[str, Any]) -> list[Para]:
    """What the run could not know without labels, where its thresholds come from, the calibration set
    and the baseline files, one paragraph each (none where the run had none)."""
    paras = [] if document["dataset"]["labelled"] else [Para((Text(LABEL_FREE),))]
    paras += [Para((Text(note),)) for note in left_out_notes(document)]
    if document["dataset"]["labelled"]:
        paras.append(Para((Text(metric_note(document["paths"])),)))
    if document["thresholds"]:
        paras.append(Para((Text(f"Thresholds: {document['thresholds']}."),)))
    if document["calibration"]:
        paras.append(Para((Text(f"Calibration: {document['calibration']}."),)))
    for b in document["baselines"]:
        shipped = Path(b["file"]).is_relative_to(SHIPPED_GOLDEN)
        note = (
            " (none yet)"
            if not b["exists"]
            else " (shipped with the package: --update-golden blesses the project's own)"
            if shipped
            else ""
        )
        shown = Code(shown_baseline(b["file"], Path.cwd()))
        paras.append(Para((Text(f"Baseline of {b['path']}: "), shown, Text(f"{note}{blessed_note(b)}."))))
    return paras


def shown_baseline(file: str, project: Path) -> str:
    """A baseline file as the reports show it: a shipped one by its place in the package
    (``harness/data/golden/...``, in a checkout as in site-packages), one in the ``project`` relative to
    it, any other as report.json keeps it."""
    path = Path(file)
    if path.is_relative_to(SHIPPED_GOLDEN):
        return path.relative_to(SHIPPED_GOLDEN.parents[2]).as_posix()
    return path.relative_to(project).as_posix() if path.is_relative_to(project) else file


METRIC_NOTES = {
    "coco": "pycocotools' COCOeval: at most 100 detections per class and image, crowd regions ignored, the "
    "precision envelope's step at 101 recall points",
    "ultralytics": "the numbers yolo val prints: every detection matched greedily, no crowd regions, the "
    "precision envelope interpolated at 101 recall points, so a perfect class scores 0.995",
}


PREPROCESS_NOTES = {
    "letterbox": "one resize keeping the aspect ratio, padded with 114, boxes clipped to the image",
    "ultralytics-val": "yolo val's: the long side resized to the input's (rounded up), padded with 114, boxes not "
    "clipped to the image",
    "resize": "a plain resize to the input, aspect ratio not kept, boxes clipped to the image",
}


def metric_note(paths: Sequence[dict[str, Any]]) -> str:
    """The protocol the mAPs were measured under: the AP formula (a path's settings from before the
    choice: COCO's) and the preprocessing that made the predictions."""
    used = dict.fromkeys(p["settings"].get("metric", "coco") for p in paths)
    fits = dict.fromkeys(p["settings"]["preprocess"] for p in paths)
    return (
        "mAP protocol: "
        + "; ".join(f"{m} ({METRIC_NOTES[m]})" for m in used)
        + "".join(f"; set otherwise than its protocol: {', '.join(d)}" for d in _overrides(paths) if d)
        + "; preprocessing: "
        + "; ".join(f"{f} ({PREPROCESS_NOTES[f]})" for f in fits)
        + "."
    )


def _overrides(paths: Sequence[dict[str, Any]]) -> dict[tuple[str, ...], None]:
    """Per path, the settings its metric's protocol fixes that the run set otherwise (once each)."""
    return dict.fromkeys(
        tuple(MetricProtocol(p["settings"].get("metric", "coco")).protocol.differences(p["settings"])) for p in paths
    )


UNREADABLE_SHOWN = 10  # unreadable images named in a report (all of them are in report.json)


def left_out_notes(document: dict[str, Any]) -> list[str]:
    """What the run left out of the dataset, a sentence each: the unreadable images (count, and the
    first :data:`UNREADABLE_SHOWN` with why) and the dataset classes mapped to nothing
    (``--map-class NAME=``: class map -1)."""
    notes = []
    unreadable = document["dataset"]["unreadable"]
    if unreadable:
        named = "; ".join(f"{u['image_id']} ({u['reason']})" for u in unreadable[:UNREADABLE_SHOWN])
        more = len(unreadable) - UNREADABLE_SHOWN
        notes.append(
            f"Left out: {len(unreadable)} unreadable image{'s' if len(unreadable) > 1 else ''}, within "
            f"--max-unreadable: {named}" + (f"; and {more} more (report.json names them all)." if more > 0 else ".")
        )
    mapping = document["paths"][0]["settings"]["class_map"] if document["paths"] else []
    # an empty class map is the identity; a label-free set's names are the model's
    dropped = [name for name, target in zip(document["dataset"]["names"], mapping, strict=False) if target == -1]
    if dropped:
        classes = "classes" if len(dropped) > 1 else "class"
        notes.append(
            f"Left out of the evaluation (--map-class NAME=): the labels of dataset {classes} {', '.join(dropped)}."
        )
    return notes


def weak_note(gates: Sequence[dict[str, Any]]) -> str:
    """The verdict's words on gates held to baselines blessed weak knowingly (they cannot fail)."""
    weak = sum(bool(g["weak"]) for g in gates)
    return f" ({weak} of {len(gates)} gates held to weak baselines that cannot fail)" if weak else ""


def blessed_note(baseline: dict[str, Any]) -> str:
    """The export a baseline was blessed from, beside this run's where they differ."""
    if "blessed_sha256" not in baseline:
        return ""
    said = f", blessed {baseline['blessed']} from model sha256 {baseline['blessed_sha256'][:12]}"
    if baseline["run_sha256"] not in (None, baseline["blessed_sha256"]):
        said += f"; this run's model sha256 {baseline['run_sha256'][:12]}"
    seal = baseline.get("seal")  # schema 10
    if seal is not None and seal["state"] in ("unsigned edit", "unsealed"):
        said += f"; {seal['state'].upper()}: {seal['detail']} (its gates hold as written; its accepted_weak is void)"
    elif seal is not None:
        said += f"; {seal['state']} ({seal['detail']})"
    if baseline["accepted_weak"]:
        said += f"; blessed weak knowingly ({', '.join(baseline['accepted_weak'])})"
    if baseline.get("history_problems"):
        said += f"; {HISTORY_EDITED}: {'; '.join(baseline['history_problems'])}"
    return said


# the float model's highest score above a quantized path's by more than this (a few 8-bit steps of a [0, 1] output) is
# a cap of that path's class outputs
CAP_MARGIN = 0.01


def cap_notes(paths: Sequence[dict[str, Any]]) -> list[str]:
    """A sentence for each quantized path whose scores stop below what the float model reaches on the same images:
    a cap, which "scores >= 0.99" (the saturation) cannot show, being its opposite. Without a float path in the
    report, a highest score under :data:`~harness.core.defaults.MIN_SCORE_CAP` is the sign."""
    floats = [p["highest_score"] for p in paths if _made_by(p) is PathKind.FLOAT and p.get("highest_score") is not None]
    top = max(floats, default=None)
    notes = []
    for p in paths:
        highest = p.get("highest_score")
        if _made_by(p) is PathKind.FLOAT or highest is None or not p["box_counts"]["total"]:
            continue  # a cap of quantization: the float export has none
        if top is not None and highest < top - CAP_MARGIN:
            than = f"where the float model reaches {top:.3f} on the same images"
        elif top is None and highest < defaults.MIN_SCORE_CAP:
            than = "and no float path here to compare with"
        else:
            continue
        notes.append(
            f"{p['label']}: no score above {highest:.3f}, {than}. That is a cap, the opposite of saturation "
            f"(0 scores >= 0.99 says nothing is pinned at the top): its class outputs cannot represent a higher "
            "score; their range was calibrated on images that score lower (`hailo-harness calibration-check` "
            "says which images would cover it)."
        )
    return notes


# Where each kind of path runs, in the reports' words: only a device path is called hardware.
_RUNS_ON = {PathKind.FLOAT: "host", PathKind.EMULATED: "emulated", PathKind.DEVICE: "hardware"}


def _made_by(path: dict[str, Any]) -> PathKind:
    """What made a path's outputs: a replayed path's recorded kind, else its own."""
    return PathKind(path["recorded_kind"] or path["kind"])


def path_kind(path: dict[str, Any]) -> str:
    """Where the path ran: ``host`` (the float export), ``emulated`` or ``hardware`` (a Hailo device),
    a replayed path's followed by what it was replayed from."""
    runs_on = _RUNS_ON[_made_by(path)]
    if path["kind"] != PathKind.REPLAYED.value:
        return runs_on
    return f"{runs_on}, {path['provenance']['runtime'].partition(' (')[0]}"


def path_name(path: dict[str, Any]) -> PathName:
    return PathName(path["path"], path["label"], path_kind(path))


def fps(path: dict[str, Any]) -> str:
    """Frames per second measured on the device; ``-`` for paths that did not run on one."""
    if path["fps"] is not None:
        return f"{path['fps']:.1f}"
    return "not measured (cached)" if _made_by(path) is PathKind.DEVICE else "-"


STAGE_HEADER = ("stage", "path", "mAP@0.5", "drop vs float")


def stage_rows(stages: dict[str, Any]) -> list[list[str]]:
    return [[r["stage"], r["label"], num(r["map50"]), f"{r['drop']:+.4f}"] for r in stages["rows"]]


def stage_verdict(stages: dict[str, Any]) -> str:
    first = stages["first_degraded"]
    if first is None:
        return f"No stage loses more than {stages['tolerance']:g} mAP@0.5 against the float model."
    return f"First stage past the tolerance: {first['stage']}. {first['message']}"


LAYER_HEADER = ("tensor", "op", "own SQNR dB", "accumulated SQNR dB")
LAYER_NOTE = (
    "Lowest accumulated SQNR first (all the noise up to the tensor); own SQNR is the noise its own uint8 "
    "range adds. Tensors that add none (a Transpose, a Reshape) are left out: they carry the noise before them."
)


def layer_rows(layers: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [str(r["tensor"]), str(r["op"]), f"{r['local_sqnr_db']:.1f}", f"{r['accumulated_sqnr_db']:.1f}"] for r in layers
    ]


def num(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def interval(value: dict[str, float | None] | None) -> str:
    """``point [low, high]`` of a bootstrap interval (NaN bounds: too few images to resample)."""
    if not value:
        return ""
    point, low, high = (value[k] for k in ("point", "low", "high"))
    if point is None:
        return ""
    bounds = "n/a" if low is None or high is None else f"{low:+.4f}, {high:+.4f}"
    return f"{point:+.4f} [{bounds}]"


def settings(value: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in value.items())


def _cached(from_cache: int, path: dict[str, Any]) -> str:
    images = path["metrics"]["n_images"]
    if not from_cache:
        return f"all {images} predictions inferred now"
    return f"{from_cache} of {images} predictions from the prediction cache, made by that same runtime and code"
