"""A gate's metric across its baseline's blessed history, as a small inline SVG chart written by hand
(no matplotlib: a few dozen points need a polyline, not a plotting library).

The blessings are points joined by a line, oldest on the left, each labelled with its release (or its
date where it named none); the run being signed off is the last point, apart from them (dashed, green
where its gate passed, red where it failed). Every text is escaped; nothing is fetched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from harness.report.blocks import Spark, Trend
from harness.report.svg import ticks

WIDTH, HEIGHT = 440, 130
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 16, 10, 26
_LABEL_WIDTH = 64  # px a point's label needs before the next one is written
_BLESSED, _PASSED, _FAILED = "#3465a4", "#2e7d32", "#c62828"


def trend_svg(trend: Trend) -> str:
    """``trend`` as an ``<svg>`` element: the blessed values and this run's, on one value axis."""
    points = [(label, value) for label, value in trend.blessed if value is not None]
    run_label, run_value = trend.run if trend.run is not None else ("", None)
    values = [v for _, v in points] + ([run_value] if run_value is not None else [])
    if not values:
        return ""
    low, high = _span(values)
    count = len(points) + (run_value is not None)
    width, height = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM

    def x(i: int) -> float:
        return _LEFT + (width * (i + 0.5) / count)

    def y(value: float) -> float:
        return _TOP + height * (high - value) / (high - low)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{escape(trend.title)}" style="font:11px system-ui,sans-serif">',
        f"<title>{escape(trend.title)}</title>",
        f'<rect x="{_LEFT}" y="{_TOP}" width="{width}" height="{height}" fill="none" stroke="#ccc"/>',
    ]
    marks = [float(t) for t in ticks(low, high, target=3)]
    for value in marks:
        parts.append(f'<line x1="{_LEFT}" y1="{y(value):.1f}" x2="{_LEFT + width}" y2="{y(value):.1f}" stroke="#eee"/>')
        parts.append(
            f'<text x="{_LEFT - 4}" y="{y(value) + 4:.1f}" text-anchor="end">{tick_label(value, marks)}</text>'
        )
    xy = [(x(i), y(v)) for i, (_, v) in enumerate(points)]
    if len(xy) > 1:
        line = " ".join(f"{px:.1f},{py:.1f}" for px, py in xy)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{_BLESSED}" stroke-width="1.5"/>')
    parts += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{_BLESSED}"/>' for px, py in xy]
    labels = [label for label, _ in points]
    if run_value is not None:
        rx, ry = x(len(points)), y(run_value)
        colour = _PASSED if trend.passed else _FAILED
        if xy:
            px, py = xy[-1]
            dashed = f'stroke="{colour}" stroke-dasharray="4 3"'
            parts.append(f'<line x1="{px:.1f}" y1="{py:.1f}" x2="{rx:.1f}" y2="{ry:.1f}" {dashed}/>')
        parts.append(f'<circle cx="{rx:.1f}" cy="{ry:.1f}" r="4.5" fill="{colour}"/>')
        labels.append(run_label)
    step = max(1, -(-_LABEL_WIDTH * count // width))  # every step-th label, so that none overlaps the next
    for i, label in enumerate(labels):
        if (i % step == 0 and count - 1 - i >= step) or i == count - 1:  # the last (this run) always
            shown = label if len(label) <= 12 else label[:11] + "\u2026"
            parts.append(
                f'<text x="{x(i):.1f}" y="{HEIGHT - _BOTTOM + 16}" text-anchor="middle">{escape(shown)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _span(values: list[float]) -> tuple[float, float]:
    """The value axis: the values' range and a margin of at least a hundredth of their size (of 1
    for shares), so that values equal to the baseline's 6 decimals draw a flat line, not a slope."""
    low, high = min(values), max(values)
    margin = max((high - low) * 0.15, 0.01 * max(abs(low), abs(high), 1.0))
    return low - margin, high + margin


def tick_label(value: float, marks: Sequence[float]) -> str:
    """A tick's value with as many decimals as the ticks' step needs, never more (0.58, not 0.5800001)."""
    step = abs(marks[1] - marks[0]) if len(marks) > 1 else abs(value) or 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    shown = f"{value:.{decimals}f}"
    return "0" if float(shown) == 0 else shown


SPARK_WIDTH, SPARK_HEIGHT = 96, 22


def spark_svg(spark: Spark) -> str:
    """``spark`` as a small ``<svg>`` for a table's cell: the blessed values joined by a line, this run's
    a dot in its gate's colour, on the values' own span (no axis: the cell beside it has the numbers)."""
    blessed = [(i, v) for i, v in enumerate(spark.blessed) if v is not None]
    count = len(spark.blessed) + 1
    values = [v for _, v in blessed] + ([spark.run] if spark.run is not None else [])
    if not values:
        return ""
    low, high = _span(values)

    def x(i: int) -> float:
        return 4 + (SPARK_WIDTH - 8) * (i / max(count - 1, 1))

    def y(value: float) -> float:
        return 3 + (SPARK_HEIGHT - 6) * (high - value) / (high - low)

    title = ", ".join("-" if v is None else f"{v:.4g}" for v in spark.blessed)
    now = "n/a" if spark.run is None else f"{spark.run:.4g}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{SPARK_WIDTH}" height="{SPARK_HEIGHT}" '
        f'viewBox="0 0 {SPARK_WIDTH} {SPARK_HEIGHT}" role="img" aria-label="blessed {title}; this run {now}">',
        f"<title>blessed {escape(title)}; this run {escape(now)}</title>",
    ]
    xy = [(x(i), y(v)) for i, v in blessed]
    if len(xy) > 1:
        line = " ".join(f"{px:.1f},{py:.1f}" for px, py in xy)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{_BLESSED}" stroke-width="1.5"/>')
    parts += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2" fill="{_BLESSED}"/>' for px, py in xy]
    if spark.run is not None:
        colour = _PASSED if spark.passed else _FAILED
        rx, ry = x(count - 1), y(spark.run)
        if xy:
            px, py = xy[-1]
            ends = f'x1="{px:.1f}" y1="{py:.1f}" x2="{rx:.1f}" y2="{ry:.1f}"'
            parts.append(f'<line {ends} stroke="{colour}" stroke-dasharray="3 2"/>')
        parts.append(f'<circle cx="{rx:.1f}" cy="{ry:.1f}" r="3" fill="{colour}"/>')
    parts.append("</svg>")
    return "".join(parts)
