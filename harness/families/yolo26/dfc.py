"""The Dataflow Compiler's model script for a YOLO26 detector, either head (its parts ``one2one/dfc.py`` and
``one2many/dfc.py`` are this module's, with the words of their head): the raw head maps leave the HEF at
16 bits and nothing is decoded inside it. Written from the ONNX's heads and checked against them.

As Ultralytics compiles YOLO26 for Hailo (ultralytics 8.4.190: ultralytics/engine/exporter.py,
``export_hailo``, its ``raw_detect`` branch, for either head):

- end nodes: the head's last convolutions, the three box maps, then the three class maps
  (:func:`end_nodes`);
- ``normalization([0, 0, 0], [255, 255, 255])``: the /255 of an Ultralytics export inside the HEF;
- ``model_optimization_flavor(optimization_level=2)`` and ``post_quantization_optimization(finetune,
  policy=enabled, dataset_size=<the calibration images>)``;
- ``quantization_param([output_layer1, ..., output_layer6], precision_mode=a16_w16)``: the box distances
  (reg_max 1, no DFL) and the class logits keep their range at 16 bits;
- no ``change_output_activation`` and no ``nms_postprocess``: the sigmoid and the top-k (one-to-one head)
  or the NMS (one-to-many head) run on the host (ultralytics: ultralytics/nn/backends/hailo.py
  ``_decode_raw``). The YOLOv8 NMS op would read each box map as DFL bins
  (hailort: src/net_flow/ops/yolov8_post_process.cpp), which a YOLO26 box map is not.

The output layers are the DFC's names for the translated network's outputs, one per end node; with a
parsed graph (``--hn``, or the DFC's translation) they are read from it, else they are the names the
DFC gives (:func:`~harness.backends.dfc.heads.table_from_names`), so the script needs no parsed
layer names to be compiled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.backends.dfc.alls import NORMALIZATION_COMMAND, AllsScript, DfcScriptError, parse_alls
from harness.backends.dfc.checks import check_normalization
from harness.backends.dfc.layers import PLACEHOLDER_PREFIX, LayerTable
from harness.backends.dfc.writing import ScriptFiles, ScriptRequest, write_script_files
from harness.core import defaults
from harness.core.checks import CheckResult
from harness.core.head_family import HeadRole, HeadTensor
from harness.decode.layout import layout_of_export
from harness.inputs.export_facts import ExportFacts

PRECISION = "a16_w16"
# The level Ultralytics writes, the DFC's default (harness.core.defaults, which the compile's warning uses).
OPTIMIZATION_LEVEL = defaults.DFC_OPTIMIZATION_LEVEL

# What either head's part takes whole (``from harness.families.yolo26.dfc import *``).
__all__ = ["check_scripts", "end_nodes", "render_alls", "write_scripts"]

EXPORT_NAME = "YOLO26"  # either head's export, cut at its head convolutions


def end_nodes(facts: ExportFacts) -> tuple[HeadTensor, ...]:
    """The three box maps, then the three class maps, the order Ultralytics' Hailo backend decodes
    (ultralytics: ultralytics/engine/exporter.py ``export_hailo``, ultralytics/nn/backends/hailo.py
    ``_decode_raw``)."""
    by_name = {h.tensor: h for h in facts.heads}
    layout = layout_of_export(facts)
    return tuple(by_name[o.name] for role in (HeadRole.BOX, HeadRole.CLASS) for o in layout.of_role(role))


def head_outputs(facts: ExportFacts, names: Mapping[str, str], table: LayerTable) -> tuple[str, ...]:
    """The output layer each head's layer feeds, in end-node order."""
    outputs = []
    for head in end_nodes(facts):
        layer = table.get(names[head.node])
        if layer is None or len(layer.output_layers) != 1:
            found = "no such layer" if layer is None else f"feeds output layers {list(layer.output_layers)}"
            raise DfcScriptError(
                f"{table.source} layer table: end node {head.node!r} -> layer {names[head.node]!r}: {found}, "
                "expected a layer feeding one output layer of the network"
            )
        outputs.append(layer.output_layers[0])
    if len(set(outputs)) != len(outputs):
        raise DfcScriptError(f"{table.source} layer table: the heads feed {outputs}, expected a different output each")
    return tuple(outputs)


def render_alls(request: ScriptRequest, nms_json_reference: str = "") -> str:
    """The model script (commands in Ultralytics' order; no NMS config to name). The normalization is written
    with floats as the harness's YOLOv8 script and the Model Zoo write it (Ultralytics writes integers; the
    same values), so that one normalization check holds both."""
    outputs = head_outputs(request.facts, request.names, request.table)
    lines = [
        NORMALIZATION_COMMAND,
        f"model_optimization_flavor(optimization_level={OPTIMIZATION_LEVEL})",
        f"post_quantization_optimization(finetune, policy=enabled, dataset_size={request.calibration_count})",
        f"quantization_param([{', '.join(outputs)}], precision_mode={PRECISION})",
    ]
    return "\n".join(lines) + "\n"


def write_scripts(folder: Path, stem: str, request: ScriptRequest) -> ScriptFiles:
    """Write ``<stem>.alls`` and ``layer_names.json`` (no NMS config: the script has no NMS op)."""
    head_outputs(request.facts, request.names, request.table)  # the layer table refused before any file is written
    return write_script_files(folder, stem, request.names, lambda _: render_alls(request))


def _check_layer_names(facts: ExportFacts, names: Mapping[str, str], table: LayerTable) -> CheckResult:
    name = "layer_names"
    placeholders = sorted(v for v in names.values() if v.startswith(PLACEHOLDER_PREFIX))
    if placeholders:
        return CheckResult.skipped(
            name,
            f"head layer names {placeholders} (layer_names.json) are placeholders: the model script does not need "
            "them, it names the output layers",
        )
    for head in facts.heads:
        layer = table.get(names[head.node])
        if layer is None or (layer.grid, layer.channels) != (head.grid, head.channels):
            found = "no such layer" if layer is None else f"grid {layer.grid}, {layer.channels} channels"
            return CheckResult.failed(
                name,
                f"layer {names[head.node]!r} for end node {head.node!r}",
                found,
                f"a layer of grid {head.grid}, {head.channels} channels (the {head.role.value} map)",
                "translate with the head convs as end nodes and name their layers",
            )
    return CheckResult.ok(name, f"every head's layer is in the {table.source} layer table with the head's shape")


def _check_precision(alls: AllsScript, outputs: Sequence[str], source: str) -> CheckResult:
    name = PRECISION
    wide = [layer for layer, mode in alls.precision if mode == PRECISION]
    if sorted(wide) != sorted(outputs):
        return CheckResult.failed(
            name,
            f"layers of quantization_param(..., precision_mode={PRECISION})",
            wide or "none",
            f"the head outputs, each once: {list(outputs)} ({source})",
            f"quantization_param([{', '.join(outputs)}], precision_mode={PRECISION})",
        )
    other = [(layer, mode) for layer, mode in alls.precision if layer in outputs and mode != PRECISION]
    if other:
        return CheckResult.failed(
            name, "other precision modes on the head outputs", other, "none", "remove those quantization_param commands"
        )
    return CheckResult.ok(name, f"{PRECISION} on exactly the head outputs {list(outputs)} ({source})")


def _check_host_decode(alls: AllsScript) -> tuple[CheckResult, CheckResult]:
    nms = (
        CheckResult.failed(
            "no_nms",
            "model script nms_postprocess",
            f"nms_postprocess({alls.nms_reference or ''}, {alls.nms_options})",
            "no NMS op (the head is decoded on the host, as Ultralytics compiles it: top-k or NMS there)",
            "remove the nms_postprocess command; the harness decodes the head maps on the host",
        )
        if alls.nms
        else CheckResult.ok("no_nms", "no NMS op: top-k or NMS on the host")
    )
    activation = (
        CheckResult.failed(
            "no_activation_change",
            "model script change_output_activation",
            alls.changed_activations,
            "none (the sigmoid runs on the host; a sigmoid in the HEF would be applied twice)",
            "remove the change_output_activation commands",
        )
        if alls.changed_activations
        else CheckResult.ok("no_activation_change", "outputs unchanged: the class sigmoid runs on the host")
    )
    return nms, activation


def _check_optimization(alls: AllsScript, calibration_count: int) -> tuple[CheckResult, CheckResult]:
    level = alls.optimization.get("optimization_level")
    flavor = (
        CheckResult.ok("optimization_level", f"optimization_level={level}")
        if level == str(OPTIMIZATION_LEVEL)
        else CheckResult.failed(
            "optimization_level",
            "model_optimization_flavor optimization_level",
            level or "no model_optimization_flavor command",
            OPTIMIZATION_LEVEL,
            f"model_optimization_flavor(optimization_level={OPTIMIZATION_LEVEL})",
        )
    )
    expected = {"policy": "enabled", "dataset_size": str(calibration_count)}
    found = alls.post_quantization.get("finetune")
    finetune = (
        CheckResult.ok("finetune", f"finetune on the {calibration_count} calibration images")
        if found == expected
        else CheckResult.failed(
            "finetune",
            "post_quantization_optimization(finetune, ...)",
            found if found is not None else "no finetune command",
            f"{expected} (the calibration images given)",
            f"post_quantization_optimization(finetune, policy=enabled, dataset_size={calibration_count})",
        )
    )
    return flavor, finetune


def check_scripts(alls_text: str, nms_json_text: str | None, request: ScriptRequest) -> tuple[CheckResult, ...]:
    """Every check of a YOLO26 model script against the ONNX, the layer table and the calibration count (the
    script has no NMS config: ``nms_json_text`` is None)."""
    facts, names, table = request.facts, request.names, request.table
    alls = parse_alls(alls_text)
    outputs = head_outputs(facts, names, table)
    source = "read from the parsed graph" if table.source == "parsed" else "as the DFC names one per end node"
    return (
        _check_layer_names(facts, names, table),
        _check_precision(alls, outputs, source),
        *_check_host_decode(alls),
        check_normalization(alls),
        *_check_optimization(alls, request.calibration_count),
    )
