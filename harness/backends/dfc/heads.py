"""The export's heads as the DFC is given them: the facts of the ONNX to compile, its heads found by structure
or at the end nodes given, the head asked for (``--head``) held to the one it carries
(:func:`onnx_facts`); the heads in end-node order (:func:`end_nodes_of`, each family's part says its order)
and the layer names that stand for them until the DFC has translated the ONNX (:func:`table_from_names`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from harness.backends.dfc.alls import DfcScriptError
from harness.backends.dfc.layers import LayerSource, LayerTable, ParsedLayer
from harness.backends.dfc.scripts import dfc_part
from harness.core.errors import GraphError, HeadPairingError
from harness.core.head_family import HeadFamily, HeadTensor
from harness.core.settings import SsdConfig
from harness.decode.layout import layout_of_export
from harness.families import REGISTERED, descriptor
from harness.inputs.export_facts import ExportFacts, export_facts_of, file_sha256
from harness.inputs.onnx_graph import ExportHeads, export_heads, load_model

if TYPE_CHECKING:
    import onnx


def end_nodes_of(facts: ExportFacts) -> tuple[HeadTensor, ...]:
    """The heads in the order the DFC is given them as end nodes, which is the order of its output layers and
    of the HEF's outputs (its family's part's :meth:`~harness.backends.dfc.scripts.DfcPart.end_nodes`)."""
    return dfc_part(facts.require_heads()[0]).end_nodes(facts)


def head_options() -> dict[str, HeadFamily]:
    """``--head``'s values: the heads an export may carry one of, by option."""
    return {h.option: d.family for d in REGISTERED if (h := dfc_part(d.family).HEAD).option}


def _default_head() -> HeadFamily:
    return next(d.family for d in REGISTERED if dfc_part(d.family).HEAD.default)


def onnx_facts(
    onnx: str | os.PathLike[str],
    end_nodes: Sequence[str] | None = None,
    head: HeadFamily | None = None,
    ssd: SsdConfig | None = None,
) -> ExportFacts:
    """The facts of the Ultralytics export at ``onnx``, its heads found by structure or at ``end_nodes``,
    checked to form one box and one class map per grid with whole strides.

    ``head`` is the head to compile. A YOLO26 export carries one (an end-to-end export the one-to-one
    head, else the one-to-many head), which must be the one asked for, by default the one-to-one head;
    a YOLOv8/YOLO11, YOLOv5/YOLOv7, YOLOX or SSD export has one head and takes no ``head``. ``ssd``: an
    SSD export's config (its anchors and box coding, which no graph holds)."""
    source = os.fspath(onnx)
    model = load_model(onnx)
    found = _export_heads(model, source, end_nodes, ssd)
    _require_head(found.family, head, source, model)
    facts = export_facts_of(model, file_sha256(onnx), source, found, ssd)
    try:
        layout_of_export(facts)
    except HeadPairingError as error:
        raise DfcScriptError(
            f"{source}: end nodes {[h.node for h in found.heads]}: {error}. Fix: give the head convs as end nodes"
        ) from error
    return facts


def _outputs(model: onnx.ModelProto) -> list[tuple[str, list[int | str]]]:
    return [
        (o.name, [d.dim_value if d.HasField("dim_value") else d.dim_param for d in o.type.tensor_type.shape.dim])
        for o in model.graph.output
    ]


def _export_heads(
    model: onnx.ModelProto, source: str, end_nodes: Sequence[str] | None, ssd: SsdConfig | None = None
) -> ExportHeads:
    """The heads and their family; a YOLO26, YOLOv5/YOLOv7 or YOLOX export's end nodes are its head
    convolutions (found by structure, :func:`export_heads`) or none."""
    if ssd is not None:  # an SSD export's heads are found with its config, or refused naming it
        return export_heads(model, end_nodes, ssd)
    try:
        return export_heads(model, end_nodes)
    except GraphError as error:
        not_found = error  # every finder's refusal (export_heads)
    if end_nodes is not None:  # the heads found by structure, to tell the end nodes given
        try:
            found = export_heads(model)
        except GraphError:
            raise not_found from None
        if descriptor(found.family).cut_at_end_nodes:  # cut where they say: the refusal is its finder's
            raise not_found
        by_name = {h.node: h for h in found.heads} | {h.tensor: h for h in found.heads}
        if all(n in by_name for n in end_nodes) and {by_name[n] for n in end_nodes} == set(found.heads):
            return found
        family = dfc_part(found.family).HEAD.export
        raise DfcScriptError(
            f"{source}: end nodes {list(end_nodes)}: a {family} export is cut at its head convolutions, found by "
            f"structure: {[h.node for h in found.heads]}. Fix: give those end nodes, or none"
        )
    both = (
        f"; it has {len(model.graph.output)} outputs {_outputs(model)}, expected one head output: an export of both "
        "YOLO26 heads cannot be compiled as one, export one (end2end=True: the one-to-one head, end2end=False: the "
        "one-to-many head)"
        if len(model.graph.output) > 1
        else ""
    )
    exports = ", ".join(dict.fromkeys(dfc_part(d.family).HEAD.export for d in REGISTERED))
    raise DfcScriptError(
        f"{source}: cannot be compiled: found no head to compile ({not_found}){both}. Fix: give a float detect "
        f"export of one of {exports}"
    ) from not_found


def _require_head(found: HeadFamily, head: HeadFamily | None, source: str, model: onnx.ModelProto) -> None:
    carried = dfc_part(found).HEAD
    if not carried.option:
        if head is not None:
            raise DfcScriptError(
                f"{source}: head {head.value} asked for, but the export carries {carried.words}, its only head. "
                "Fix: give no --head (it picks a YOLO26 head)"
            )
        return
    wanted = head or _default_head()
    if found is not wanted:
        asked = dfc_part(wanted).HEAD
        raise DfcScriptError(
            f"{source}: outputs {_outputs(model)}: found {carried.words}, expected {asked.words}"
            f"{'' if head else ' (the default)'}. Fix: {asked.fix}"
        )


def table_from_names(facts: ExportFacts, names: Mapping[str, str], source: LayerSource) -> LayerTable:
    """A layer table for names not read from a parsed graph: shapes are the ONNX heads'; each head feeds
    the output layer the DFC names for its end node, ``output_layer<i>`` in end-node order (ultralytics:
    ultralytics/engine/exporter.py ``export_hailo`` names them so, one per end node)."""
    outputs = {h.node: f"output_layer{i}" for i, h in enumerate(end_nodes_of(facts), start=1)}
    return LayerTable(
        tuple(ParsedLayer(names[h.node], h.grid, h.channels, (h.node,), (outputs[h.node],)) for h in facts.heads),
        source,
    )
