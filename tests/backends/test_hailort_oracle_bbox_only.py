"""HailoRT's bbox-only ops of YOLOv8 and YOLOv5 as the oracle of the harness's (harness.decode.bbox_only):
the buffer :func:`bbox_only_op` writes for a frame of raw heads is the one HailoRT's op writes, its output
spec (:func:`bbox_only_spec`) the vstream info HailoRT gives, and the host's NMS over HailoRT's buffer
(:func:`decode_bbox_only`) the detections HailoRT's own NMS op keeps. Drivers:
tests/support/hailort_oracle/yolov8_bbox_only.cpp and yolov5_bbox_only.cpp, built and found as the NMS
ops' are (tests/backends/test_hailort_oracle.py, whose frames these reuse).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
import test_hailort_oracle as oracle
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hailort_oracle import FORMAT_TYPE, ORACLE, Head, NmsOpDriver, nms_frames, yolov5_frames

from harness.backends.emulator.outputs import nms_spec
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatOrder, OutputSpec
from harness.decode.bbox_only import bbox_only_op, decode_bbox_only
from harness.formats.bbox_only import LEADING_FIELDS, bbox_only_spec
from harness.formats.layout import device_to_host, host_to_device, padded_shape
from harness.formats.nms_buffer import decode_nms_by_class

from support.hef_writer import with_bbox_only_op

# The oracle module's fixtures, found here by name: the HailoRT build, and its YOLOv8 and YOLOv5 NMS ops
build, yolov8_op, yolov5_op = oracle.build, oracle.yolov8_op, oracle.yolov5_op

# What the drivers answer before the buffer: the output's hailo_vstream_info_t fields
# (format order, format type, shape height, width, features; quant zero point, scale, limvals).
VSTREAM_INFO = np.dtype(
    [("order", "<u4"), ("type", "<u4"), ("height", "<u4"), ("width", "<u4"), ("features", "<u4"), ("quant", "<f4", 4)]
)


@pytest.fixture(scope="module")
def yolov8_bbox_only(build, tmp_path_factory) -> Iterator[NmsOpDriver]:
    """HailoRT's YOLOv8BboxOnlyPostProcessOp (tests/support/hailort_oracle/yolov8_bbox_only.cpp)."""
    folder = tmp_path_factory.mktemp(f"yolov8-bbox-only-{build.version}")
    op = NmsOpDriver(build, folder, ORACLE / "yolov8_bbox_only.cpp")
    yield op
    op.driver.close()


@pytest.fixture(scope="module")
def yolov5_bbox_only(build, tmp_path_factory) -> Iterator[NmsOpDriver]:
    """HailoRT's YOLOv5BboxOnlyPostProcessOp (tests/support/hailort_oracle/yolov5_bbox_only.cpp)."""
    folder = tmp_path_factory.mktemp(f"yolov5-bbox-only-{build.version}")
    op = NmsOpDriver(build, folder, ORACLE / "yolov5_bbox_only.cpp")
    yield op
    op.driver.close()


def host_frame(heads: Sequence[Head], dtype: np.dtype) -> tuple[dict[str, np.ndarray], dict[str, OutputSpec]]:
    """The heads as the host reads them: NHWC arrays and their specs."""
    raw = {h.name: device_to_host(h.frame, FormatOrder.NHCW, h.shape, dtype, h.padded) for h in heads}
    specs = {h.name: OutputSpec(h.name, h.shape, FormatOrder.NHWC, FORMAT_TYPE[dtype], (h.quant,)) for h in heads}
    return raw, specs


def shorter(heads: Sequence[Head], config: DecodeConfig, dtype: np.dtype) -> tuple[list[Head], DecodeConfig]:
    """The frame of an input 32 rows shorter where it is taller than 32 (the frames' sides are 32, 64 or
    96): its heads' last rows cut, so that an input's height and width are not mixed up unseen."""
    h, w = config.input_hw
    if h <= 32:
        return list(heads), config
    cut = []
    for head in heads:
        host = device_to_host(head.frame, FormatOrder.NHCW, head.shape, dtype, head.padded)
        kept = host[: head.shape[0] - 32 // head.stride]
        padded = padded_shape(FormatOrder.NHCW, kept.shape, dtype)
        frame = host_to_device(kept, FormatOrder.NHCW, padded).tobytes()
        cut.append(dataclasses.replace(head, shape=kept.shape, padded=padded, frame=frame))
    return cut, dataclasses.replace(config, input_hw=(h - 32, w))


def assert_held(answer: tuple[int, bytes], ours: np.ndarray, expected: OutputSpec) -> np.ndarray:
    """HailoRT's answer holds ``expected``'s vstream info and, field for field, ``ours``; its buffer."""
    status, data = answer
    assert status == 0, f"HailoRT status {status}"
    info = np.frombuffer(data[: VSTREAM_INFO.itemsize], VSTREAM_INFO)[0]
    (quant,) = expected.quant
    assert (int(info["order"]), int(info["type"])) == (int(expected.format_order), int(expected.format_type))
    assert (int(info["height"]), int(info["width"]), int(info["features"])) == expected.shape
    assert info["quant"].tolist() == [quant.zero_point, quant.scale, quant.limvals_min, quant.limvals_max]
    theirs = np.frombuffer(data[VSTREAM_INFO.itemsize :], np.float32).reshape(expected.shape)
    assert ours.shape == expected.shape and ours.dtype == np.float32
    # objectness and class values bit for bit; box corners within float32 rounding (HailoRT computes them
    # normalised, the YOLOv8 op summing its DFL bins in another order; the harness in input pixels, then divides)
    np.testing.assert_array_equal(theirs[..., 4:], ours[..., 4:])
    np.testing.assert_allclose(theirs[..., :4], ours[..., :4], rtol=1e-6, atol=1e-6)
    return theirs


def assert_nms_alike(theirs: np.ndarray, expected: OutputSpec, nms: tuple[int, bytes], config: DecodeConfig,
                     family: HeadFamily) -> None:  # fmt: skip
    """The host's NMS over HailoRT's bbox-only buffer keeps what HailoRT's NMS op keeps: the same counts,
    classes, order, scores and boxes (both ops decode a box with the same code, to the same floats)."""
    status, data = nms
    assert status == 0, f"HailoRT status {status}"
    classes = expected.shape[2] - len(LEADING_FIELDS[family])
    spec = nms_spec(classes, config.max_per_class)
    kept = decode_nms_by_class(np.frombuffer(data, np.float32), spec, config.input_hw)
    host = decode_bbox_only(theirs, expected, config, family)
    np.testing.assert_array_equal(host.class_ids, kept.class_ids)
    np.testing.assert_array_equal(host.scores, kept.scores)
    np.testing.assert_array_equal(host.boxes, kept.boxes)


@settings(max_examples=40, deadline=None, derandomize=True)  # the same frames every run
@given(frame=nms_frames())
def test_hailorts_yolov8_bbox_only_op_writes_what_the_harness_op_writes(yolov8_bbox_only, yolov8_op, frame):
    heads, classes, config, dtype = frame
    heads, config = shorter(heads, config, dtype)
    raw, specs = host_frame(heads, dtype)
    proposals = sum(h.shape[0] * h.shape[1] for h in heads[::2])
    expected = bbox_only_spec("bbox", proposals, classes, HeadFamily.YOLOV8)
    ours = bbox_only_op(raw, specs, config, HeadFamily.YOLOV8)
    theirs = assert_held(yolov8_bbox_only(heads, classes, config, dtype), ours, expected)
    assert_nms_alike(theirs, expected, yolov8_op(heads, classes, config, dtype), config, HeadFamily.YOLOV8)


@settings(max_examples=40, deadline=None, derandomize=True)  # the same frames every run
@given(frame=yolov5_frames(), order=st.permutations(range(3)))
def test_hailorts_yolov5_bbox_only_op_writes_what_the_harness_op_writes(yolov5_bbox_only, yolov5_op, frame, order):
    """The heads go to HailoRT in the drawn ``order``, named ``head0``, ``head1``, ... as sent: its op walks
    them by name, whatever their strides, and so does the harness's."""
    heads, classes, config, dtype = frame
    heads, config = shorter(heads, config, dtype)
    sent = [dataclasses.replace(heads[i], name=f"head{k}") for k, i in enumerate(order)]
    sent_config = dataclasses.replace(config, anchors=tuple(config.anchors[i] for i in order))
    raw, specs = host_frame(sent, dtype)
    proposals = sum(h.shape[0] * h.shape[1] * len(a) for h, a in zip(heads, config.anchors, strict=True))
    expected = bbox_only_spec("bbox", proposals, classes, HeadFamily.YOLOV5)
    ours = bbox_only_op(raw, specs, config, HeadFamily.YOLOV5)
    theirs = assert_held(yolov5_bbox_only(sent, classes, sent_config, dtype, anchors=True), ours, expected)
    nms = yolov5_op(sent, classes, sent_config, dtype, anchors=True)
    assert_nms_alike(theirs, expected, nms, config, HeadFamily.YOLOV5)


@pytest.mark.parametrize(
    ("kind", "classes", "anchors"),
    [("yolov8", 3, ()), ("yolov8", 80, ()), ("yolov5", 3, ((10, 13), (16, 30))), ("yolov5", 1, ((10, 13),) * 3)],
)
def test_hailort_and_the_harness_read_a_bbox_only_hef_alike(build, kind, classes, anchors, shared_fixtures, tmp_path):
    """The MNIST fixture HEF made a net-flow HEF whose NMS op, compiled bbox_decoding_only, reads its one
    4x4x16 output (tests/support/hef_writer.py): hailo_platform's stream and vstream infos are the harness's,
    the op's output FLOAT32 NHWC (1, proposals, fields) with quant scale 1."""
    data = with_bbox_only_op((shared_fixtures / "hef/hailo8_mnist_cnn.hef").read_bytes(), kind, classes, anchors)
    path = tmp_path / f"{kind}_bbox_only.hef"
    path.write_bytes(data)
    read = oracle.assert_same_reading(build, path, data, path.name, tmp_path)
    (output,) = read["network_groups"][0]["output_vstreams"]
    proposals = 16 // 2 if kind == "yolov8" else 16 * len(anchors)  # YOLOv8: a box and a class stream per grid
    family = HeadFamily.YOLOV8 if kind == "yolov8" else HeadFamily.YOLOV5
    assert output["shape"] == [1, proposals, len(LEADING_FIELDS[family]) + classes]
    assert (output["order"], output["type"], output["quant"]) == ("NHWC", "FLOAT32", [0.0, 1.0, 0.0, 0.0])
