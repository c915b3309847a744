"""Deterministic synthetic fire/smoke detection data, written as a YOLO dataset.

Flames (warm flickering tongues) and smoke (translucent soft grey/white/brownish blobs) are drawn on
varied scenes (sky, noise, fields, roads, rooms, random shapes), sometimes partly hidden behind an
occluder; about 15 % of the frames show neither. Every image comes from its own random stream
``(seed, split, index)``, so the same seed gives byte-identical files (with the same numpy, Pillow and
zlib builds). Boxes are the tight extent of what stays visible of each object after compositing.

``python -m harness.inputs.synthetic --out DIR --seed N --train 300 --val 100 --calib 64 [--imgsz 256]
[--offdomain-calib 64]`` writes ``images/<split>``, ``labels/<split>`` and ``data.yaml``; the
off-domain calibration split ``images/calib_offdomain`` has scenes without fire or smoke and no labels.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

from harness.core.confine import check, make_folder
from harness.core.errors import HarnessError

FIRE = 0
SMOKE = 1
CLASS_NAMES = {FIRE: "fire", SMOKE: "smoke"}
LABELLED_SPLITS = ("train", "val", "calib")
OFFDOMAIN_SPLIT = "calib_offdomain"
EMPTY_FRACTION = 0.15

_SPLIT_STREAM = {"train": 1, "val": 2, "calib": 3, OFFDOMAIN_SPLIT: 4}
_VISIBLE_ALPHA = 0.2  # an object's pixel counts as visible where its alpha exceeds this
_MIN_BOX_PX = 6
_MIN_VISIBLE_SHARE = 0.5  # an occluder is dropped if it would hide more of any object than this

Background = Callable[[np.random.Generator, int, int], np.ndarray]


@dataclass(frozen=True)
class Frame:
    """One rendered image: uint8 ``(H, W, 3)`` RGB and float32 ``(N, 5)`` YOLO labels (class, cx, cy, w, h)."""

    image: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class Recipe:
    """Everything that decides a generated dataset's bytes."""

    seed: int
    train: int
    val: int
    calib: int
    offdomain_calib: int = 0
    imgsz: int = 256

    def __post_init__(self) -> None:
        for field in ("train", "val", "calib", "offdomain_calib"):
            if getattr(self, field) < 0:
                raise HarnessError(f"synthetic recipe: {field} is {getattr(self, field)}, expected a count >= 0")
        if self.imgsz < 32:
            raise HarnessError(f"synthetic recipe: imgsz is {self.imgsz}, expected >= 32")
        if self.seed < 0:
            raise HarnessError(f"synthetic recipe: seed is {self.seed}, expected an integer >= 0")

    def split_sizes(self) -> dict[str, int]:
        return {"train": self.train, "val": self.val, "calib": self.calib, OFFDOMAIN_SPLIT: self.offdomain_calib}


# ---------------------------------------------------------------------------------------------- noise


def _upsample(grid: np.ndarray, h: int, w: int) -> np.ndarray:
    """Bilinear upsampling of a small 2-D grid to ``(h, w)``."""
    gy = np.linspace(0.0, grid.shape[0] - 1.0, h)
    gx = np.linspace(0.0, grid.shape[1] - 1.0, w)
    y0 = np.minimum(gy.astype(np.int64), grid.shape[0] - 2)
    x0 = np.minimum(gx.astype(np.int64), grid.shape[1] - 2)
    fy = (gy - y0)[:, None]
    fx = (gx - x0)[None, :]
    top = grid[y0][:, x0] * (1 - fx) + grid[y0][:, x0 + 1] * fx
    bottom = grid[y0 + 1][:, x0] * (1 - fx) + grid[y0 + 1][:, x0 + 1] * fx
    return (top * (1 - fy) + bottom * fy).astype(np.float32)


def _fractal_noise(rng: np.random.Generator, h: int, w: int, cells: float, octaves: int = 3) -> np.ndarray:
    """Smooth value noise in [0, 1]: ``octaves`` layers, the first with ``cells`` cells across the longer side."""
    total = np.zeros((h, w), np.float32)
    amplitude, norm = 1.0, 0.0
    for octave in range(octaves):
        n = cells * 2**octave
        gh = max(2, round(n * h / max(h, w)) + 1)
        gw = max(2, round(n * w / max(h, w)) + 1)
        total += amplitude * _upsample(rng.random((gh, gw)), h, w)
        norm += amplitude
        amplitude *= 0.5
    return total / norm


def _blend(low: np.ndarray, high: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per-pixel mix of two colours ``(3,)`` by ``t (h, w)``."""
    return low[None, None, :] + (high - low)[None, None, :] * t[..., None]


def _grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel row and column coordinates, each ``(h, w)`` float32."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    return y, x


# ---------------------------------------------------------------------------------------------- scenes

_SKY_TOPS = np.array([[0.25, 0.45, 0.80], [0.55, 0.70, 0.90], [0.55, 0.58, 0.62], [0.40, 0.38, 0.55]], np.float32)
_GROUND = np.array(
    [[0.25, 0.45, 0.15], [0.40, 0.55, 0.20], [0.55, 0.50, 0.30], [0.45, 0.35, 0.22], [0.70, 0.65, 0.35]], np.float32
)
_WALLS = np.array(
    [[0.85, 0.82, 0.75], [0.92, 0.92, 0.90], [0.60, 0.62, 0.65], [0.55, 0.65, 0.75], [0.75, 0.80, 0.70]], np.float32
)
_FLOORS = np.array([[0.45, 0.30, 0.18], [0.35, 0.35, 0.35], [0.60, 0.50, 0.40], [0.20, 0.20, 0.22]], np.float32)


def _jitter(rng: np.random.Generator, colour: np.ndarray, amount: float = 0.06) -> np.ndarray:
    return np.clip(colour + rng.uniform(-amount, amount, 3).astype(np.float32), 0.0, 1.0)


def _sky(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Vertical sky gradient with soft clouds, sometimes over a textured ground below a horizon."""
    y, _ = _grid(h, w)
    top = _jitter(rng, _SKY_TOPS[rng.integers(len(_SKY_TOPS))])
    bottom = np.clip(top + rng.uniform(0.1, 0.3), 0.0, 1.0)
    image = _blend(top, bottom, y / max(h - 1, 1))
    clouds = np.clip((_fractal_noise(rng, h, w, rng.uniform(2, 5), 4) - rng.uniform(0.45, 0.6)) * 3.0, 0.0, 1.0)
    image = image * (1 - clouds[..., None] * 0.8) + clouds[..., None] * 0.8 * rng.uniform(0.8, 1.0)
    if rng.random() < 0.6:
        horizon = rng.uniform(0.5, 0.85) * h
        ground = _jitter(rng, _GROUND[rng.integers(len(_GROUND))])
        texture = _fractal_noise(rng, h, w, rng.uniform(6, 16), 3)
        land = _blend(ground * 0.7, np.clip(ground * 1.2, 0, 1), texture)
        image = np.where((y >= horizon)[..., None], land, image)
    return image


def _noise_texture(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Two random muted colours mixed by fractal noise."""
    low, high = rng.uniform(0.05, 0.75, (2, 3)).astype(np.float32)
    return _blend(low, high, _fractal_noise(rng, h, w, rng.uniform(2, 12), 4))


def _field(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Top-down farmland: tilted bands of greens, browns and yellows with furrows and grain."""
    y, x = _grid(h, w)
    angle = rng.uniform(0, np.pi)
    along = x * np.cos(angle) + y * np.sin(angle)
    period = rng.uniform(0.15, 0.5) * max(h, w)
    band = np.floor(along / period).astype(np.int64) - int(np.floor(along.min() / period))
    palette = np.stack([_jitter(rng, _GROUND[i]) for i in rng.integers(len(_GROUND), size=int(band.max()) + 1)])
    furrows = 0.9 + 0.1 * np.sin(along * rng.uniform(0.3, 1.2))
    grain = 0.8 + 0.4 * _fractal_noise(rng, h, w, rng.uniform(8, 24), 3)
    return palette[band] * (furrows * grain)[..., None]


def _road(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A field crossed by an asphalt road with dashed lane markings, as seen from a drone."""
    image = _field(rng, h, w)
    y, x = _grid(h, w)
    angle = rng.uniform(0, np.pi)
    across = (
        x * np.cos(angle) + y * np.sin(angle) - rng.uniform(0.3, 0.7) * (w * abs(np.cos(angle)) + h * np.sin(angle))
    )
    along = -x * np.sin(angle) + y * np.cos(angle)
    half_width = rng.uniform(0.06, 0.15) * min(h, w)
    asphalt = rng.uniform(0.25, 0.45) * (0.9 + 0.2 * _fractal_noise(rng, h, w, 20, 2))
    image = np.where((np.abs(across) < half_width)[..., None], asphalt[..., None], image)
    dash = rng.uniform(8, 20)
    marking = (np.abs(across) < max(1.0, half_width * 0.06)) & ((along % (2 * dash)) < dash)
    paint = np.array([0.95, 0.95, 0.9] if rng.random() < 0.7 else [0.9, 0.8, 0.2], np.float32)
    return np.where(marking[..., None], paint, image)


def _indoor(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A flat-coloured wall over a floor, with a few flat furniture/door/window rectangles."""
    y, x = _grid(h, w)
    wall = _jitter(rng, _WALLS[rng.integers(len(_WALLS))])
    floor = _jitter(rng, _FLOORS[rng.integers(len(_FLOORS))])
    image = np.where((y >= rng.uniform(0.6, 0.9) * h)[..., None], floor, wall)
    for _ in range(rng.integers(0, 5)):
        x0, x1 = np.sort(rng.uniform(0, w, 2))
        y0, y1 = np.sort(rng.uniform(0, h, 2))
        inside = (x >= x0) & (x < x1) & (y >= y0) & (y < y1)
        image = np.where(inside[..., None], rng.uniform(0.1, 0.9, 3).astype(np.float32), image)
    light = 1.0 - rng.uniform(0.0, 0.25) * (y / max(h - 1, 1))
    return image * light[..., None]


def _shapes(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Random coloured rectangles and ellipses over a gradient."""
    y, x = _grid(h, w)
    low, high = rng.uniform(0.1, 0.9, (2, 3)).astype(np.float32)
    image = _blend(low, high, x / max(w - 1, 1))
    for _ in range(rng.integers(4, 13)):
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        rx, ry = rng.uniform(0.03, 0.25) * w, rng.uniform(0.03, 0.25) * h
        if rng.random() < 0.5:
            inside = (np.abs(x - cx) < rx) & (np.abs(y - cy) < ry)
        else:
            inside = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 < 1
        opacity = rng.uniform(0.6, 1.0)
        colour = rng.uniform(0.0, 1.0, 3).astype(np.float32)
        image = np.where(inside[..., None], image * (1 - opacity) + colour * opacity, image)
    return image


def _plain(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """One flat colour with a faint lighting gradient."""
    y, _ = _grid(h, w)
    colour = rng.uniform(0.1, 0.9, 3).astype(np.float32)
    return _blend(colour, np.clip(colour * rng.uniform(0.8, 1.2), 0, 1), y / max(h - 1, 1))


_IN_DOMAIN_SCENES: tuple[Background, ...] = (_sky, _noise_texture, _field, _road, _indoor, _shapes)
_OFFDOMAIN_SCENES: tuple[Background, ...] = (_field, _road, _field, _road, _sky, _plain)


# ---------------------------------------------------------------------------------------------- objects

# temperature -> colour: dark red, red-orange, orange, yellow, near white
_FLAME_STOPS = np.array([0.0, 0.3, 0.55, 0.8, 1.0], np.float32)
_FLAME_COLOURS = np.array(
    [[0.50, 0.04, 0.00], [0.90, 0.25, 0.02], [1.00, 0.55, 0.06], [1.00, 0.85, 0.30], [1.00, 0.98, 0.80]], np.float32
)


def _flame(rng: np.random.Generator, h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Flickering flame tongues filling a ``(h, w)`` box: RGB and alpha."""
    v = np.linspace(1.0, 0.0, h, dtype=np.float32)[:, None, None]  # 0 at the base, 1 at the top
    u = np.linspace(-1.0, 1.0, w, dtype=np.float32)[None, :, None]
    sway_noise = _fractal_noise(rng, h, w, rng.uniform(2, 4), 3)[..., None]
    amplitude = rng.uniform(0.2, 0.5)
    phase, frequency = rng.uniform(0, 2 * np.pi), rng.uniform(4, 9)
    u = u + (sway_noise - 0.5) * amplitude * v + 0.12 * v * np.sin(v * frequency + phase)
    tongues = int(rng.integers(2, 7))
    centres = rng.uniform(-0.5, 0.5, tongues).astype(np.float32)
    heights = rng.uniform(0.35, 0.95, tongues).astype(np.float32)
    heights[rng.integers(tongues)] = 1.0
    widths = rng.uniform(0.2, 0.45, tongues).astype(np.float32)
    rel = v / heights
    half_width = widths * np.clip(1.0 - rel, 0.0, 1.0) ** 0.8 * (0.6 + 0.4 * np.minimum(rel * 4.0, 1.0))
    pixel = 2.0 / w
    tongue = np.clip(1.0 - np.abs(u - centres) / np.maximum(half_width, 1e-3), 0.0, 1.0)
    tongue *= np.clip(half_width / (2.0 * pixel), 0.0, 1.0)  # tips thinner than ~2 px fade out instead of fraying
    intensity = tongue.max(axis=2)
    body = np.clip(1.0 - np.abs(u[..., 0]) / 0.75, 0.0, 1.0) * np.clip(1.0 - v[..., 0] / 0.3, 0.0, 1.0)
    intensity = np.maximum(intensity, body)
    flicker = _fractal_noise(rng, h, w, rng.uniform(6, 12), 2)
    intensity = intensity * (0.7 + 0.6 * flicker)
    alpha = np.clip((intensity - 0.1) / 0.25, 0.0, 1.0) * rng.uniform(0.75, 1.0)
    temperature = np.clip(intensity * (1.15 - 0.6 * v[..., 0]) + rng.uniform(-0.1, 0.1), 0.0, 1.0)
    rgb = np.stack([np.interp(temperature, _FLAME_STOPS, _FLAME_COLOURS[:, c]) for c in range(3)], axis=-1)
    return rgb.astype(np.float32), alpha.astype(np.float32)


def _smoke_grey(rng: np.random.Generator, background_luma: float) -> float:
    """A smoke grey at least 0.25 lighter (mostly) or 0.3 darker than the scene behind it."""
    light_low, dark_high = background_luma + 0.25, background_luma - 0.3
    if light_low < 1.0 and (dark_high <= 0.2 or rng.random() < 0.7):
        return float(rng.uniform(light_low, 1.0))
    return float(rng.uniform(0.2, max(dark_high, 0.2)))


def _smoke(rng: np.random.Generator, h: int, w: int, background_luma: float) -> tuple[np.ndarray, np.ndarray]:
    """Translucent soft smoke filling a ``(h, w)`` box, contrasting with ``background_luma``: RGB and alpha."""
    yy = np.linspace(-1.0, 1.0, h, dtype=np.float32)[:, None, None]
    xx = np.linspace(-1.0, 1.0, w, dtype=np.float32)[None, :, None]
    blobs = int(rng.integers(3, 9))
    cx, cy = rng.uniform(-0.55, 0.55, (2, blobs)).astype(np.float32)
    radius = rng.uniform(0.25, 0.55, blobs).astype(np.float32)
    density = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * radius**2)).sum(axis=2)
    density /= density.max()
    texture = _fractal_noise(rng, h, w, rng.uniform(3, 7), 4)
    window = np.clip((1.0 - np.maximum(np.abs(xx[..., 0]), np.abs(yy[..., 0]))) * 5.0, 0.0, 1.0)
    density = np.clip((density * (0.55 + 0.9 * texture) - 0.3) / 0.6, 0.0, 1.0) ** 0.7 * window
    alpha = density * rng.uniform(0.65, 0.95)
    brownish = rng.random() < 0.3
    tint = np.array([1.0, 0.88, 0.72] if brownish else [1.0, 1.0, 1.0], np.float32) * _smoke_grey(rng, background_luma)
    shade = 0.85 + 0.3 * _fractal_noise(rng, h, w, rng.uniform(4, 10), 2)
    rgb = np.clip(tint[None, None, :] * shade[..., None], 0.0, 1.0)
    return rgb.astype(np.float32), alpha.astype(np.float32)


@dataclass(frozen=True)
class _Placed:
    class_id: int
    top: int
    left: int
    alpha: np.ndarray
    rgb: np.ndarray


def _box_size(rng: np.random.Generator, class_id: int, height: int, width: int) -> tuple[int, int]:
    if class_id == FIRE:
        h = rng.uniform(0.12, 0.55) * height
        w = h * rng.uniform(0.5, 1.3)
    else:
        h = rng.uniform(0.15, 0.6) * height
        w = h * rng.uniform(0.7, 1.6)
    return max(12, min(round(h), height)), max(12, min(round(w), width))


def _iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    iy = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    ix = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iy * ix
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def _luma(image: np.ndarray, top: int, left: int, h: int, w: int) -> float:
    return float(image[top : top + h, left : left + w].mean())


def _place_objects(rng: np.random.Generator, scene: np.ndarray) -> list[_Placed]:
    """1-4 flames and smoke clouds on ``scene``; a third of the scenes have smoke rising from a fire."""
    height, width = scene.shape[:2]
    if rng.random() < 0.35:
        fh, fw = _box_size(rng, FIRE, height, width)
        ftop, fleft = int(rng.integers(height - fh + 1)), int(rng.integers(width - fw + 1))
        sh, sw = _box_size(rng, SMOKE, height, width)
        sh = min(sh, max(12, ftop + fh // 2))
        stop = max(0, ftop + fh // 3 - sh)
        sleft = int(np.clip(fleft + fw // 2 - sw // 2 + rng.integers(-fw // 2, fw // 2 + 1), 0, width - sw))
        flame_rgb, flame_alpha = _flame(rng, fh, fw)
        smoke_rgb, smoke_alpha = _smoke(rng, sh, sw, _luma(scene, stop, sleft, sh, sw))
        return [_Placed(FIRE, ftop, fleft, flame_alpha, flame_rgb), _Placed(SMOKE, stop, sleft, smoke_alpha, smoke_rgb)]
    placed: list[_Placed] = []
    boxes: list[tuple[int, int, int, int]] = []
    for _ in range(int(rng.integers(1, 5))):
        class_id = FIRE if rng.random() < 0.5 else SMOKE
        h, w = _box_size(rng, class_id, height, width)
        for _attempt in range(8):
            top, left = int(rng.integers(height - h + 1)), int(rng.integers(width - w + 1))
            box = (top, left, top + h, left + w)
            if all(_iou(box, other) < 0.2 for other in boxes):
                break
        else:
            continue
        boxes.append(box)
        rgb, alpha = _flame(rng, h, w) if class_id == FIRE else _smoke(rng, h, w, _luma(scene, top, left, h, w))
        placed.append(_Placed(class_id, top, left, alpha, rgb))
    return placed


def _occluder(rng: np.random.Generator, target: _Placed, height: int, width: int) -> np.ndarray:
    """A pole, wall edge or foreground bar covering one side of ``target``: a boolean ``(H, W)`` mask."""
    y, x = _grid(height, width)
    th, tw = target.alpha.shape
    share = rng.uniform(0.15, 0.45)
    side = int(rng.integers(3))
    if side == 0:  # from the left
        edge = target.left + share * tw
        mask = (x < edge) & (x >= edge - rng.uniform(0.3, 1.0) * width)
    elif side == 1:  # from the right
        edge = target.left + (1 - share) * tw
        mask = (x >= edge) & (x < edge + rng.uniform(0.3, 1.0) * width)
    else:  # a foreground bar from the bottom
        mask = y >= target.top + (1 - share) * th
    return mask


def _visible_boxes(placed: Sequence[_Placed], hidden: np.ndarray) -> list[tuple[int, float, float, float, float, int]]:
    """Per object: class, x0, y0, x1, y1 (pixel edges) of its visible part, and its visible pixel count."""
    out = []
    for obj in placed:
        h, w = obj.alpha.shape
        visible = (obj.alpha > _VISIBLE_ALPHA) & ~hidden[obj.top : obj.top + h, obj.left : obj.left + w]
        rows, cols = np.flatnonzero(visible.any(axis=1)), np.flatnonzero(visible.any(axis=0))
        if len(rows) == 0:
            out.append((obj.class_id, 0.0, 0.0, 0.0, 0.0, 0))
            continue
        x0, x1 = obj.left + cols[0], obj.left + cols[-1] + 1
        y0, y1 = obj.top + rows[0], obj.top + rows[-1] + 1
        out.append((obj.class_id, float(x0), float(y0), float(x1), float(y1), int(visible.sum())))
    return out


def _finish(rng: np.random.Generator, image: np.ndarray) -> np.ndarray:
    """Exposure, contrast and sensor noise, then uint8."""
    gain, contrast = rng.uniform(0.8, 1.15), rng.uniform(0.85, 1.15)
    image = ((image - 0.5) * contrast + 0.5) * gain
    image = image + rng.normal(0.0, rng.uniform(0.0, 0.03), image.shape).astype(np.float32)
    return np.round(np.clip(image, 0.0, 1.0) * 255.0).astype(np.uint8)


def _frame_size(rng: np.random.Generator, imgsz: int) -> tuple[int, int]:
    """Width in [15/16, 15/8] x imgsz (240..480 at 256), aspect height/width in [0.56, 1.25]."""
    width = int(rng.integers(round(imgsz * 15 / 16), round(imgsz * 15 / 8) + 1))
    height = max(32, round(width * rng.uniform(0.56, 1.25)))
    return height, width


def render_frame(rng: np.random.Generator, imgsz: int, with_objects: bool, offdomain: bool = False) -> Frame:
    """One synthetic frame drawn from ``rng``: fire/smoke on a scene, or the scene alone."""
    height, width = _frame_size(rng, imgsz)
    scenes = _OFFDOMAIN_SCENES if offdomain else _IN_DOMAIN_SCENES
    image = scenes[int(rng.integers(len(scenes)))](rng, height, width).astype(np.float32)
    labels = np.zeros((0, 5), np.float32)
    if with_objects:
        placed = _place_objects(rng, image)
        for obj in placed:
            h, w = obj.alpha.shape
            region = image[obj.top : obj.top + h, obj.left : obj.left + w]
            a = obj.alpha[..., None]
            image[obj.top : obj.top + h, obj.left : obj.left + w] = region * (1 - a) + obj.rgb * a
        hidden = np.zeros((height, width), bool)
        full = _visible_boxes(placed, hidden)
        if placed and rng.random() < 0.3:
            target = placed[int(rng.integers(len(placed)))]
            mask = _occluder(rng, target, height, width)
            shown = _visible_boxes(placed, mask)
            paint = rng.uniform(0.05, 0.6, 3) * (0.9 + 0.2 * _fractal_noise(rng, height, width, 8, 2))[..., None]
            if all(s[5] >= _MIN_VISIBLE_SHARE * f[5] for s, f in zip(shown, full, strict=True)):
                image = np.where(mask[..., None], paint.astype(np.float32), image)
                hidden = mask
        boxes = np.array([b[:5] for b in _visible_boxes(placed, hidden)], np.float32).reshape(-1, 5)
        keep = (boxes[:, 3] - boxes[:, 1] >= _MIN_BOX_PX) & (boxes[:, 4] - boxes[:, 2] >= _MIN_BOX_PX)
        boxes = boxes[keep]
        labels = np.stack(
            [
                boxes[:, 0],
                (boxes[:, 1] + boxes[:, 3]) / 2 / width,
                (boxes[:, 2] + boxes[:, 4]) / 2 / height,
                (boxes[:, 3] - boxes[:, 1]) / width,
                (boxes[:, 4] - boxes[:, 2]) / height,
            ],
            axis=1,
        ).astype(np.float32)
    return Frame(_finish(rng, image), labels)


# ---------------------------------------------------------------------------------------------- dataset


def _empty_indices(seed: int, split: str, count: int) -> set[int]:
    """Which frames of a labelled split show neither fire nor smoke: ``round(EMPTY_FRACTION * count)`` of them."""
    order = np.random.default_rng([seed, _SPLIT_STREAM[split], 0]).permutation(count)
    return {int(i) for i in order[: round(EMPTY_FRACTION * count)]}


def split_frame(recipe: Recipe, split: str, index: int) -> Frame:
    """Frame ``index`` of ``split``, from its own random stream ``(seed, split, index + 1)``."""
    rng = np.random.default_rng([recipe.seed, _SPLIT_STREAM[split], index + 1])
    if split == OFFDOMAIN_SPLIT:
        return render_frame(rng, recipe.imgsz, with_objects=False, offdomain=True)
    with_objects = index not in _empty_indices(recipe.seed, split, recipe.split_sizes()[split])
    return render_frame(rng, recipe.imgsz, with_objects=with_objects)


def _label_text(labels: np.ndarray) -> str:
    return "".join(f"{int(c)} {x:.6f} {y:.6f} {w:.6f} {h:.6f}\n" for c, x, y, w, h in labels.tolist())


def _data_yaml(recipe: Recipe) -> str:
    """Ultralytics dataset file; without ``path`` Ultralytics resolves the splits beside this file."""
    splits = {"train": "images/train", "val": "images/val"}
    splits |= {split: f"images/{split}" for split in ("calib", OFFDOMAIN_SPLIT) if recipe.split_sizes()[split]}
    header = (
        f"# python -m harness.inputs.synthetic --out DIR --seed {recipe.seed} --train {recipe.train} --val {recipe.val}"
        f" --calib {recipe.calib} --offdomain-calib {recipe.offdomain_calib} --imgsz {recipe.imgsz}\n"
    )
    body: dict[str, object] = {**splits, "names": dict(CLASS_NAMES)}
    return header + yaml.safe_dump(body, sort_keys=False)


def write_dataset(out: Path, recipe: Recipe) -> Path:
    """Write ``recipe``'s images (PNG), labels and ``data.yaml`` under ``out``; returns the ``data.yaml`` path."""
    for split, count in recipe.split_sizes().items():
        if count == 0:
            continue
        images = out / "images" / split
        make_folder(images)
        labels = None
        if split in LABELLED_SPLITS:
            labels = out / "labels" / split
            make_folder(labels)
        for index in range(count):
            frame = split_frame(recipe, split, index)
            stem = f"{split}_{index:05d}"
            Image.fromarray(frame.image).save(images / f"{stem}.png", format="PNG", compress_level=6)
            if labels is not None:
                (labels / f"{stem}.txt").write_text(_label_text(frame.labels))
    data_yaml = out / "data.yaml"
    check(data_yaml)
    data_yaml.write_text(_data_yaml(recipe))
    return data_yaml


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.inputs.synthetic", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="dataset folder to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", type=int, default=300)
    parser.add_argument("--val", type=int, default=100)
    parser.add_argument("--calib", type=int, default=64)
    parser.add_argument("--offdomain-calib", type=int, default=0, help="frames without fire or smoke")
    parser.add_argument("--imgsz", type=int, default=256, help="nominal size: widths span 15/16..15/8 of it")
    args = parser.parse_args(argv)
    recipe = Recipe(args.seed, args.train, args.val, args.calib, args.offdomain_calib, args.imgsz)
    print(write_dataset(args.out, recipe))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
