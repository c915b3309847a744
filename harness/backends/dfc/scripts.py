"""The Dataflow Compiler's model script (.alls) and NMS config (JSON) for a YOLOv8 / YOLO11 detector,
written from the ONNX's heads and checked against them before anything is compiled; what the ONNX says
for any detector's script (:class:`ExportFacts`: a YOLO26 export's is written by
:mod:`~harness.backends.dfc.yolo26_script`, a YOLOv5/YOLOv7 export's by
:mod:`~harness.backends.dfc.yolov5_script`) and the layer names every script uses.

Both files name layers of the DFC's *parsed* graph (``conv41``, ...), not ONNX nodes, and those names
exist only once the DFC has translated the ONNX. A :class:`LayerTable` carries the names with where
they came from:

- ``parsed``: the translated graph, the DFC's HN (``runner.get_hn()`` after translation, or an ``.hn``
  file): names and shapes are the DFC's own;
- ``layer map``: a mapping ONNX end node -> parsed layer name given by the user; shapes from the ONNX;
- ``placeholder``: ``UNRESOLVED_reg_stride8``, ``UNRESOLVED_cls_stride8``, ...: the files show the whole
  structure but cannot be compiled until those names are replaced by the parsed ones.

File formats as the Model Zoo writes them
(hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov8n.alls,
hailo_model_zoo/cfg/postprocess_config/yolov8n_nms_config.json and yolov11n_nms_config.json).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from harness.core import defaults
from harness.core.checks import CheckResult
from harness.core.confine import make_folder
from harness.core.documents import DocumentError, Fields, parse_json
from harness.core.errors import GraphError, HarnessError, HeadPairingError
from harness.core.files import write_atomic
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.core.settings import SsdConfig
from harness.decode.layout import HeadLayout, Level, layout_of_export
from harness.inputs.export_facts import ExportFacts, export_facts_of, file_sha256
from harness.inputs.layer_names import is_layer_name
from harness.inputs.onnx_graph import ExportHeads, export_heads, find_yolo26_heads, find_yolov5_heads, load_model

if TYPE_CHECKING:
    import onnx

PLACEHOLDER_PREFIX = "UNRESOLVED_"

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

# The HEF takes raw 0-255 RGB; the /255 of an Ultralytics export happens inside it
# (hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov8n.alls).
NORMALIZATION = ((0.0, 0.0, 0.0), (255.0, 255.0, 255.0))
# The command every model script opens with, its values written as floats (as the Model Zoo writes them).
NORMALIZATION_COMMAND = "normalization1 = normalization([{}], [{}])".format(
    *(", ".join(f"{v:.1f}" for v in values) for values in NORMALIZATION)
)

LayerSource = Literal["parsed", "layer map", "placeholder"]


class DfcScriptError(HarnessError):
    """A model script or NMS config that cannot be written or does not match the model."""


@dataclass(frozen=True)
class NmsSettings:
    """The NMS op's settings; defaults as the Model Zoo's yolov8n NMS config (0.2, 0.7, 100).
    ``bbox_decoding_only``: the op compiled to decode the boxes alone, the NMS left to the host (HailoRT's
    bbox-only op); the thresholds then go unused."""

    score_threshold: float = defaults.SCORE_THRESHOLD
    iou_threshold: float = defaults.IOU_THRESHOLD
    max_proposals_per_class: int = defaults.MAX_PER_CLASS
    bbox_decoding_only: bool = False

    def __post_init__(self) -> None:
        for option, value in (("score_threshold", self.score_threshold), ("iou_threshold", self.iou_threshold)):
            if not 0.0 <= value <= 1.0:
                raise DfcScriptError(f"NMS settings: {option} is {value}, expected a value in [0, 1]")
        if self.max_proposals_per_class < 1:
            raise DfcScriptError(
                f"NMS settings: max_proposals_per_class is {self.max_proposals_per_class}, expected >= 1"
            )


def end_nodes_of(facts: ExportFacts) -> tuple[HeadTensor, ...]:
    """The heads in the order the DFC is given them as end nodes, which is the order of its output
    layers and of the HEF's outputs. YOLOv8: box then class per grid, as Ultralytics and the Model Zoo
    cut it; YOLO26: the three box maps, then the three class maps, the order Ultralytics' Hailo backend
    decodes (ultralytics: ultralytics/engine/exporter.py ``export_hailo``, ultralytics/nn/backends/hailo.py
    ``_decode_raw``); YOLOv5/YOLOv7: one anchored map per stride, stride ascending, as the Model Zoo's
    YOLOv5 NMS config lists them (hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/yolov5s_nms_config.json)."""
    if facts.family in _ONE_HEAD:
        return facts.heads
    by_name = {h.tensor: h for h in facts.heads}
    layout = layout_of_export(facts)
    return tuple(by_name[o.name] for role in (HeadRole.BOX, HeadRole.CLASS) for o in layout.of_role(role))


def pairs(facts: ExportFacts) -> tuple[tuple[int, HeadTensor, HeadTensor], ...]:
    """(stride, box, class) per grid, stride ascending."""
    by_name = {h.tensor: h for h in facts.heads}
    return tuple((v.stride, by_name[v.box.name], by_name[v.classes.name]) for v in layout_of_export(facts).levels)


# What each head is compiled as, in the words of the messages.
HEAD_WORDS = {
    HeadFamily.YOLOV8: "the YOLOv8/YOLO11 head (DFL box maps; sigmoid and NMS op compiled in)",
    HeadFamily.YOLO26_ONE2ONE: "YOLO26's one-to-one head (one2one_cv2/one2one_cv3; sigmoid and top-k on the host, "
    "no NMS)",
    HeadFamily.YOLO26_ONE2MANY: "YOLO26's one-to-many head (cv2/cv3; sigmoid and NMS on the host)",
    HeadFamily.YOLOV5: "the YOLOv5/YOLOv7 anchored head (one map of anchors x (5 + nc) channels per stride; sigmoid "
    "and the YOLOv5 NMS op compiled in)",
    HeadFamily.YOLOX: "the YOLOX head (box, objectness and class maps per stride; sigmoid on the objectness and "
    "class maps and the YOLOX NMS op compiled in)",
    HeadFamily.SSD: "the SSD head (per layer a regression map of 4 x anchors and a class map of anchors x classes; "
    "sigmoid on the class maps and the SSD NMS op compiled in, its anchors and box coding the SSD config's)",
}
# The families whose export carries one head, so that there is no head to choose (--head).
_ONE_HEAD = (HeadFamily.YOLOV8, HeadFamily.YOLOV5, HeadFamily.YOLOX, HeadFamily.SSD)
# A family's name in the messages of end nodes given for it.
_FAMILY_NAMES = {HeadFamily.YOLOV5: "YOLOv5/YOLOv7", HeadFamily.YOLOX: "YOLOX", HeadFamily.SSD: "SSD"}


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
        yolov8_error = error
    if end_nodes is not None:
        try:
            found = export_heads(model)
        except GraphError:
            raise yolov8_error from None
        if found.family is HeadFamily.YOLOV8:
            raise yolov8_error
        by_name = {h.node: h for h in found.heads} | {h.tensor: h for h in found.heads}
        if all(n in by_name for n in end_nodes) and {by_name[n] for n in end_nodes} == set(found.heads):
            return found
        family = _FAMILY_NAMES.get(found.family, "YOLO26")
        raise DfcScriptError(
            f"{source}: end nodes {list(end_nodes)}: a {family} export is cut at its head convolutions, found by "
            f"structure: {[h.node for h in found.heads]}. Fix: give those end nodes, or none"
        )
    yolo26_error, yolov5_error = _graph_error(find_yolo26_heads, model), _graph_error(find_yolov5_heads, model)
    yolo26 = (
        f"nor a YOLO26 head ({yolo26_error})"
        if yolo26_error
        else "nor a YOLO26 head: its head convolutions, but not the one head output that tells which head"
    )
    yolov5 = f" nor a YOLOv5/YOLOv7 head ({yolov5_error})" if yolov5_error else ""
    both = (
        f"; it has {len(model.graph.output)} outputs {_outputs(model)}, expected one head output: an export of both "
        "YOLO26 heads cannot be compiled as one, export one (end2end=True: the one-to-one head, end2end=False: the "
        "one-to-many head)"
        if len(model.graph.output) > 1
        else ""
    )
    raise DfcScriptError(
        f"{source}: cannot be compiled: found neither a YOLOv8/YOLO11 head ({yolov8_error}) {yolo26}{yolov5}{both}. "
        "Fix: give a float detect export (YOLOv8/YOLO11, YOLOv5/YOLOv7 with its decode tail, or YOLO26 ending in its "
        "head convolutions)"
    ) from yolov8_error


def _graph_error(find: Callable[[onnx.ModelProto], object], model: onnx.ModelProto) -> GraphError | None:
    """Why ``find`` finds no heads in ``model``; None where it finds them."""
    try:
        find(model)
    except GraphError as error:
        return error
    return None


def _require_head(found: HeadFamily, head: HeadFamily | None, source: str, model: onnx.ModelProto) -> None:
    if found in _ONE_HEAD:
        if head is not None:
            raise DfcScriptError(
                f"{source}: head {head.value} asked for, but the export carries {HEAD_WORDS[found]}, its only head. "
                "Fix: give no --head (it picks a YOLO26 head)"
            )
        return
    wanted = head or HeadFamily.YOLO26_ONE2ONE
    if found is not wanted:
        fix = (
            "export the model with end2end=True for the one-to-one head, or give --head one2many to compile this "
            "one (NMS on the host)"
            if wanted is HeadFamily.YOLO26_ONE2ONE
            else "export the model with end2end=False: an end-to-end export holds the one-to-one head only"
        )
        raise DfcScriptError(
            f"{source}: outputs {_outputs(model)}: found {HEAD_WORDS[found]}, expected {HEAD_WORDS[wanted]}"
            f"{'' if head else ' (the default)'}. Fix: {fix}"
        )


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


def unscoped(name: str) -> str:
    """``yolov8n/conv41`` -> ``conv41``: the Model Zoo writes layer names with and without the network scope."""
    return name.rsplit("/", 1)[-1]


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


def _grid(grid: tuple[int, int]) -> str:
    return f"{grid[0]}x{grid[1]}"


def _describe(head: HeadTensor) -> str:
    return f"{head.node!r} ({head.role.value}, {head.channels} channels, grid {_grid(head.grid)})"


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


def table_from_names(facts: ExportFacts, names: Mapping[str, str], source: LayerSource) -> LayerTable:
    """A layer table for names not read from a parsed graph: shapes are the ONNX heads'; each head feeds
    the output layer the DFC names for its end node, ``output_layer<i>`` in end-node order (ultralytics:
    ultralytics/engine/exporter.py ``export_hailo`` names them so, one per end node)."""
    outputs = {h.node: f"output_layer{i}" for i, h in enumerate(end_nodes_of(facts), start=1)}
    return LayerTable(
        tuple(ParsedLayer(names[h.node], h.grid, h.channels, (h.node,), (outputs[h.node],)) for h in facts.heads),
        source,
    )


def decoder_name(layer: str, stride: int) -> str:
    """A bbox decoder's name as the Model Zoo gives it: after the number of the layer it reads first
    (``conv41`` -> ``bbox_decoder41``), else after its stride."""
    number = re.fullmatch(r"conv(\d+)", layer)
    return f"bbox_decoder{number.group(1)}" if number else f"bbox_decoder_stride{stride}"


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


def render_nms_json(config: Mapping[str, Any]) -> str:
    return json.dumps(config, indent=4) + "\n"


# The model script asks for the bbox-only op with an argument of ``nms_postprocess``, its NMS config
# being the NMS op's (hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov5s_bbox_decoding_only.alls,
# ``nms_postprocess(..., yolov5, engine=cpu, bbox_decoding_only=True)``;
# cfg/postprocess_config/yolov8s_bbox_decoding_only_nms_config.json holds the NMS config's keys alone).
BBOX_DECODING_ONLY = "bbox_decoding_only"


def nms_command(reference: str, meta_arch: str, bbox_decoding_only: bool) -> str:
    """The ``nms_postprocess`` command of a model script: the op on the CPU, decoding boxes only where asked."""
    only = f", {BBOX_DECODING_ONLY}=True" if bbox_decoding_only else ""
    return f'nms_postprocess("{reference}", meta_arch={meta_arch}, engine=cpu{only})'


def decodes_boxes_only(alls: AllsScript) -> bool:
    """Whether the script's ``nms_postprocess`` asks for the bbox-only op."""
    return alls.nms_options.get(BBOX_DECODING_ONLY, "False") == "True"


def nms_command_said(alls: AllsScript, meta_arch: str) -> str:
    """The command as a passed check says it, and what a bbox-only op leaves to the host."""
    said = f"nms_postprocess({alls.nms_reference!r}, meta_arch={meta_arch})"
    if decodes_boxes_only(alls):
        said += ", bbox_decoding_only: HailoRT decodes the boxes, the host must run the NMS"
    return said


def render_alls(
    facts: ExportFacts, names: Mapping[str, str], nms_json_reference: str, bbox_decoding_only: bool = False
) -> str:
    """The model script: /255 inside the HEF, sigmoid on each class conv, the YOLOv8 NMS op on the CPU
    (decoding boxes only with ``bbox_decoding_only``).

    As the Model Zoo's yolov8n.alls. Ultralytics' export_hailo writes the same commands and also
    ``model_optimization_flavor(optimization_level=2)`` and ``post_quantization_optimization(finetune, ...)``;
    they are left out here on purpose, so that this script stays the Model Zoo's: level 2 is the DFC's
    default (:data:`~harness.core.defaults.DFC_OPTIMIZATION_LEVEL`), which it lowers itself with too few
    images or no GPU, and the compile warns of that before it starts
    (:func:`~harness.inputs.calibration.calibration_shortfall`)."""
    lines = [NORMALIZATION_COMMAND]
    lines += [f"change_output_activation({names[cls.node]}, sigmoid)" for _, _, cls in pairs(facts)]
    lines.append(nms_command(nms_json_reference, "yolov8", bbox_decoding_only))
    lines += ["", "allocator_param(width_splitter_defuse=disabled)"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ScriptFiles:
    alls: Path
    nms_json: Path | None  # None: the model script has no NMS op (a YOLO26 head)
    layer_names: Path  # ONNX end node -> layer name, the format --layer-map reads


def write_script_files(
    folder: Path,
    stem: str,
    names: Mapping[str, str],
    alls: Callable[[str], str],
    config: Mapping[str, Any] | None = None,
) -> ScriptFiles:
    """Write ``<stem>.alls`` (``alls`` of the NMS config's file name: it is named beside the model script),
    ``<stem>_nms_config.json`` where there is a ``config``, and ``layer_names.json``."""
    make_folder(folder)
    nms_json = folder / f"{stem}_nms_config.json" if config is not None else None
    if nms_json is not None:
        write_atomic(nms_json, render_nms_json(config or {}))
    files = ScriptFiles(folder / f"{stem}.alls", nms_json, folder / "layer_names.json")
    write_atomic(files.alls, alls(nms_json.name if nms_json is not None else ""))
    write_atomic(files.layer_names, json.dumps(dict(names), indent=4) + "\n")
    return files


def write_scripts(
    folder: Path, stem: str, facts: ExportFacts, names: Mapping[str, str], settings: NmsSettings
) -> ScriptFiles:
    """Write ``<stem>.alls`` (naming the JSON by file name, beside it), ``<stem>_nms_config.json`` and
    ``layer_names.json``."""
    config = nms_config(facts, names, settings)
    return write_script_files(
        folder, stem, names, lambda json_name: render_alls(facts, names, json_name, settings.bbox_decoding_only), config
    )


@dataclass(frozen=True)
class AllsScript:
    """The commands of a model script the checks look at."""

    normalization: tuple[tuple[float, ...], tuple[float, ...]] | None
    activations: dict[str, str]  # unscoped layer name -> activation
    nms_reference: str | None
    nms_options: dict[str, str]
    nms: bool = False  # an nms_postprocess command, with or without a path
    precision: tuple[tuple[str, str], ...] = ()  # (unscoped layer, precision_mode) per quantization_param layer
    optimization: dict[str, str] = field(default_factory=dict)  # model_optimization_flavor's options
    post_quantization: dict[str, dict[str, str]] = field(default_factory=dict)  # algorithm -> its options
    # change_output_activation(<activation>) without a layer: every output layer (the Model Zoo's YOLOv5
    # script, hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov5s.alls)
    every_output_activation: str | None = None

    def activation_of(self, layer: str) -> str | None:
        """The activation the script gives output layer ``layer``: its own command, else the one for
        every output layer; None where none is changed."""
        return self.activations.get(unscoped(layer), self.every_output_activation)

    @property
    def changed_activations(self) -> dict[str, str]:
        """Every activation change, by layer; ``every output layer`` for a command without one."""
        every = {"every output layer": self.every_output_activation} if self.every_output_activation else {}
        return every | self.activations


_NORMALIZATION = re.compile(r"=\s*normalization\(\s*\[([^\]]*)\]\s*,\s*\[([^\]]*)\]\s*\)")
_ACTIVATION = re.compile(r"change_output_activation\(\s*([^,\s()]+)\s*,\s*(\w+)\s*\)")
_EVERY_ACTIVATION = re.compile(r"change_output_activation\(\s*(\w+)\s*\)")
_WORD = re.compile(r"^\s*(\w+)\s*$")
_NMS = re.compile(r"nms_postprocess\((.*)\)")
_NMS_PATH = re.compile(r'^\s*(?:config_path\s*=\s*)?"([^"]*)"\s*$')
_QUANTIZATION = re.compile(r"quantization_param\(\s*(\[[^\]]*\]|[^,\[\]()]+)\s*,([^()]*)\)")
_FLAVOR = re.compile(r"model_optimization_flavor\(([^()]*)\)")
_POST_QUANTIZATION = re.compile(r"post_quantization_optimization\(\s*(\w+)\s*(?:,([^()]*))?\)")


def _options(arguments: str) -> dict[str, str]:
    """``a=1, b=x`` -> ``{"a": "1", "b": "x"}``."""
    pairs = (argument.split("=", 1) for argument in arguments.split(",") if "=" in argument)
    return {key.strip(): value.strip() for key, value in pairs}


def parse_alls(text: str) -> AllsScript:
    normalization = None
    activations: dict[str, str] = {}
    reference = None
    options: dict[str, str] = {}
    nms = False
    precision: list[tuple[str, str]] = []
    optimization: dict[str, str] = {}
    post_quantization: dict[str, dict[str, str]] = {}
    every_output = None
    for full_line in text.splitlines():
        line = full_line.split("#", 1)[0]  # a model script's comments start with #
        if m := _QUANTIZATION.search(line):
            mode = _options(m.group(2)).get("precision_mode", "")
            precision += [(unscoped(t.strip()), mode) for t in m.group(1).strip("[] ").split(",") if t.strip()]
        if m := _FLAVOR.search(line):
            optimization |= _options(m.group(1))
        if m := _POST_QUANTIZATION.search(line):
            post_quantization[m.group(1)] = _options(m.group(2) or "")
        if m := _NORMALIZATION.search(line):
            try:
                normalization = tuple(tuple(float(v) for v in group.split(",")) for group in m.groups())
            except ValueError as error:
                raise DfcScriptError(f"model script: {line.strip()!r}: {error}") from error
        for layer, activation in _ACTIVATION.findall(line):
            activations[unscoped(layer)] = activation
        for activation in _EVERY_ACTIVATION.findall(line):
            every_output = activation
        if m := _NMS.search(line):
            nms = True
            for argument in m.group(1).split(","):
                if path := _NMS_PATH.match(argument):
                    reference = path.group(1)
                elif word := _WORD.match(argument):  # the Model Zoo names meta_arch by position (yolov5s.alls)
                    options.setdefault("meta_arch", word.group(1))
                elif "=" in argument:
                    key, value = argument.split("=", 1)
                    options[key.strip()] = value.strip()
    return AllsScript(
        normalization,  # type: ignore[arg-type]
        activations,
        reference,
        options,
        nms,
        tuple(precision),
        optimization,
        post_quantization,
        every_output,
    )


@dataclass(frozen=True)
class ScriptsUnderCheck:
    """A model script and its NMS config under check, with the export and the layer table they are held to."""

    alls: AllsScript
    nms: Mapping[str, Any]
    facts: ExportFacts
    table: LayerTable

    @cached_property
    def layout(self) -> HeadLayout:
        return layout_of_export(self.facts)

    @property
    def decoders(self) -> list[Mapping[str, Any]]:
        return list(self.nms["bbox_decoders"])

    def level(self, stride: object) -> Level | None:
        """The export's level of ``stride``, where it has one."""
        return next((level for level in self.layout.levels if level.stride == stride), None)


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


def _named_layers(s: ScriptsUnderCheck) -> list[tuple[str, str]]:
    """(where, layer name) for every layer the two files name."""
    named = [(f"bbox_decoders[{i}].{k}", d[k]) for i, d in enumerate(s.decoders) for k in ("reg_layer", "cls_layer")]
    return named + [(f"change_output_activation({layer})", layer) for layer in s.alls.activations]


def _check_layer_names(s: ScriptsUnderCheck) -> CheckResult:
    return check_named_layers(_named_layers(s), s.table)


def said(value: object) -> str:
    """A value as the JSON has it (``"80"`` and ``80`` told apart)."""
    return json.dumps(value)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_fraction(value: object) -> bool:
    return is_number(value) and 0 <= value <= 1  # type: ignore[operator]


def is_count(value: object) -> bool:
    return is_int(value) and value >= 1  # type: ignore[operator]


def check_field(nms: Mapping[str, Any], key: str, expected: object, why: str) -> CheckResult:
    """The NMS config's ``key`` is ``expected`` as JSON writes it: ``80.0``, ``true`` or ``"80"`` is not
    ``80`` (Python would take the first two as equal)."""
    found, wanted = said(nms[key]), said(expected)
    if found != wanted:
        return CheckResult.failed(key, f"NMS config {key}", found, f"{wanted} ({why})", f'set "{key}": {wanted}')
    return CheckResult.ok(key, f"{key} {wanted} ({why})")


# An NMS config field's type check: its key, the test, and what is expected in words.
Scalar = tuple[str, Callable[[object], bool], str]


def check_nms_keys(
    nms: Mapping[str, Any],
    keys: Sequence[str],
    scalars: Sequence[Scalar],
    decoder_keys: Sequence[str],
    per: str,
    decoder: Callable[[int, Mapping[str, Any]], CheckResult | None],
) -> CheckResult:
    """The NMS config's keys (exactly ``keys``; each of its bbox decoders, one ``per`` stride or layer,
    exactly ``decoder_keys``) and the types the other checks read: ``scalars``, then each decoder's own
    fields (``decoder``: the first failure of decoder ``i``, None where its fields hold)."""
    name = "nms_keys"
    missing, unknown = [k for k in keys if k not in nms], [k for k in nms if k not in keys]
    if missing or unknown:
        told = f"missing {missing}" if missing else f"unknown {unknown}"
        return CheckResult.failed(
            name, "NMS config keys", f"{list(nms)} ({told})", list(keys), "give exactly these keys"
        )
    for key, fits, expected in scalars:
        if not fits(nms[key]):
            return CheckResult.failed(name, f"NMS config {key}", said(nms[key]), expected, f"set {key} to {expected}")
    decoders = nms["bbox_decoders"]
    if not isinstance(decoders, list) or not all(isinstance(d, Mapping) for d in decoders):
        return CheckResult.failed(name, "NMS config bbox_decoders", said(decoders), "a list of objects", per)
    for i, d in enumerate(decoders):
        lacking, unknown = [k for k in decoder_keys if k not in d], [k for k in d if k not in decoder_keys]
        if lacking or unknown:
            told = f"missing {lacking}" if lacking else f"unknown {unknown}"
            return CheckResult.failed(
                name, f"bbox_decoders[{i}]", f"{dict(d)} ({told})", list(decoder_keys), "give exactly these keys"
            )
        if (failed := decoder(i, d)) is not None:
            return failed
    return CheckResult.ok(name, f"NMS config has the keys {list(keys)}, each decoder {list(decoder_keys)}")


def layer_name_failure(i: int, key: str, value: object, example: str, fix: str) -> CheckResult | None:
    """Decoder ``i``'s ``key`` where it is not a layer name (``example`` one, ``fix`` what to do), else None."""
    if is_layer_name(value):
        return None
    return CheckResult.failed(
        "nms_keys",
        f"bbox_decoders[{i}].{key}",
        repr(value),
        f"a layer name of letters, digits, '_', '-', '.' and '/' ({example})",
        fix,
    )


def stride_failure(i: int, d: Mapping[str, Any]) -> CheckResult | None:
    """Decoder ``i``'s ``stride`` where it is not a positive integer, else None."""
    if is_count(d["stride"]):
        return None
    return CheckResult.failed(
        "nms_keys", f"bbox_decoders[{i}].stride", said(d["stride"]), "a positive integer", "give the stride in pixels"
    )


def check_image_dims(s: ScriptsUnderCheck) -> CheckResult:
    """The NMS config's ``image_dims`` are the export's input size, as JSON writes them."""
    why = f"[H, W] of input {s.facts.input_name!r} of {s.facts.source}"
    return check_field(s.nms, "image_dims", list(s.facts.input_hw), why)


def check_decoder_strides(s: ScriptsUnderCheck) -> CheckResult:
    """One bbox decoder per stride of the export's head."""
    name = "decoder_strides"
    found, strides = [d["stride"] for d in s.decoders], [level.stride for level in s.layout.levels]
    if sorted(found) != sorted(strides):
        return CheckResult.failed(
            name,
            "bbox_decoders strides",
            found,
            f"each stride of {s.facts.source}'s head once: {strides}",
            "one bbox decoder per stride",
        )
    return CheckResult.ok(name, f"one bbox decoder per stride {strides}")


def check_meta_arch(alls: AllsScript, meta_arch: str, decoder_words: str, bbox_only: bool = True) -> CheckResult:
    """The model script's ``nms_postprocess`` names its NMS config and ``meta_arch`` (``decoder_words`` say
    what that decoder reads); ``bbox_only`` False: a family HailoRT has no bbox-only op for, which must not
    ask for one."""
    name = "nms_postprocess"
    if alls.nms_reference is None:
        return CheckResult.failed(
            name,
            "model script nms_postprocess",
            "no nms_postprocess command with a JSON path",
            f'nms_postprocess("<nms json>", meta_arch={meta_arch}, engine=cpu)',
            "add the command naming the NMS config",
        )
    if alls.nms_options.get("meta_arch") != meta_arch:
        return CheckResult.failed(
            name,
            "nms_postprocess meta_arch",
            alls.nms_options.get("meta_arch"),
            f"{meta_arch} ({decoder_words})",
            f"set meta_arch={meta_arch}",
        )
    if not bbox_only and decodes_boxes_only(alls):
        return CheckResult.failed(
            name,
            "nms_postprocess bbox_decoding_only",
            "True",
            f"absent: HailoRT has no bbox-only op of meta_arch {meta_arch}",
            "remove bbox_decoding_only=True",
        )
    return CheckResult.ok(name, nms_command_said(alls, meta_arch))


S = TypeVar("S")


def validate_with_nms_config(
    alls_text: str,
    nms_json_text: str,
    meta_arch: Callable[[AllsScript], CheckResult],
    scripts: Callable[[AllsScript, dict[str, Any]], S],
    keys: Callable[[S], CheckResult],
    checks: Sequence[Callable[[S], CheckResult]],
) -> tuple[CheckResult, ...]:
    """Every check of a model script and its NMS config, in order: ``keys`` (the config's keys and types),
    then each of ``checks`` on the family's ``scripts`` (each skipped, by the name its function gives, where
    the keys do not hold), then the normalization and ``meta_arch`` checks of the model script."""
    alls = parse_alls(alls_text)
    tail = (check_normalization(alls), meta_arch(alls))
    try:
        nms = parse_json(nms_json_text, "NMS config")
    except DocumentError as error:
        return (CheckResult.failed("nms_keys", "NMS config", str(error), "a JSON object", "rewrite the file"), *tail)
    if not isinstance(nms, dict):
        found = type(nms).__name__
        return (CheckResult.failed("nms_keys", "NMS config", found, "a JSON object", "rewrite the file"), *tail)
    s = scripts(alls, nms)
    checked = keys(s)
    if checked.passed:
        return (checked, *(check(s) for check in checks), *tail)
    skipped = "the NMS config lacks keys or types (see nms_keys)"
    return (
        checked,
        *(CheckResult.skipped(check.__name__.lstrip("_").removeprefix("check_"), skipped) for check in checks),
        *tail,
    )


def check_named_layers(named: list[tuple[str, str]], table: LayerTable) -> CheckResult:
    """Every layer a script names, ``(where, layer)``, is a layer of ``table``; skipped while they are
    placeholders."""
    name = "layer_names"
    placeholders = sorted({layer for _, layer in named if unscoped(layer).startswith(PLACEHOLDER_PREFIX)})
    if placeholders:
        return CheckResult.skipped(
            name,
            f"layer names {placeholders} are placeholders: the DFC names its layers when it translates the ONNX. "
            "Give the parsed names (--layer-map, or --hn with the translated graph), or compile without --dry-run",
        )
    known = {layer.name for layer in table.layers}
    for where, layer in named:
        if unscoped(layer) not in known:
            origin = "the parsed graph" if table.source == "parsed" else "the layer map"
            return CheckResult.failed(
                name,
                where,
                repr(layer),
                f"a layer of {origin}: {table.output_names}",
                "name the parsed layers of the head convs (see layer_names.json)",
            )
    return CheckResult.ok(name, f"every named layer is in the {table.source} layer table")


def _check_decoder_pairing(s: ScriptsUnderCheck) -> CheckResult:
    name = "decoder_pairing"
    reg_max, nc = layout_of_export(s.facts).reg_max, layout_of_export(s.facts).classes
    reg_channels = 4 * reg_max
    grids = []
    for i, d in enumerate(s.decoders):
        reg, cls = s.table.get(d["reg_layer"]), s.table.get(d["cls_layer"])
        if reg is None or cls is None:
            return CheckResult.skipped(name, f"bbox_decoders[{i}]: layer not in the table (see layer_names)")
        if reg.channels != reg_channels:
            return CheckResult.failed(
                name,
                f"bbox_decoders[{i}].reg_layer {reg.name} channels",
                reg.channels,
                f"{reg_channels} (4 x regression_length {reg_max}, a box conv)",
                "name the box conv (cv2) of this grid as reg_layer",
            )
        if cls.channels != nc:
            return CheckResult.failed(
                name,
                f"bbox_decoders[{i}].cls_layer {cls.name} channels",
                cls.channels,
                f"{nc} (classes, a class conv)",
                "name the class conv (cv3) of this grid as cls_layer",
            )
        if reg.grid != cls.grid:
            return CheckResult.failed(
                name,
                f"bbox_decoders[{i}] pairing",
                f"reg_layer {reg.name} {_grid(reg.grid)} with cls_layer {cls.name} {_grid(cls.grid)}",
                "box and class layers of the same grid",
                "pair reg_layer and cls_layer of the same scale",
            )
        grids.append(reg.grid)
    expected = [level.grid for level in layout_of_export(s.facts).levels]
    if sorted(grids) != sorted(expected):
        return CheckResult.failed(
            name,
            "bbox_decoders grids",
            grids,
            f"each head grid of {s.facts.source} once: {expected}",
            "one bbox decoder per grid",
        )
    return CheckResult.ok(name, f"{len(grids)} decoders pair box and class layers of the same grid, one per grid")


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
    name = "sigmoid"
    for i, d in enumerate(s.decoders):
        cls, reg = unscoped(d["cls_layer"]), unscoped(d["reg_layer"])
        if s.alls.activation_of(cls) != "sigmoid":
            # hailort: src/net_flow/ops/yolov8_post_process.cpp applies no sigmoid to the class values.
            return CheckResult.failed(
                name,
                f"activation of cls_layer {cls} (bbox_decoders[{i}])",
                s.alls.activation_of(cls) or "none changed (logits reach the NMS op)",
                "sigmoid",
                f"add change_output_activation({cls}, sigmoid) to the model script",
            )
        if (activation := s.alls.activation_of(reg)) is not None:
            fix = (
                f"remove change_output_activation({reg}, ...) from the model script"
                if reg in s.alls.activations
                else f"replace change_output_activation({activation}) (every output layer) by one "
                "change_output_activation(<cls_layer>, sigmoid) per class conv"
            )
            return CheckResult.failed(
                name,
                f"activation of reg_layer {reg} (bbox_decoders[{i}])",
                activation,
                "unchanged (the NMS op applies the DFL softmax to the raw box values)",
                fix,
            )
    return CheckResult.ok(name, "every class conv of the NMS config has a sigmoid; box convs are unchanged")


def check_normalization(alls: AllsScript) -> CheckResult:
    """The model script divides by 255 inside the HEF, as an Ultralytics export expects its input."""
    name = "normalization"
    expected = NORMALIZATION
    if alls.normalization != expected:
        found = "no normalization command" if alls.normalization is None else list(map(list, alls.normalization))
        return CheckResult.failed(
            name,
            "model script normalization (mean, std)",
            found,
            f"{list(map(list, expected))} (Ultralytics divides by 255; the HEF takes raw 0-255 RGB)",
            "add normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0]) and feed uint8 images",
        )
    return CheckResult.ok(name, "normalization /255 inside the HEF")


def _check_nms_postprocess(s: ScriptsUnderCheck) -> CheckResult:
    name = "nms_postprocess"
    if s.alls.nms_reference is None:
        return CheckResult.failed(
            name,
            "model script nms_postprocess",
            "no nms_postprocess command with a JSON path",
            'nms_postprocess("<nms json>", meta_arch=yolov8, engine=cpu)',
            "add the command naming the NMS config",
        )
    if s.alls.nms_options.get("meta_arch") != "yolov8":
        return CheckResult.failed(
            name,
            "nms_postprocess meta_arch",
            s.alls.nms_options.get("meta_arch"),
            "yolov8 (the YOLOv8 / YOLO11 anchor-free decoder)",
            "set meta_arch=yolov8",
        )
    return CheckResult.ok(name, nms_command_said(s.alls, "yolov8"))


_NEEDS_NMS_KEYS: tuple[Callable[[ScriptsUnderCheck], CheckResult], ...] = (
    _check_image_dims,
    _check_classes,
    _check_regression_length,
    _check_layer_names,
    _check_decoder_pairing,
    _check_strides,
    _check_sigmoid,
)


def validate_scripts(
    alls_text: str, nms_json_text: str, facts: ExportFacts, table: LayerTable
) -> tuple[CheckResult, ...]:
    """Every check of the two files against the ONNX and the layer table, in order."""
    try:
        nms = parse_json(nms_json_text, "NMS config")
    except DocumentError as error:
        return (CheckResult.failed("nms_keys", "NMS config", str(error), "a JSON object", "rewrite the file"),)
    if not isinstance(nms, dict):
        return (CheckResult.failed("nms_keys", "NMS config", type(nms).__name__, "a JSON object", "rewrite the file"),)
    s = ScriptsUnderCheck(parse_alls(alls_text), nms, facts, table)
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


def validate_files(alls: Path, nms_json: Path, facts: ExportFacts, table: LayerTable) -> tuple[CheckResult, ...]:
    """Every check of the model script and NMS config files of the export's head (:func:`validate_scripts`,
    :func:`~harness.backends.dfc.yolov5_script.validate_yolov5_scripts` for a YOLOv5/YOLOv7 head or
    :func:`~harness.backends.dfc.yolox_script.validate_yolox_scripts` for a YOLOX head), and
    that the model script's NMS path is this JSON (a relative path is taken from the model script's folder)."""
    alls_text, nms_text = alls.read_text(encoding="utf-8"), nms_json.read_text(encoding="utf-8")
    if facts.family is HeadFamily.YOLOV5:
        from harness.backends.dfc.yolov5_script import validate_yolov5_scripts  # which builds on this module

        results = validate_yolov5_scripts(alls_text, nms_text, facts, table)
    elif facts.family is HeadFamily.YOLOX:
        from harness.backends.dfc.yolox_script import validate_yolox_scripts  # which builds on this module

        results = validate_yolox_scripts(alls_text, nms_text, facts, table)
    elif facts.family is HeadFamily.SSD:
        from harness.backends.dfc.ssd_script import validate_ssd_scripts  # which builds on this module

        results = validate_ssd_scripts(alls_text, nms_text, facts, table)
    elif facts.family is HeadFamily.YOLOV8:
        results = validate_scripts(alls_text, nms_text, facts, table)
    else:
        raise DfcScriptError(
            f"{nms_json}: {facts.source} carries a {facts.require_heads()[0].value} head, whose NMS config the harness "
            "does not write; expected a YOLOv8/YOLO11, YOLOv5/YOLOv7 or YOLOX export (a YOLO26 model script has no "
            "NMS config: yolo26_script.validate_yolo26_script checks it)"
        )
    reference = parse_alls(alls_text).nms_reference
    if reference is not None and (alls.parent / reference).resolve() != nms_json.resolve():
        results += (
            CheckResult.failed(
                "nms_reference",
                "nms_postprocess path",
                f"{reference!r} ({(alls.parent / reference).resolve()})",
                f"the NMS config {nms_json}",
                "name the JSON beside the model script",
            ),
        )
    return results


def failures(results: Sequence[CheckResult]) -> list[CheckResult]:
    return [r for r in results if r.passed is False]
