"""The report's charts as SVG written by hand: the lines matplotlib drew (post steps, stairs), round
ticks, vertices thinned in pixel space without changing what is drawn, well-formed and escaped XML."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from harness.report.svg import Line, Panel, chart, simplify, stairs, step_post, ticks

SVG = "{http://www.w3.org/2000/svg}"


def test_post_steps_hold_each_value_until_the_next_x():
    x, y = step_post(np.array([0.0, 0.5, 1.0]), np.array([1.0, 0.8, 0.6]))
    assert x.tolist() == [0.0, 0.5, 0.5, 1.0, 1.0]
    assert y.tolist() == [1.0, 1.0, 0.8, 0.8, 0.6]
    assert [a.tolist() for a in step_post(np.zeros(0), np.zeros(0))] == [[], []]


def test_stairs_rise_from_the_baseline_cross_each_bin_and_fall_back():
    x, y = stairs(np.array([3, 5]), np.array([0.0, 1.0, 2.0]))
    assert x.tolist() == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    assert y.tolist() == [0.0, 3.0, 3.0, 5.0, 5.0, 0.0]


@pytest.mark.parametrize(
    ("low", "high", "integer", "expected"),
    [
        (0, 1.02, False, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (0, 1, False, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (-0.75, 8.75, True, [0, 2, 4, 6, 8]),
        (0, 2.1, True, [0, 1, 2]),
        (0, 340, True, [0, 100, 200, 300]),
        (0, 0.3, False, [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]),
    ],
)
def test_ticks_are_round_and_inside_the_axis(low, high, integer, expected):
    assert ticks(low, high, integer) == pytest.approx(expected)


def _column_extents(x: np.ndarray, y: np.ndarray) -> dict[int, tuple[float, float]]:
    columns = np.floor(x).astype(int)
    return {int(c): (float(y[columns == c].min()), float(y[columns == c].max())) for c in np.unique(columns)}


def test_a_curve_of_many_detections_keeps_a_few_vertices_per_pixel_column_and_its_shape():
    rng = np.random.default_rng(3)
    recall = np.sort(rng.random(50_000))
    precision = np.clip(1 - recall + rng.normal(0, 0.05, len(recall)), 0, 1)
    px, py = step_post(recall * 300 + 50, 320 - precision * 300)
    x, y = simplify(px, py)
    assert len(x) <= 4 * 301 + 2 < len(px)
    assert (x[0], y[0], x[-1], y[-1]) == tuple(np.round([px[0], py[0], px[-1], py[-1]], 1))
    assert _column_extents(x, y) == _column_extents(np.round(px, 1), np.round(py, 1))
    assert np.all(np.diff(x) >= 0)


def test_a_run_at_one_height_keeps_its_ends_only():
    x, y = simplify(np.array([0.0, 10.0, 20.0, 30.0, 30.0]), np.array([5.0, 5.0, 5.0, 5.0, 9.0]))
    assert list(zip(x.tolist(), y.tolist(), strict=True)) == [(0.0, 5.0), (30.0, 5.0), (30.0, 9.0)]


def test_a_chart_is_well_formed_svg_with_one_line_per_path_and_its_text_escaped():
    line = Line(np.array([0.0, 1.0]), np.array([0.0, 1.0]), "#1f77b4", 'a <b> & "c"')
    panels = [Panel(f"class {k}", "recall", "precision", (0, 1.02), (0, 1.02), [line, line]) for k in range(4)]
    root = ET.fromstring(chart(panels, columns=3, panel_size=(420, 360)))
    assert (root.get("width"), root.get("height")) == ("1260", "720")  # 3 columns, 2 rows
    assert len(root.findall(f".//{SVG}polyline")) == 8
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert texts.count('a <b> & "c"') == 8 and "class 3" in texts


def test_a_line_reaching_past_its_axis_is_clipped_to_the_plot():
    line = Line(np.array([0.0, 2.0]), np.array([0.0, 5.0]), "#d62728", "up")
    root = ET.fromstring(chart([Panel("", "x", "y", (0, 1), (0, 1), [line])], columns=1, panel_size=(300, 200)))
    (polyline,) = root.iter(f"{SVG}polyline")
    clip = polyline.get("clip-path")[len("url(#") : -1]
    assert root.find(f".//{SVG}clipPath[@id='{clip}']") is not None
