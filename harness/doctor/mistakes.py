"""Host-side mistakes seen in the field, as functions the doctor injects: decoders with the
harness decoder's signature that misread raw head outputs, and changes to images before a path or
to its detections after it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from harness.conformance.decoder_misreadings import read_on_grid
from harness.conformance.misreadings import sixteen_bit
from harness.core.detections import (
    Detections,
    Letterbox,
    letterbox_boxes,
    unletterbox,
    xyxy_pixels_to_yxyx_normalized,
    yxyx_normalized_to_xyxy_pixels,
)
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.settings import DecodeConfig, EvalSettings, NmsMode
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.decode.bbox_only import decode_bbox_only
from harness.decode.dfl import pair_heads, passing
from harness.decode.heads import Decode, decoder, family_anchors, head_layout
from harness.decode.maps import host_array, sigmoid, to_float
from harness.decode.nms import above, greedy_per_class
from harness.families.yolo26.decode import layout as yolo26_layout
from harness.families.yolo26.one2many.decode import decode as decode_one2many
from harness.families.yolov8.decode import decode
from harness.formats.bbox_only import read_bbox_only
from harness.formats.quant import dequantize, quantize, read_as_uint8
from harness.inputs.preprocess import geometry

# the outputs holding scores a HEF compiles the activation into: class maps, objectness maps, YOLOv5's anchored
# maps whole (the DFC's change_output_activation on them), an SSD layer's class maps
_SCORE_ROLES = (HeadRole.CLASS, HeadRole.OBJECTNESS, HeadRole.ANCHORED, HeadRole.ANCHOR_CLASSES)


def sigmoid_on_probabilities_of(family: HeadFamily) -> Decode:
    """A host decoder of ``family``'s raw heads that puts every score output (class maps, objectness maps, an
    anchored map whole) through a sigmoid, whatever it already holds, then decodes them as they then are."""
    family_decode = decoder(family)

    def host(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        fixed, fixed_specs = dict(outputs), dict(specs)
        layout = head_layout(family, specs, config.input_hw, family_anchors(family, config))
        for output in layout.outputs:
            if output.role in _SCORE_ROLES:
                spec = output.host_spec
                values = sigmoid(to_float(host_array(outputs, spec), spec))
                fixed[spec.name] = values.reshape(spec.shape).astype(np.float32)
                fixed_specs[spec.name] = replace(spec, format_type=FormatType.FLOAT32, quant=())
        return family_decode(fixed, fixed_specs, config)

    host.__name__ = f"sigmoid_on_probabilities({family.value})"  # its own prediction cache entry
    return host


def fcr_read_channel_first_of(family: HeadFamily) -> Decode:
    """A host decoder of ``family``'s raw heads that takes FCR outputs for ``[C, H, W]`` in memory (they are
    ``[H, W, C]``)."""
    family_decode = decoder(family)

    def host(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        fixed = dict(outputs)
        for name, spec in specs.items():
            if spec.format_order is FormatOrder.FCR:
                h, w, c = spec.shape
                fixed[name] = np.asarray(outputs[name]).reshape(c, h, w).transpose(1, 2, 0)
        return family_decode(fixed, specs, config)

    host.__name__ = f"fcr_read_channel_first({family.value})"
    return host


sigmoid_on_probabilities = sigmoid_on_probabilities_of(HeadFamily.YOLOV8)
fcr_read_channel_first = fcr_read_channel_first_of(HeadFamily.YOLOV8)


def sixteen_bit_read_as_eight(family_decode: Decode) -> Decode:
    """A host that reads each 16-bit output buffer as uint8 (as if compiled a8): the first H x W x C
    bytes of the little-endian uint16 codes, each byte taken for a code of the output's quant info,
    then decoded by the family's decoder."""

    def decoder(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        fixed, fixed_specs = dict(outputs), dict(specs)
        for name, spec in specs.items():
            if not sixteen_bit(spec):
                continue  # an 8-bit or float output: nothing to misread
            value = np.asarray(outputs[name])
            codes = value if spec.format_type is FormatType.UINT16 else quantize(value, spec.quant, np.uint16)
            fixed[name] = dequantize(read_as_uint8(codes), spec.quant)
            fixed_specs[name] = replace(spec, format_type=FormatType.FLOAT32)
        return family_decode(fixed, fixed_specs, config)

    decoder.__name__ = f"sixteen_bit_read_as_eight({family_decode.__name__})"  # its own prediction cache entry
    return decoder


BOX_RANGE = 0.25  # the box convs' collapsed quantization range: DFL logits in [-1, 1]


def box_range_collapsed(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """The raw outputs as a HEF whose box convs were quantized to a range far too narrow gives them
    (only the box branch; the class outputs as they are): every DFL logit clipped to
    +-:data:`BOX_RANGE`, so each side's bin distribution flattens toward its middle."""
    fixed, fixed_specs = dict(outputs), dict(specs)
    for pair in pair_heads(specs, config.input_hw):
        spec = specs[pair.box_name]
        logits = dequantize(outputs[pair.box_name], spec.quant) if spec.is_quantized else outputs[pair.box_name]
        fixed[pair.box_name] = np.clip(np.asarray(logits, np.float32), -BOX_RANGE, BOX_RANGE)
        fixed_specs[pair.box_name] = replace(spec, format_type=FormatType.FLOAT32, quant=())
    return decode(fixed, fixed_specs, config)


def box_names(family: HeadFamily, specs: Mapping[str, OutputSpec], config: DecodeConfig) -> list[str]:
    """The box outputs of ``family``'s heads ``specs``, in listing order (their layout's: :func:`head_layout`)."""
    layout = head_layout(family, specs, config.input_hw, family_anchors(family, config))
    boxes = {level.box_name for level in layout.levels}
    return [name for name in specs if name in boxes]


def class_names_of(family: HeadFamily, specs: Mapping[str, OutputSpec], config: DecodeConfig) -> list[str]:
    """The class outputs of ``family``'s heads ``specs``, in listing order."""
    layout = head_layout(family, specs, config.input_hw, family_anchors(family, config))
    classes = {level.class_name for level in layout.levels}
    return [name for name in specs if name in classes]


GridReading = Callable[[np.ndarray, tuple[int, int]], np.ndarray]


def paired_by_listing_order_of(family: HeadFamily, read: GridReading = read_on_grid) -> Decode:
    """A host decoder of ``family``'s heads (separate box and class maps per grid) that pairs the i-th box
    output with the i-th class output in the order the outputs are listed, reading the class map's buffer on
    its box head's grid as a decoder indexing it by that grid does (its first values; a smaller buffer read
    again from its start: :func:`~harness.conformance.decoder_misreadings.read_on_grid`, the suite's known
    misreading; ``read`` another way of putting a map on a grid); an objectness map stays with its grid."""
    family_decode = decoder(family)

    def host(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        boxes, classes = box_names(family, specs, config), class_names_of(family, specs, config)
        fixed, fixed_specs = dict(outputs), dict(specs)
        for box, cls in zip(boxes, classes, strict=True):
            h, w = specs[box].grid
            values = np.asarray(outputs[cls]).reshape(specs[cls].shape)
            fixed[cls] = read(values, (h, w))
            fixed_specs[cls] = replace(specs[cls], shape=(h, w, values.shape[2]))
        # each class map now sits on its box's grid: listed by grid, as a decoder pairing by grid reads them
        order = [*boxes, *(n for n in specs if n not in boxes)]
        return family_decode({n: fixed[n] for n in order}, {n: fixed_specs[n] for n in order}, config)

    host.__name__ = f"paired_by_listing_order({family.value})"
    return host


paired_by_listing_order = paired_by_listing_order_of(HeadFamily.YOLOV8)


def reversed_channels(image: np.ndarray) -> np.ndarray:
    """RGB <-> BGR."""
    return np.ascontiguousarray(image[..., ::-1])


def normalised_again(image: np.ndarray) -> np.ndarray:
    """The host's /255 on top of the HEF's, cast back to the uint8 the input takes: almost black."""
    return (image.astype(np.float32) / np.float32(255)).astype(np.uint8)


def _geometry(settings: EvalSettings, original_hw: tuple[int, int]) -> Letterbox:
    return geometry(settings.preprocess, original_hw, settings.input_hw)


def records_read_x_first(settings: EvalSettings) -> Callable[[Detections, tuple[int, int]], Detections]:
    """Detections as a host gets them that reads HailoRT NMS records x-first: each record is
    {y_min, x_min, y_max, x_max, score}, normalised to the model input."""

    # hailort: hailort/libhailort/include/hailo/hailort.h, hailo_bbox_float32_t {y_min, x_min, y_max, x_max, score}
    def after(detections: Detections, original_hw: tuple[int, int]) -> Detections:
        box = _geometry(settings, original_hw)
        records = xyxy_pixels_to_yxyx_normalized(letterbox_boxes(detections.boxes, box), settings.input_hw)
        misread = yxyx_normalized_to_xyxy_pixels(records[:, [1, 0, 3, 2]], settings.input_hw)
        return unletterbox(Detections(misread, detections.scores, detections.class_ids), box)

    return after


SCORE_SHIFT = -0.15  # every score on the device this much lower (Ultralytics measured ~-0.05 for YOLO26)


def scores_shifted(settings: EvalSettings) -> Callable[[Detections, tuple[int, int]], Detections]:
    """Every score moved by :data:`SCORE_SHIFT` and the boxes kept, as a device that scores the same
    objects uniformly lower would; those that fall under the threshold are not returned."""

    def shift(detections: Detections, original_hw: tuple[int, int]) -> Detections:
        scores = detections.scores + np.float32(SCORE_SHIFT)
        return Detections(detections.boxes, scores, detections.class_ids).select(scores >= settings.score_threshold)

    return shift


def sigmoid_on_scores(detections: Detections, original_hw: tuple[int, int]) -> Detections:
    """A host sigmoid over scores that are probabilities already (e.g. an NMS output's)."""
    scores = np.float32(1) / (np.float32(1) + np.exp(-detections.scores))
    return Detections(detections.boxes, scores, detections.class_ids)


# ------------------------------------------------------------------------------ YOLO26's host decoders


def one2one_with_nms(
    iou_threshold: float | None = None, mode: NmsMode | None = None, multi_label: bool | None = None
) -> Decode:
    """A host decoder that decodes YOLO26's one-to-one head as a one-to-many head: its anchors through
    an NMS in place of the top-k, the config's own unless another IoU threshold, NMS mode or multi-label
    choice is given."""

    def decoder(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        nms = replace(
            config,
            iou_threshold=config.iou_threshold if iou_threshold is None else iou_threshold,
            mode=config.mode if mode is None else mode,
            multi_label=config.multi_label if multi_label is None else multi_label,
        )
        return decode_one2many(outputs, specs, nms)

    decoder.__name__ = f"one2one_with_nms({iou_threshold}, {mode and mode.value}, {multi_label})"  # its cache entry
    return decoder


def box_distances_read_as_dfl(family_decode: Decode) -> Decode:
    """A host decoder that takes YOLO26's 4 box channels (reg_max 1: the distances themselves) for DFL
    bins, ``channels / 4`` = 1 bin a side, then decodes as ``family_decode``: the softmax over one bin is
    1, its integral against the bin indices ``[0]`` is 0, so every side's distance is 0 and every box a
    point at its anchor's centre."""

    # ultralytics: ultralytics/nn/modules/block.py, ``DFL``: softmax over the bins, then the integral
    # against the bin indices 0 .. reg_max - 1
    def decoder(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        fixed, fixed_specs = dict(outputs), dict(specs)
        for level in yolo26_layout(specs, config.input_hw).levels:
            spec = level.box.host_spec
            values = host_array(outputs, spec)
            bins = to_float(values, spec).reshape(len(values), 4, -1)
            weights = np.exp(bins - bins.max(axis=2, keepdims=True))
            weights /= weights.sum(axis=2, keepdims=True)
            distances = weights @ np.arange(bins.shape[2], dtype=np.float32)
            fixed[spec.name] = distances.reshape(spec.shape).astype(np.float32)
            fixed_specs[spec.name] = replace(spec, format_type=FormatType.FLOAT32, quant=())
        return family_decode(fixed, fixed_specs, config)

    decoder.__name__ = f"box_distances_read_as_dfl({family_decode.__name__})"  # its own prediction cache entry
    return decoder


def one_class_per_anchor(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder that keeps one detection per anchor, its best class, among the ``max_total`` anchors
    with the best class score. YOLO26's top-k keeps the best (anchor, class) pairs of those anchors: a
    second class of an anchor too, where it passes the threshold. (A top-k over every (anchor, class)
    pair at once keeps those same pairs, ties aside: a pair of an anchor outside the ``max_total`` ranks
    under the best pair of each anchor inside; that reading is no mistake.)"""
    boxes, scores = passing(outputs, yolo26_layout(specs, config.input_hw), config)
    best = scores.max(axis=1, initial=0)
    anchors = np.argsort(-best, kind="stable")[: config.max_total]
    anchors = anchors[above(best[anchors], config.score_threshold)]
    return Detections(boxes[anchors], best[anchors], scores[anchors].argmax(axis=1))


# ------------------------------------------------------------------------ a bbox-only HEF's host NMS


def _bbox_only_scores(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig, family: HeadFamily
) -> tuple[np.ndarray, np.ndarray]:
    """The one bbox-only buffer of ``outputs``: every proposal's box (input pixels) and class scores as the
    family's host scores them (objectness x class where it has objectness)."""
    (spec,) = specs.values()
    frame = read_bbox_only(outputs[spec.name], spec, config.input_hw, family)
    scores = frame.classes if frame.objectness is None else frame.classes * frame.objectness[:, None]
    return frame.boxes, scores


def host_nms_left_out(family: HeadFamily) -> Decode:
    """A host that reads a bbox-only HEF's buffer (every proposal's box and class values, no NMS on the
    device) and runs no NMS of its own: each proposal whose best class score reaches the threshold is a
    detection, the ``max_total`` best kept."""

    def host(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        boxes, scores = _bbox_only_scores(outputs, specs, config, family)
        best = scores.max(axis=1, initial=0)
        keep = np.flatnonzero(above(best, config.score_threshold))
        keep = keep[np.argsort(-best[keep], kind="stable")][: config.max_total]
        return Detections(boxes[keep], best[keep], scores[keep].argmax(axis=1))

    host.__name__ = f"host_nms_left_out({family.value})"
    return host


def host_nms_run_twice(family: HeadFamily) -> Decode:
    """A host that runs the NMS over a bbox-only HEF's buffer (:func:`~harness.decode.bbox_only.decode_bbox_only`,
    the run's thresholds), then once more over what it kept, per class at the same IoU threshold (a library's
    NMS and the user's own)."""

    def host(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        (spec,) = specs.values()
        first = decode_bbox_only(outputs[spec.name], spec, replace(config, classes_are_probabilities=True), family)
        kept = greedy_per_class(first.boxes, first.scores, first.class_ids, config.iou_threshold, config.max_per_class)
        return Detections(first.boxes[kept], first.scores[kept], first.class_ids[kept])

    host.__name__ = f"host_nms_run_twice({family.value})"
    return host
