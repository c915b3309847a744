"""Line charts as SVG text, written by hand: a grid of panels, each with its axes, ticks, grid, step
or stair lines and a legend. What the report's charts need and nothing more; no matplotlib (its import
and PNG encoding took most of a cached run's second).

A line's vertices are simplified in pixel space before they are written: a run of vertices in one
pixel column keeps its first, last, highest and lowest; a run at one height keeps its ends. A curve of
any number of detections costs a few vertices per pixel column and looks as it did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

FONT = "font-family:system-ui,sans-serif"
_TITLE, _MARGIN_LEFT, _MARGIN_BOTTOM, _MARGIN_RIGHT = 26, 54, 42, 14
_CHAR_WIDTH = 0.6  # a sans-serif character's width, in font sizes (for placing a legend beside a plot)


@dataclass(frozen=True)
class Line:
    """A polyline in data coordinates, its colour and its legend entry."""

    x: np.ndarray
    y: np.ndarray
    colour: str
    label: str


@dataclass(frozen=True)
class Panel:
    title: str
    xlabel: str
    ylabel: str
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    lines: Sequence[Line]
    integer_x: bool = False  # whole-number ticks (counts)
    integer_y: bool = False
    legend: str = "lower left"  # or "right": beside the plot


def step_post(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vertices of matplotlib's ``step(x, y, where="post")``: y[i] holds from x[i] to x[i + 1]."""
    if len(x) == 0:
        return np.asarray(x, np.float64), np.asarray(y, np.float64)
    return np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]


def stairs(values: np.ndarray, edges: np.ndarray, baseline: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The outline of matplotlib's ``stairs(values, edges)``: up from the baseline at the first edge,
    across each bin at its value, down to the baseline at the last edge."""
    v = np.asarray(values, np.float64)
    xs = np.repeat(np.asarray(edges, np.float64), 2)
    ys = np.concatenate(([baseline], np.repeat(v, 2), [baseline]))
    return xs, ys


def simplify(px: np.ndarray, py: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (pixels, x never decreasing) rounded to a tenth of a pixel, without those that change
    nothing drawn: within a run in one pixel column only the first, the last, the highest and the
    lowest stay (at most four); within a run at one height only its ends."""
    x, y = np.round(px, 1), np.round(py, 1)
    if len(x) < 3:
        return x, y
    column = np.floor(x)
    keep = _run_ends(column) | _first_extremes(column, y)
    x, y = x[keep], y[keep]
    keep = _run_ends(y)
    return x[keep], y[keep]


def _run_ends(values: np.ndarray) -> np.ndarray:
    change = values[1:] != values[:-1]
    return np.concatenate(([True], change)) | np.concatenate((change, [True]))


def _first_extremes(key: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Within each run of equal ``key``, the first vertex of least and the first of greatest ``y``."""
    run = np.cumsum(np.concatenate(([False], key[1:] != key[:-1])))
    index = np.arange(len(y))
    keep = np.zeros(len(y), bool)
    for values in (y, -y):
        order = np.lexsort((index, values, run))  # by run, then value, then place
        first = np.concatenate(([True], run[order][1:] != run[order][:-1]))
        keep[order[first]] = True
    return keep


def ticks(low: float, high: float, integer: bool = False, target: int = 6) -> np.ndarray:
    """Round ticks (1, 2 or 5 times a power of ten apart; whole numbers where ``integer``) in [low, high]."""
    span = max(high - low, 1e-12)
    raw = span / target
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(low / step - 1e-9) * step
    return np.arange(first, high + step * 1e-9, step)


def top_of(high: float) -> float:
    """An upper limit a little (5%) above ``high``, at least 1: a count axis's."""
    return max(1.0, high * 1.05)


def chart(panels: Sequence[Panel], columns: int, panel_size: tuple[int, int]) -> bytes:
    """The panels in a grid of ``columns``, each ``panel_size`` pixels (width, height), as SVG bytes."""
    width, height = panel_size
    rows = -(-len(panels) // columns)
    total = (columns * width, rows * height)
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total[0]}" height="{total[1]}" '
        f'viewBox="0 0 {total[0]} {total[1]}" style="{FONT}">',
        f'<rect width="{total[0]}" height="{total[1]}" fill="white"/>',
    ]
    for k, panel in enumerate(panels):
        body.append(_panel(panel, (k % columns) * width, (k // columns) * height, width, height))
    body.append("</svg>")
    return "\n".join(body).encode()


def _panel(panel: Panel, left: int, top: int, width: int, height: int) -> str:
    beside = panel.legend == "right"
    legend_width = _legend_width(panel.lines) if beside else 0
    x0, y0 = left + _MARGIN_LEFT, top + _TITLE
    x1, y1 = left + width - _MARGIN_RIGHT - legend_width, top + height - _MARGIN_BOTTOM
    (a, b), (c, d) = panel.xlim, panel.ylim

    def px(v: np.ndarray) -> np.ndarray:
        return x0 + (np.asarray(v, np.float64) - a) / (b - a) * (x1 - x0)

    def py(v: np.ndarray) -> np.ndarray:
        return y1 - (np.asarray(v, np.float64) - c) / (d - c) * (y1 - y0)

    out = [f'<g><clipPath id="c{left}_{top}"><rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}"/></clipPath>']
    if panel.title:
        out.append(_text((x0 + x1) / 2, top + 17, panel.title, 13, anchor="middle"))
    for t in ticks(a, b, panel.integer_x):
        x = float(px(t))
        out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y1}" stroke="#ddd"/>')
        out.append(_text(x, y1 + 14, _tick_label(t), 10, anchor="middle"))
    for t in ticks(c, d, panel.integer_y):
        y = float(py(t))
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(_text(x0 - 4, y + 3.5, _tick_label(t), 10, anchor="end"))
    out.append(f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" fill="none" stroke="#444"/>')
    out.append(_text((x0 + x1) / 2, y1 + 32, panel.xlabel, 11, anchor="middle"))
    out.append(_text(left + 13, (y0 + y1) / 2, panel.ylabel, 11, anchor="middle", rotate=True))
    for line in panel.lines:
        xs, ys = simplify(px(line.x), py(line.y))
        points = " ".join(f"{x:g},{y:g}" for x, y in zip(xs.tolist(), ys.tolist(), strict=True))
        out.append(
            f'<polyline points="{points}" fill="none" stroke="{line.colour}" stroke-width="1.8" '
            f'clip-path="url(#c{left}_{top})"/>'
        )
    out.append(_legend(panel.lines, (x1 + 10, y0 + 4) if beside else (x0 + 6, y1 - 6 - 14 * len(panel.lines))))
    out.append("</g>")
    return "\n".join(out)


def _legend(lines: Sequence[Line], at: tuple[float, float]) -> str:
    x, y = at
    out = []
    for i, line in enumerate(lines):
        row = y + 14 * i + 7
        sample = f'x1="{x:.1f}" y1="{row:.1f}" x2="{x + 18:.1f}" y2="{row:.1f}"'
        out.append(f'<line {sample} stroke="{line.colour}" stroke-width="2"/>')
        out.append(_text(x + 23, row + 3.5, line.label, 10))
    return "\n".join(out)


def _legend_width(lines: Sequence[Line]) -> int:
    return 34 + math.ceil(max((len(line.label) for line in lines), default=0) * 10 * _CHAR_WIDTH)


def _tick_label(value: float) -> str:
    return f"{value:.10g}" if abs(value) > 1e-12 else "0"


def _text(x: float, y: float, text: str, size: int, anchor: str = "start", rotate: bool = False) -> str:
    turn = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{turn}>{escape(text)}</text>'
