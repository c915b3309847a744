"""The SSD head family's decoding: its layout and its decoder, as HailoRT's SSD op decodes.

Each layer has two maps on one grid: a regression map of 4 channels per anchor (``ty, tx, th, tw`` in the
order the config gives) and a class map of ``nc`` channels per anchor, both anchor-major. The anchors and the
box coding are not in any graph: they come from an SSD config (:class:`~harness.core.settings.SsdConfig`,
``DecodeConfig.ssd``), per layer, largest grid first, each anchor's ``(wa, ha)`` a fraction of the input. A
(cell, anchor)'s box, in fractions of the input, is

    centre = (t_xy / centers_scale_factor) * (wa, ha) + ((col, row) + 0.5) / (W, H)
    size = exp(t_wh / bbox_dimensions_scale_factor) * (wa, ha)

and every (cell, anchor, class) scores its class value as it is (no sigmoid: the HEF holds the score
activation), the background class left out. Then the NMS of ``config.mode``.

hailort: libhailort/src/net_flow/ops/ssd_post_process.cpp (``extract_detections``: row by row, column by
column, anchor by anchor, ``reg_idx`` and ``cls_idx`` of the NHCW frame; the anchor centre ``col / W + 0.5 / W``)
and ssd_post_process.hpp (``extract_bbox_detections``: the box in float32, ``expf``; ``extract_bbox_classes``:
a class whose dequantized value is ``< nms_score_th`` is skipped, the background class
``background_removal_index`` skipped and, where it is the first, every class id after it one lower).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from harness.core.detections import Detections
from harness.core.errors import HarnessError, HeadPairingError
from harness.core.head_family import HeadRole
from harness.core.settings import DecodeConfig, SsdConfig
from harness.core.specs import OutputSpec
from harness.decode.layout import Anchors, HeadLayout, HeadOutput, Level, maps_by_grid, require_anchor_groups
from harness.decode.maps import host_array, to_float
from harness.decode.nms import anchors_reaching, float32_at_least, nms

F = np.float32
BOX_CHANNELS = 4  # per anchor (hailort: ssd_post_process.cpp, ``reg_entry_size = 4``)


def layout(specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], anchors: Anchors) -> HeadLayout:
    """The SSD head layout: per grid a regression map of ``4 x na`` channels and a class map of ``na x nc``,
    told apart by their channel counts, never by name or order; ``anchors``: per layer, largest grid first,
    its anchors (``SsdConfig.anchors``), so that ``na`` is known per grid. Levels come largest grid first.

    SSD grids need not divide the input (a 300 x 300 input has a 19 x 19 grid): a level's ``stride`` is the
    input height over its grid height, rounded up, and codes no box. With nc = 4 the two maps of a grid have
    the same channels and are refused. Raises :class:`~harness.core.errors.HeadPairingError` otherwise. A
    decoder asks once per frame: the layouts of recent specs are kept."""
    return _laid_out(tuple(specs.items()), tuple(input_hw), tuple(tuple(tuple(a) for a in g) for g in anchors))


def anchors(config: DecodeConfig) -> Anchors:
    """The anchors the head decodes against: its SSD config's (``config.ssd.anchors``: per layer, largest grid
    first, as fractions of the input), ``config.anchors`` where no SSD config is given."""
    return config.ssd.anchors if config.ssd is not None else config.anchors


def _describe(specs: list[OutputSpec]) -> str:
    return ", ".join(f"{s.name!r} {s.shape}" for s in specs)


@functools.lru_cache(maxsize=64)
def _laid_out(specs: tuple[tuple[str, OutputSpec], ...], input_hw: tuple[int, int], anchors: Anchors) -> HeadLayout:
    grids = maps_by_grid(specs)
    ordered = sorted(grids.items(), key=lambda item: (-item[0][0] * item[0][1], -item[0][0]))
    require_anchor_groups(
        [s for _, found in ordered for s in found],
        len(ordered),
        anchors,
        "an SSD head but no anchors given; expected per layer its anchors' (width, height) as fractions of the "
        "input (an SSD config's bbox_decoders, DecodeConfig.ssd)",
        "{levels} grid(s) but anchors for {groups} layer(s); expected one group of anchors per layer, largest grid "
        "first",
    )
    levels = []
    for ((h, w), found), group in zip(ordered, anchors, strict=True):
        na = len(group)
        boxes = [s for s in found if s.channels == BOX_CHANNELS * na]
        if len(found) == 2 and len(boxes) == 2:
            raise HeadPairingError(
                f"grid {h}x{w}: outputs {_describe(found)}: both have 4 x {na} channels, so the regression map and a "
                f"class map of nc = 4 cannot be told apart by their channels; nc == 4 is not supported"
            )
        if len(found) != 2 or len(boxes) != 1:
            raise HeadPairingError(
                f"grid {h}x{w}: found {len(found)} output(s) ({_describe(found)}); expected exactly 2 for its "
                f"{na} anchor(s): a regression map of {BOX_CHANNELS * na} channels and a class map of {na} x nc"
            )
        (box,) = boxes
        (classes,) = (s for s in found if s is not box)
        stride = -(-input_hw[0] // h)
        levels.append(
            Level(
                stride,
                (h, w),
                HeadOutput.of_spec(box, HeadRole.ANCHOR_BOXES),
                HeadOutput.of_spec(classes, HeadRole.ANCHOR_CLASSES),
                anchors=group,
            )
        )
    return HeadLayout(tuple(levels))


def ssd_config(config: DecodeConfig) -> SsdConfig:
    """``config.ssd``; a :class:`~harness.core.errors.HarnessError` where it was not given or where the class
    maps are said to hold logits (HailoRT's SSD op reads them as scores)."""
    if config.ssd is None:
        raise HarnessError(
            "DecodeConfig.ssd is None; expected an SSD head's anchors and box coding (an SSD config file: "
            "bbox_decoders, centers_scale_factor, bbox_dimensions_scale_factor)"
        )
    if config.classes_are_probabilities is False:
        raise HarnessError(
            "DecodeConfig.classes_are_probabilities is False for an SSD head; expected class maps of scores: "
            "HailoRT's SSD op applies no activation, so the HEF must hold it"
        )
    return config.ssd


def class_columns(nc: int, ssd: SsdConfig) -> slice:
    """The class map's channels that are classes: all but the background channel (the first or the last)."""
    if ssd.background_class is None:
        return slice(None)
    if nc >= 2 and ssd.background_class == 0:
        return slice(1, None)
    if nc >= 2 and ssd.background_class == nc - 1:
        return slice(None, nc - 1)
    raise HarnessError(
        f"SSD config: background class {ssd.background_class} of a class map of {nc} per anchor; expected the "
        f"first (0) or the last ({nc - 1}) of at least 2 (hailort: ssd_post_process.hpp, background_removal_index)"
    )


@functools.lru_cache(maxsize=16)
def _anchor_centres(rows: int, columns: int, na: int) -> np.ndarray:
    """Per (cell, anchor), cell-major, its cell's centre ``(x, y)`` as a fraction of the grid, float32 as
    HailoRT computes it: ``col * (1 / W) + 0.5 * (1 / W)``; read-only (cached)."""
    row, col = np.divmod(np.arange(rows * columns), columns)
    step = np.array([F(1) / F(columns), F(1) / F(rows)], dtype=F)
    cells = np.stack([col, row], axis=1).astype(F) * step + F(0.5) * step
    table = np.repeat(cells, na, axis=0)
    table.flags.writeable = False
    return table


def _clip(values: np.ndarray, top: float) -> np.ndarray:
    """HailoRT's ``Quantization::clip(n, 0, top)``: ``top`` where ``n >= top``, 0 where ``n <= 0``."""
    return np.where(values >= F(top), F(top), np.where(values <= F(0), F(0), values))


def _expf(x: np.ndarray) -> np.ndarray:
    """``expf`` of float32 ``x`` as glibc computes it, correctly rounded in all but rare cases: the float64
    exponential rounded to float32 (numpy's float32 ``exp`` can be an ulp off it, which a box corner near 0
    makes many ulps)."""
    with np.errstate(over="ignore"):
        return np.exp(x.astype(np.float64)).astype(F)


def _boxes(t: np.ndarray, anchor: np.ndarray, centre: np.ndarray, grid: tuple[int, int], ssd: SsdConfig) -> np.ndarray:
    """Regression rows ``t`` ``(N, 4)`` -> boxes xyxy, fractions of the input (float32, HailoRT's operations)."""
    ty, tx, th, tw = (t[:, i] for i in ssd.box_indices)
    centres, dimensions = F(ssd.centers_scale_factor), F(ssd.bbox_dimensions_scale_factor)
    wa, ha = anchor[:, 0], anchor[:, 1]
    w = _expf(tw / dimensions) * wa
    h = _expf(th / dimensions) * ha
    x_centre = (tx / centres) * wa + centre[:, 0]
    y_centre = (ty / centres) * ha + centre[:, 1]
    half_w, half_h = w / F(2), h / F(2)
    corners = [x_centre - half_w, y_centre - half_h, x_centre + half_w, y_centre + half_h]
    if ssd.normalize_boxes:
        rows, columns = grid
        corners = [_clip(c, (columns if k % 2 == 0 else rows) - 1) for k, c in enumerate(corners)]
    return np.stack(corners, axis=1).astype(F, copy=False)


def candidates(
    outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig, floor: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The (cell, anchor) entries of one frame laid out as ``heads``: boxes float32 ``(N, 4)`` xyxy in
    model-input pixels and scores float32 ``(N, nc)`` (the background class left out); largest grid first,
    then row-major, then anchor. With ``floor``, only the entries with a class value ``>= floor`` (as
    HailoRT compares a float32 with its double threshold): the others can yield no detection, and their
    regression values are never read."""
    ssd = ssd_config(config)
    in_h, in_w = config.input_hw
    scale = np.array([in_w, in_h, in_w, in_h], dtype=F)
    columns = class_columns(heads.classes, ssd)
    all_boxes, all_scores = [], []
    for level in heads.levels:
        box_spec, class_spec = level.box.host_spec, level.classes.host_spec
        na = len(level.anchors)
        scores = to_float(host_array(outputs, class_spec), class_spec).reshape(-1, heads.classes)[:, columns]
        keep = slice(None) if floor is None else anchors_reaching(scores, float32_at_least(floor))
        t = to_float(host_array(outputs, box_spec), box_spec).reshape(-1, BOX_CHANNELS)[keep]
        anchor = np.tile(np.asarray(level.anchors, dtype=F), (level.cells, 1))[keep]
        boxes = _boxes(t, anchor, _anchor_centres(*level.grid, na)[keep], level.grid, ssd)
        all_boxes.append(boxes * scale)
        all_scores.append(scores[keep])
    boxes = np.concatenate(all_boxes).astype(F, copy=False)
    return boxes, np.ascontiguousarray(np.concatenate(all_scores), dtype=F)


def export_rows(rows: np.ndarray, config: DecodeConfig) -> tuple[np.ndarray, np.ndarray]:
    """An SSD export's own decoded rows ``(rows, 4 + nc)``, its boxes and scores side by side as
    :class:`~harness.backends.onnx.runner.FullHeadRunner` joins them, as :func:`candidates` lays its entries:
    boxes float32 ``(rows, 4)`` xyxy in model-input pixels and scores float32 ``(rows, nc)`` less the config's
    background class. The export writes each box ``[ymin, xmin, ymax, xmax]`` as fractions of the input and
    its rows layer by layer, cell by cell, anchor by anchor (tensorflow/models: research/object_detection/
    box_coders/faster_rcnn_box_coder.py, ``_decode``; predictors/heads/box_head.py, the NHWC reshape), the
    order :func:`candidates` walks (hailort: ssd_post_process.cpp, ``extract_detections``)."""
    ssd = ssd_config(config)
    in_h, in_w = config.input_hw
    rows = np.asarray(rows, dtype=F)
    boxes = rows[:, [1, 0, 3, 2]] * np.array([in_w, in_h, in_w, in_h], dtype=F)
    scores = rows[:, 4:]
    return boxes.astype(F, copy=False), np.ascontiguousarray(scores[:, class_columns(scores.shape[1], ssd)])


def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
    """Decode one frame of raw SSD head outputs into detections (the harness's decoder signature,
    :func:`harness.families.yolov8.decode.decode`); the anchors and box coding are ``config.ssd``. The entries with a
    class reaching the score threshold, then the NMS of ``config.mode``: it equals the NMS of every entry's
    :func:`candidates`."""
    heads = layout(specs, config.input_hw, ssd_config(config).anchors)
    boxes, scores = candidates(outputs, heads, config, floor=config.score_threshold)
    return nms(boxes, scores, config)
