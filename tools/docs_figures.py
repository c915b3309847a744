"""Measured figures the documentation quotes, kept in the files the benchmarks write, never typed by hand.

A benchmark run with ``--write-figures`` writes ``docs/figures/<benchmark>.json`` (whole or not at all):
what it measured under ``figures``, and how (``command``, ``size``, ``measured``: the date, the cores and
the load). A page quotes a figure with a placeholder that the site's hook (``tools/docs_hooks.py``) fills
in when it builds::

    {{ figure("calibration_check", "demo_off_domain.map50") }}           0.770 (a float: 3 decimals)
    {{ figure("calibration_check", "demo_off_domain.versus_map50.low", "+.3f") }}   -0.163

The third argument is a format specification (Python's ``format``); a missing figure (``null``) reads
``-``, a boolean yes or no. A placeholder whose file or key is missing stops the build, naming the page,
the file and the key.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.documents import read_json
from harness.core.errors import HarnessError
from harness.core.files import write_atomic

ROOT = Path(__file__).resolve().parent.parent
FIGURES = Path("docs/figures")
FORMAT = 1
DEFAULT_FLOAT = ".3f"

# {{ figure("bench", "a.b.c") }} or {{ figure("bench", "a.b.c", "+.3f") }}
PLACEHOLDER = re.compile(
    r"\{\{\s*figure\(\s*\"(?P<bench>[a-z0-9_]+)\"\s*,\s*\"(?P<key>[A-Za-z0-9_.]+)\"\s*"
    r"(?:,\s*\"(?P<spec>[^\"]*)\"\s*)?\)\s*\}\}"
)
# Anything that starts like a placeholder: each must match PLACEHOLDER whole.
_OPENING = re.compile(r"\{\{\s*figure\b[^}]*\}?\}?")


class FigureError(HarnessError):
    """A placeholder that names a figure no benchmark file holds, or a malformed one."""


@dataclass(frozen=True)
class Placeholder:
    bench: str
    key: str
    spec: str | None
    text: str  # as written on the page

    @property
    def file(self) -> Path:
        return FIGURES / f"{self.bench}.json"


def placeholders(text: str, source: str = "page") -> list[Placeholder]:
    """The placeholders of a page, in order; a malformed one is refused, naming the page and what it wrote."""
    found = [Placeholder(m["bench"], m["key"], m["spec"], m.group(0)) for m in PLACEHOLDER.finditer(text)]
    for opening in _OPENING.finditer(text):
        if not PLACEHOLDER.match(text, opening.start()):
            raise FigureError(
                f"{source}: malformed figure placeholder {opening.group(0)!r}: expected "
                '{{ figure("bench", "key") }} or {{ figure("bench", "key", "format") }}'
            )
    return found


def read_figures(bench: str, root: Path = ROOT) -> Mapping[str, Any]:
    """The ``figures`` of ``docs/figures/<bench>.json`` under ``root``, with its ``measured`` and ``size``."""
    path = root / FIGURES / f"{bench}.json"
    if not path.is_file():
        raise FigureError(f"{FIGURES / path.name}: no such figures file (a benchmark writes it with --write-figures)")
    document = read_json(path, "figures file")
    if not isinstance(document, dict) or not isinstance(document.get("figures"), dict):
        raise FigureError(f"{FIGURES / path.name}: figures: expected an object of the measured figures")
    if document.get("format") != FORMAT:
        raise FigureError(f"{FIGURES / path.name}: format: expected {FORMAT}, found {document.get('format')!r}")
    # Beside what was measured, how: "measured.cpus", "measured.load_average", "size".
    return {**document["figures"], "measured": document.get("measured", {}), "size": document.get("size")}


def lookup(figures: Mapping[str, Any], key: str, where: str) -> Any:
    """The value at the dotted ``key``; a missing key is refused, naming ``where`` and the keys there are."""
    value: Any = figures
    for at, part in enumerate(key.split(".")):
        if not isinstance(value, Mapping) or part not in value:
            held = sorted(value) if isinstance(value, Mapping) else []
            found = ".".join(key.split(".")[:at]) or "the file"
            raise FigureError(f"{where}: no figure {key!r} ({found} holds {', '.join(held) or 'no key'})")
        value = value[part]
    if isinstance(value, Mapping | list):
        raise FigureError(f"{where}: figure {key!r} is not a number or a word (it holds {len(value)} entries)")
    return value


def shown(value: Any, spec: str | None, where: str) -> str:
    """A figure as the page shows it: ``null`` as ``-``, a boolean as yes or no, a float to 3 decimals unless
    ``spec`` says otherwise."""
    if value is None:
        return "-"
    if isinstance(value, bool) or isinstance(value, str):
        if spec:
            raise FigureError(f"{where}: format {spec!r} given for {value!r}, which is not a number")
        return ("yes" if value else "no") if isinstance(value, bool) else value
    try:
        return format(value, spec if spec is not None else DEFAULT_FLOAT if isinstance(value, float) else "")
    except ValueError as error:
        raise FigureError(f"{where}: format {spec!r}: {error}") from None


def render(text: str, source: str, root: Path = ROOT) -> str:
    """``text`` with each placeholder replaced by its figure; the first one missing is refused."""
    cache: dict[str, Mapping[str, Any]] = {}
    out = text
    for p in placeholders(text, source):
        where = f"{source}: {p.text}: {p.file}"
        try:
            figures = cache.setdefault(p.bench, read_figures(p.bench, root))
        except FigureError as error:
            raise FigureError(f"{source}: {p.text}: {error}") from None
        out = out.replace(p.text, shown(lookup(figures, p.key, where), p.spec, where), 1)
    return out


def write_figures(bench: str, figures: Mapping[str, Any], command: str, size: str, root: Path = ROOT) -> Path:
    """Write ``docs/figures/<bench>.json`` under ``root`` whole, with how and where the figures were measured."""
    import json

    document = {
        "format": FORMAT,
        "benchmark": bench,
        "command": command,
        "size": size,
        "measured": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "cpus": os.cpu_count(),
            "load_average": round(os.getloadavg()[0], 1),
            "machine": platform.machine(),
            "python": platform.python_version(),
        },
        "figures": figures,
    }
    path = root / FIGURES / f"{bench}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(document, indent=2, sort_keys=True) + "\n")
    return path


def rounded(value: Any, digits: int = 4) -> Any:
    """``value`` with every float rounded to ``digits`` (the figures files hold what a page can show)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, Mapping):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    return value
