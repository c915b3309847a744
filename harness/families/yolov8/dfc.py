"""The Dataflow Compiler's model script (.alls) and NMS config (JSON) for a YOLOv8 / YOLO11 detector, written
from the ONNX's heads and checked against them before anything is compiled.

File formats as the Model Zoo writes them
(hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov8n.alls,
hailo_model_zoo/cfg/postprocess_config/yolov8n_nms_config.json and yolov11n_nms_config.json).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.backends.dfc.alls import NORMALIZATION_COMMAND, nms_command, parse_alls
from harness.backends.dfc.checks import (
    RawLayer,
    ScriptsUnderCheck,
    SigmoidWords,
    check_decoder_layer_names,
    check_meta_arch,
    check_normalization,
    check_sigmoid,
    one_decoder_each,
    require_nms_config,
)
from harness.backends.dfc.layers import grid_words
from harness.backends.dfc.writing import DfcHead, NmsSettings, ScriptRequest, decoder_name, nms_scripts
from harness.core.checks import CheckResult
from harness.core.documents import DocumentError, parse_json
from harness.core.head_family import HeadTensor
from harness.decode.layout import layout_of_export
from harness.families.yolov8 import DESCRIPTOR
from harness.inputs.export_facts import ExportFacts
from harness.inputs.layer_names import is_layer_name

HEAD = DfcHead("the YOLOv8/YOLO11 head (DFL box maps; sigmoid and NMS op compiled in)", "YOLOv8/YOLO11")


def end_nodes(facts: ExportFacts) -> tuple[HeadTensor, ...]:
    """Box then class per grid, as Ultralytics and the Model Zoo cut it: the export's heads as found."""
    return facts.heads


# The keys of the Model Zoo's YOLOv8 NMS config, in its order
# (hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/yolov11n_nms_config.json).
NMS_KEYS = (
    "nms_scores_th",
    "nms_iou_th",
    "image_dims",
    "max_proposals_per_class",
    "classes",
    "regression_length",
    "background_removal",
    "background_removal_index",
    "bbox_decoders",
)
DECODER_KEYS = ("name", "stride", "reg_layer", "cls_layer")


def pairs(facts: ExportFacts) -> tuple[tuple[int, HeadTensor, HeadTensor], ...]:
    """(stride, box, class) per grid, stride ascending."""
    by_name = {h.tensor: h for h in facts.heads}
    return tuple((v.stride, by_name[v.box.name], by_name[v.classes.name]) for v in layout_of_export(facts).levels)


def nms_config(facts: ExportFacts, names: Mapping[str, str], settings: NmsSettings) -> dict[str, Any]:
    """The ``nms_postprocess`` JSON as a dict, one bbox decoder per grid, stride ascending."""
    decoders = []
    for stride, box, cls in pairs(facts):
        reg = names[box.node]
        decoders.append(
            {"name": decoder_name(reg, stride), "stride": stride, "reg_layer": reg, "cls_layer": names[cls.node]}
        )
    return {
        "nms_scores_th": settings.score_threshold,
        "nms_iou_th": settings.iou_threshold,
        "image_dims": list(facts.input_hw),
        "max_proposals_per_class": settings.max_proposals_per_class,
        "classes": layout_of_export(facts).classes,
        "regression_length": layout_of_export(facts).reg_max,
        "background_removal": False,
        "background_removal_index": 0,
        "bbox_decoders": decoders,
    }


def render_alls(request: ScriptRequest, nms_json_reference: str) -> str:
    """The model script: /255 inside the HEF, sigmoid on each class conv, the YOLOv8 NMS op on the CPU
    (decoding boxes only with the settings' ``bbox_decoding_only``).

    As the Model Zoo's yolov8n.alls. Ultralytics' export_hailo writes the same commands and also
    ``model_optimization_flavor(optimization_level=2)`` and ``post_quantization_optimization(finetune, ...)``;
    they are left out here on purpose, so that this script stays the Model Zoo's: level 2 is the DFC's
    default (:data:`~harness.core.defaults.DFC_OPTIMIZATION_LEVEL`), which it lowers itself with too few
    images or no GPU, and the compile warns of that before it starts
    (:func:`~harness.inputs.calibration.calibration_shortfall`)."""
    lines = [NORMALIZATION_COMMAND]
    lines += [f"change_output_activation({request.names[cls.node]}, sigmoid)" for _, _, cls in pairs(request.facts)]
    lines.append(nms_command(nms_json_reference, DESCRIPTOR.nms_op, request.settings.bbox_decoding_only))
    lines += ["", "allocator_param(width_splitter_defuse=disabled)"]
    return "\n".join(lines) + "\n"


write_scripts = nms_scripts(nms_config, render_alls)


def _check_nms_keys(s: ScriptsUnderCheck) -> CheckResult:
    name = "nms_keys"
    missing = [k for k in NMS_KEYS if k not in s.nms]
    if missing:
        return CheckResult.failed(
            name, "NMS config keys", f"{sorted(s.nms)} (missing {missing})", list(NMS_KEYS), "add the keys"
        )
    decoders = s.nms["bbox_decoders"]
    if not isinstance(decoders, list) or not all(isinstance(d, Mapping) for d in decoders):
        return CheckResult.failed(
            name, "NMS config bbox_decoders", decoders, "a list of objects", "one object per grid"
        )
    unknown = [k for k in s.nms if k not in NMS_KEYS]
    if unknown:
        return CheckResult.failed(
            name, "NMS config keys", f"{sorted(s.nms)} (unknown {unknown})", list(NMS_KEYS), "remove the others"
        )
    for i, d in enumerate(decoders):
        lacking = [k for k in DECODER_KEYS if k not in d]
        unknown = [k for k in d if k not in DECODER_KEYS]
        if lacking or unknown:
            said = f"missing {lacking}" if lacking else f"unknown {unknown}"
            return CheckResult.failed(
                name, f"bbox_decoders[{i}]", f"{dict(d)} ({said})", list(DECODER_KEYS), "fix them"
            )
        for key in ("reg_layer", "cls_layer"):
            if not is_layer_name(d[key]):
                return CheckResult.failed(
                    name,
                    f"bbox_decoders[{i}].{key}",
                    repr(d[key]),
                    "a layer name of letters, digits, '_', '-', '.' and '/' (model/conv41)",
                    "name the parsed layer",
                )
    return CheckResult.ok(name, f"NMS config has the keys {list(NMS_KEYS)}")


def _nms_field(s: ScriptsUnderCheck, field: str, expected: object, why: str, ok: str) -> CheckResult:
    """The NMS config's ``field`` is ``expected`` (what the ONNX says, ``why``)."""
    if s.nms[field] != expected:
        return CheckResult.failed(
            field, f"NMS config {field}", s.nms[field], f"{expected} ({why})", f'set "{field}": {expected}'
        )
    return CheckResult.ok(field, ok)


def _check_image_dims(s: ScriptsUnderCheck) -> CheckResult:
    expected = list(s.facts.input_hw)
    why = f"[H, W] of input {s.facts.input_name!r} of {s.facts.source}"
    return _nms_field(s, "image_dims", expected, why, f"image_dims {expected} == ONNX input")


def _check_classes(s: ScriptsUnderCheck) -> CheckResult:
    classes = layout_of_export(s.facts).classes
    why = f"class channels of {s.facts.source}"
    return _nms_field(s, "classes", classes, why, f"classes {classes} == ONNX class channels")


def _check_regression_length(s: ScriptsUnderCheck) -> CheckResult:
    reg = layout_of_export(s.facts).reg_max
    why = f"box heads of {s.facts.source} have {4 * reg} channels = 4 x {reg}"
    return _nms_field(s, "regression_length", reg, why, f"regression_length {reg}: 4 x {reg} box channels")


def _check_layer_names(s: ScriptsUnderCheck) -> CheckResult:
    return check_decoder_layer_names(s, ("reg_layer", "cls_layer"), "change_output_activation({})")


def _check_decoder_pairing(s: ScriptsUnderCheck) -> CheckResult:
    name = "decoder_pairing"
    reg_max, nc = layout_of_export(s.facts).reg_max, layout_of_export(s.facts).classes
    reg_channels = 4 * reg_max
    grids = []
    for i, d in enumerate(s.decoders):
        reg, cls = s.table.get(d["reg_layer"]), s.table.get(d["cls_layer"])
        if reg is None or cls is None:
            return CheckResult.skipped(name, f"bbox_decoders[{i}]: layer not in the table (see layer_names)")
        for key, layer, channels, words, conv in (
            ("reg_layer", reg, reg_channels, f"4 x regression_length {reg_max}, a box conv", "box conv (cv2)"),
            ("cls_layer", cls, nc, "classes, a class conv", "class conv (cv3)"),
        ):
            if layer.channels != channels:
                return CheckResult.failed(
                    name,
                    f"bbox_decoders[{i}].{key} {layer.name} channels",
                    layer.channels,
                    f"{channels} ({words})",
                    f"name the {conv} of this grid as {key}",
                )
        if reg.grid != cls.grid:
            return CheckResult.failed(
                name,
                f"bbox_decoders[{i}] pairing",
                f"reg_layer {reg.name} {grid_words(reg.grid)} with cls_layer {cls.name} {grid_words(cls.grid)}",
                "box and class layers of the same grid",
                "pair reg_layer and cls_layer of the same scale",
            )
        grids.append(reg.grid)
    expected = [level.grid for level in layout_of_export(s.facts).levels]
    each = f"each head grid of {s.facts.source} once: {expected}"
    ok = f"{len(grids)} decoders pair box and class layers of the same grid, one per grid"
    return one_decoder_each(name, "grid", grids, expected, each, ok)


def _check_strides(s: ScriptsUnderCheck) -> CheckResult:
    name = "strides_vs_grids"
    h, w = s.facts.input_hw
    for i, d in enumerate(s.decoders):
        reg = s.table.get(d["reg_layer"])
        if reg is None:
            return CheckResult.skipped(name, f"bbox_decoders[{i}]: layer not in the table (see layer_names)")
        stride = d["stride"]
        if not isinstance(stride, int) or (stride * reg.grid[0], stride * reg.grid[1]) != (h, w):
            return CheckResult.failed(
                name,
                f"bbox_decoders[{i}].stride",
                f"{stride} (layer {reg.name} grid {reg.grid[0]}x{reg.grid[1]})",
                f"{h // reg.grid[0]} (input {h}x{w} / grid {reg.grid[0]}x{reg.grid[1]})",
                "give each decoder the stride of its layers' grid",
            )
    return CheckResult.ok(name, "every decoder's stride times its grid is the input size")


def _check_sigmoid(s: ScriptsUnderCheck) -> CheckResult:
    # hailort: src/net_flow/ops/yolov8_post_process.cpp applies no sigmoid to the class values.
    return check_sigmoid(
        s,
        ("cls_layer",),
        "every class conv of the NMS config has a sigmoid; box convs are unchanged",
        RawLayer(
            "reg_layer",
            "unchanged (the NMS op applies the DFL softmax to the raw box values)",
            "replace change_output_activation({}) (every output layer) by one "
            "change_output_activation(<cls_layer>, sigmoid) per class conv",
        ),
        SigmoidWords(unchanged="none changed (logits reach the NMS op)"),
    )


def _check_nms_postprocess(s: ScriptsUnderCheck) -> CheckResult:
    return check_meta_arch(s.alls, DESCRIPTOR, "the YOLOv8 / YOLO11 anchor-free decoder")


_NEEDS_NMS_KEYS: tuple[Callable[[ScriptsUnderCheck], CheckResult], ...] = (
    _check_image_dims,
    _check_classes,
    _check_regression_length,
    _check_layer_names,
    _check_decoder_pairing,
    _check_strides,
    _check_sigmoid,
)


def check_scripts(alls_text: str, nms_json_text: str | None, request: ScriptRequest) -> tuple[CheckResult, ...]:
    """Every check of the two files against the ONNX and the layer table, in order."""
    try:
        nms = parse_json(require_nms_config(nms_json_text, request), "NMS config")
    except DocumentError as error:
        return (CheckResult.failed("nms_keys", "NMS config", str(error), "a JSON object", "rewrite the file"),)
    if not isinstance(nms, dict):
        return (CheckResult.failed("nms_keys", "NMS config", type(nms).__name__, "a JSON object", "rewrite the file"),)
    s = ScriptsUnderCheck(parse_alls(alls_text), nms, request.facts, request.table)
    keys = _check_nms_keys(s)
    if keys.passed:
        results = [keys, *(check(s) for check in _NEEDS_NMS_KEYS)]
    else:
        skipped = "the NMS config lacks keys (see nms_keys)"
        results = [
            keys,
            *(CheckResult(check.__name__.removeprefix("_check_"), None, skipped) for check in _NEEDS_NMS_KEYS),
        ]
    return (*results, check_normalization(s.alls), _check_nms_postprocess(s))
