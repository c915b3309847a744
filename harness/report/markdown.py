"""The report as Markdown, rendered from the JSON report document (the HTML report has the plots).

Text the harness did not write itself (class, file, dataset and tensor names, paths, runtimes) enters
only through :func:`escape`, a gate's name through :func:`code_span` and a message through
:func:`fenced`: it is shown as it is, never read as Markdown or HTML, and cannot break a line or a
table's cell.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.core.path_names import PathKind
from harness.inputs.demo import SHIPPED_GOLDEN
from harness.verdict.hef_checks import DEFAULT_MIN_SCORE_CAP


def render_markdown(document: dict[str, Any]) -> str:
    dataset, gates, paths = document["dataset"], document["gates"], document["paths"]
    failed = [g for g in gates if not g["passed"]]
    verdict = ("PASSED" if document["passed"] else f"FAILED ({len(failed)} of {len(gates)} gates)") + weak_note(gates)
    lines = [
        f"# Accuracy report: {verdict}",
        "",
        f"Dataset {escape(dataset['root'])}: {dataset['n_images']} images, {dataset['n_boxes']} labelled boxes, "
        f"classes {escape(', '.join(dataset['names']))}; manifest {code_span(dataset['manifest'])}.",
        "",
        *inputs(document, escape, escape),
        "## Gates",
        "",
        table(
            ["gate", "result", "baseline", "observed", "allowed", "bootstrap interval (vs reference)"],
            [
                [
                    code_span(g["name"]),
                    "pass" if g["passed"] else "**FAIL**",
                    num(g["baseline"]),
                    num(g["observed"]),
                    g["allowed"] or "-",
                    interval(g["interval"]),
                ]
                for g in gates
            ],
        ),
        "",
    ]
    if failed:
        lines += ["## Failures", ""]
        for g in failed:
            lines += [f"### {code_span(g['name'])}", "", *fenced(g["text"].splitlines()), ""]
    if document["diagnoses"]:
        lines += ["## Likely causes", ""]
        for d in document["diagnoses"]:
            lines += [f"Of {', '.join(code_span(n) for n in d['gates'])}:", "", *fenced(d["lines"]), ""]
    if document["stages"]:
        lines += ["## Stages (float -> fp-optimized -> quantized -> hardware)", ""]
        rows = [[escape(cell) for cell in row] for row in stage_rows(document["stages"])]
        lines += [escape(stage_verdict(document["stages"])), "", table(STAGE_HEADER, rows), ""]
    if document["worst_layers"]:
        lines += ["## Worst layers (emulated HEF vs float graph, per-tensor SQNR)", "", LAYER_NOTE, ""]
        lines += [
            table(LAYER_HEADER, [[escape(cell) for cell in row] for row in layer_rows(document["worst_layers"])]),
            "",
        ]
    lines += [
        "## Paths",
        "",
        table(
            [
                "path",
                "runs on",
                "mAP@0.5",
                "mAP@0.5:0.95",
                "boxes",
                "boxes/image mean",
                "p95",
                "max",
                "scores >= 0.99",
                "highest score",
                "frames/s",
            ],
            [
                [
                    escape(p["label"]),
                    escape(path_kind(p)),
                    num(p["metrics"]["map50"]),
                    num(p["metrics"]["map50_95"]),
                    str(p["box_counts"]["total"]),
                    num(p["box_counts"]["mean"], 2),
                    num(p["box_counts"]["p95"], 1),
                    str(p["box_counts"]["max"]),
                    f"{p['scores']['saturation']:.1%}",
                    num(p["highest_score"], 3),
                    fps(p),
                ]
                for p in paths
            ],
        ),
        *(f"\n{escape(note)}" for note in cap_notes(paths)),
        "",
        "## Per class",
        "",
        table(
            ["path", "class", "ground truth", "predictions", "AP50", "AP50:95", "precision", "recall"],
            [
                [
                    escape(p["label"]),
                    escape(c["name"]),
                    str(c["n_ground_truth"]),
                    str(c["n_predictions"]),
                    num(c["ap50"]),
                    num(c["ap50_95"]),
                    num(c["precision"]),
                    num(c["recall"]),
                ]
                for p in paths
                for c in p["metrics"]["per_class"]
            ],
        ),
        "",
        "## Provenance and environment",
        "",
    ]
    for p in paths:
        prov = p["provenance"]
        environment = ", ".join(f"{k} {v}" for k, v in sorted(prov["environment"].items())) or "not recorded"
        lines += [
            f"- **{escape(p['label'])}**: model {escape(prov['model_path'])} "
            f"(sha256 {code_span(prov['model_sha256'])}), dataset {escape(prov['dataset'])} "
            f"(manifest {code_span(prov['dataset_manifest'])}), harness {escape(prov['harness_version'])}, "
            f"measured {escape(prov['created'])} by {escape(prov['runtime'])} ({_cached(prov['from_cache'], p)}); "
            f"environment: {escape(environment)}; settings: {escape(settings(p['settings']))}",
        ]
    return "\n".join(lines) + "\n"


LABEL_FREE = (
    "Label-free run: these images have no labels, so mAP, precision and recall cannot be known and no "
    "gate holds them. The Hailo path is held to the ONNX path (boxes matched, score drift) and both to "
    "their label-free baselines (boxes per image, score saturation); a model wrong in the same way on "
    "both paths (a bad export, wrong class names) is not caught without labels."
)


def inputs(document: dict[str, Any], text: Callable[[str], str], name: Callable[[str], str]) -> list[str]:
    """What the run could not know without labels, where its thresholds come from, the calibration set
    and the baseline files, one line each (none where the run had none); the run's own words go through
    ``text`` and file names through ``name``."""
    lines = [] if document["dataset"]["labelled"] else [LABEL_FREE, ""]
    if document["thresholds"]:
        lines += [f"Thresholds: {text(document['thresholds'])}.", ""]
    if document["calibration"]:
        lines += [f"Calibration: {text(document['calibration'])}.", ""]
    for b in document["baselines"]:
        shipped = Path(b["file"]).is_relative_to(SHIPPED_GOLDEN)
        note = (
            " (none yet)"
            if not b["exists"]
            else " (shipped with the package: --update-golden blesses the project's own)"
            if shipped
            else ""
        )
        lines += [f"Baseline of {text(b['path'])}: {name(b['file'])}{note}{blessed_note(b)}.", ""]
    return lines


def weak_note(gates: list[dict[str, Any]]) -> str:
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
    if baseline["accepted_weak"]:
        said += f"; blessed weak knowingly ({', '.join(baseline['accepted_weak'])})"
    return said


def cap_notes(paths: list[dict[str, Any]]) -> list[str]:
    """A sentence for each path whose scores stop well below 1: a cap, which "scores >= 0.99" (the
    saturation) cannot show, being its opposite."""
    return [
        f"{p['label']}: no score above {p['highest_score']:.3f}. That is a cap, the opposite of saturation "
        f"(0 scores >= 0.99 says nothing is pinned at the top): its class outputs cannot represent a higher "
        "score, as after calibrating on images without the classes."
        for p in paths
        if p.get("highest_score") is not None
        and p["highest_score"] < DEFAULT_MIN_SCORE_CAP
        and p["box_counts"]["total"]
    ]


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


def fps(path: dict[str, Any]) -> str:
    """Frames per second measured on the device; ``-`` for paths that did not run on one."""
    if path["fps"] is not None:
        return f"{path['fps']:.1f}"
    return "not measured (cached)" if _made_by(path) is PathKind.DEVICE else "-"


STAGE_HEADER = ["stage", "path", "mAP@0.5", "drop vs float"]


def stage_rows(stages: dict[str, Any]) -> list[list[str]]:
    return [[r["stage"], r["label"], num(r["map50"]), f"{r['drop']:+.4f}"] for r in stages["rows"]]


def stage_verdict(stages: dict[str, Any]) -> str:
    first = stages["first_degraded"]
    if first is None:
        return f"No stage loses more than {stages['tolerance']:g} mAP@0.5 against the float model."
    return f"First stage past the tolerance: {first['stage']}. {first['message']}"


LAYER_HEADER = ["tensor", "op", "own SQNR dB", "accumulated SQNR dB"]
LAYER_NOTE = (
    "Lowest accumulated SQNR first (all the noise up to the tensor); own SQNR is the noise its own uint8 "
    "range adds. Tensors that add none (a Transpose, a Reshape) are left out: they carry the noise before them."
)


def layer_rows(layers: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [str(r["tensor"]), str(r["op"]), f"{r['local_sqnr_db']:.1f}", f"{r['accumulated_sqnr_db']:.1f}"] for r in layers
    ]


def table(header: list[str], rows: list[list[str]]) -> str:
    """A table of Markdown ``rows``: a ``|`` in a cell is escaped, so no cell splits."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(out)


# What Markdown (CommonMark with GitHub's tables, strikethrough and math) may read as markup inside a
# line, escaped by a backslash; HTML ("<", and "&" of an entity) is escaped as entities, which every
# renderer reads; "|" is the table's to escape.
_MARKUP = re.compile(r"([\\`*_\[\]~$])")


def _one_line(text: object) -> str:
    return " ".join(str(text).splitlines())


def escape(text: object) -> str:
    """``text`` from outside the harness as Markdown that shows it as it is, on one line: ``<script>``
    is text (``&lt;script>``), not HTML."""
    return _MARKUP.sub(r"\\\1", _one_line(text).replace("&", "&amp;").replace("<", "&lt;"))


def _ticks(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text``."""
    return "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))


def code_span(text: object) -> str:
    """``text`` the harness formed (a gate's name, which holds the dataset's; a digest) as a code span,
    on one line."""
    line = _one_line(text)
    ticks, pad = _ticks(line), " " if line[:1] == "`" or line[-1:] == "`" else ""
    return f"{ticks}{pad}{line}{pad}{ticks}"


def fenced(lines: Sequence[str]) -> list[str]:
    """``lines`` from outside the harness (a gate's message) as a code block that nothing in them closes."""
    ticks = _ticks("\n".join(lines)).ljust(3, "`")
    return [ticks, *lines, ticks]


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
