"""Properties of the two NMS modes, and the fast code against the loop reference."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from harness.core.detections import Detections
from harness.core.settings import DecodeConfig, NmsMode
from harness.decode import nms
from harness.decode.nms import above, at_least, box_iou, nms_hailort, nms_ultralytics

from support.reference.decode import reference_nms_hailort, reference_nms_ultralytics

REFERENCE = {NmsMode.HAILORT: reference_nms_hailort, NmsMode.ULTRALYTICS: reference_nms_ultralytics}


@st.composite
def candidate_sets(
    draw, max_anchors: int = 40, max_classes: int = 4, lattice: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Boxes on a coarse lattice (so that equal boxes, exact overlaps and equal scores occur) or
    continuous; scores from a few levels (ties) or continuous."""
    anchors = draw(st.integers(0, max_anchors))
    nc = draw(st.integers(1, max_classes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()) if lattice is None else lattice:
        xy = rng.integers(0, 12, (anchors, 2)) * 8.0
        wh = rng.integers(1, 8, (anchors, 2)) * 8.0
    else:
        xy = rng.uniform(-50, 600, (anchors, 2))
        wh = rng.uniform(0, 200, (anchors, 2))
    boxes = np.concatenate([xy, xy + wh], axis=1).astype(np.float32)
    if draw(st.booleans()):
        scores = rng.integers(0, 9, (anchors, nc)) / 8.0
    else:
        scores = rng.uniform(0, 1, (anchors, nc))
    return boxes, scores.astype(np.float32)


@st.composite
def configs(draw, mode: NmsMode) -> DecodeConfig:
    return DecodeConfig(
        input_hw=(640, 640),
        score_threshold=draw(st.sampled_from([0.0, 0.001, 0.2, 0.25, 0.5]) | st.floats(0, 1)),
        iou_threshold=draw(st.sampled_from([0.3, 0.45, 0.5, 0.7]) | st.floats(0.05, 1)),
        max_per_class=draw(st.sampled_from([100]) | st.integers(0, 6)),
        max_total=draw(st.sampled_from([300]) | st.integers(0, 10)),
        mode=mode,
        multi_label=draw(st.booleans()),
        max_candidates=draw(st.sampled_from([30000]) | st.integers(1, 30)),
    )


def assert_same(a: Detections, b: Detections) -> None:
    np.testing.assert_array_equal(a.class_ids, b.class_ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.boxes, b.boxes)


# The greedy step: the IoU matrix with bit masks for a few candidates, onnxruntime's kernel past them, and
# the numpy greedy it leaves the rest to, which settles a class in blocks of candidates (one block, and
# blocks of 3: many blocks). Each is made to take every candidate set.
ENGINES = pytest.mark.parametrize(
    ("compiled", "nms_block"),
    [("matrix", nms.NMS_BLOCK), (True, nms.NMS_BLOCK), (False, nms.NMS_BLOCK), (False, 3)],
    ids=["matrix", "onnxruntime", "numpy-one-block", "numpy-blocks-of-3"],
)


def engine(patch: pytest.MonkeyPatch, compiled: bool | str, nms_block: int = nms.NMS_BLOCK) -> None:
    """The greedy step the NMS runs within ``patch``: the matrix's for every set size where ``compiled`` is
    ``"matrix"``, else onnxruntime's (``compiled``) or numpy's (in blocks of ``nms_block``) for every size."""
    patch.setattr(nms, "NMS_BLOCK", nms_block)
    patch.setattr(nms, "GREEDY_MATRIX_MAX", 10**9 if compiled == "matrix" else 0)
    if not compiled:
        patch.setattr(nms, "_onnxruntime_threshold", lambda *_: None)


@ENGINES
@given(candidates=candidate_sets(), config=configs(NmsMode.HAILORT))
def test_fast_nms_equals_reference_in_hailort_mode(compiled, nms_block, candidates, config):
    with pytest.MonkeyPatch.context() as patch:
        engine(patch, compiled, nms_block)
        assert_same(nms_hailort(*candidates, config), reference_nms_hailort(*candidates, config))


@ENGINES
@given(candidates=candidate_sets(), config=configs(NmsMode.ULTRALYTICS))
def test_fast_nms_equals_reference_in_ultralytics_mode(compiled, nms_block, candidates, config):
    with pytest.MonkeyPatch.context() as patch:
        engine(patch, compiled, nms_block)
        assert_same(nms_ultralytics(*candidates, config), reference_nms_ultralytics(*candidates, config))


@given(st.sampled_from(list(NmsMode)).flatmap(lambda m: st.tuples(candidate_sets(), configs(m))))
def test_a_class_major_head_seen_transposed_gives_what_its_copy_gives(case):
    (boxes, scores), config = case
    head = np.ascontiguousarray(scores.T)  # (nc, anchors), as an Ultralytics head lies
    assert not head.T.flags.c_contiguous or len(boxes) <= 1 or scores.shape[1] == 1
    assert_same(nms.nms(boxes, head.T, config), nms.nms(boxes, scores, config))


@given(st.sampled_from(list(NmsMode)), st.data())
def test_boxes_onnxruntime_would_read_otherwise_equal_the_reference(mode, data):
    # corners out of order, infinities and NaN (onnxruntime orders corners; box_iou does not), and
    # coordinates past the Ultralytics class offset (shifted boxes of two classes then overlap)
    boxes, scores = data.draw(candidate_sets(max_anchors=12))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    odd = rng.random(boxes.shape) < 0.15
    values = rng.choice(np.array([np.inf, -np.inf, np.nan, -20.0, 9000.0, 3e4], np.float32), boxes.shape)
    boxes = np.where(odd, values, boxes).astype(np.float32)
    config = data.draw(configs(mode))
    reference = REFERENCE[mode]
    with np.errstate(invalid="ignore", over="ignore"):
        assert_same(nms.nms(boxes, scores, config), reference(boxes, scores, config))


@given(st.sampled_from(list(NmsMode)), st.data())
def test_an_iou_exactly_at_the_threshold_suppresses_in_hailort_mode_only(mode, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    first = np.concatenate([xy := rng.uniform(0, 500, 2), xy + rng.uniform(1, 100, 2)]).astype(np.float32)
    second = (first + rng.uniform(-10, 10, 4)).astype(np.float32)
    iou = float(box_iou(first, second))
    assume(0 < iou < 1)
    boxes, scores = _one_anchor_per_box([first, second], [0.9, 0.8])
    for threshold, hailort_keeps, ultralytics_keeps in (
        (iou, 1, 2),  # IoU >= t suppresses, IoU > t does not
        (float(np.nextafter(np.float32(iou), np.float32(2))), 2, 2),  # one float32 above: neither
        (float(np.nextafter(np.float32(iou), np.float32(0))), 1, 1),  # one float32 below: both
    ):
        config = DecodeConfig((640, 640), score_threshold=0.5, iou_threshold=threshold, mode=mode)
        expected = hailort_keeps if mode is NmsMode.HAILORT else ultralytics_keeps
        assert len(nms.nms(boxes, scores, config)) == expected
        assert_same(nms.nms(boxes, scores, config), REFERENCE[mode](boxes, scores, config))


@pytest.mark.parametrize("mode", list(NmsMode))
def test_equal_scores_keep_the_first_anchor_and_cut_in_anchor_order(mode):
    # two equal boxes at one score: the first anchor is kept; three apart at one score, cut at two
    boxes, scores = _one_anchor_per_box(
        [[0, 0, 10, 10], [0, 0, 10, 10], [100, 0, 110, 10], [200, 0, 210, 10], [300, 0, 310, 10]],
        [0.5, 0.5, 0.4, 0.4, 0.4],
    )
    config = DecodeConfig((640, 640), score_threshold=0.1, max_per_class=3, max_total=3, mode=mode)
    kept = nms.nms(boxes, scores, config)
    np.testing.assert_array_equal(kept.boxes[:, 0], [0, 100, 200])
    assert_same(kept, REFERENCE[mode](boxes, scores, config))


@pytest.mark.parametrize("mode", list(NmsMode))
@pytest.mark.parametrize(("anchors", "nc", "threshold"), [(0, 3, 0.2), (5, 3, 0.99), (0, 1, 0.0), (4, 1, 0.99)])
def test_no_candidate_gives_empty_detections(mode, anchors, nc, threshold):
    boxes = np.tile(np.array([[0, 0, 10, 10]], np.float32), (anchors, 1))
    scores = np.full((anchors, nc), 0.5, np.float32)
    kept = nms.nms(boxes, scores, DecodeConfig((640, 640), score_threshold=threshold, mode=mode))
    assert len(kept) == 0 and kept.boxes.shape == (0, 4)


def test_shifted_boxes_of_two_classes_overlap_past_the_class_offset_in_ultralytics_mode():
    # class 1's box moves 7680 px right and down onto class 0's: torchvision's one pass suppresses across them
    boxes = np.array([[7680, 7680, 7690, 7690], [0, 0, 10, 10]], np.float32)
    scores = np.array([[0.9, 0.0], [0.0, 0.8]], np.float32)
    config = DecodeConfig((640, 640), score_threshold=0.1, mode=NmsMode.ULTRALYTICS)
    kept = nms_ultralytics(boxes, scores, config)
    np.testing.assert_array_equal(kept.class_ids, [0])
    assert_same(kept, reference_nms_ultralytics(boxes, scores, config))
    assert len(nms_hailort(boxes, scores, dataclasses.replace(config, mode=NmsMode.HAILORT))) == 2


@pytest.mark.parametrize("mode", list(NmsMode))
@pytest.mark.parametrize(("matrix_max", "compiled_calls"), [(2, 1), (3, 0)])
def test_plain_boxes_past_the_matrix_size_run_the_compiled_greedy(mode, matrix_max, compiled_calls, monkeypatch):
    calls = []
    compiled = nms._greedy_onnxruntime
    monkeypatch.setattr(nms, "_greedy_onnxruntime", lambda *a: calls.append(a) or compiled(*a))
    monkeypatch.setattr(nms, "GREEDY_MATRIX_MAX", matrix_max)
    boxes, scores = _one_anchor_per_box([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], [0.9, 0.8, 0.7])
    kept = nms.nms(boxes, scores, DecodeConfig((640, 640), score_threshold=0.1, iou_threshold=0.5, mode=mode))
    assert len(calls) == compiled_calls
    np.testing.assert_array_equal(kept.scores, np.float32([0.9, 0.7]))


def test_an_nms_of_few_candidates_never_imports_onnxruntime():
    # the first compiled greedy imports onnxruntime and builds its session (milliseconds); a frame with a
    # few candidates, as at a score threshold of 0.25, needs neither
    code = (
        "import sys, numpy as np\n"
        "from harness.core.settings import DecodeConfig, NmsMode\n"
        "from harness.decode.nms import GREEDY_MATRIX_MAX, nms\n"
        "rng = np.random.default_rng(0)\n"
        "xy = rng.uniform(0, 600, (GREEDY_MATRIX_MAX, 2))\n"
        "boxes = np.concatenate([xy, xy + 40], axis=1).astype(np.float32)\n"
        "scores = rng.uniform(0.3, 1, (GREEDY_MATRIX_MAX, 1)).astype(np.float32)\n"
        "for mode in NmsMode:\n"
        "    assert len(nms(boxes, scores, DecodeConfig((640, 640), score_threshold=0.25, mode=mode)))\n"
        "print('onnxruntime' in sys.modules)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.split() == ["False"]


def test_the_nms_model_is_the_one_onnx_helper_builds():
    import onnx
    from onnx import TensorProto, helper

    def value(name: str, kind: int, shape: list) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, kind, shape)

    inputs = ["boxes", "scores", "max_per_class", "iou_threshold", "score_threshold"]
    graph = helper.make_graph(
        [helper.make_node("NonMaxSuppression", inputs, ["selected"])],
        "nms",
        [
            value("boxes", TensorProto.FLOAT, ["classes", "candidates", 4]),
            value("scores", TensorProto.FLOAT, ["classes", 1, "candidates"]),
            value("max_per_class", TensorProto.INT64, [1]),
            value("iou_threshold", TensorProto.FLOAT, [1]),
            value("score_threshold", TensorProto.FLOAT, [1]),
        ],
        [value("selected", TensorProto.INT64, ["selected", 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=7)
    onnx.checker.check_model(model)
    assert onnx.load_from_string(nms._NMS_MODEL) == model


@given(st.sampled_from(list(NmsMode)).flatmap(lambda m: st.tuples(candidate_sets(), configs(m))))
def test_nms_runs_the_nms_of_the_config_mode(case):
    candidates, config = case
    of_mode = nms_hailort if config.mode is NmsMode.HAILORT else nms_ultralytics
    assert_same(nms.nms(*candidates, config), of_mode(*candidates, config))


@given(st.sampled_from(list(NmsMode)).flatmap(lambda m: st.tuples(candidate_sets(), configs(m))))
def test_no_two_kept_boxes_of_the_same_class_overlap_at_the_suppression_threshold(case):
    candidates, config = case
    kept = nms.nms(*candidates, config)
    for k in np.unique(kept.class_ids):
        boxes = kept.boxes[kept.class_ids == k]
        iou = box_iou(boxes[:, None, :], boxes[None, :, :])
        np.fill_diagonal(iou, 0)
        overlapping = (
            at_least(iou, config.iou_threshold) if config.mode is NmsMode.HAILORT else above(iou, config.iou_threshold)
        )
        assert not overlapping.any()


@given(st.sampled_from(list(NmsMode)), st.integers(2, 4), st.data())
def test_cross_class_overlaps_are_kept(mode, nc, data):
    # Ultralytics computes IoU on class-shifted float32 boxes: lattice boxes shift exactly.
    boxes, scores = data.draw(candidate_sets(max_classes=1, lattice=True if mode is NmsMode.ULTRALYTICS else None))
    config = dataclasses.replace(data.draw(configs(mode)), max_total=300, max_candidates=30000, multi_label=True)
    single = nms.nms(boxes, scores, config)
    every_class = nms.nms(boxes, np.repeat(scores, nc, axis=1), config)
    for k in range(nc):
        mine = every_class.select(every_class.class_ids == k)
        assert_same(Detections(mine.boxes, mine.scores, np.zeros(len(mine))).sorted(), single.sorted())


@given(candidate_sets(), configs(NmsMode.HAILORT), st.integers(0, 4))
def test_top_k_per_class_is_respected_in_hailort_mode(candidates, config, k):
    unlimited = nms_hailort(*candidates, dataclasses.replace(config, max_per_class=10**6))
    limited = nms_hailort(*candidates, dataclasses.replace(config, max_per_class=k))
    expected = Detections.concatenate(
        [unlimited.select(np.flatnonzero(unlimited.class_ids == c)[:k]) for c in np.unique(unlimited.class_ids)]
    )
    assert_same(limited, expected)


@given(candidate_sets(), configs(NmsMode.ULTRALYTICS), st.integers(0, 10))
def test_max_total_keeps_the_best_kept_boxes_in_ultralytics_mode(candidates, config, k):
    unlimited = nms_ultralytics(*candidates, dataclasses.replace(config, max_total=10**6))
    limited = nms_ultralytics(*candidates, dataclasses.replace(config, max_total=k))
    assert_same(limited, unlimited.select(np.arange(min(k, len(unlimited)))))


@given(candidate_sets(), configs(NmsMode.HAILORT))
def test_every_dropped_candidate_overlaps_a_better_kept_box_of_its_class(candidates, config):
    boxes, scores = candidates
    config = dataclasses.replace(config, max_per_class=10**6)
    kept = nms_hailort(boxes, scores, config)
    for anchor, k in zip(*np.nonzero(at_least(scores, config.score_threshold) & (scores != 0)), strict=True):
        same = (kept.class_ids == k) & np.all(kept.boxes == boxes[anchor], axis=1) & (kept.scores == scores[anchor, k])
        if same.any():
            continue
        rivals = (kept.class_ids == k) & (kept.scores >= scores[anchor, k])
        assert at_least(box_iou(boxes[anchor], kept.boxes[rivals]), config.iou_threshold).any()


@given(st.sampled_from(list(NmsMode)).flatmap(lambda m: st.tuples(candidate_sets(), configs(m))))
def test_kept_detections_come_in_each_modes_order(case):
    candidates, config = case
    kept = nms.nms(*candidates, config)
    if config.mode is NmsMode.HAILORT:
        key = np.lexsort((-kept.scores, kept.class_ids))
    else:
        key = np.argsort(-kept.scores, kind="stable")
    np.testing.assert_array_equal(key, np.arange(len(kept)))


@given(st.lists(st.floats(0, 1, width=32), min_size=1, max_size=50), st.floats(0, 1))
def test_threshold_comparisons_match_double_precision(values, threshold):
    v = np.array(values, dtype=np.float32)
    np.testing.assert_array_equal(at_least(v, threshold), v.astype(np.float64) >= threshold)
    np.testing.assert_array_equal(above(v, threshold), v.astype(np.float64) > threshold)


def test_iou_has_no_plus_one_and_touching_boxes_do_not_overlap():
    a = np.array([0, 0, 10, 10], np.float32)
    assert box_iou(a, np.array([5, 0, 15, 10], np.float32)) == np.float32(50) / np.float32(150)
    assert box_iou(a, np.array([10, 0, 20, 10], np.float32)) == 0
    assert box_iou(a, a) == 1


def _one_anchor_per_box(boxes, scores) -> tuple[np.ndarray, np.ndarray]:
    return np.array(boxes, np.float32), np.array(scores, np.float32)[:, None]


@pytest.mark.parametrize(("mode", "kept"), [(NmsMode.HAILORT, 2), (NmsMode.ULTRALYTICS, 1)])
def test_hailort_keeps_a_score_equal_to_the_threshold_and_ultralytics_drops_it(mode, kept):
    boxes, scores = _one_anchor_per_box([[0, 0, 10, 10], [100, 100, 110, 110]], [0.9, 0.25])
    config = DecodeConfig((640, 640), score_threshold=0.25, mode=mode)
    assert len(nms.nms(boxes, scores, config)) == kept


@pytest.mark.parametrize(("mode", "kept"), [(NmsMode.HAILORT, 1), (NmsMode.ULTRALYTICS, 2)])
def test_hailort_suppresses_an_iou_equal_to_the_threshold_and_ultralytics_keeps_it(mode, kept):
    boxes, scores = _one_anchor_per_box([[0, 0, 10, 10], [0, 0, 10, 5]], [0.9, 0.8])
    config = DecodeConfig((640, 640), iou_threshold=0.5, mode=mode)
    assert len(nms.nms(boxes, scores, config)) == kept


def test_hailort_never_outputs_a_zero_score():
    boxes, scores = _one_anchor_per_box([[0, 0, 10, 10], [100, 100, 110, 110]], [0.0, 0.3])
    kept = nms_hailort(boxes, scores, DecodeConfig((640, 640), score_threshold=0.0))
    np.testing.assert_array_equal(kept.scores, [np.float32(0.3)])


def test_ultralytics_without_multi_label_keeps_only_each_anchors_best_class():
    boxes = np.array([[0, 0, 10, 10], [100, 100, 110, 110]], np.float32)
    scores = np.array([[0.5, 0.9, 0.6], [0.7, 0.7, 0.1]], np.float32)
    config = DecodeConfig((640, 640), mode=NmsMode.ULTRALYTICS, multi_label=False)
    kept = nms_ultralytics(boxes, scores, config)
    np.testing.assert_array_equal(kept.class_ids, [1, 0])
    assert len(nms_ultralytics(boxes, scores, dataclasses.replace(config, multi_label=True))) == 5


def test_ultralytics_computes_iou_on_class_shifted_boxes():
    # Shifted by 79 * 7680 px, float32 keeps 1/16 px: the second box snaps onto the first.
    boxes = np.array([[0, 0, 10, 10], [0.03, 0, 10.03, 10]], np.float32)
    scores = np.zeros((2, 80), np.float32)
    scores[:, 79] = [0.9, 0.8]
    assert box_iou(boxes[0], boxes[1]) < 0.995
    config = DecodeConfig((640, 640), iou_threshold=0.995, mode=NmsMode.ULTRALYTICS)
    assert len(nms_ultralytics(boxes, scores, config)) == 1
    assert len(reference_nms_ultralytics(boxes, scores, config)) == 1
    assert len(nms_hailort(boxes, scores, dataclasses.replace(config, mode=NmsMode.HAILORT))) == 2


@given(st.integers(0, 40), st.sampled_from([0, 1, 3, 8, 16, 80, 81]), st.floats(0, 1), st.integers(0, 2**32 - 1))
def test_the_rows_holding_a_flag_are_those_of_any(rows, columns, share, seed):
    mask = np.random.default_rng(seed).random((rows, columns)) < share**4  # mostly sparse, as a threshold leaves it
    np.testing.assert_array_equal(nms.rows_holding(mask), np.flatnonzero(mask.any(axis=1)))
