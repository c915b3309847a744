"""HailoRT NMS frames <-> Detections: round trips, agreement with the struct reference, bad input."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.detections import Detections
from harness.core.errors import MalformedBufferError, SpecError
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec
from harness.formats import nms_buffer as nb

from support import encoders
from support.reference import nms_buffer as ref

# ------------------------------------------------------------------------------------------- builders


def spec_for(nms: NmsShape, order: FormatOrder = FormatOrder.NMS_BY_CLASS) -> OutputSpec:
    return OutputSpec(
        name="yolov8n/yolov8_nms_postprocess",
        shape=(nms.number_of_classes, 5, nms.max_bboxes_per_class),
        format_order=order,
        format_type=FormatType.UINT8 if order is FormatOrder.NMS_BY_SCORE else FormatType.FLOAT32,
        nms=nms,
    )


@st.composite
def nms_shapes(draw: st.DrawFn) -> NmsShape:
    classes = draw(st.integers(1, 6))
    per_class = draw(st.integers(1, 5))
    total = draw(st.one_of(st.just(0), st.integers(1, classes * per_class)))
    return NmsShape(classes, per_class, total)


input_sizes = st.tuples(st.integers(1, 1920), st.integers(1, 1920))
coordinates = st.floats(-0.25, 1.25, width=32)


@st.composite
def records_for(draw: st.DrawFn, nms: NmsShape) -> list[ref.BBox]:
    """Reference records that fit both BY_CLASS and BY_SCORE of ``nms``; scores unique and non-zero."""
    counts = [draw(st.integers(0, nms.max_bboxes_per_class)) for _ in range(nms.number_of_classes)]
    while sum(counts) > nms.max_total:
        counts[max(i for i, c in enumerate(counts) if c)] -= 1
    n = sum(counts)
    scores = draw(st.lists(st.floats(2**-10, 1.0, width=32), min_size=n, max_size=n, unique=True))
    boxes = draw(st.lists(st.tuples(*[coordinates] * 4), min_size=n, max_size=n))
    class_ids = [c for c, count in enumerate(counts) for _ in range(count)]
    return [(c, *box, s) for c, box, s in zip(class_ids, boxes, scores, strict=True)]


def detections_of(records: list[ref.BBox], input_hw: tuple[int, int]) -> Detections:
    """Reference records -> Detections with plain float32 arithmetic, independent of the codec."""
    h, w = np.float32(input_hw[0]), np.float32(input_hw[1])
    rows = [
        [np.float32(x0) * w, np.float32(y0) * h, np.float32(x1) * w, np.float32(y1) * h]
        for _, y0, x0, y1, x1, _ in records
    ]
    return Detections(np.array(rows, np.float32), [r[5] for r in records], [r[0] for r in records])


def assert_same(a: Detections, b: Detections, exact: bool = True) -> None:
    a, b = a.sorted(), b.sorted()
    np.testing.assert_array_equal(a.class_ids, b.class_ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    if exact:
        np.testing.assert_array_equal(a.boxes, b.boxes)
    else:  # pixel -> normalised -> pixel in float32 may move a coordinate by an ulp
        np.testing.assert_allclose(a.boxes, b.boxes, rtol=1e-6, atol=1e-30)


scenes = nms_shapes().flatmap(lambda nms: st.tuples(st.just(nms), records_for(nms), input_sizes))

# ------------------------------------------------------------------------------------------- round trips


@given(scenes)
def test_by_class_buffer_round_trips_detections(scene: tuple) -> None:
    nms, records, hw = scene
    dets, spec = detections_of(records, hw), spec_for(nms)
    buffer = nb.encode_nms_by_class(dets, spec, hw)
    assert buffer.dtype == np.float32 and buffer.shape == (nb.by_class_size(nms),)
    assert_same(nb.decode_nms_by_class(buffer, spec, hw), dets, exact=False)


@given(scenes)
def test_by_score_buffer_round_trips_detections(scene: tuple) -> None:
    nms, records, hw = scene
    dets, spec = detections_of(records, hw), spec_for(nms, FormatOrder.NMS_BY_SCORE)
    buffer = encoders.encode_nms_by_score(dets, spec, hw)
    assert len(buffer) == 2 + 22 * nms.max_total
    assert_same(nb.decode_nms_by_score(buffer, spec, hw), dets, exact=False)


@given(scenes)
def test_tf_array_round_trips_detections(scene: tuple) -> None:
    nms, records, hw = scene
    dets, spec = detections_of(records, hw), spec_for(nms)
    array = encoders.encode_tf_nms(dets, spec, hw)
    assert array.shape == (nms.number_of_classes, 5, nms.max_bboxes_per_class)
    assert_same(nb.decode_tf_nms(array, spec, hw), dets, exact=False)


@given(scenes)
def test_class_list_round_trips_detections(scene: tuple) -> None:
    nms, records, hw = scene
    dets, spec = detections_of(records, hw), spec_for(nms)
    per_class = encoders.encode_class_list(dets, spec, hw)
    assert [len(a) for a in per_class] == np.bincount(dets.class_ids, minlength=nms.number_of_classes).tolist()
    assert_same(nb.decode_class_list(per_class, spec, hw), dets, exact=False)


@given(scenes)
def test_detection_list_round_trips_detections(scene: tuple) -> None:
    nms, records, hw = scene
    dets, spec = detections_of(records, hw), spec_for(nms, FormatOrder.NMS_BY_SCORE)
    listed = encoders.encode_detection_list(dets, spec, hw)
    assert [d.score for d in listed] == sorted((d.score for d in listed), reverse=True)
    assert_same(nb.decode_detection_list(listed, spec, hw), dets, exact=False)


@given(scenes)
def test_every_form_of_the_same_detections_decodes_to_the_same_detections(scene: tuple) -> None:
    nms, records, hw = scene
    dets = detections_of(records, hw)
    by_class, by_score = spec_for(nms), spec_for(nms, FormatOrder.NMS_BY_SCORE)
    forms = [
        (nb.encode_nms_by_class(dets, by_class, hw), by_class),
        (nb.encode_nms_by_class(dets, by_class, hw).tobytes(), by_class),
        (encoders.encode_tf_nms(dets, by_class, hw), by_class),
        (encoders.encode_class_list(dets, by_class, hw), by_class),
        (encoders.encode_nms_by_score(dets, by_score, hw), by_score),
        (np.frombuffer(encoders.encode_nms_by_score(dets, by_score, hw), np.uint8), by_score),
        (encoders.encode_detection_list(dets, by_score, hw), by_score),
    ]
    decoded = [nb.decode_nms(output, spec, hw) for output, spec in forms]
    for other in decoded[1:]:
        assert_same(other, decoded[0])


# ------------------------------------------------------------------------------------------- reference


@given(scenes)
def test_fast_by_class_decoder_equals_struct_reference(scene: tuple) -> None:
    nms, records, hw = scene
    raw = ref.write_by_class(records, nms.number_of_classes, nms.max_bboxes_per_class)
    fast = nb.decode_nms_by_class(np.frombuffer(raw, np.float32), spec_for(nms), hw)
    parsed = ref.read_by_class(raw, nms.number_of_classes, nms.max_bboxes_per_class)
    assert_same(fast, detections_of(parsed, hw))


@given(scenes)
def test_fast_by_score_decoder_equals_struct_reference(scene: tuple) -> None:
    nms, records, hw = scene
    raw = ref.write_by_score(records, nms.max_total)
    fast = nb.decode_nms_by_score(raw, spec_for(nms, FormatOrder.NMS_BY_SCORE), hw)
    assert_same(fast, detections_of(ref.read_by_score(raw, nms.number_of_classes, nms.max_total), hw))


powers_of_two = st.tuples(st.sampled_from([1, 2, 64, 256, 512, 1024]), st.sampled_from([1, 4, 128, 512, 2048]))


@given(nms_shapes().flatmap(lambda nms: st.tuples(st.just(nms), records_for(nms), powers_of_two)))
def test_fast_encoders_write_the_struct_reference_bytes_on_power_of_two_inputs(scene: tuple) -> None:
    nms, records, hw = scene  # power-of-two sizes make pixel <-> normalised exact in float32
    dets = detections_of(records, hw)
    by_class = nb.encode_nms_by_class(dets, spec_for(nms), hw).tobytes()
    assert by_class == ref.write_by_class(records, nms.number_of_classes, nms.max_bboxes_per_class)
    by_score = encoders.encode_nms_by_score(dets, spec_for(nms, FormatOrder.NMS_BY_SCORE), hw)
    assert by_score == ref.write_by_score(records, nms.max_total)


# ------------------------------------------------------------------------------------------- real size

COCO = NmsShape(number_of_classes=80, max_bboxes_per_class=100)


def test_real_size_by_class_buffer_is_40080_floats_and_parses_to_its_last_float() -> None:
    spec, hw = spec_for(COCO), (640, 640)
    assert nb.by_class_size(COCO) == 40_080
    rng = np.random.default_rng(0)
    n = 80 * 100
    dets = Detections(
        rng.uniform(0, 640, (n, 4)), rng.permutation(n).astype(np.float32) / n + 1e-4, np.repeat(np.arange(80), 100)
    )
    buffer = nb.encode_nms_by_class(dets, spec, hw)
    assert buffer.nbytes == 160_320
    assert buffer[-1] != 0  # every class full: the last float is the last class's lowest score
    assert_same(nb.decode_nms(buffer, spec, hw), dets, exact=False)
    raw = buffer.tobytes()
    parsed = ref.read_by_class(raw, 80, 100)
    assert len(parsed) == n
    assert_same(nb.decode_nms(raw, spec, hw), detections_of(parsed, hw))


def test_real_size_by_score_buffer_is_176002_bytes() -> None:
    spec, hw = spec_for(COCO, FormatOrder.NMS_BY_SCORE), (640, 640)
    assert nb.by_score_size(COCO) == 2 + 22 * 8000 == 176_002
    dets = Detections([[10, 20, 30, 40], [1, 2, 3, 4]], [0.9, 0.5], [79, 0])
    buffer = encoders.encode_nms_by_score(dets, spec, hw)
    assert len(buffer) == 176_002
    assert buffer[:2] == b"\x02\x00"
    assert_same(nb.decode_nms(np.frombuffer(buffer, np.uint8), spec, hw), dets, exact=False)


def test_by_class_decoder_ignores_whatever_lies_after_the_last_class() -> None:
    spec, hw = spec_for(COCO), (640, 640)
    dets = Detections([[64, 32, 128, 96]], [0.75], [3])
    buffer = nb.encode_nms_by_class(dets, spec, hw)
    buffer[80 + 5 :] = np.nan  # HailoRT writes counts and records only; the rest of the user buffer is stale
    decoded = nb.decode_nms_by_class(buffer, spec, hw)
    assert decoded.class_ids.tolist() == [3]
    np.testing.assert_allclose(decoded.boxes, [[64, 32, 128, 96]], rtol=1e-6)


def test_records_are_y_first_and_normalised_to_the_model_input() -> None:
    nms = NmsShape(2, 1)
    buffer = np.array([0, 1, 0.25, 0.5, 0.75, 1.0, 0.9, 0, 0, 0, 0, 0], np.float32)  # class 0: none; class 1: one
    decoded = nb.decode_nms_by_class(buffer, spec_for(nms), (480, 640))
    np.testing.assert_allclose(decoded.boxes, [[320, 120, 640, 360]])
    assert decoded.class_ids.tolist() == [1] and decoded.scores.tolist() == [np.float32(0.9)]


# ------------------------------------------------------------------------------------------- malformed

SMALL = NmsShape(3, 4, 5)
HW = (640, 640)


def small_by_class() -> np.ndarray:
    dets = Detections([[0, 0, 10, 10], [5, 5, 20, 20], [1, 1, 2, 2]], [0.9, 0.8, 0.7], [1, 1, 2])
    return nb.encode_nms_by_class(dets, spec_for(SMALL), HW)


def with_value(index: int, value: float) -> np.ndarray:
    buffer = small_by_class()
    buffer[index] = value
    return buffer


# class 0 count at 0; class 1 count at 1, records at 2..11; class 2 count at 12, record at 13..17
BY_CLASS_CASES = [
    (small_by_class()[:-1], r"buffer size: expected 63 float32 .* found 62 float32"),
    (small_by_class().astype(np.float64), r"buffer dtype: expected float32, found float64"),
    (small_by_class()[None], r"buffer shape: expected a flat buffer of one frame, found \(1, 63\)"),
    ("not a buffer", r"buffer type"),
    (with_value(0, 5), r"bbox_count of class 0 \(float 0\): expected an integer in \[0, max_bboxes_per_class = 4\]"),
    (with_value(12, -1), r"bbox_count of class 2 \(float 12\).*found -1"),
    (with_value(12, 1.5), r"bbox_count of class 2 .*found 1.5"),
    (with_value(1, np.nan), r"bbox_count of class 1 .*found nan"),
    (with_value(6, np.nan), r"record 0 of class 1 field score: expected a finite float, found nan"),
    (with_value(8, np.inf), r"record 1 of class 1 field x_min: expected a finite float, found inf"),
]


@pytest.mark.parametrize(("buffer", "message"), BY_CLASS_CASES)
def test_malformed_by_class_buffer_raises_naming_output_and_field(buffer: object, message: str) -> None:
    with pytest.raises(MalformedBufferError, match=message) as caught:
        nb.decode_nms(buffer, spec_for(SMALL), HW)
    assert "'yolov8n/yolov8_nms_postprocess'" in str(caught.value)


@given(st.integers(0, 2), st.one_of(st.integers(5, 10**6), st.integers(-(10**6), -1)))
def test_any_bbox_count_outside_its_range_raises_naming_its_class(k: int, count: int) -> None:
    buffer = np.zeros(nb.by_class_size(SMALL), np.float32)
    buffer[k] = count  # all earlier classes empty, so class k's count sits at float k
    with pytest.raises(MalformedBufferError, match=rf"bbox_count of class {k} "):
        nb.decode_nms_by_class(buffer, spec_for(SMALL), HW)


def small_by_score(count: int | None = None, class_id: int | None = None, nan_at: int | None = None) -> bytes:
    dets = Detections([[0, 0, 10, 10], [5, 5, 20, 20]], [0.9, 0.8], [1, 2])
    raw = bytearray(encoders.encode_nms_by_score(dets, spec_for(SMALL, FormatOrder.NMS_BY_SCORE), HW))
    if count is not None:
        raw[0:2] = count.to_bytes(2, "little")
    if class_id is not None:
        raw[2 + 22 + 20 : 2 + 22 + 22] = class_id.to_bytes(2, "little")
    if nan_at is not None:
        raw[2 + nan_at * 4 : 2 + nan_at * 4 + 4] = np.float32(np.nan).tobytes()
    return bytes(raw)


BY_SCORE_CASES = [
    (small_by_score()[:-1], r"buffer size: expected 112 bytes .* found 111"),
    (np.zeros(28, np.float32), r"buffer dtype: expected uint8, found float32"),
    (small_by_score(count=6), r"count: expected at most max_bboxes_total = 5, found 6"),
    (small_by_score(class_id=3), r"detection 1 class_id: expected a class id below 3, found 3"),
    (small_by_score(nan_at=2), r"detection 0 field y_max: expected a finite float, found nan"),
]


@pytest.mark.parametrize(("buffer", "message"), BY_SCORE_CASES)
def test_malformed_by_score_buffer_raises_naming_output_and_field(buffer: object, message: str) -> None:
    with pytest.raises(MalformedBufferError, match=message):
        nb.decode_nms(buffer, spec_for(SMALL, FormatOrder.NMS_BY_SCORE), HW)


def small_tf() -> np.ndarray:
    dets = Detections([[0, 0, 10, 10], [5, 5, 20, 20]], [0.9, 0.8], [0, 0])
    return encoders.encode_tf_nms(dets, spec_for(SMALL), HW)


def tf_with(index: tuple[int, int, int], value: float) -> np.ndarray:
    array = small_tf()
    array[index] = value
    return array


TF_CASES = [
    (small_tf()[None], r"tf_nms shape: expected \(3, 5, 4\) .* found \(1, 3, 5, 4\)"),
    (tf_with((0, 4, 0), 0.0), r"class 0 slots: expected detections first, then zero padding, found \[0, 1, 0, 0\]"),
    (tf_with((1, 2, 3), 0.5), r"class 1 padding slot 3: expected all-zero record"),
    (tf_with((0, 1, 1), np.nan), r"class 0 slot 1 field x_min: expected a finite float"),
]


@pytest.mark.parametrize(("array", "message"), TF_CASES)
def test_malformed_tf_array_raises_naming_output_and_field(array: np.ndarray, message: str) -> None:
    with pytest.raises(MalformedBufferError, match=message):
        nb.decode_tf_nms(array, spec_for(SMALL), HW)


def list_with(k: int, array: np.ndarray) -> list[np.ndarray]:
    per_class = [np.zeros((0, 5), np.float64) for _ in range(3)]  # hailo_platform's empty classes are float64
    per_class[k] = array
    return per_class


CLASS_LIST_CASES = [
    ([np.zeros((0, 5))] * 2, r"class list length: expected 3, found 2"),
    (list_with(1, np.zeros((2, 4))), r"class 1 array shape: expected \(n, 5\), found \(2, 4\)"),
    (list_with(0, np.full((5, 5), 0.5)), r"class 0 detections: expected at most max_bboxes_per_class = 4, found 5"),
    (list_with(2, np.array([[0.1, 0.1, 0.2, np.inf, 0.5]])), r"row 0 of class 2 field x_max: expected a finite"),
]


@pytest.mark.parametrize(("per_class", "message"), CLASS_LIST_CASES)
def test_malformed_class_list_raises_naming_output_and_field(per_class: list, message: str) -> None:
    with pytest.raises(MalformedBufferError, match=message):
        nb.decode_nms(per_class, spec_for(SMALL), HW)


def test_detection_list_with_a_class_id_out_of_range_raises_naming_it() -> None:
    listed = [nb.NmsDetection(0.1, 0.1, 0.2, 0.2, 0.9, 0), nb.NmsDetection(0.1, 0.1, 0.2, 0.2, 0.8, 7)]
    with pytest.raises(MalformedBufferError, match=r"detection 1 class_id: expected a class id in \[0, 3\), found 7"):
        nb.decode_nms(listed, spec_for(SMALL, FormatOrder.NMS_BY_SCORE), HW)


def test_detection_list_longer_than_max_total_raises() -> None:
    listed = [nb.NmsDetection(0.1, 0.1, 0.2, 0.2, 0.9, 0)] * 6
    with pytest.raises(MalformedBufferError, match=r"detection count: expected at most max_bboxes_total = 5"):
        nb.decode_nms(listed, spec_for(SMALL, FormatOrder.NMS_BY_SCORE), HW)


def test_an_output_that_is_not_a_host_nms_order_is_refused() -> None:
    on_chip = spec_for(SMALL, FormatOrder.NMS_ON_CHIP)
    with pytest.raises(SpecError, match=r"NMS_ON_CHIP is not a host NMS order"):
        nb.decode_nms(small_by_class(), on_chip, HW)


ENCODE_CASES = [
    (Detections([[0, 0, 1, 1]], [0.5], [3]), nb.encode_nms_by_class, r"class ids must lie in \[0, 3\), found 3..3"),
    (Detections([[0, 0, 1, 1]] * 5, [0.5] * 5, [0] * 5), encoders.encode_class_list, r"class 0 has 5 detections"),
    (
        Detections([[0, 0, 1, 1]] * 6, [0.5] * 6, [0, 0, 1, 1, 2, 2]),
        encoders.encode_nms_by_score,
        r"6 detections, at most",
    ),
    (Detections([[0, 0, 1, 1]], [0.0], [0]), encoders.encode_tf_nms, r"a score of 0 marks padding"),
]


@pytest.mark.parametrize(("dets", "encode", "message"), ENCODE_CASES)
def test_detections_that_do_not_fit_the_nms_shape_are_refused_by_the_encoders(
    dets: Detections, encode: Callable[[Detections, OutputSpec, tuple[int, int]], object], message: str
) -> None:
    with pytest.raises(SpecError, match=message):
        encode(dets, spec_for(SMALL), HW)
