"""The report as one self-contained HTML file: inline style, pictures embedded as base64 PNG, no
script and nothing fetched from anywhere."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape
from typing import Any

from harness.report.markdown import (
    LAYER_HEADER,
    LAYER_NOTE,
    STAGE_HEADER,
    cap_notes,
    fps,
    inputs,
    interval,
    layer_rows,
    num,
    path_kind,
    settings,
    stage_rows,
    stage_verdict,
    weak_note,
)
from harness.report.plots import Picture

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1240px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; } td, th { border: 1px solid #ccc; padding: 3px 8px; }
th { background: #f2f2f2; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #176b1f; font-weight: 600; } .fail { color: #b00020; font-weight: 700; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 12px; }
.emulated { background: #fff1c2; color: #6b4f00; } .hardware { background: #dcefff; color: #08427a; }
.host { background: #eee; color: #444; }
.verdict { display: inline-block; padding: 4px 12px; border-radius: 6px; color: white; }
.verdict.pass { background: #2e7d32; } .verdict.fail { background: #c62828; }
pre { background: #f7f7f7; border: 1px solid #e2e2e2; padding: 8px; white-space: pre-wrap; font-size: 12px; }
figure { margin: 12px 0; } figcaption { color: #555; font-size: 12px; } img { max-width: 100%; }
code { font-size: 12px; overflow-wrap: anywhere; }
"""


def render_html(document: dict[str, Any], charts: Sequence[Picture], images: Sequence[Picture]) -> str:
    dataset, gates, paths = document["dataset"], document["gates"], document["paths"]
    passed = document["passed"]
    failed = [g for g in gates if not g["passed"]]
    verdict = ("PASSED" if passed else f"FAILED: {len(failed)} of {len(gates)} gates") + weak_note(gates)
    path_badges = " ".join(_path_badge(p) for p in paths)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Accuracy report: {escape(verdict)}</title><style>{_STYLE}</style></head><body>",
        f'<h1>Accuracy report <span class="verdict {"pass" if passed else "fail"}">{escape(verdict)}</span></h1>',
        f"<p>Paths: {path_badges}</p>",
        f"<p>Dataset <code>{escape(dataset['root'])}</code>: {dataset['n_images']} images, "
        f"{dataset['n_boxes']} labelled boxes, classes {escape(', '.join(dataset['names']))}; "
        f"manifest <code>{escape(dataset['manifest'])}</code></p>",
        *(f"<p>{line}</p>" for line in inputs(document, escape, _code) if line),
        "<h2>Gates</h2>",
        _table(
            ["gate", "result", "baseline", "observed", "allowed", "bootstrap interval (vs reference)"],
            [
                [
                    f"<code>{escape(g['name'])}</code>",
                    '<span class="pass">pass</span>' if g["passed"] else '<span class="fail">FAIL</span>',
                    _n(num(g["baseline"])),
                    _n(num(g["observed"])),
                    _n(escape(g["allowed"] or "-")),
                    _n(escape(interval(g["interval"]))),
                ]
                for g in gates
            ],
        ),
    ]
    if failed:
        parts.append("<h2>Failures</h2>")
        parts += [f"<h3><code>{escape(g['name'])}</code></h3><pre>{escape(g['text'])}</pre>" for g in failed]
    if document["diagnoses"]:
        parts.append("<h2>Likely causes</h2>")
        for d in document["diagnoses"]:
            names = ", ".join(f"<code>{escape(n)}</code>" for n in d["gates"])
            parts.append(f"<p>Of {names}:</p><pre>{escape(chr(10).join(d['lines']))}</pre>")
    if document["stages"]:
        parts.append("<h2>Stages (float &rarr; fp-optimized &rarr; quantized &rarr; hardware)</h2>")
        parts.append(f"<p>{escape(stage_verdict(document['stages']))}</p>")
        parts.append(_table(STAGE_HEADER, [[escape(c) for c in row] for row in stage_rows(document["stages"])]))
    if document["worst_layers"]:
        parts.append("<h2>Worst layers (emulated HEF vs float graph, per-tensor SQNR)</h2>")
        parts.append(f"<p>{escape(LAYER_NOTE)}</p>")
        rows = [[escape(cell) for cell in row] for row in layer_rows(document["worst_layers"])]
        parts.append(_table(LAYER_HEADER, rows))
    parts += [
        "<h2>Paths</h2>",
        _table(
            [
                "path",
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
                    _path_badge(p),
                    _n(num(p["metrics"]["map50"])),
                    _n(num(p["metrics"]["map50_95"])),
                    _n(str(p["box_counts"]["total"])),
                    _n(num(p["box_counts"]["mean"], 2)),
                    _n(num(p["box_counts"]["p95"], 1)),
                    _n(str(p["box_counts"]["max"])),
                    _n(f"{p['scores']['saturation']:.1%}"),
                    _n(num(p["highest_score"], 3)),
                    _n(escape(fps(p))),
                ]
                for p in paths
            ],
        ),
        *(f"<p>{escape(note)}</p>" for note in cap_notes(paths)),
        "<h2>Per class</h2>",
        _table(
            ["path", "class", "ground truth", "predictions", "AP50", "AP50:95", "precision", "recall"],
            [
                [
                    escape(p["label"]),
                    escape(c["name"]),
                    _n(str(c["n_ground_truth"])),
                    _n(str(c["n_predictions"])),
                    _n(num(c["ap50"])),
                    _n(num(c["ap50_95"])),
                    _n(num(c["precision"])),
                    _n(num(c["recall"])),
                ]
                for p in paths
                for c in p["metrics"]["per_class"]
            ],
        ),
        "<h2>Plots</h2>",
    ]
    parts += [_figure(p) for p in charts]
    parts.append("<h2>Images where the paths disagree most</h2>")
    parts += [_figure(p) for p in images] or ["<p>Every path agrees with the ground truth on every image.</p>"]
    parts.append("<h2>Provenance and environment</h2>")
    parts += [_provenance(p) for p in paths]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _provenance(path: dict[str, Any]) -> str:
    prov = path["provenance"]
    rows = [
        ("model", f"<code>{escape(prov['model_path'])}</code>"),
        ("model sha256", f"<code>{escape(prov['model_sha256'])}</code>"),
        ("dataset", f"{escape(prov['dataset'])}, manifest <code>{escape(prov['dataset_manifest'])}</code>"),
        ("harness", escape(prov["harness_version"])),
        ("measured", escape(prov["created"])),
        ("runtime", escape(f"{prov['runtime']}; {prov['from_cache']} predictions from the cache")),
        ("environment", escape(_environment(prov["environment"]))),
        ("settings", escape(settings(path["settings"]))),
    ]
    body = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    return f"<h3>{_path_badge(path)}</h3><table>{body}</table>"


def _path_badge(path: dict[str, Any]) -> str:
    kind = path_kind(path)
    return f'{escape(path["path"])} <span class="badge {kind.split(",")[0]}">{escape(kind)}</span>'


def _environment(environment: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(environment.items())) or "not recorded"


def _figure(picture: Picture) -> str:
    data = base64.b64encode(picture.png).decode("ascii")
    return (
        f'<figure><img alt="{escape(picture.title)}" src="data:image/png;base64,{data}">'
        f"<figcaption><b>{escape(picture.title)}</b>: {escape(picture.caption)}</figcaption></figure>"
    )


def _table(header: list[str], rows: list[list[str]]) -> str:
    """``rows`` of cells made by :func:`_n` (numbers, right-aligned) or given as HTML text."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _code(text: str) -> str:
    return f"<code>{escape(text)}</code>"


def _n(text: str) -> str:
    return f'<td class="n">{text}</td>'
