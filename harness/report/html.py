"""The report as one self-contained HTML file: inline style, pictures embedded as base64 data URIs
(SVG charts, JPEG images), no script and nothing fetched from anywhere."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from html import escape
from typing import Any

from harness.report import blocks
from harness.report.plots import Picture
from harness.report.trend import spark_svg, trend_svg
from harness.report.view import report_view

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1240px;
  overflow-wrap: break-word; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; display: block; max-width: 100%; overflow-x: auto; }
td, th { border: 1px solid #ccc; padding: 3px 8px; } th + td { overflow-wrap: anywhere; min-width: 12ch; }
th { background: #f2f2f2; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #176b1f; font-weight: 600; } .fail { color: #b00020; font-weight: 700; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 12px; }
.emulated { background: #fff1c2; color: #6b4f00; } .hardware { background: #dcefff; color: #08427a; }
.host { background: #eee; color: #444; }
.verdict { display: inline-block; padding: 4px 12px; border-radius: 6px; color: white; }
.verdict.pass { background: #2e7d32; } .verdict.fail { background: #c62828; }
.verdict.weak { background: #8a5a00; }
details > summary { cursor: pointer; } details > summary > h2, details > summary > h3 { display: inline; }
details { margin-top: 20px; } details > summary > h2 { border-bottom: none; }
td svg { display: block; }
@media (max-width: 600px) { body { margin: 10px; } h1 { font-size: 19px; } td, th { padding: 2px 4px; font-size: 12px; }
  td code { font-size: 11px; } }
td:first-child code { overflow-wrap: normal; }
.short { display: none; }
@media (max-width: 600px) { .wide, .full { display: none; } .short { display: inline; }
  .decide { display: flex; flex-direction: column; } .decide > .lead { order: -1; } .lead h2 { margin-top: 12px; } }
pre { background: #f7f7f7; border: 1px solid #e2e2e2; padding: 8px; white-space: pre-wrap; font-size: 12px;
  overflow-wrap: anywhere; }
figure { margin: 12px 0; } figcaption { color: #555; font-size: 12px; } img { max-width: 100%; }
code { font-size: 12px; overflow-wrap: anywhere; }
"""


def render_html(
    document: dict[str, Any], charts: Sequence[Picture], images: Sequence[Picture], unfolded: bool = False
) -> str:
    """The report as one HTML page; ``unfolded``: the folded sections open (for print: a PDF)."""
    view = report_view(document)
    pictures = {"charts": charts, "images": images}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Accuracy report: {escape(view.verdict)}</title><style>{_STYLE}</style></head><body>",
        f'<h1>Accuracy report <span class="verdict {view.state}">{escape(view.verdict)}</span></h1>',
    ]
    # the intro and the sections that lead: one block, the leading sections first on a narrow screen
    lead = [s for s in view.sections if s.lead]
    parts += ['<div class="decide">', *(_block(block, pictures) for block in view.intro)]
    for section in lead:
        heading = f"<h{section.level}>{_inline(section.title)}</h{section.level}>"
        parts += ['<div class="lead">', heading, *(_block(block, pictures) for block in section.blocks), "</div>"]
    parts.append("</div>")
    for section in view.sections:
        if section.lead:
            continue
        heading = f"<h{section.level}>{_inline(section.title)}</h{section.level}>"
        body = [_block(block, pictures) for block in section.blocks]
        if section.folded:
            opened = " open" if unfolded else ""
            parts += [f"<details{opened}><summary>{heading}</summary>", *body, "</details>"]
        else:
            parts += [heading, *body]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _block(block: blocks.Block, pictures: dict[str, Sequence[Picture]]) -> str:
    if isinstance(block, blocks.Para):
        return f"<p>{_inline(block.parts)}</p>"
    if isinstance(block, blocks.Table):
        wide = [bool(block.narrow) and i not in block.narrow for i in range(len(block.header))]
        head = "".join(f"<th{_WIDE[w]}>{escape(h)}</th>" for h, w in zip(block.header, wide, strict=True))
        body = "".join(
            "<tr>" + "".join(_cell(c, w) for c, w in zip(row, wide, strict=True)) + "</tr>" for row in block.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if isinstance(block, blocks.Pre):
        return f"<pre>{escape(chr(10).join(block.lines))}</pre>"
    if isinstance(block, blocks.Facts):
        rows = "".join(f"<tr><th>{escape(name)}</th><td>{_inline(value)}</td></tr>" for name, value in block.rows)
        return f"<h3>{_inline((block.path,))}</h3><table>{rows}</table>"
    if isinstance(block, blocks.Trend):
        return f"<figure>{trend_svg(block)}</figure>"
    assert isinstance(block, blocks.Figures)
    shown = pictures[block.which]
    if not shown and block.which == "images":
        return "<p>Every path agrees with the ground truth on every image.</p>"
    return "\n".join(_figure(p) for p in shown)


def _cell(part: blocks.Inline, wide: bool = False) -> str:
    """One table cell; ``wide``: a column a narrow screen leaves out."""
    if isinstance(part, blocks.Code):  # a gate's name breaks after its brackets and dashes, never inside a word
        broken = _BREAKS.sub(r"\1<wbr>", escape(part.text))
        return f"<td{_WIDE[wide]}><code>{_shortened(broken, part.short)}</code></td>"
    if isinstance(part, blocks.Num):
        return f'<td class="n{" wide" if wide else ""}">{_inline((part,))}</td>'
    return f"<td{_WIDE[wide]}>{_inline((part,))}</td>"


_BREAKS = re.compile(r"([\[\-_/])")
_WIDE = {False: "", True: ' class="wide"'}


def _shortened(full: str, short: str) -> str:
    """``full`` (markup), and ``short`` in its place on a narrow screen where there is one."""
    if not short:
        return full
    return f'<span class="full">{full}</span><span class="short">{escape(short)}</span>'


def _inline(parts: Sequence[blocks.Inline]) -> str:
    return "".join(_part(part) for part in parts)


def _part(part: blocks.Inline) -> str:
    if isinstance(part, blocks.Text | blocks.Num):
        return escape(part.text)
    if isinstance(part, blocks.Code):
        return f"<code>{_shortened(escape(part.text), part.short)}</code>"
    if isinstance(part, blocks.Mark):
        return '<span class="pass">pass</span>' if part.passed else '<span class="fail">FAIL</span>'
    if isinstance(part, blocks.Spark):
        return spark_svg(part)
    assert isinstance(part, blocks.PathName)
    return f'{escape(part.name)} <span class="badge {part.runs_on.split(",")[0]}">{escape(part.runs_on)}</span>'


def _figure(picture: Picture) -> str:
    data = base64.b64encode(picture.data).decode("ascii")
    return (
        f'<figure><img alt="{escape(picture.title)}" src="data:{picture.media_type};base64,{data}">'
        f"<figcaption><b>{escape(picture.title)}</b>: {escape(picture.caption)}</figcaption></figure>"
    )
