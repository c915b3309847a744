"""Image loading, OpenCV-equal bilinear resize, Ultralytics letterbox, NCHW float conversion."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from PIL import Image

from harness.core.detections import Letterbox
from harness.core.errors import HarnessError
from harness.core.settings import Preprocess
from harness.inputs.preprocess import fit, geometry, letterbox, load_image, resize, to_nchw_float, ultralytics_val

from support.reference import ultralytics_val_frame
from support.reference.resize import reference_resize

# A 4x5 grey test card and what cv2.resize(INTER_LINEAR) of opencv-python-headless 4.14 makes of it.
CARD = [[11, 48, 85, 122, 159], [196, 233, 14, 51, 88], [125, 162, 199, 236, 17], [54, 91, 128, 165, 202]]
OPENCV_LINEAR = {
    (7, 9): [
        [11, 23, 44, 64, 85, 105, 126, 146, 159],
        [77, 89, 110, 90, 59, 80, 101, 121, 133],
        [183, 195, 216, 131, 19, 40, 60, 81, 93],
        [161, 173, 193, 157, 107, 127, 133, 83, 53],
        [120, 132, 153, 173, 194, 214, 209, 97, 30],
        [79, 92, 112, 133, 153, 174, 184, 154, 136],
        [54, 66, 87, 107, 128, 148, 169, 190, 202],
    ],
    (2, 3): [[116, 50, 111], [102, 164, 140]],
    (3, 8): [
        [42, 58, 78, 75, 85, 108, 131, 147],
        [161, 177, 192, 135, 118, 141, 92, 53],
        [66, 82, 105, 128, 151, 174, 174, 171],
    ],
}


def _card() -> np.ndarray:
    return np.repeat(np.array(CARD, dtype=np.uint8)[..., None], 3, axis=2)


@pytest.mark.parametrize("size", sorted(OPENCV_LINEAR))
def test_resize_equals_opencv_inter_linear_on_a_test_card(size: tuple[int, int]) -> None:
    out = resize(_card(), size)
    assert out.shape == (*size, 3)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out[..., 0], np.array(OPENCV_LINEAR[size]))
    np.testing.assert_array_equal(out[..., 0], out[..., 2])


@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), st.integers(0, 255))
def test_resize_keeps_a_flat_image_flat(h: int, w: int, out_h: int, out_w: int, value: int) -> None:
    flat = np.full((h, w, 3), value, dtype=np.uint8)
    np.testing.assert_array_equal(resize(flat, (out_h, out_w)), np.full((out_h, out_w, 3), value, np.uint8))


def test_resize_to_the_same_size_returns_an_equal_copy() -> None:
    card = _card()
    out = resize(card, card.shape[:2])
    np.testing.assert_array_equal(out, card)
    assert out is not card


@given(st.integers(1, 120), st.integers(1, 120), st.integers(8, 96), st.integers(8, 96))
def test_letterbox_places_the_resized_image_as_ultralytics_and_pads_the_rest_with_114(
    h: int, w: int, in_h: int, in_w: int
) -> None:
    rng = np.random.default_rng(h * 1000 + w)
    image = rng.integers(0, 100, (h, w, 3), dtype=np.uint8)  # never 114, so padding is recognisable
    r = min(in_h / h, in_w / w)
    new_h, new_w = round(h * r), round(w * r)
    assume(new_h >= 1 and new_w >= 1)
    out, geometry = letterbox(image, (in_h, in_w))
    assert geometry == Letterbox.fit((h, w), (in_h, in_w))
    top, left = round((in_h - new_h) / 2 - 0.1), round((in_w - new_w) / 2 - 0.1)
    assert out.shape == (in_h, in_w, 3)
    np.testing.assert_array_equal(out[top : top + new_h, left : left + new_w], resize(image, (new_h, new_w)))
    pad = np.ones((in_h, in_w), dtype=bool)
    pad[top : top + new_h, left : left + new_w] = False
    assert (out[pad] == 114).all()


def test_letterbox_puts_an_odd_padding_remainder_at_the_bottom() -> None:
    out, _ = letterbox(np.zeros((10, 20, 3), np.uint8), (21, 20))  # 11 rows of padding: 5 above, 6 below
    assert (out[:5] == 114).all() and (out[5:15] == 0).all() and (out[15:] == 114).all()


def test_letterbox_uses_the_given_pad_value() -> None:
    out, _ = letterbox(np.zeros((10, 20, 3), np.uint8), (20, 20), pad_value=0)
    assert (out == 0).all()


def test_load_image_gives_rgb_uint8(tmp_path) -> None:
    rgb = np.zeros((3, 4, 3), np.uint8)
    rgb[..., 0] = 200  # red
    Image.fromarray(rgb).save(tmp_path / "red.png")
    loaded = load_image(tmp_path / "red.png")
    assert loaded.dtype == np.uint8
    np.testing.assert_array_equal(loaded, rgb)


def test_load_image_applies_exif_orientation(tmp_path) -> None:
    pixels = np.zeros((2, 3, 3), np.uint8)
    pixels[0, 0] = 255  # top-left white
    exif = Image.Exif()
    exif[0x0112] = 6  # stored rotated: display turned 90 degrees clockwise
    Image.fromarray(pixels).save(tmp_path / "turned.png", exif=exif)
    loaded = load_image(tmp_path / "turned.png")
    assert loaded.shape == (3, 2, 3)
    np.testing.assert_array_equal(loaded, np.rot90(pixels, k=-1))


@pytest.mark.parametrize(
    ("mode", "value", "rgb"),
    [("L", 77, (77, 77, 77)), ("LA", (77, 10), (77, 77, 77)), ("RGBA", (1, 2, 3, 0), (1, 2, 3))],
)
def test_load_image_converts_grey_and_alpha_images_to_rgb(tmp_path, mode, value, rgb) -> None:
    Image.new(mode, (5, 4), value).save(tmp_path / "x.png")
    loaded = load_image(tmp_path / "x.png")
    assert loaded.shape == (4, 5, 3)
    assert (loaded == np.array(rgb, np.uint8)).all()


def test_load_image_converts_palette_images_to_rgb(tmp_path) -> None:
    image = Image.new("P", (2, 2), 1)
    image.putpalette([0, 0, 0, 10, 20, 30] + [0] * 762)
    image.save(tmp_path / "p.png")
    assert (load_image(tmp_path / "p.png") == np.array([10, 20, 30], np.uint8)).all()


@pytest.mark.parametrize("content", [b"not an image", b"\x89PNG\r\n\x1a\n truncated"])
def test_unreadable_image_raises_naming_the_file(tmp_path, content: bytes) -> None:
    path = tmp_path / "broken.png"
    path.write_bytes(content)
    with pytest.raises(HarnessError, match=r"broken\.png"):
        load_image(path)


def test_a_jpeg_cut_short_is_refused_not_decoded_half_grey(tmp_path, shared_fixtures) -> None:
    whole = sorted((shared_fixtures / "datasets/coco128_val16/images/val2017").glob("*.jpg"))[0].read_bytes()
    for kept in (len(whole) - 2, len(whole) * 9 // 10):
        (tmp_path / "cut.jpg").write_bytes(whole[:kept])
        with pytest.raises(HarnessError, match=r"cut\.jpg.*cannot be decoded"):
            load_image(tmp_path / "cut.jpg")


def test_an_image_over_the_pixel_limit_is_refused_from_its_header(tmp_path, monkeypatch) -> None:
    from harness.core import defaults

    Image.new("RGB", (20, 10)).save(tmp_path / "big.png")
    monkeypatch.setattr(defaults, "MAX_IMAGE_PIXELS", 199)
    with pytest.raises(HarnessError, match=r"big\.png.*20x10 pixels, more than the limit of 199"):
        load_image(tmp_path / "big.png")


def test_images_decode_as_opencv_decodes_them_for_ultralytics(shared_fixtures) -> None:
    import cv2

    for path in sorted((shared_fixtures / "datasets").glob("*/images/*/*.jpg"))[:40]:
        np.testing.assert_array_equal(load_image(path), cv2.imread(str(path))[..., ::-1])


def test_missing_image_raises_naming_the_file(tmp_path) -> None:
    with pytest.raises(HarnessError, match=r"absent\.jpg"):
        load_image(tmp_path / "absent.jpg")


def test_real_fixture_image_loads_as_rgb(shared_fixtures) -> None:
    images = sorted((shared_fixtures / "datasets/coco128_val16/images/val2017").glob("*.jpg"))
    assert len(images) == 16
    image = load_image(images[0])
    assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8


def test_to_nchw_float_scales_to_unit_range_channel_first() -> None:
    hwc = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3) * 14
    out = to_nchw_float(hwc)
    assert out.shape == (1, 3, 2, 3) and out.dtype == np.float32
    np.testing.assert_allclose(out[0], hwc.transpose(2, 0, 1) / 255, rtol=1e-6)
    batch = to_nchw_float(np.stack([hwc, hwc[::-1]]))
    assert batch.shape == (2, 3, 2, 3)
    np.testing.assert_array_equal(batch[1], to_nchw_float(hwc[::-1])[0])


def test_to_nchw_float_is_each_bytes_float32_over_255_bit_for_bit_and_c_contiguous() -> None:
    rng = np.random.default_rng(3)
    batch = rng.integers(0, 256, size=(3, 5, 7, 3), dtype=np.uint8)
    batch[0, 0, :, 0] = [0, 1, 114, 127, 128, 254, 255]
    out = to_nchw_float(batch[:, :, ::-1])  # a strided view, as a stacked batch may be
    former = np.ascontiguousarray(batch[:, :, ::-1].transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255)
    assert out.flags.c_contiguous and out.dtype == np.float32
    np.testing.assert_array_equal(out.view(np.uint32), former.view(np.uint32))


@pytest.mark.parametrize("bad", [np.zeros((4, 4, 3), np.float32), np.zeros((4, 4), np.uint8)])
def test_to_nchw_float_rejects_non_uint8_images(bad: np.ndarray) -> None:
    with pytest.raises(HarnessError, match="expected uint8"):
        to_nchw_float(bad)


def test_letterbox_raises_when_the_image_would_shrink_to_nothing() -> None:
    with pytest.raises(HarnessError, match=r"\(0, 8\)"):
        letterbox(np.zeros((1, 16, 3), np.uint8), (8, 8))


def test_resize_rejects_non_rgb_arrays() -> None:
    with pytest.raises(HarnessError, match=r"expected uint8 \(H, W, 3\)"):
        resize(np.zeros((4, 4), np.uint8), (2, 2))


def _reference_letterbox(image: np.ndarray, input_hw: tuple[int, int]) -> np.ndarray:
    geometry = Letterbox.fit(image.shape[:2], input_hw)
    new_h, new_w = round(image.shape[0] * geometry.scale_y), round(image.shape[1] * geometry.scale_x)
    top, left = round(geometry.pad_y - 0.1), round(geometry.pad_x - 0.1)
    canvas = np.full((*input_hw, 3), 114, dtype=np.uint8)
    canvas[top : top + new_h, left : left + new_w] = reference_resize(image, (new_h, new_w))
    return canvas


@pytest.mark.fixtures
def test_opencv_letterbox_equals_the_former_numpy_one_on_every_fixture_image(shared_fixtures) -> None:
    folders = [shared_fixtures / "datasets" / "coco128_val16", shared_fixtures / "datasets" / "fire_smoke_val"]
    paths = [p for f in folders for p in sorted(f.rglob("*.jpg"))][:80]
    assert len(paths) >= 60
    for path in paths:
        image = load_image(path)
        for size in ((640, 640), (320, 320), (97, 211)):
            np.testing.assert_array_equal(letterbox(image, size)[0], _reference_letterbox(image, size), str(path))


@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 300), st.integers(1, 300), st.integers(0, 2**32 - 1))
def test_opencv_resize_equals_the_former_numpy_resize_on_random_sizes(h, w, out_h, out_w, seed) -> None:
    image = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    np.testing.assert_array_equal(resize(image, (out_h, out_w)), reference_resize(image, (out_h, out_w)))


def test_yolo_val_rounds_the_resized_side_up_where_the_letterbox_rounds_it():
    """500x333 at 320: r = 0.64, 333 * r = 213.12; yolo val's loader takes ceil (214 rows, 53 above),
    the letterbox round (213 rows, 53 above)."""
    image = np.random.default_rng(0).integers(0, 100, (333, 500, 3), dtype=np.uint8)
    frame, placed = ultralytics_val(image, (320, 320))
    np.testing.assert_array_equal(frame[53 : 53 + 214], resize(image, (214, 320)))
    assert (frame[:53] == 114).all() and (frame[53 + 214 :] == 114).all()
    assert placed == Letterbox((333, 500), (320, 320), 320 / 500, 214 / 333, 0.0, 53.0, clip=False)
    assert letterbox(image, (320, 320))[1].scale_y == 213 / 333


def test_yolo_val_enlarges_a_small_image_and_letterboxes_a_wide_input_without_scaling_up():
    small = np.random.default_rng(1).integers(0, 100, (100, 50, 3), dtype=np.uint8)
    frame, placed = ultralytics_val(small, (320, 320))  # r = 3.2: 320 x ceil(160), 80 columns left
    np.testing.assert_array_equal(frame[:, 80:240], resize(small, (320, 160)))
    assert (placed.scale_x, placed.scale_y, placed.pad_x, placed.pad_y) == (3.2, 3.2, 80.0, 0.0)
    square = np.random.default_rng(2).integers(0, 100, (100, 100, 3), dtype=np.uint8)
    frame, placed = ultralytics_val(square, (64, 128))  # loaded at 128x128, then halved into 64x64
    np.testing.assert_array_equal(frame[:, 32:96], resize(resize(square, (128, 128)), (64, 64)))
    assert (placed.scale_x, placed.scale_y, placed.pad_x, placed.pad_y) == (0.64, 0.64, 32.0, 0.0)


@pytest.mark.fixtures
def test_yolo_val_frames_equal_ultralytics_loader_and_letterbox_on_every_fixture_image(shared_fixtures) -> None:
    folders = [shared_fixtures / "datasets" / "coco128_val16", shared_fixtures / "datasets" / "fire_smoke_val"]
    paths = [p for f in folders for p in sorted(f.rglob("*.jpg"))][:80]
    assert len(paths) >= 60
    differ = 0
    for path in paths:
        image = load_image(path)
        for size in ((640, 640), (320, 320), (256, 256), (192, 320)):
            frame, placed = ultralytics_val(image, size)
            expected, (scale_x, scale_y), left, top = ultralytics_val_frame.val_frame(image, size)
            np.testing.assert_array_equal(frame, expected, f"{path} at {size}")
            assert (placed.scale_x, placed.scale_y, placed.pad_x, placed.pad_y) == (scale_x, scale_y, left, top)
            differ += not np.array_equal(frame, letterbox(image, size)[0])
    assert differ > len(paths)  # the two letterboxes differ on real images, or this test proves nothing


@pytest.mark.parametrize("preprocess", list(Preprocess))
@pytest.mark.parametrize("hw", [(333, 500), (100, 50), (640, 480), (7, 300)])
def test_geometry_is_where_fit_places_the_image_and_only_yolo_vals_keeps_boxes_unclipped(preprocess, hw):
    frame, placed = fit(np.zeros((*hw, 3), np.uint8), preprocess, (320, 256))
    assert frame.shape == (320, 256, 3)
    assert geometry(preprocess, hw, (320, 256)) == placed
    assert placed.clip is (preprocess is not Preprocess.ULTRALYTICS_VAL)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_an_image_that_is_a_pipe_or_a_device_is_refused_unread(tmp_path):
    os.mkfifo(tmp_path / "pipe.jpg")
    (tmp_path / "zero.jpg").symlink_to("/dev/zero")
    for name in ("pipe.jpg", "zero.jpg"):
        with pytest.raises(HarnessError, match=rf"{name}'.*not a regular file"):
            load_image(tmp_path / name)
