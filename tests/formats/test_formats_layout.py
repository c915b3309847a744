import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from harness.core.errors import MalformedBufferError, SpecError
from harness.core.specs import FormatOrder
from harness.formats import layout
from harness.formats.layout import device_to_host, frame_bytes, host_to_device, padded_shape

from support.reference import layout as reference
from support.strategies import DTYPES, geometries

IMAGE_ORDERS = st.sampled_from(layout.IMAGE_ORDERS)
SEEDS = st.integers(0, 2**32 - 1)


def _random(shape, dtype, seed):
    return np.random.default_rng(seed).integers(0, np.iinfo(dtype).max, size=shape, endpoint=True, dtype=dtype)


@given(geometries(), SEEDS)
def test_device_to_host_equals_loop_reference_for_every_order(geometry, seed):
    order, shape, dtype, padded = geometry
    _, aligned = frame_bytes(order, padded, dtype)
    device = _random(aligned // dtype.itemsize, dtype, seed)  # padding holds garbage, never read
    fast = device_to_host(device.tobytes(), order, shape, dtype, padded)
    np.testing.assert_array_equal(fast, reference.device_to_host(device, order, shape, padded))
    assert fast.dtype == dtype and fast.shape == shape and fast.flags.c_contiguous


@given(geometries(), SEEDS)
def test_host_to_device_equals_loop_reference_for_every_order(geometry, seed):
    order, shape, dtype, padded = geometry
    host = _random(shape, dtype, seed)
    np.testing.assert_array_equal(host_to_device(host, order, padded), reference.host_to_device(host, order, padded))


@given(geometries(), SEEDS)
def test_host_to_device_then_back_is_identity_for_every_order_but_nhwc_with_padded_features(geometry, seed):
    order, shape, dtype, padded = geometry
    assume(not (order is FormatOrder.NHWC and padded[2] != shape[2]))  # HailoRT writes those rows dense
    host = _random(shape, dtype, seed)
    device = host_to_device(host, order, padded)
    assert (device.nbytes % 8, device.dtype) == (0, dtype)
    np.testing.assert_array_equal(device_to_host(device, order, shape, dtype, padded), host)


@given(st.integers(1, 4), st.integers(1, 33), st.integers(1, 33), DTYPES, SEEDS)
def test_reading_a_device_buffer_in_its_declared_order_gives_the_same_host_array_whichever_order(h, w, c, dtype, seed):
    host = _random((h, w, c), dtype, seed)
    decoded = []
    for order in layout.IMAGE_ORDERS:
        padded = padded_shape(order, host.shape, dtype)
        device = reference.host_to_device(host, order, padded)
        decoded.append(device_to_host(device.tobytes(), order, host.shape, dtype, padded))
    for array in decoded:
        np.testing.assert_array_equal(array, host)


@given(geometries(st.just(FormatOrder.FCR)), SEEDS)
def test_fcr_host_array_is_channel_last_like_nhwc(geometry, seed):
    _, shape, dtype, padded = geometry
    _, aligned = frame_bytes(FormatOrder.FCR, padded, dtype)
    raw = _random(aligned // dtype.itemsize, dtype, seed).tobytes()
    fcr = device_to_host(raw, FormatOrder.FCR, shape, dtype, padded)
    np.testing.assert_array_equal(fcr, device_to_host(raw, FormatOrder.NHWC, shape, dtype, padded))


def test_fcr_host_element_is_the_device_element_at_its_channel_last_offset():
    # 2 rows x 3 columns x 2 channels, width padded to 4: device row = 4 pixels x 2 channels
    raw = np.arange(16, dtype=np.uint8)
    host = device_to_host(raw, FormatOrder.FCR, (2, 3, 2), np.uint8, (2, 4, 2))
    assert host.tolist() == [[[0, 1], [2, 3], [4, 5]], [[8, 9], [10, 11], [12, 13]]]


def test_nhcw_device_rows_are_channel_major_and_transposed_on_the_host():
    # 1 row, width 2 padded to 8 (uint8), 3 channels: device row = channel 0 (8), channel 1 (8), channel 2 (8)
    raw = np.zeros(24, dtype=np.uint8)
    raw[[0, 1, 8, 9, 16, 17]] = [10, 11, 20, 21, 30, 31]
    host = device_to_host(raw, FormatOrder.NHCW, (1, 2, 3), np.uint8)
    assert host.tolist() == [[[10, 20, 30], [11, 21, 31]]]
    assert not np.array_equal(device_to_host(raw, FormatOrder.NHWC, (1, 2, 3), np.uint8, (1, 8, 3)), host)


def test_f8cr_device_rows_are_blocks_of_width_times_8_channels():
    # 1 row, 2 columns, 10 channels padded to 16: block 0 = [col0 ch0-7, col1 ch0-7], block 1 = ch8-15
    host = np.arange(20, dtype=np.uint16).reshape(1, 2, 10)
    device = host_to_device(host, FormatOrder.F8CR)
    assert device.tolist() == [*range(8), *range(10, 18), 8, 9, 0, 0, 0, 0, 0, 0, 18, 19, 0, 0, 0, 0, 0, 0]


@given(st.integers(1, 33), DTYPES, SEEDS)
def test_nc_drops_the_channel_padding(channels, dtype, seed):
    (padded,) = padded_shape(FormatOrder.NC, (channels,), dtype)
    assert (padded * dtype.itemsize) % 8 == 0 and padded - channels < 8 // dtype.itemsize
    device = _random(padded, dtype, seed)
    host = device_to_host(device, FormatOrder.NC, (channels,), dtype)
    np.testing.assert_array_equal(host, device[:channels])


@given(geometries(IMAGE_ORDERS))
def test_default_padding_is_the_least_that_fills_whole_8_byte_words(geometry):
    order, shape, dtype, _ = geometry
    (h, w, c), (hp, wp, cp) = shape, padded_shape(order, shape, dtype)
    if order is FormatOrder.F8CR:
        assert (hp, wp) == (h, w) and cp % 8 == 0 and cp - c < 8
    elif order is FormatOrder.NHCW:
        assert (hp, cp) == (h, c) and (wp * dtype.itemsize) % 8 == 0 and wp - w < 8 // dtype.itemsize
    else:
        assert (hp, cp) == (h, c) and (wp * c * dtype.itemsize) % 8 == 0
        assert all((x * c * dtype.itemsize) % 8 for x in range(w, wp))


def test_default_padding_matches_the_padded_dims_of_real_hefs():
    # Measured in ../shared/fixtures: hef_bad/hailo8l_yolov8s_nms_truncated.hef (NHCW heads) and
    # hef/hailo8_mnist_cnn.hef (FCR output maxpool3); every other dim there is unpadded.
    assert padded_shape(FormatOrder.NHCW, (20, 20, 64), np.uint8) == (20, 24, 64)
    assert padded_shape(FormatOrder.NHCW, (20, 20, 3), np.uint8) == (20, 24, 3)
    assert padded_shape(FormatOrder.NHCW, (40, 40, 3), np.uint8) == (40, 40, 3)
    assert padded_shape(FormatOrder.NHCW, (80, 80, 64), np.uint8) == (80, 80, 64)
    assert padded_shape(FormatOrder.FCR, (4, 4, 16), np.uint8) == (4, 4, 16)


@given(geometries(), st.integers(1, 64), st.booleans())
def test_device_buffer_of_a_wrong_size_raises_naming_order_shape_and_sizes(geometry, delta, longer):
    order, shape, dtype, padded = geometry
    dense, aligned = frame_bytes(order, padded, dtype)
    actual = aligned + delta if longer else max(dense - delta, 0)
    if actual in (dense, aligned):
        actual = aligned + 8
    with pytest.raises(MalformedBufferError) as error:
        device_to_host(bytes(actual), order, shape, dtype, padded, name="yolov8s/conv41")
    message = str(error.value)
    for part in ("yolov8s/conv41", order.name, str(shape), str(padded), f"expected {dense}", f"found {actual}"):
        assert part in message


def test_frame_with_or_without_its_8_byte_alignment_tail_is_read():
    # 1 x 5 x 3 uint8 NHCW as a Hailo-10H HEF stores it (width unpadded): 15 bytes, transferred as 16
    host = np.arange(15, dtype=np.uint8).reshape(1, 5, 3)
    device = host_to_device(host, FormatOrder.NHCW, (1, 5, 3))
    assert device.size == 16 and device[15] == 0
    for raw in (device.tobytes(), device[:15].tobytes()):
        np.testing.assert_array_equal(device_to_host(raw, FormatOrder.NHCW, (1, 5, 3), np.uint8, (1, 5, 3)), host)


def test_device_elements_as_an_array_read_like_their_bytes():
    host = np.arange(2 * 3 * 5, dtype=np.uint16).reshape(2, 3, 5)
    device = host_to_device(host, FormatOrder.NHCW)
    from_array = device_to_host(device, FormatOrder.NHCW, host.shape, np.uint16)
    np.testing.assert_array_equal(from_array, device_to_host(device.tobytes(), FormatOrder.NHCW, host.shape, "uint16"))
    np.testing.assert_array_equal(from_array, host)


@pytest.mark.parametrize("order", [FormatOrder.AUTO, FormatOrder.NHW, FormatOrder.NCHW, FormatOrder.NMS_BY_CLASS])
def test_order_without_a_device_layout_is_a_spec_error(order):
    with pytest.raises(SpecError, match=f"format order {order.name} has no device layout"):
        device_to_host(bytes(64), order, (2, 4, 8), np.uint8)


@pytest.mark.parametrize(
    ("order", "shape", "padded", "match"),
    [
        (FormatOrder.NHWC, (2, 4, 8), (2, 3, 8), r"padded dims \(2, 3, 8\) are smaller than the shape"),
        (FormatOrder.F8CR, (2, 4, 3), (2, 4, 12), "F8CR padded features 12 must be a multiple of 8"),
        (FormatOrder.NC, (2, 4, 8), None, r"NC shape \(2, 4, 8\) must be 1 positive dims"),
        (FormatOrder.NHCW, (2, 0, 8), None, r"NHCW shape \(2, 0, 8\) must be 3 positive dims"),
    ],
)
def test_inconsistent_shape_or_device_dims_are_spec_errors(order, shape, padded, match):
    with pytest.raises(SpecError, match=match):
        device_to_host(bytes(4096), order, shape, np.uint8, padded)


def test_float_arrays_are_not_device_buffers():
    with pytest.raises(SpecError, match="device type float32 is not uint8 or uint16"):
        host_to_device(np.zeros((2, 2, 2), dtype=np.float32), FormatOrder.NHWC)
