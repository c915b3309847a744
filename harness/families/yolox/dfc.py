"""The Dataflow Compiler's model script and NMS config for a YOLOX detector (anchor-free, objectness):
written from the ONNX's heads and checked against them before anything is compiled.

As the Hailo Model Zoo compiles YOLOX (hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolox_tiny.alls,
hailo_model_zoo/cfg/postprocess_config/nms_config_yolox_tiny.json):

- end nodes: per stride the box (``reg_preds``, 4 channels), objectness (``obj_preds``, 1) and class
  (``cls_preds``, nc) convolutions, stride ascending (:func:`end_nodes`);
- ``normalization([0, 0, 0], [255, 255, 255])``: the /255 the harness feeds an export, inside the HEF
  (YOLOX's own training takes 0-255 input: such an export is given no normalization by the Model Zoo,
  and the check says what this one holds);
- ``change_output_activation(<layer>, sigmoid)`` on each objectness and class layer, never the box layer:
  HailoRT's YOLOX op reads them as probabilities and the box values as they are, ``exp`` of ``tw, th``
  (hailort: libhailort/src/net_flow/ops/yolox_post_process.cpp, ``decode``; no sigmoid in the op). The
  Model Zoo cuts the export after its own Sigmoid nodes instead, which compiles the same;
- ``nms_postprocess("<json>", meta_arch=yolox, engine=cpu)``;
- the NMS config: the thresholds, ``number_of_detection_heads``, ``image_dims``, ``max_proposals_per_class``,
  ``classes`` and per stride a bbox decoder naming its ``reg_layer``, ``objectness_layer`` and
  ``cls_layer`` (the three layers HailoRT's op reads per stride: yolox_post_process.hpp,
  ``MatchingLayersNames`` reg, obj, cls).

HailoRT has no bbox-only YOLOX op (its bbox-only ops are YOLOv5's and YOLOv8's), so none is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.backends.dfc import nms_keys
from harness.backends.dfc.alls import NORMALIZATION_COMMAND, nms_command
from harness.backends.dfc.checks import (
    NmsScriptChecks,
    RawLayer,
    ScriptsUnderCheck,
    check_decoder_layer_names,
    check_decoder_strides,
    check_field,
    check_nms_keys,
    check_sigmoid,
    layer_name_failure,
    not_output_failure,
    stride_failure,
)
from harness.backends.dfc.writing import DfcHead, NmsSettings, ScriptRequest, nms_scripts
from harness.core.checks import CheckResult
from harness.core.head_family import HeadRole, HeadTensor
from harness.decode.layout import HeadOutput, Level, layout_of_export
from harness.families.yolox import DESCRIPTOR
from harness.inputs.export_facts import ExportFacts

# Its export carries one head.
HEAD = DfcHead(
    "the YOLOX head (box, objectness and class maps per stride; sigmoid on the objectness and class maps and the "
    "YOLOX NMS op compiled in)",
    "YOLOX",
)
# The keys of the Model Zoo's YOLOX NMS config, in its order
# (hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/nms_config_yolox_tiny.json).
NMS_KEYS = (
    nms_keys.SCORES_TH,
    nms_keys.IOU_TH,
    nms_keys.NmsKey("number_of_detection_heads"),
    nms_keys.IMAGE_DIMS,
    nms_keys.MAX_PROPOSALS,
    nms_keys.CLASSES,
    nms_keys.BBOX_DECODERS,
)
DECODER_KEYS = ("name", "stride", "reg_layer", "objectness_layer", "cls_layer")
# Each decoder key naming a layer, the role of the map it must name and that map's words.
LAYER_KEYS = (
    ("reg_layer", HeadRole.BOX, "box"),
    ("objectness_layer", HeadRole.OBJECTNESS, "objectness"),
    ("cls_layer", HeadRole.CLASS, "class"),
)
# The layers whose activation the op needs a sigmoid on.
SCORED = ("objectness_layer", "cls_layer")


def _level_layers(level: Level, facts: ExportFacts, names: Mapping[str, str]) -> dict[str, str]:
    """The decoder's layer keys -> the parsed layers of ``level``'s three maps."""
    by_tensor = {h.tensor: h for h in facts.heads}
    maps = {o.role: o for o in level.outputs}
    return {key: names[by_tensor[maps[role].name].node] for key, role, _ in LAYER_KEYS}


def end_nodes(facts: ExportFacts) -> tuple[HeadTensor, ...]:
    """Per stride the box, objectness and class maps, stride ascending: the heads as found."""
    return facts.heads


def nms_config(facts: ExportFacts, names: Mapping[str, str], settings: NmsSettings) -> dict[str, Any]:
    """The ``nms_postprocess`` JSON as a dict, one bbox decoder per stride, stride ascending, each named
    after its stride as the Model Zoo names them."""
    layout = layout_of_export(facts)
    decoders = [
        {"name": f"bbox_decoder_{level.stride}", "stride": level.stride, **_level_layers(level, facts, names)}
        for level in layout.levels
    ]
    return {
        "nms_scores_th": settings.score_threshold,
        "nms_iou_th": settings.iou_threshold,
        "number_of_detection_heads": len(layout.levels),
        "image_dims": list(facts.input_hw),
        "max_proposals_per_class": settings.max_proposals_per_class,
        "classes": layout.classes,
        "bbox_decoders": decoders,
    }


def render_alls(request: ScriptRequest, nms_json_reference: str) -> str:
    """The model script: /255 inside the HEF, the sigmoid on each objectness and class layer, the YOLOX NMS
    op on the CPU."""
    lines = [NORMALIZATION_COMMAND]
    for level in layout_of_export(request.facts).levels:
        layers = _level_layers(level, request.facts, request.names)
        lines += [f"change_output_activation({layers[key]}, sigmoid)" for key in SCORED]
    lines.append(nms_command(nms_json_reference, DESCRIPTOR.nms_op, False))
    return "\n".join(lines) + "\n"


write_scripts = nms_scripts(nms_config, render_alls)


def _check_nms_keys(s: ScriptsUnderCheck) -> CheckResult:
    """The keys (none missing, none unknown, at both levels) and the types the other checks read."""

    def decoder(i: int, d: Mapping[str, Any]) -> CheckResult | None:
        for key, _, words in LAYER_KEYS:
            fix = f"name the parsed layer of the stride's {words} conv"
            if (failed := layer_name_failure(i, key, d[key], "model/conv55", fix)) is not None:
                return failed
        return stride_failure(i, d)

    return check_nms_keys(s.nms, NMS_KEYS, DECODER_KEYS, "one object per stride", decoder)


def _check_classes(s: ScriptsUnderCheck) -> CheckResult:
    why = f"class channels of {s.facts.source}'s class maps"
    return check_field(s.nms, "classes", s.layout.classes, why)


def _check_number_of_detection_heads(s: ScriptsUnderCheck) -> CheckResult:
    why = f"the strides of {s.facts.source}'s head: {[level.stride for level in s.layout.levels]}"
    return check_field(s.nms, "number_of_detection_heads", len(s.layout.levels), why)


def _check_layer_names(s: ScriptsUnderCheck) -> CheckResult:
    return check_decoder_layer_names(s, [key for key, _, _ in LAYER_KEYS])


def _map_words(output: HeadOutput, stride: int) -> str:
    h, w = output.grid
    return f"the {output.role.value} conv of stride {stride}: grid {h}x{w}, {output.channels} channels"


def _found_map(s: ScriptsUnderCheck, grid: tuple[int, int], channels: int) -> str:
    """Which head map a layer of ``grid`` and ``channels`` is, where it is one."""
    found = [
        (level.stride, o.role.value)
        for level in s.layout.levels
        for o in level.outputs
        if (o.grid, o.channels) == (grid, channels)
    ]
    return f" (the {found[0][1]} conv of stride {found[0][0]})" if len(found) == 1 else ""


def _check_decoder_layers(s: ScriptsUnderCheck) -> CheckResult:
    """Each decoder names its stride's box, objectness and class convs, by grid and channels, each an
    output layer of the network (nc = 1: the objectness and class convs have the same shape and cannot be
    told apart here; HailoRT's op multiplies them, so swapping them compiles the same)."""
    name = "decoder_layers"
    for i, d in enumerate(s.decoders):
        level = s.level(d["stride"])
        layers = {key: s.table.get(d[key]) for key, _, _ in LAYER_KEYS}
        if level is None or any(layer is None for layer in layers.values()):
            return CheckResult.skipped(
                name, f"bbox_decoders[{i}]: a layer or the stride unknown (see layer_names, decoder_strides)"
            )
        maps = {o.role: o for o in level.outputs}
        for key, role, words in LAYER_KEYS:
            layer, expected = layers[key], maps[role]
            assert layer is not None
            if (layer.grid, layer.channels) != (expected.grid, expected.channels):
                return CheckResult.failed(
                    name,
                    f"bbox_decoders[{i}].{key} {layer.name}",
                    f"grid {layer.grid[0]}x{layer.grid[1]}, {layer.channels} channels"
                    f"{_found_map(s, layer.grid, layer.channels)}",
                    _map_words(expected, level.stride),
                    f"name the parsed layer of this stride's {words} conv (see layer_names.json)",
                )
            if not layer.is_output:
                where = f"bbox_decoders[{i}].{key} {layer.name}"
                return not_output_failure(
                    name, where, f"{_map_words(expected, level.stride)}, an end node of the network"
                )
    return CheckResult.ok(name, "each decoder reads the box, objectness and class convs of its stride")


def _check_sigmoid(s: ScriptsUnderCheck) -> CheckResult:
    """A sigmoid on every objectness and class layer, none on a box layer."""
    # hailort: libhailort/src/net_flow/ops/yolox_post_process.cpp reads them as probabilities
    return check_sigmoid(
        s,
        SCORED,
        "every objectness and class conv has a sigmoid; box convs are unchanged",
        RawLayer(
            "reg_layer",
            "unchanged (the op takes exp of the raw tw, th and adds the raw tx, ty to the cell)",
            "replace change_output_activation({}) (every output layer) by one "
            "change_output_activation(<layer>, sigmoid) per objectness and class conv",
        ),
    )


# Every check of the model script and NMS config against the ONNX and the layer table, in order.
check_scripts = NmsScriptChecks(
    DESCRIPTOR,
    "the YOLOX decoder: box, objectness and class layers per stride",
    _check_nms_keys,
    (
        _check_classes,
        _check_number_of_detection_heads,
        check_decoder_strides,
        _check_layer_names,
        _check_decoder_layers,
        _check_sigmoid,
    ),
    ScriptsUnderCheck,
).run
