"""The report as Markdown: the report's view (:mod:`harness.report.view`) rendered section by section
(the HTML report has the plots).

Text enters only through :func:`escape` (shown as it is, never read as Markdown or HTML, on one line,
unable to break a table's cell), code through :func:`code_span` and a message through :func:`fenced`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from harness.report import blocks
from harness.report.view import report_view


def render_markdown(document: dict[str, Any]) -> str:
    view = report_view(document)
    lines = [f"# Accuracy report: {view.verdict}", ""]
    for block in view.intro:
        lines += _block(block)
    for section in view.sections:
        if section.blocks and all(isinstance(block, blocks.Figures) for block in section.blocks):
            continue  # pictures are the HTML report's
        lines += [f"{'#' * section.level} {_inline(section.title)}", ""]
        for block in section.blocks:
            lines += _block(block)
    return "\n".join(lines) + "\n"


def _block(block: blocks.Block) -> list[str]:
    if isinstance(block, blocks.Para):
        return [_inline(block.parts), ""]
    if isinstance(block, blocks.Table):
        return [table(list(block.header), [[_inline((cell,)) for cell in row] for row in block.rows]), ""]
    if isinstance(block, blocks.Pre):
        return [*fenced(block.lines), ""]
    if isinstance(block, blocks.Facts):
        facts = "; ".join(f"{name}: {_inline(parts)}" for name, parts in block.rows)
        return [f"- **{escape(block.path.label)}**: {facts}"]
    assert isinstance(block, blocks.Figures | blocks.Trend)  # pictures and charts are the HTML report's
    return []


def _inline(parts: Sequence[blocks.Inline]) -> str:
    return "".join(_part(part) for part in parts)


def _part(part: blocks.Inline) -> str:
    if isinstance(part, blocks.Num):
        return part.text  # the harness's own figures and words
    if isinstance(part, blocks.Text):
        return escape(part.text)
    if isinstance(part, blocks.Code):
        return code_span(part.text)
    if isinstance(part, blocks.Mark):
        return "pass" if part.passed else "**FAIL**"
    if isinstance(part, blocks.Spark):
        return spark_words(part)
    assert isinstance(part, blocks.PathName)
    return escape(part.label)


def spark_words(spark: blocks.Spark) -> str:
    """A sparkline in words: the blessed values, then this run's (``-``: a blessing without it)."""
    values = ["-" if v is None else f"{v:.4f}" for v in spark.blessed]
    run = "n/a" if spark.run is None else f"{spark.run:.4f}"
    return " → ".join([*values, f"now {run}"])


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
