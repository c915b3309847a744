"""The report's blocks: typed text, code, numbers, tables, messages, facts, trends and sparklines, in
sections (:mod:`harness.report.view` builds them from the JSON document; each renderer renders them).

Text is typed by where it came from: :class:`Text` (words, the run's or from outside it: names, paths,
messages) is always escaped by a renderer, :class:`Code` is shown as code (a gate's name, a digest, a
file), :class:`Pre` keeps a message's lines. A renderer never sees a raw string it could read as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Code:
    """``short``: a shorter form a narrow screen shows instead where a renderer lays out for one (a
    gate's kind and path, the dataset every gate shares left to the full name); empty: none."""

    text: str
    short: str = ""


@dataclass(frozen=True)
class Num:
    """A figure as the harness formed it (a number, a tolerance in words), never foreign text;
    right-aligned where a renderer aligns."""

    text: str


@dataclass(frozen=True)
class Mark:
    """A gate's result."""

    passed: bool


@dataclass(frozen=True)
class PathName:
    """A path: its ``name``, its ``label`` (marked emulated, replayed) and where it ran (``runs_on``)."""

    name: str
    label: str
    runs_on: str


@dataclass(frozen=True)
class Spark:
    """A gate's value at each blessing of its baseline, oldest first (None where one held no such
    value), then this run's (None: no run value); ``passed``: this run's gate. A small line in a
    table's cell where a renderer draws, the values in words where it does not."""

    blessed: tuple[float | None, ...]
    run: float | None
    passed: bool


Inline = Text | Code | Num | Mark | PathName | Spark


@dataclass(frozen=True)
class Para:
    parts: tuple[Inline, ...]


@dataclass(frozen=True)
class Table:
    """``narrow``: the columns a narrow screen keeps (by index), where a renderer lays out for one;
    empty: every column."""

    header: tuple[str, ...]
    rows: tuple[tuple[Inline, ...], ...]
    narrow: tuple[int, ...] = ()


@dataclass(frozen=True)
class Pre:
    """Lines from outside the harness (a gate's message), kept as they are."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Facts:
    """One path's named facts (its provenance)."""

    path: PathName
    rows: tuple[tuple[str, tuple[Inline, ...]], ...]


@dataclass(frozen=True)
class Figures:
    """The report's pictures of one kind (only a renderer that embeds pictures shows them)."""

    which: Literal["charts", "images"]


@dataclass(frozen=True)
class Trend:
    """A gate's metric at each blessing of its baseline, oldest first ((label, value): a release or a
    date, None where that blessing held no such value), and this run's (label, value) beside them
    (None: no run value); ``passed``: this run's gate. Only a renderer that draws charts shows it."""

    title: str
    blessed: tuple[tuple[str, float | None], ...]
    run: tuple[str, float | None] | None
    passed: bool


Block = Para | Table | Pre | Facts | Figures | Trend


@dataclass(frozen=True)
class Section:
    title: tuple[Inline, ...]
    blocks: tuple[Block, ...]
    level: int = 2
    folded: bool = False  # long: shown folded where a renderer folds (its title stays in view)
    # shown before the intro on a narrow screen (the gates: a phone's first screen holds every one of them)
    lead: bool = False


@dataclass(frozen=True)
class ReportView:
    passed: bool
    verdict: str  # "PASSED", or "FAILED (n of m gates)", with the weak baselines' note
    intro: tuple[Block, ...]
    sections: tuple[Section, ...]
    # "pass", "weak" (passed, but a gate is held to a baseline that cannot fail: not a pass to skim
    # past) or "fail"
    state: Literal["pass", "weak", "fail"] = "pass"
