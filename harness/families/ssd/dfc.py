"""The Dataflow Compiler's model script and NMS config for an SSD detector: written from the ONNX's heads
and its SSD config (``--ssd-config``: no graph holds the anchors and box coding), and checked against both
before anything is compiled.

As the Hailo Model Zoo compiles SSD (hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/ssd_mobilenet_v1.alls,
``nms_postprocess(meta_arch=ssd)``; cfg/postprocess_config/mobilenet_ssd_nms_postprocess_config.json):

- end nodes: per layer, largest grid first, the regression conv (4 x anchors channels) and the class conv
  (anchors x classes, the background class among them) (:func:`end_nodes`);
- ``normalization([0, 0, 0], [255, 255, 255])``: the /255 the harness feeds an export, inside the HEF;
- ``change_output_activation(<cls layer>, sigmoid)`` on each class conv, never a regression conv: HailoRT's
  SSD op reads the class values as probabilities and applies no activation (hailort:
  libhailort/src/net_flow/ops/ssd_post_process.hpp, ``extract_bbox_classes``). The Model Zoo's script names no
  activation; that the DFC adds one for ``meta_arch=ssd`` is not in its public documentation, so it is
  written here;
- ``nms_postprocess("<json>", meta_arch=ssd, engine=cpu)``;
- the NMS config: the thresholds, ``max_proposals_per_class``, the box coder's ``centers_scale_factor`` and
  ``bbox_dimensions_scale_factor``, ``image_dims``, ``classes`` (the background included),
  ``background_removal`` and its index, and per layer a bbox decoder with that layer's anchors as ``h`` and
  ``w`` lists (fractions of the input) and its ``reg_layer`` and ``cls_layer``.

The Model Zoo's config has no keys for the order of ty, tx, th, tw, which HailoRT then takes as 0, 1, 2, 3
(hailort: libhailort/src/hef/hef.cpp, ``create_ssd_op_metadata``): an SSD config of another order is refused.
HailoRT has no bbox-only SSD op.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from harness.backends.dfc import nms_keys
from harness.backends.dfc.alls import NORMALIZATION_COMMAND, DfcScriptError, nms_command
from harness.backends.dfc.checks import (
    NmsScriptChecks,
    RawLayer,
    ScriptsUnderCheck,
    check_decoder_layer_names,
    check_field,
    check_nms_keys,
    check_sigmoid,
    is_count,
    is_number,
    layer_name_failure,
    list_failure,
    not_output_failure,
)
from harness.backends.dfc.writing import (
    DfcHead,
    NmsSettings,
    ScriptRequest,
    decoder_name,
    nms_scripts,
)
from harness.core.checks import CheckResult
from harness.core.head_family import HeadTensor
from harness.core.settings import SSD_BOX_INDICES, SsdConfig
from harness.decode.layout import Level, layout_of_export
from harness.families.ssd import DESCRIPTOR
from harness.inputs.export_facts import ExportFacts

# Its export carries one head.
HEAD = DfcHead(
    "the SSD head (per layer a regression map of 4 x anchors and a class map of anchors x classes; sigmoid on the "
    "class maps and the SSD NMS op compiled in, its anchors and box coding the SSD config's)",
    "SSD",
)
# The box coder's scale factors, whole numbers (hailort: libhailort/src/net_flow/ops_metadata/ssd_op_metadata.hpp).
CENTERS_SCALE = nms_keys.NmsKey("centers_scale_factor", is_count, "an integer of at least 1")
DIMENSIONS_SCALE = nms_keys.NmsKey("bbox_dimensions_scale_factor", is_count, "an integer of at least 1")
# The keys of the Model Zoo's SSD NMS config, in its order
# (hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/mobilenet_ssd_nms_postprocess_config.json).
NMS_KEYS = (
    nms_keys.SCORES_TH,
    nms_keys.IOU_TH,
    nms_keys.MAX_PROPOSALS,
    CENTERS_SCALE,
    DIMENSIONS_SCALE,
    nms_keys.IMAGE_DIMS,
    nms_keys.CLASSES,
    nms_keys.BACKGROUND_REMOVAL,
    nms_keys.BACKGROUND_INDEX,
    nms_keys.BBOX_DECODERS,
)
DECODER_KEYS = ("name", "h", "w", "reg_layer", "cls_layer")
# The anchors of the HEF are float32 (hailort: hailort/libhailort/hef.proto, ProtoHEFSSDBboxDecoder): an
# anchor of the config within this of the JSON's is the same.
ANCHOR_TOLERANCE = 1e-6


def ssd_config_of(facts: ExportFacts) -> SsdConfig:
    """The export's SSD config (the one its heads were found with), else a :class:`DfcScriptError`."""
    if facts.ssd is None:
        raise DfcScriptError(f"{facts.source}: an SSD export without its SSD config; expected --ssd-config FILE")
    return facts.ssd


def end_nodes(facts: ExportFacts) -> tuple[HeadTensor, ...]:
    """Per layer, largest grid first, the regression conv then the class conv: the heads as found."""
    return facts.heads


def _level_layers(level: Level, facts: ExportFacts, names: Mapping[str, str]) -> tuple[str, str]:
    by_tensor = {h.tensor: h for h in facts.heads}
    return names[by_tensor[level.box.name].node], names[by_tensor[level.classes.name].node]


def nms_config(facts: ExportFacts, names: Mapping[str, str], settings: NmsSettings) -> dict[str, Any]:
    """The ``nms_postprocess`` JSON as a dict, one bbox decoder per layer, largest grid first, named after its
    regression layer as the Model Zoo names them; an SSD config whose order of ty, tx, th, tw is not the
    default is refused (the Model Zoo's config has no keys for it)."""
    ssd = ssd_config_of(facts)
    if ssd.box_indices != SSD_BOX_INDICES:
        raise DfcScriptError(
            f"{facts.source}: the SSD config codes each anchor's regression values as ty, tx, th, tw at "
            f"{list(ssd.box_indices)}; the Model Zoo's SSD NMS config has no keys for another order than "
            f"{list(SSD_BOX_INDICES)}, which HailoRT then takes (libhailort/src/hef/hef.cpp, create_ssd_op_metadata). "
            "Fix: export the regression convs in ty, tx, th, tw order"
        )
    layout = layout_of_export(facts)
    decoders = []
    for level in layout.levels:
        reg, cls = _level_layers(level, facts, names)
        decoders.append(
            {
                "name": decoder_name(reg, level.stride),
                "h": [h for _, h in level.anchors],
                "w": [w for w, _ in level.anchors],
                "reg_layer": reg,
                "cls_layer": cls,
            }
        )
    return {
        "nms_scores_th": settings.score_threshold,
        "nms_iou_th": settings.iou_threshold,
        "max_proposals_per_class": settings.max_proposals_per_class,
        "centers_scale_factor": ssd.centers_scale_factor,
        "bbox_dimensions_scale_factor": ssd.bbox_dimensions_scale_factor,
        "image_dims": list(facts.input_hw),
        "classes": layout.classes,
        "background_removal": ssd.background_class is not None,
        "background_removal_index": ssd.background_class or 0,
        "bbox_decoders": decoders,
    }


def render_alls(request: ScriptRequest, nms_json_reference: str) -> str:
    """The model script: /255 inside the HEF, the sigmoid on each class conv, the SSD NMS op on the CPU."""
    facts, names = request.facts, request.names
    lines = [NORMALIZATION_COMMAND]
    lines += [
        f"change_output_activation({_level_layers(level, facts, names)[1]}, sigmoid)"
        for level in layout_of_export(facts).levels
    ]
    lines.append(nms_command(nms_json_reference, DESCRIPTOR.nms_op, False))
    return "\n".join(lines) + "\n"


write_scripts = nms_scripts(nms_config, render_alls)


class _Scripts(ScriptsUnderCheck):
    """The scripts of an SSD export, held to its SSD config too."""

    @property
    def ssd(self) -> SsdConfig:
        return ssd_config_of(self.facts)


def _check_nms_keys(s: _Scripts) -> CheckResult:
    """The keys (none missing, none unknown, at both levels) and the types the other checks read."""

    def decoder(i: int, d: Mapping[str, Any]) -> CheckResult | None:
        for key in ("reg_layer", "cls_layer"):
            fix = "name the parsed layer of the layer's conv"
            if (failed := layer_name_failure(i, key, d[key], "model/conv13", fix)) is not None:
                return failed
        return list_failure(
            i,
            d,
            ("h", "w"),
            lambda values: bool(values) and all(is_number(v) and v > 0 for v in values),
            "a list of positive numbers (the anchors' heights or widths as fractions of the input)",
        )

    return check_nms_keys(s.nms, NMS_KEYS, DECODER_KEYS, "one object per layer", decoder)


def _check_classes(s: _Scripts) -> CheckResult:
    why = f"class channels per anchor of {s.facts.source}'s class maps, the background among them"
    return check_field(s.nms, "classes", s.layout.classes, why)


def _check_background(s: _Scripts) -> CheckResult:
    """The background class removed where the SSD config has one, at its index (hailort:
    libhailort/src/net_flow/ops/ssd_post_process.hpp, ``background_removal_index``)."""
    name = "background"
    if s.ssd.background_class is None:
        found = check_field(s.nms, "background_removal", False, "the SSD config names no background class")
        return CheckResult(name, found.passed, found.message)
    for key, expected in (("background_removal", True), ("background_removal_index", s.ssd.background_class)):
        found = check_field(s.nms, key, expected, f"the SSD config's background class {s.ssd.background_class}")
        if not found.passed:
            return CheckResult(name, False, found.message)
    return CheckResult.ok(name, f"the background class {s.ssd.background_class} removed, as the SSD config says")


def _check_box_coding(s: _Scripts) -> CheckResult:
    """The box coder's scale factors are the SSD config's (held to the export's own decode tail)."""
    name = "box_coding"
    for key in ("centers_scale_factor", "bbox_dimensions_scale_factor"):
        found = check_field(s.nms, key, getattr(s.ssd, key), f"the SSD config's, as {s.facts.source}'s tail decodes")
        if not found.passed:
            return CheckResult(name, False, found.message)
    return CheckResult.ok(name, "the box coder's scale factors are the SSD config's")


def _check_anchors(s: _Scripts) -> CheckResult:
    """Each decoder's ``w`` and ``h`` are the SSD config's anchors of its regression layer's grid, in order."""
    name = "anchors"
    if len(s.decoders) != len(s.layout.levels):
        return CheckResult.failed(
            name,
            "bbox_decoders",
            f"{len(s.decoders)} decoders",
            f"{len(s.layout.levels)}, one per layer of {s.facts.source}",
            "one bbox decoder per layer",
        )
    by_grid = {level.grid: level for level in s.layout.levels}
    for i, d in enumerate(s.decoders):
        layer = s.table.get(d["reg_layer"])
        level = by_grid.get(layer.grid) if layer is not None else None
        if level is None:
            return CheckResult.skipped(name, f"bbox_decoders[{i}]: its reg_layer's grid unknown (see decoder_layers)")
        found = list(zip(d["w"], d["h"], strict=False))
        close = len(d["w"]) == len(d["h"]) == len(level.anchors) and all(
            math.isclose(a, b, rel_tol=ANCHOR_TOLERANCE, abs_tol=ANCHOR_TOLERANCE)
            for (fw, fh), (ew, eh) in zip(found, level.anchors, strict=True)
            for a, b in ((fw, ew), (fh, eh))
        )
        if not close:
            swapped = found == [(h, w) for w, h in level.anchors]
            return CheckResult.failed(
                name,
                f"bbox_decoders[{i}] (grid {level.grid[0]}x{level.grid[1]}) anchors (w, h)",
                f"{found}{' (w and h swapped)' if swapped else ''}",
                f"{list(level.anchors)} (the SSD config's anchors of that layer, in order)",
                "copy the SSD config's anchors of each layer into its decoder's w and h",
            )
    return CheckResult.ok(name, "every decoder holds its layer's anchors of the SSD config, in order")


def _check_layer_names(s: _Scripts) -> CheckResult:
    return check_decoder_layer_names(s, ("reg_layer", "cls_layer"))


def _check_decoder_layers(s: _Scripts) -> CheckResult:
    """Each decoder names one layer's regression conv (4 x anchors channels) and class conv (anchors x
    classes) of one grid, each an output layer of the network."""
    name = "decoder_layers"
    by_grid = {level.grid: level for level in s.layout.levels}
    for i, d in enumerate(s.decoders):
        reg, cls = s.table.get(d["reg_layer"]), s.table.get(d["cls_layer"])
        if reg is None or cls is None:
            return CheckResult.skipped(name, f"bbox_decoders[{i}]: layer not in the table (see layer_names)")
        level = by_grid.get(reg.grid)
        if level is None or reg.channels != level.box.channels:
            return CheckResult.failed(
                name,
                f"bbox_decoders[{i}].reg_layer {reg.name}",
                f"grid {reg.grid[0]}x{reg.grid[1]}, {reg.channels} channels",
                "a regression conv of "
                + ", ".join(f"grid {v.grid[0]}x{v.grid[1]} ({v.box.channels} channels)" for v in s.layout.levels),
                "name the layer's regression conv (4 x anchors channels) as reg_layer",
            )
        if (cls.grid, cls.channels) != (level.grid, level.classes.channels):
            return CheckResult.failed(
                name,
                f"bbox_decoders[{i}].cls_layer {cls.name}",
                f"grid {cls.grid[0]}x{cls.grid[1]}, {cls.channels} channels",
                f"the class conv of the reg_layer's grid {level.grid[0]}x{level.grid[1]}: {level.classes.channels} "
                f"channels ({len(level.anchors)} anchors x {s.layout.classes} classes)",
                "pair each regression conv with the class conv of its layer",
            )
        for layer in (reg, cls):
            if not layer.is_output:
                return not_output_failure(
                    name, f"bbox_decoders[{i}] {layer.name}", "a head conv, an end node of the network"
                )
    return CheckResult.ok(name, "each decoder reads the regression and class convs of one layer")


def _check_sigmoid(s: _Scripts) -> CheckResult:
    """A sigmoid on every class layer, none on a regression layer."""
    # hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp applies no activation to the class values
    return check_sigmoid(
        s,
        ("cls_layer",),
        "every class conv has a sigmoid; regression convs are unchanged",
        RawLayer(
            "reg_layer",
            "unchanged (the op decodes the raw regression values)",
            "name each class conv in its own change_output_activation(<cls_layer>, sigmoid)",
        ),
    )


_CHECKS = NmsScriptChecks(
    DESCRIPTOR,
    "the SSD decoder: anchors and box coding from the NMS config",
    _check_nms_keys,
    (
        _check_classes,
        _check_background,
        _check_box_coding,
        _check_anchors,
        _check_layer_names,
        _check_decoder_layers,
        _check_sigmoid,
    ),
    _Scripts,
)


def check_scripts(alls_text: str, nms_json_text: str | None, request: ScriptRequest) -> tuple[CheckResult, ...]:
    """Every check of an SSD model script and NMS config against the ONNX, its SSD config and the layer
    table, in order."""
    ssd_config_of(request.facts)  # an SSD export without its config is refused before any check
    return _CHECKS.run(alls_text, nms_json_text, request)
