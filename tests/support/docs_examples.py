"""The examples of README.md and docs/: every fenced block, with what the comment before it says of it.

A comment ``<!-- example: WORDS -->`` on the line before a fence (blank lines between allowed) says:

- ``not run (why)``: the block is checked, not run (a shell block's syntax and every option it gives
  ``hailo-harness`` or pytest; a YAML or TOML file's syntax, and the commands and ini keys in it);
  ``synopsis`` there: options in brackets are optional, and are checked too;
- ``file NAME``: the block is written to ``NAME`` in the example's project folder, for the blocks after it;
- ``output``: a ``text`` block, the lines the block run before it prints, in order (each a part of a line).

Every other ``bash`` and ``python`` block is run, in the order of its page, in one project folder per page.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # tests/support/ -> the project
RUN_LANGUAGES = ("bash", "python")
_COMMENT = re.compile(r"^<!-- example: (.*) -->$")
_FENCE = re.compile(r"^```(\w*)")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    note: str  # the words of the comment before it, "" without one
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and not self.checked_only and not self.file_name

    @property
    def checked_only(self) -> bool:
        return self.note.startswith("not run")

    @property
    def file_name(self) -> str:
        return self.note.removeprefix("file ").strip() if self.note.startswith("file ") else ""

    @property
    def is_output(self) -> bool:
        return self.note == "output"


def pages() -> list[Path]:
    """README.md and the hand-written pages of docs/ (the generated reference holds no examples)."""
    return [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    note, lines = "", page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        comment = _COMMENT.match(line.strip())
        fence = _FENCE.match(line)
        if comment:
            note = comment.group(1).strip()
        elif fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            found.append(Block(page, i + 1, fence.group(1), note, "\n".join(lines[i + 1 : end]) + "\n"))
            note, i = "", end
        elif line.strip():
            note = ""
        i += 1
    return found


def commands(shell: str) -> list[list[str]]:
    """The simple commands of a shell text: continuation lines joined, comments dropped, split at
    ``&&``, ``||``, ``|``, ``;`` and ``&``; each as its words (``$(...)`` left as it is)."""
    joined = re.sub(r"\\\n\s*", " ", shell)
    found = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in words:
            if word in ("&&", "||", "|", ";", "&"):
                found.append(current)
                current = []
            else:
                current.append(word)
        found.append(current)
    return [c for c in found if c]


def expected_lines(output: Block) -> list[str]:
    return [line.strip() for line in output.text.splitlines() if line.strip() and line.strip() != "..."]


def missing_output(expected: list[str], printed: str) -> str | None:
    """The first expected line not found, in order, as a part of a printed line; None when all are."""
    printed_lines, at = printed.splitlines(), 0
    for want in expected:
        while at < len(printed_lines) and want not in printed_lines[at]:
            at += 1
        if at == len(printed_lines):
            return want
        at += 1
    return None
