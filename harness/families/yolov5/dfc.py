"""The Dataflow Compiler's model script and NMS config for a YOLOv5/YOLOv7 detector (anchor-based):
written from the ONNX's heads and checked against them before anything is compiled.

As the Hailo Model Zoo compiles YOLOv5 (hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov5s.alls,
hailo_model_zoo/cfg/postprocess_config/yolov5s_nms_config.json):

- end nodes: the head's last convolutions, one anchored map of ``anchors x (5 + nc)`` channels per
  stride, stride ascending (:func:`end_nodes`);
- ``normalization([0, 0, 0], [255, 255, 255])``: the /255 of the export inside the HEF;
- ``change_output_activation(sigmoid)``: every output layer, the whole anchored map (box offsets,
  objectness and classes), since HailoRT's YOLOv5 op reads probabilities (hailort:
  libhailort/src/net_flow/ops/nms_post_process.hpp, ``should_sigmoid`` false, which
  yolov5_post_process.hpp does not override);
- ``nms_postprocess("<json>", meta_arch=yolov5, engine=cpu)`` (the Model Zoo names meta_arch by
  position; the checks read either);
- the NMS config: the thresholds, ``image_dims``, ``max_proposals_per_class``, ``background_removal``,
  ``classes``, and per stride a bbox decoder with that stride's anchors as ``w`` and ``h`` lists in whole
  pixels (the HEF keeps them as integers: hailort: hailort/libhailort/hef.proto,
  ``ProtoHEFYoloBboxDecoder`` ``w``, ``h`` uint32; libhailort/src/net_flow/ops/yolov5_post_process.cpp
  reads them as ``std::vector<int>`` pairs), in the export's order, and ``encoded_layer`` the parsed
  layer of that stride's head conv. Anchors the export holds in fractions of a pixel (autoanchor writes
  them so) are rounded, and the check says so.

The Model Zoo's script also sets ``model_optimization_config(calibration, batch_size=4)``, the batch of
its calibration runs, which changes no result; it is left out, as the YOLOv8 script leaves out what
only tunes the optimization (:func:`harness.families.yolov8.dfc.render_alls`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.backends.dfc import nms_keys
from harness.backends.dfc.alls import NORMALIZATION_COMMAND, nms_command
from harness.backends.dfc.checks import (
    NmsScriptChecks,
    ScriptsUnderCheck,
    SigmoidWords,
    check_decoder_layer_names,
    check_decoder_strides,
    check_field,
    check_nms_keys,
    check_sigmoid,
    is_int,
    is_number,
    layer_name_failure,
    list_failure,
    not_output_failure,
    said,
    stride_failure,
)
from harness.backends.dfc.writing import DfcHead, NmsSettings, ScriptRequest, decoder_name, nms_scripts
from harness.core.checks import CheckResult
from harness.core.head_family import HeadTensor
from harness.decode.layout import layout_of_export
from harness.families.yolov5 import DESCRIPTOR
from harness.families.yolov5.decode import DEFAULT_ANCHORS
from harness.inputs.export_facts import ExportFacts

# Its export carries one head.
HEAD = DfcHead(
    "the YOLOv5/YOLOv7 anchored head (one map of anchors x (5 + nc) channels per stride; sigmoid and the YOLOv5 NMS "
    "op compiled in)",
    "YOLOv5/YOLOv7",
)
# The keys of the Model Zoo's YOLOv5 NMS config, in its order
# (hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/yolov5s_nms_config.json).
NMS_KEYS = (
    nms_keys.SCORES_TH,
    nms_keys.IOU_TH,
    nms_keys.IMAGE_DIMS,
    nms_keys.MAX_PROPOSALS,
    nms_keys.BACKGROUND_REMOVAL,
    nms_keys.CLASSES,
    nms_keys.BBOX_DECODERS,
)
DECODER_KEYS = ("name", "w", "h", "stride", "encoded_layer")
# An export's anchor closer than this to a whole pixel is taken as whole (its decode tail holds float32).
WHOLE_PIXEL = 1e-3
# YOLOv5's default anchors by stride (ultralytics/yolov5: models/yolov5s.yaml; harness.families.yolov5.decode).
_DEFAULT_STRIDES = (8, 16, 32)

Anchors = tuple[tuple[int, int], ...]


def whole_pixels(anchors: Sequence[tuple[float, float]]) -> Anchors:
    """The anchors ``(w, h)`` rounded to whole pixels, as the NMS config and the HEF hold them; rounded as
    the HEF check rounds the export's (:func:`harness.verdict.hef_checks.check_anchors`)."""
    return tuple((round(w), round(h)) for w, h in anchors)


def fractional(anchors: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The anchors that are not whole pixels."""
    return [(w, h) for w, h in anchors if max(abs(w - round(w)), abs(h - round(h))) > WHOLE_PIXEL]


def end_nodes(facts: ExportFacts) -> tuple[HeadTensor, ...]:
    """One anchored map per stride, stride ascending, as the Model Zoo's YOLOv5 NMS config lists them
    (hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/yolov5s_nms_config.json): the heads as found."""
    return facts.heads


def nms_config(facts: ExportFacts, names: Mapping[str, str], settings: NmsSettings) -> dict[str, Any]:
    """The ``nms_postprocess`` JSON as a dict, one bbox decoder per stride, stride ascending."""
    layout = layout_of_export(facts)
    by_tensor = {h.tensor: h for h in facts.heads}
    decoders = []
    for level in layout.levels:
        layer = names[by_tensor[level.box.name].node]
        anchors = whole_pixels(level.anchors)
        decoders.append(
            {
                "name": decoder_name(layer, level.stride),
                "w": [w for w, _ in anchors],
                "h": [h for _, h in anchors],
                "stride": level.stride,
                "encoded_layer": layer,
            }
        )
    return {
        "nms_scores_th": settings.score_threshold,
        "nms_iou_th": settings.iou_threshold,
        "image_dims": list(facts.input_hw),
        "max_proposals_per_class": settings.max_proposals_per_class,
        "background_removal": False,
        "classes": layout.classes,
        "bbox_decoders": decoders,
    }


def render_alls(request: ScriptRequest, nms_json_reference: str) -> str:
    """The model script: /255 inside the HEF, the sigmoid on every output, the YOLOv5 NMS op on the CPU
    (decoding boxes only with the settings' ``bbox_decoding_only``, as hailo_model_zoo/cfg/alls/generic/
    yolov5s_bbox_decoding_only.alls)."""
    lines = [
        NORMALIZATION_COMMAND,
        "change_output_activation(sigmoid)",
        nms_command(nms_json_reference, DESCRIPTOR.nms_op, request.settings.bbox_decoding_only),
    ]
    return "\n".join(lines) + "\n"


write_scripts = nms_scripts(nms_config, render_alls)


def _check_nms_keys(s: ScriptsUnderCheck) -> CheckResult:
    """The keys (none missing, none unknown, at both levels) and the types the other checks read."""

    def decoder(i: int, d: Mapping[str, Any]) -> CheckResult | None:
        layer = layer_name_failure(
            i, "encoded_layer", d["encoded_layer"], "model/conv55", "name the parsed layer of the stride's head conv"
        )
        anchors = list_failure(
            i,
            d,
            ("w", "h"),
            lambda values: all(is_number(v) for v in values),
            "a list of numbers (the anchors' widths or heights in pixels)",
        )
        return layer or stride_failure(i, d) or anchors

    return check_nms_keys(s.nms, NMS_KEYS, DECODER_KEYS, "one object per stride", decoder)


def _check_classes(s: ScriptsUnderCheck) -> CheckResult:
    na = len(s.layout.levels[0].anchors)
    why = (
        f"class channels of {s.facts.source}: {s.layout.levels[0].box.channels} channels per map = "
        f"{na} anchors x (5 + {s.layout.classes})"
    )
    return check_field(s.nms, "classes", s.layout.classes, why)


def _misreading(found: Anchors, stride: int, s: ScriptsUnderCheck) -> str:
    """What anchors ``found`` at ``stride`` are, where they are the export's read in a known wrong way."""
    expected = next(whole_pixels(level.anchors) for level in s.layout.levels if level.stride == stride)
    if found == tuple((h, w) for w, h in expected):
        return " (w and h swapped: w holds the heights)"
    if sorted(found) == sorted(expected):
        return " (the export's anchors in another order: the map's channels are anchor by anchor, in its order)"
    for level in s.layout.levels:
        if level.stride != stride and found == whole_pixels(level.anchors):
            return f" (the export's anchors of stride {level.stride}: the strides' anchors swapped)"
    for default_stride, default in zip(_DEFAULT_STRIDES, DEFAULT_ANCHORS, strict=True):
        if found == whole_pixels(default):
            return (
                f" (YOLOv5's default anchors of stride {default_stride}; the export's are its own, as autoanchor "
                "sets them when training)"
            )
    return ""


def _check_anchors(s: ScriptsUnderCheck) -> CheckResult:
    """Each decoder's ``w`` and ``h`` are the export's anchors at its stride: as many, whole pixels, the
    same values in the same order, widths in ``w``."""
    name = "anchors"
    rounded = []
    for i, d in enumerate(s.decoders):
        level = s.level(d["stride"])
        if level is None or [e["stride"] for e in s.decoders].count(d["stride"]) != 1:
            return CheckResult.skipped(name, f"bbox_decoders[{i}]: stride {d['stride']} (see decoder_strides)")
        where = f"bbox_decoders[{i}] (stride {level.stride})"
        expected = whole_pixels(level.anchors)
        for key, side in (("w", [w for w, _ in expected]), ("h", [h for _, h in expected])):
            if not all(is_int(v) for v in d[key]):
                return CheckResult.failed(
                    name,
                    f"{where} {key}",
                    said(d[key]),
                    f"whole pixels, integers (the HEF keeps anchors as uint32): {side}",
                    f"write {key} as integers",
                )
        if not len(d["w"]) == len(d["h"]) == len(expected):
            return CheckResult.failed(
                name,
                f"{where} anchors",
                f"{len(d['w'])} widths and {len(d['h'])} heights",
                f"{len(expected)} of each: the stride's anchors, its map has {level.box.channels} channels = "
                f"{len(expected)} x (5 + {s.layout.classes})",
                "give one w and one h per anchor of the stride",
            )
        found = tuple(zip(d["w"], d["h"], strict=True))
        if found != expected:
            return CheckResult.failed(
                name,
                f"{where} anchors (w, h)",
                f"{list(found)}{_misreading(found, level.stride, s)}",
                f"{list(expected)} (the anchors of {s.facts.source}'s stride {level.stride}, in whole pixels, in its "
                "order)",
                "copy the export's anchors into w and h (the model's own, not YOLOv5's defaults)",
            )
        if off := fractional(level.anchors):
            rounded.append(f"stride {level.stride} {[(round(w, 3), round(h, 3)) for w, h in off]}")
    told = f"; rounded to whole pixels from the export's {', '.join(rounded)}" if rounded else ""
    return CheckResult.ok(
        name, f"every decoder holds its stride's anchors of the export, in order, (w, h) in whole pixels{told}"
    )


def _check_layer_names(s: ScriptsUnderCheck) -> CheckResult:
    return check_decoder_layer_names(s, ("encoded_layer",))


def _check_encoded_layer(s: ScriptsUnderCheck) -> CheckResult:
    """Each decoder's ``encoded_layer`` is the layer of its stride's head conv: that grid, anchors x
    (5 + nc) channels, an output of the network."""
    name = "encoded_layer"
    for i, d in enumerate(s.decoders):
        layer, level = s.table.get(d["encoded_layer"]), s.level(d["stride"])
        if layer is None or level is None:
            return CheckResult.skipped(
                name, f"bbox_decoders[{i}]: layer or stride unknown (see layer_names, decoder_strides)"
            )
        h, w = level.grid
        head = f"the head conv of stride {level.stride}: grid {h}x{w}, {level.box.channels} channels"
        if (layer.grid, layer.channels) != (level.grid, level.box.channels):
            other = next(
                (v.stride for v in s.layout.levels if (v.grid, v.box.channels) == (layer.grid, layer.channels)), None
            )
            told = f" (the head conv of stride {other})" if other is not None else ""
            return CheckResult.failed(
                name,
                f"bbox_decoders[{i}].encoded_layer {layer.name}",
                f"grid {layer.grid[0]}x{layer.grid[1]}, {layer.channels} channels{told}",
                f"{head} ({len(level.anchors)} anchors x (5 + {s.layout.classes} classes))",
                "name the parsed layer of this stride's head conv (see layer_names.json)",
            )
        if not layer.is_output:
            return not_output_failure(
                name, f"bbox_decoders[{i}].encoded_layer {layer.name}", f"{head}, an end node of the network"
            )
    return CheckResult.ok(name, "each decoder reads the head conv of its stride")


def _check_sigmoid(s: ScriptsUnderCheck) -> CheckResult:
    # hailort: libhailort/src/net_flow/ops/nms_post_process.hpp, should_sigmoid false for the YOLOv5 op
    words = SigmoidWords(
        expected="sigmoid (box offsets, objectness and classes alike)",
        fix="add change_output_activation(sigmoid) to the model script (every output layer)",
    )
    return check_sigmoid(s, ("encoded_layer",), "every encoded layer of the NMS config has a sigmoid", words=words)


# Every check of the model script and NMS config against the ONNX and the layer table, in order.
check_scripts = NmsScriptChecks(
    DESCRIPTOR,
    "the anchor-based decoder: objectness x class, boxes from the anchors; the YOLOv8 decoder would read each "
    "map as DFL box bins",
    _check_nms_keys,
    (
        _check_classes,
        check_decoder_strides,
        _check_anchors,
        _check_layer_names,
        _check_encoded_layer,
        _check_sigmoid,
    ),
    ScriptsUnderCheck,
).run
