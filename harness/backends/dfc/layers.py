"""The layers a model script and its NMS config name: layers of the DFC's *parsed* graph (``conv41``, ...),
not ONNX nodes, and those names exist only once the DFC has translated the ONNX. A :class:`LayerTable`
carries the names with where they came from:

- ``parsed``: the translated graph, the DFC's HN (``runner.get_hn()`` after translation, or an ``.hn``
  file): names and shapes are the DFC's own;
- ``layer map``: a mapping ONNX end node -> parsed layer name given by the user; shapes from the ONNX;
- ``placeholder``: ``UNRESOLVED_reg_stride8``, ``UNRESOLVED_cls_stride8``, ...: the files show the whole
  structure but cannot be compiled until those names are replaced by the parsed ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.backends.dfc.alls import DfcScriptError, unscoped
from harness.core.documents import Fields
from harness.core.head_family import HeadRole, HeadTensor
from harness.inputs.export_facts import ExportFacts
from harness.inputs.layer_names import is_layer_name

PLACEHOLDER_PREFIX = "UNRESOLVED_"

LayerSource = Literal["parsed", "layer map", "placeholder"]


@dataclass(frozen=True)
class ParsedLayer:
    """One layer as the DFC's parsed graph has it: ``name`` without the network's scope, its output
    grid and channels (the HN's NHWC ``output_shapes``), the ONNX nodes it came from."""

    name: str
    grid: tuple[int, int]
    channels: int
    original_names: tuple[str, ...] = ()
    output_layers: tuple[str, ...] = ()  # the graph's output layers it feeds, unscoped

    @property
    def is_output(self) -> bool:
        return bool(self.output_layers)


@dataclass(frozen=True)
class LayerTable:
    """The layers the scripts may name, and where the names come from (see the module doc)."""

    layers: tuple[ParsedLayer, ...]
    source: LayerSource

    def get(self, name: str) -> ParsedLayer | None:
        wanted = unscoped(name)
        return next((layer for layer in self.layers if layer.name == wanted), None)

    @property
    def output_names(self) -> list[str]:
        return [layer.name for layer in self.layers if layer.is_output] or [layer.name for layer in self.layers]


def parsed_layers(hn: Mapping[str, Any], source: str = "parsed graph (HN)") -> LayerTable:
    """The layers of the DFC's HN: ``{"layers": {name: {"type", "output", "output_shapes", "original_names"}}}``
    (hailo_model_zoo: hailo_model_zoo/core/hn_editor/layer_splitter.py reads and writes these keys;
    output shapes are ``[-1, H, W, C]``, output layers have type ``output_layer``). The keys read are
    typed and every layer name is a layer name (:mod:`harness.inputs.layer_names`); the HN's other keys
    are the DFC's and left alone."""
    layers = Fields(hn, source).object("layers")
    if not layers.data:
        layers.fail(None, {}, "the layers of the translated network")
    read = {name: _hn_layer(layers, name) for name, _ in layers.items()}
    output_layers = {unscoped(name) for name, (kind, _, _, _) in read.items() if kind == "output_layer"}
    found = []
    for name, (kind, shape, feeds, original) in read.items():
        if kind == "output_layer" or shape is None:
            continue
        h, w, c = shape
        found.append(ParsedLayer(unscoped(name), (h, w), c, original, tuple(sorted(feeds & output_layers))))
    return LayerTable(tuple(found), "parsed")


def _hn_layer(layers: Fields, name: Any) -> tuple[str, tuple[int, int, int] | None, set[str], tuple[str, ...]]:
    """One HN layer: its type, its (H, W, C) where its first output is 4-D, the layers it feeds
    (unscoped) and its original names."""
    if not is_layer_name(name):
        layers.fail(name, name, "a layer name of letters, digits, '_', '-', '.' and '/' (model/conv41)")
    layer = layers.object(name)
    kind = layer.string("type", "")
    shapes = layer.list("output_shapes", [])
    feeds = layer.list("output", [])
    original = layer.list("original_names", [])
    if not all(is_layer_name(o) for o in feeds):
        layer.fail("output", feeds, "a list of layer names")
    if not all(isinstance(o, str) for o in original):
        layer.fail("original_names", original, "a list of ONNX node names (strings)")
    if not shapes or kind == "output_layer":
        return kind, None, {unscoped(o) for o in feeds}, tuple(original)
    first = shapes[0]
    if not (isinstance(first, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in first)):
        layer.fail("output_shapes", shapes, "a list of shapes, each a list of integers ([-1, H, W, C])")
    if len(first) != 4:
        return kind, None, {unscoped(o) for o in feeds}, tuple(original)
    _, h, w, c = first
    if min(h, w, c) < 1:
        layer.fail("output_shapes", shapes, "positive H, W and C ([-1, H, W, C])")
    return kind, (h, w, c), {unscoped(o) for o in feeds}, tuple(original)


def grid_words(grid: tuple[int, int]) -> str:
    return f"{grid[0]}x{grid[1]}"


def _describe(head: HeadTensor) -> str:
    return f"{head.node!r} ({head.role.value}, {head.channels} channels, grid {grid_words(head.grid)})"


def names_from_parsed(facts: ExportFacts, table: LayerTable) -> dict[str, str]:
    """ONNX end node -> parsed layer name: the layer whose ``original_names`` hold the node (or its
    tensor), else the one output layer of the head's grid and channel count."""
    names: dict[str, str] = {}
    outputs = [layer for layer in table.layers if layer.is_output]
    for head in facts.heads:
        origin = [layer for layer in table.layers if {head.node, head.tensor} & set(layer.original_names)]
        shaped = [layer for layer in outputs if layer.grid == head.grid and layer.channels == head.channels]
        matches = origin if len(origin) == 1 else shaped
        if len(matches) != 1:
            raise DfcScriptError(
                f"parsed graph: ONNX end node {_describe(head)}: found {[m.name for m in origin]} by original "
                f"names and {[m.name for m in shaped]} by output shape, expected exactly one layer. Fix: translate "
                "with the head convs as end nodes (--end-nodes)"
            )
        names[head.node] = matches[0].name
    if len(set(names.values())) != len(names):
        raise DfcScriptError(f"parsed graph: end nodes map to {names}, expected a different layer for each")
    return names


def names_from_map(facts: ExportFacts, mapping: Mapping[str, str]) -> dict[str, str]:
    """ONNX end node -> layer name from a user's mapping, keyed by head node or head tensor names."""
    by_key = {h.node: h for h in facts.heads} | {h.tensor: h for h in facts.heads}
    unknown = sorted(k for k in mapping if k not in by_key)
    if unknown:
        raise DfcScriptError(
            f"layer map: keys {unknown} are not head nodes of {facts.source}; expected the end nodes "
            f"{[h.node for h in facts.heads]}"
        )
    named = [f"{k!r}: {v!r:.60}" for k, v in mapping.items() if not is_layer_name(v)]
    if named:
        raise DfcScriptError(
            f"layer map: {', '.join(named)}, expected parsed layer names (letters, digits, '_', '-', '.' and '/', "
            "as conv41 or model/conv41)"
        )
    names = {by_key[k].node: unscoped(v) for k, v in mapping.items()}
    missing = [h.node for h in facts.heads if h.node not in names]
    if missing:
        raise DfcScriptError(f"layer map: no parsed layer name for end nodes {missing}; expected one per head node")
    if len(set(names.values())) != len(names):
        raise DfcScriptError(f"layer map: {names}, expected a different layer name for each end node")
    return names


# What a placeholder calls each head map: the NMS config's word for the layer (reg_layer, cls_layer,
# encoded_layer of a YOLOv5 decoder).
_PLACEHOLDER_WORDS = {
    HeadRole.BOX: "reg",
    HeadRole.CLASS: "cls",
    HeadRole.OBJECTNESS: "obj",
    HeadRole.ANCHORED: "encoded",
    HeadRole.ANCHOR_BOXES: "reg",
    HeadRole.ANCHOR_CLASSES: "cls",
}


def placeholder_names(facts: ExportFacts) -> dict[str, str]:
    """Stand-in names that say which head they stand for and that they are not parsed layers."""
    stride = {h.node: facts.input_hw[0] // h.grid[0] for h in facts.heads}
    return {h.node: f"{PLACEHOLDER_PREFIX}{_PLACEHOLDER_WORDS[h.role]}_stride{stride[h.node]}" for h in facts.heads}
