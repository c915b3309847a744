import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import SpecError
from harness.core.specs import QuantInfo
from harness.formats.quant import dequantize, lowest_codes_reaching, quantize

DTYPES = st.sampled_from([np.dtype(np.uint8), np.dtype(np.uint16)])
SEEDS = st.integers(0, 2**32 - 1)


def _f32(x):
    return float(np.float32(x))


@st.composite
def full_range_quant(draw, dtype):
    """A quant info whose limvals are the dequantized ends of the whole integer range."""
    qmax = np.iinfo(dtype).max
    zp = draw(st.integers(0, qmax))
    scale = _f32(draw(st.floats(1e-4, 10.0)))
    lo = (np.float32(0) - np.float32(zp)) * np.float32(scale)
    hi = (np.float32(qmax) - np.float32(zp)) * np.float32(scale)
    return QuantInfo(float(zp), scale, float(lo), float(hi))


@given(st.data(), DTYPES, st.integers(1, 33), SEEDS)
def test_dequantize_then_quantize_is_identity_on_representable_values(data, dtype, channels, seed):
    quant = [data.draw(full_range_quant(dtype)) for _ in range(data.draw(st.sampled_from([1, channels])))]
    q = np.random.default_rng(seed).integers(0, np.iinfo(dtype).max, size=(3, 5, channels), endpoint=True, dtype=dtype)
    np.testing.assert_array_equal(quantize(dequantize(q, quant), quant, dtype), q)


@given(DTYPES, st.integers(0, 2000), st.sampled_from([0.25, 0.5, 1.0, 2.0]), st.integers(0, 50))
def test_quantize_rounds_half_to_even(dtype, k, scale, zp):
    quant = [QuantInfo(zp, scale, -1e9, 1e9)]
    x = np.array([(k + 0.5) * scale], dtype=np.float32)  # exactly halfway between k + zp and k + zp + 1
    expected = k + zp + (1 if (k + zp) % 2 else 0)
    assert int(quantize(x, quant, dtype)[0]) == min(expected, np.iinfo(dtype).max)


@given(DTYPES, st.floats(-1e6, 1e6, width=32), st.floats(0.01, 1.0))
def test_quantize_clips_to_limvals(dtype, x, scale):
    quant = [QuantInfo(10, scale, -5 * scale, 100 * scale)]
    clipped = min(max(x, -5 * scale), 100 * scale)
    assert quantize(np.array([x]), quant, dtype)[0] == quantize(np.array([clipped]), quant, dtype)[0]
    assert 5 <= quantize(np.array([x]), quant, dtype)[0] <= 110


def test_identity_quant_info_rounds_without_clipping_to_limvals():
    # hailort: quantization.hpp, quantize_input_buffer: is_identity_qp -> bankers_round only
    identity = [QuantInfo(0, 1, 3, 10)]
    assert quantize(np.array([200.4, 2.5, 3.5]), identity).tolist() == [200, 2, 4]
    assert quantize(np.array([200.4, 2.5, 3.5]), [QuantInfo(0, 1.0001, 3, 10)]).tolist() == [10, 3, 3]


@given(st.data(), DTYPES, st.integers(2, 33), SEEDS)
def test_per_feature_quant_infos_apply_along_the_channel_axis(data, dtype, channels, seed):
    quant = [data.draw(full_range_quant(dtype)) for _ in range(channels)]
    q = np.random.default_rng(seed).integers(0, np.iinfo(dtype).max, size=(2, 3, channels), endpoint=True, dtype=dtype)
    x = dequantize(q, quant)
    # hailort: transform_internal.hpp, dequantize_output_by_feature: flat element i uses quant info i % C
    zp = np.array([qi.zero_point for qi in quant], dtype=np.float32)
    scale = np.array([qi.scale for qi in quant], dtype=np.float32)
    for i, value in enumerate(q.reshape(-1)):
        assert x.reshape(-1)[i] == (np.float32(value) - zp[i % channels]) * scale[i % channels]
    for c in range(channels):
        np.testing.assert_array_equal(quantize(x[..., c], [quant[c]], dtype), q[..., c])


def test_dequantize_is_float32_of_zero_point_and_scale():
    x = dequantize(np.array([0, 164, 255], dtype=np.uint8), [QuantInfo(164, 0.13575443625450134, -22.26, 12.35)])
    assert x.dtype == np.float32
    assert x.tolist() == [
        _f32(np.float32(-164) * np.float32(0.13575443625450134)),
        0.0,
        _f32(np.float32(91) * np.float32(0.13575443625450134)),
    ]


def test_uint16_values_above_255_survive_the_round_trip():
    quant = [QuantInfo(30000, 0.001, -30.0, 35.535)]
    q = np.array([0, 255, 256, 30000, 65535], dtype=np.uint16)
    assert quantize(dequantize(q, quant), quant, np.uint16).tolist() == q.tolist()


def test_all_zero_quant_info_alone_is_rejected_as_the_per_feature_placeholder():
    with pytest.raises(SpecError, match="all zero"):
        dequantize(np.zeros((2, 2, 3), dtype=np.uint8), [QuantInfo(0, 0, 0, 0)])


def test_quant_info_count_must_be_one_or_the_channel_count():
    q = QuantInfo(0, 0.1, 0, 25.5)
    with pytest.raises(SpecError, match="2 per-feature quant infos for 3 channels"):
        dequantize(np.zeros((2, 2, 3), dtype=np.uint8), [q, q])
    with pytest.raises(SpecError, match="no quant info"):
        quantize(np.zeros(3), [])


def test_quantize_only_to_device_types():
    with pytest.raises(SpecError, match="dtype int32 is not a device type"):
        quantize(np.zeros(3), [QuantInfo(0, 0.1, 0, 25.5)], np.int32)


@given(st.data(), DTYPES, st.integers(1, 9))
def test_a_code_reaches_a_floor_exactly_where_its_dequantized_value_does(data, dtype, channels):
    quant = [data.draw(full_range_quant(dtype)) for _ in range(data.draw(st.sampled_from([1, channels])))]
    low, high = min(q.limvals_min for q in quant), max(q.limvals_max for q in quant)
    # the floor anywhere in the range, at a dequantized value itself, or past either end
    at_code = float(dequantize(np.array([data.draw(st.integers(0, np.iinfo(dtype).max))], dtype), quant[:1])[0])
    floor = data.draw(st.floats(low - 1, high + 1) | st.just(at_code) | st.sampled_from([-np.inf, np.inf]))
    codes = np.arange(np.iinfo(dtype).max + 1, dtype=dtype)[:, None].repeat(channels, axis=1)
    lowest = lowest_codes_reaching(quant, floor, dtype, channels)
    assert lowest is not None
    np.testing.assert_array_equal(codes >= np.asarray(lowest, np.int64), dequantize(codes, quant) >= np.float32(floor))


@pytest.mark.parametrize("scale", [0.0, -0.5, float("nan"), float("inf")])
def test_no_codes_are_given_where_dequantizing_does_not_increase_with_the_code(scale):
    assert lowest_codes_reaching([QuantInfo(3, scale, -1, 1)], 0.2, np.dtype(np.uint8), 4) is None


def test_codes_reaching_are_refused_for_the_per_feature_placeholder():
    with pytest.raises(SpecError, match="per-feature placeholder"):
        lowest_codes_reaching([QuantInfo(0, 0, 0, 0)], 0.2, np.dtype(np.uint8), 4)
