import pytest

from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo


def test_format_order_values_are_hailort_enum_values():
    # hailort: hailort/libhailort/include/hailo/hailort.h, hailo_format_order_t
    assert (FormatOrder.NHWC, FormatOrder.NHCW, FormatOrder.FCR, FormatOrder.F8CR) == (1, 2, 3, 4)
    assert (FormatOrder.NC, FormatOrder.NCHW, FormatOrder.NMS_BY_CLASS, FormatOrder.NMS_BY_SCORE) == (6, 11, 22, 23)


def test_nms_orders_need_an_nms_shape():
    with pytest.raises(ValueError, match="needs an nms shape"):
        OutputSpec("nms", (2, 5, 100), FormatOrder.NMS_BY_CLASS, FormatType.FLOAT32)
    spec = OutputSpec("nms", (2, 5, 100), FormatOrder.NMS_BY_CLASS, FormatType.FLOAT32, nms=NmsShape(2, 100))
    assert spec.is_nms and spec.nms is not None and spec.nms.max_total == 200


def test_per_feature_quant_infos_must_match_the_channels():
    q = QuantInfo(0, 0.1, 0, 25.5)
    with pytest.raises(ValueError, match="3 per-feature quant infos for 2 channels"):
        OutputSpec("cls", (20, 20, 2), FormatOrder.NHWC, FormatType.UINT8, (q, q, q))
    assert OutputSpec("cls", (20, 20, 2), FormatOrder.FCR, FormatType.UINT8, (q, q)).grid == (20, 20)


def test_all_zero_quant_info_is_recognised_as_the_per_feature_placeholder():
    assert QuantInfo(0, 0, 0, 0).is_zero
    assert not QuantInfo(0, 0.1, 0, 1).is_zero


def test_grid_of_a_non_image_output_is_an_error():
    with pytest.raises(ValueError, match="not an image-shaped"):
        _ = OutputSpec("fc1", (512,), FormatOrder.NC, FormatType.FLOAT32).grid
