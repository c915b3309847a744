"""HailoRT's YOLOX NMS op as the oracle: the emulator's op (``runner.nms_op`` of HeadFamily.YOLOX) held bit for
bit to YOLOXPostProcessOp (hailort: libhailort/src/net_flow/ops/yolox_post_process.hpp/.cpp), driven through
tests/support/hailort_oracle/yolox_nms.cpp as test_hailort_oracle.py drives the YOLOv8 and YOLOv5 ops. Builds
are found through HARNESS_HAILORT; without one these tests skip saying so (the ``build`` fixture)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hailort_oracle import FORMAT_TYPE, ORACLE, Head, NmsOpDriver, assert_same_nms_buffer, build

from harness.backends.emulator.outputs import nms_spec
from harness.backends.emulator.runner import nms_op
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatOrder, OutputSpec, QuantInfo
from harness.formats.layout import device_to_host, host_to_device, padded_shape

__all__ = ["build"]  # the HailoRT build fixture, one module-scoped parameter per version

STRIDES = (8, 16, 32)


@pytest.fixture(scope="module")
def yolox_op(build, tmp_path_factory) -> Iterator[NmsOpDriver]:
    """HailoRT's YOLOXPostProcessOp (tests/support/hailort_oracle/yolox_nms.cpp)."""
    op = NmsOpDriver(build, tmp_path_factory.mktemp(f"yolox-nms-{build.version}"), ORACLE / "yolox_nms.cpp")
    yield op
    op.driver.close()


def request(heads: Sequence[Head], classes: int, config: DecodeConfig, dtype: np.dtype) -> bytes:
    """One frame for yolox_nms.cpp: the NMS settings, then per stride its box, objectness and class head."""
    h, w = config.input_hw
    fields = [classes, config.max_per_class, repr(config.score_threshold), repr(config.iou_threshold), h, w]
    lines = [" ".join(map(str, [*fields, int(FORMAT_TYPE[dtype]), len(heads) // 3])).encode() + b"\n"]
    for head in heads:
        q = head.quant
        numbers = [*head.shape, *head.padded, *(repr(v) for v in (q.zero_point, q.scale, q.limvals_min, q.limvals_max))]
        lines.append(" ".join(map(str, [*numbers, len(head.frame)])).encode() + b"\n" + head.frame)
    return b"".join(lines)


@st.composite
def yolox_frames(draw):
    """Per stride a YOLOX detector's box map (4: tx, ty, tw, th, quantized raw), objectness map (1) and class map
    (nc), the scores post-sigmoid as the HEF leaves them, random device values and NMS settings. Objectness and
    class codes are drawn without repeats, so that equal scores are rare (HailoRT's std::sort leaves their order
    to libstdc++, see test_hailort_oracle.nms_frames). nc = 4 is left out: the harness cannot tell its class map
    from the box map (harness.families.yolox.decode.layout)."""
    dtype = np.dtype(draw(st.sampled_from([np.uint8, np.uint16])))
    top = np.iinfo(dtype).max
    side = draw(st.sampled_from([32, 64] if dtype == np.uint16 else [32]))  # 8-bit: 21 cells x 6 codes at most
    classes = draw(st.sampled_from([1, 2, 3, 5]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    grids = [side // s for s in STRIDES]
    sizes = [g * g * (1 + classes) for g in grids]
    distinct = np.split(rng.choice(top + 1, sum(sizes), replace=False).astype(dtype), np.cumsum(sizes)[:-1])
    score_quant = QuantInfo(0.0, float(np.float32(1 / top)), 0.0, 1.0)  # the op reads probabilities: no sigmoid
    heads = []
    for stride, grid, scores in zip(STRIDES, grids, distinct, strict=True):
        box_zp = draw(st.integers(0, top))
        box_scale = draw(st.floats(1 / 64, 1 / 32, width=32)) * 255 / top  # offsets within +-8
        box_quant = QuantInfo(float(box_zp), box_scale, (0 - box_zp) * box_scale, (top - box_zp) * box_scale)
        maps = (
            ("reg", rng.integers(0, top, (grid, grid, 4), endpoint=True, dtype=dtype), box_quant),
            ("obj", scores[: grid * grid].reshape(grid, grid, 1), score_quant),
            ("cls", scores[grid * grid :].reshape(grid, grid, classes), score_quant),
        )
        for kind, values, quant in maps:
            padded = padded_shape(FormatOrder.NHCW, values.shape, dtype)
            frame = host_to_device(values, FormatOrder.NHCW, padded).tobytes()
            heads.append(Head(f"{kind}{stride}", stride, values.shape, padded, quant, frame))
    config = DecodeConfig(
        input_hw=(side, side),
        score_threshold=draw(st.sampled_from([0.2, 0.4, 0.7])),
        iou_threshold=draw(st.sampled_from([0.45, 0.7])),
        max_per_class=draw(st.sampled_from([3, 100])),
        mode=NmsMode.HAILORT,
        classes_are_probabilities=True,
    )
    return heads, classes, config, dtype


@settings(max_examples=40, deadline=None, derandomize=True)  # the same frames every run
@given(frame=yolox_frames())
def test_hailorts_yolox_nms_op_writes_the_nms_by_class_buffer_the_emulator_writes(yolox_op, frame):
    heads, classes, config, dtype = frame
    status, theirs = yolox_op.driver.exchange(request(heads, classes, config, dtype))
    assert status == 0, f"HailoRT status {status}"
    raw = {h.name: device_to_host(h.frame, FormatOrder.NHCW, h.shape, dtype, h.padded) for h in heads}
    # the specs in reverse (class before objectness): with nc = 1 the harness then reads the class map as the
    # objectness (harness.families.yolox.decode.layout), and must still write HailoRT's buffer
    specs = {
        h.name: OutputSpec(h.name, h.shape, FormatOrder.NHWC, FORMAT_TYPE[dtype], (h.quant,)) for h in reversed(heads)
    }
    spec = nms_spec(classes, config.max_per_class, HeadFamily.YOLOX)
    assert_same_nms_buffer(theirs, nms_op(raw, specs, config, spec, HeadFamily.YOLOX), classes)
