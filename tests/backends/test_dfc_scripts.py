"""The DFC model script and NMS config: written as the Model Zoo writes them, and every mismatch caught."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.dfc.alls import DfcScriptError, parse_alls
from harness.backends.dfc.checks import failures
from harness.backends.dfc.heads import end_nodes_of, head_options, onnx_facts, table_from_names
from harness.backends.dfc.layers import LayerTable, names_from_map, names_from_parsed, parsed_layers, placeholder_names
from harness.backends.dfc.scripts import DfcPart, dfc_part, validate_files, write_checked_scripts
from harness.backends.dfc.writing import DfcHead, NmsSettings, ScriptFiles, ScriptRequest, render_nms_json
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.families import REGISTERED
from harness.families.ssd import dfc as ssd_dfc
from harness.families.yolo26 import dfc as yolo26_dfc
from harness.families.yolov5 import dfc as yolov5_dfc
from harness.families.yolov5.decode import DEFAULT_ANCHORS
from harness.families.yolov8 import dfc as yolov8_dfc
from harness.families.yolox import dfc as yolox_dfc
from harness.inputs.demo import DEMO26_ONNX as DEMO26
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.export_facts import ExportFacts
from harness.inputs.onnx_graph import load_model

from support.yolo26_exports import both_heads_export, one_to_many_export
from support.yolov5_exports import yolov5_export
from support.yolox_exports import yolox_export

# hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov8n.alls (commit 52b78424)
ZOO_YOLOV8N_ALLS = (
    "normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n"
    "change_output_activation(conv42, sigmoid)\n"
    "change_output_activation(conv53, sigmoid)\n"
    "change_output_activation(conv63, sigmoid)\n"
    'nms_postprocess("../../postprocess_config/yolov8n_nms_config.json", meta_arch=yolov8, engine=cpu)\n'
    "\n"
    "allocator_param(width_splitter_defuse=disabled)\n"
)
# hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/yolov8n_nms_config.json (commit bc69734f)
ZOO_YOLOV8N_NMS = {
    "nms_scores_th": 0.2,
    "nms_iou_th": 0.7,
    "image_dims": [640, 640],
    "max_proposals_per_class": 100,
    "classes": 80,
    "regression_length": 16,
    "background_removal": False,
    "bbox_decoders": [
        {"name": "yolov8n/bbox_decoder41", "stride": 8, "reg_layer": "yolov8n/conv41", "cls_layer": "yolov8n/conv42"},
        {"name": "yolov8n/bbox_decoder52", "stride": 16, "reg_layer": "yolov8n/conv52", "cls_layer": "yolov8n/conv53"},
        {"name": "yolov8n/bbox_decoder62", "stride": 32, "reg_layer": "yolov8n/conv62", "cls_layer": "yolov8n/conv63"},
    ],
}
# hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/yolov11n_nms_config.json (commit 96ae8c59), 640 input
ZOO_YOLO11N_DECODERS = [
    {"name": "bbox_decoder51", "stride": 8, "reg_layer": "conv51", "cls_layer": "conv54"},
    {"name": "bbox_decoder62", "stride": 16, "reg_layer": "conv62", "cls_layer": "conv65"},
    {"name": "bbox_decoder77", "stride": 32, "reg_layer": "conv77", "cls_layer": "conv80"},
]
YOLOV8N_LAYERS = (41, 42, 52, 53, 62, 63)  # box, class per stride 8, 16, 32 in the Model Zoo's parsed graph
YOLO11N_LAYERS = (51, 54, 62, 65, 77, 80)


def _write(
    part: DfcPart, folder: Path, stem: str, facts: ExportFacts, names: dict[str, str], settings: NmsSettings
) -> ScriptFiles:
    """A family's scripts written with placeholder-shaped layers (an NMS config names its own layers)."""
    return part.write_scripts(
        folder, stem, ScriptRequest(facts, names, table_from_names(facts, names, "placeholder"), settings)
    )


def _unscope(config: dict[str, Any]) -> dict[str, Any]:
    decoders = [
        {k: v.rsplit("/", 1)[-1] if isinstance(v, str) else v for k, v in d.items()} for d in config["bbox_decoders"]
    ]
    return {**config, "bbox_decoders": decoders}


def _hn(
    facts: ExportFacts, numbers: tuple[int, ...], net: str = "net", outputs: Sequence[int] | None = None
) -> dict[str, Any]:
    """An HN as the DFC's translation has it: scoped names, NHWC output shapes, ONNX nodes in original_names;
    the heads in end-node order, the i-th feeding ``output_layer<outputs[i]>`` (default i + 1)."""
    layers: dict[str, Any] = {
        f"{net}/input_layer1": {"type": "input_layer", "output": [], "output_shapes": [[-1, 8, 8, 3]]}
    }
    numbering = outputs or range(1, len(numbers) + 1)
    for head, number, output in zip(end_nodes_of(facts), numbers, numbering, strict=True):
        out = f"{net}/output_layer{output}"
        layers[f"{net}/conv{number}"] = {
            "type": "conv",
            "output": [out],
            "output_shapes": [[-1, *head.grid, head.channels]],
            "original_names": [head.node],
        }
        layers[out] = {
            "type": "output_layer",
            "input": [f"{net}/conv{number}"],
            "output": [],
            "original_names": ["out"],
        }
    return {"name": net, "layers": layers}


@pytest.fixture(scope="module")
def demo() -> ExportFacts:
    return onnx_facts(DEMO)


@pytest.fixture(scope="module")
def yolov8n(shared_fixtures: Path) -> ExportFacts:
    path = shared_fixtures / "onnx" / "yolov8n_coco80_640_int8.onnx"
    return onnx_facts(path)


@pytest.fixture(scope="module")
def yolo11n(shared_fixtures: Path) -> ExportFacts:
    path = shared_fixtures / "onnx" / "yolo11n_coco80_320_int8.onnx"
    return onnx_facts(path)


def _scripts(facts: ExportFacts, numbers: tuple[int, ...]) -> tuple[str, str, LayerTable]:
    table = parsed_layers(_hn(facts, numbers))
    names = names_from_parsed(facts, table)
    return (
        yolov8_dfc.render_alls(ScriptRequest(facts, names, table), "model_nms_config.json"),
        render_nms_json(yolov8_dfc.nms_config(facts, names, NmsSettings())),
        table,
    )


def test_yolov8n_scripts_are_the_model_zoos(yolov8n: ExportFacts) -> None:
    alls, nms, table = _scripts(yolov8n, YOLOV8N_LAYERS)
    zoo_alls = ZOO_YOLOV8N_ALLS.replace("../../postprocess_config/yolov8n_nms_config.json", "model_nms_config.json")
    assert alls == zoo_alls
    assert json.loads(nms) == {**_unscope(ZOO_YOLOV8N_NMS), "background_removal_index": 0}
    assert list(json.loads(nms)) == list(yolov8_dfc.NMS_KEYS)
    assert all(r.passed for r in yolov8_dfc.check_scripts(alls, nms, ScriptRequest(yolov8n, {}, table)))


def test_yolo11n_320_scripts_take_its_grids_and_input(yolo11n: ExportFacts) -> None:
    alls, nms, table = _scripts(yolo11n, YOLO11N_LAYERS)
    config = json.loads(nms)
    assert config["image_dims"] == [320, 320]
    assert config["classes"] == 80 and config["regression_length"] == 16
    assert config["bbox_decoders"] == ZOO_YOLO11N_DECODERS
    assert [table.get(d["reg_layer"]).grid for d in config["bbox_decoders"]] == [(40, 40), (20, 20), (10, 10)]
    assert parse_alls(alls).activations == {"conv54": "sigmoid", "conv65": "sigmoid", "conv80": "sigmoid"}
    assert all(r.passed for r in yolov8_dfc.check_scripts(alls, nms, ScriptRequest(yolo11n, {}, table)))


def test_demo_scripts_with_placeholders_validate_all_but_the_names(demo: ExportFacts, tmp_path: Path) -> None:
    names = placeholder_names(demo)
    files = _write(yolov8_dfc, tmp_path, "demo", demo, names, NmsSettings())
    config = json.loads(files.nms_json.read_text())
    assert config["image_dims"] == [256, 256] and config["classes"] == 2 and config["regression_length"] == 16
    assert [(d["stride"], d["reg_layer"], d["cls_layer"]) for d in config["bbox_decoders"]] == [
        (8, "UNRESOLVED_reg_stride8", "UNRESOLVED_cls_stride8"),
        (16, "UNRESOLVED_reg_stride16", "UNRESOLVED_cls_stride16"),
        (32, "UNRESOLVED_reg_stride32", "UNRESOLVED_cls_stride32"),
    ]
    assert 'nms_postprocess("demo_nms_config.json", meta_arch=yolov8, engine=cpu)' in files.alls.read_text()
    assert json.loads(files.layer_names.read_text()) == names
    results = {
        r.name: r
        for r in validate_files(files.alls, files.nms_json, demo, table_from_names(demo, names, "placeholder"))
    }
    assert results["layer_names"].passed is None and "placeholders" in results["layer_names"].message
    assert all(r.passed for name, r in results.items() if name != "layer_names")


def _edit_nms(edit: Callable[[dict[str, Any]], None]) -> Callable[[str, str], tuple[str, str]]:
    def apply(alls: str, nms: str) -> tuple[str, str]:
        config = json.loads(nms)
        edit(config)
        return alls, json.dumps(config)

    return apply


def _edit_alls(old: str, new: str) -> Callable[[str, str], tuple[str, str]]:
    def apply(alls: str, nms: str) -> tuple[str, str]:
        assert old in alls
        return alls.replace(old, new), nms

    return apply


def _swap_class_layers(config: dict[str, Any]) -> None:
    d = config["bbox_decoders"]
    d[0]["cls_layer"], d[1]["cls_layer"] = d[1]["cls_layer"], d[0]["cls_layer"]


MISTAKES = {
    "wrong classes": (
        _edit_nms(lambda c: c.update(classes=81)),
        "classes",
        "NMS config classes: found 81, expected 80",
    ),
    "wrong regression length": (
        _edit_nms(lambda c: c.update(regression_length=8)),
        "regression_length",
        "regression_length: found 8, expected 16",
    ),
    "cross-grid pairing": (
        _edit_nms(_swap_class_layers),
        "decoder_pairing",
        "reg_layer conv41 80x80 with cls_layer conv53 40x40",
    ),
    "box and class swapped": (
        _edit_nms(lambda c: c["bbox_decoders"][0].update(reg_layer="conv42", cls_layer="conv41")),
        "decoder_pairing",
        "reg_layer conv42 channels: found 80, expected 64",
    ),
    "missing sigmoid": (_edit_alls("change_output_activation(conv53, sigmoid)\n", ""), "sigmoid", "cls_layer conv53"),
    "sigmoid on a box conv": (
        _edit_alls(
            "change_output_activation(conv42",
            "change_output_activation(conv41, sigmoid)\nchange_output_activation(conv42",
        ),
        "sigmoid",
        "reg_layer conv41",
    ),
    "unknown layer": (
        _edit_nms(lambda c: c["bbox_decoders"][2].update(reg_layer="conv99")),
        "layer_names",
        "bbox_decoders[2].reg_layer: found 'conv99', expected a layer of the parsed graph",
    ),
    "wrong image dims": (
        _edit_nms(lambda c: c.update(image_dims=[640, 480])),
        "image_dims",
        "image_dims: found [640, 480], expected [640, 640]",
    ),
    "wrong stride": (
        _edit_nms(lambda c: c["bbox_decoders"][0].update(stride=16)),
        "strides_vs_grids",
        "bbox_decoders[0].stride: found 16 (layer conv41 grid 80x80), expected 8",
    ),
    "a grid twice": (
        _edit_nms(lambda c: c["bbox_decoders"].__setitem__(2, dict(c["bbox_decoders"][0]))),
        "decoder_pairing",
        "bbox_decoders grids: found [(80, 80), (40, 40), (80, 80)]",
    ),
    "no normalization": (
        _edit_alls("normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n", ""),
        "normalization",
        "found no normalization command",
    ),
    "wrong meta_arch": (_edit_alls("meta_arch=yolov8", "meta_arch=yolov5"), "nms_postprocess", "found yolov5"),
    "missing key": (_edit_nms(lambda c: c.pop("regression_length")), "nms_keys", "missing ['regression_length']"),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_each_mistake_fails_its_check_naming_field_found_expected_and_fix(yolov8n: ExportFacts, mistake: str) -> None:
    edit, check, detail = MISTAKES[mistake]
    alls, nms, table = _scripts(yolov8n, YOLOV8N_LAYERS)
    results = {r.name: r for r in yolov8_dfc.check_scripts(*edit(alls, nms), ScriptRequest(yolov8n, {}, table))}
    assert results[check].passed is False
    assert detail in results[check].message
    assert re.fullmatch(r".+: found .+, expected .+\. Fix: .+", results[check].message, re.DOTALL)
    others = [r for name, r in results.items() if name != check]
    if check == "nms_keys":
        assert all(r.passed is None for r in others if r.name not in ("normalization", "nms_postprocess"))
    elif mistake != "sigmoid on a box conv":
        assert not failures([r for r in others if r.name not in ("decoder_pairing", "strides_vs_grids", "sigmoid")])


def test_a_model_script_naming_another_json_fails(demo: ExportFacts, tmp_path: Path) -> None:
    names = placeholder_names(demo)
    files = _write(yolov8_dfc, tmp_path, "demo", demo, names, NmsSettings())
    files.alls.write_text(files.alls.read_text().replace("demo_nms_config.json", "other.json"))
    results = {
        r.name: r
        for r in validate_files(files.alls, files.nms_json, demo, table_from_names(demo, names, "placeholder"))
    }
    assert results["nms_reference"].passed is False and "other.json" in results["nms_reference"].message


def test_parsed_names_come_from_original_names_else_from_the_output_shape(yolov8n: ExportFacts) -> None:
    hn = _hn(yolov8n, YOLOV8N_LAYERS)
    assert list(names_from_parsed(yolov8n, parsed_layers(hn)).values()) == [f"conv{n}" for n in YOLOV8N_LAYERS]
    for layer in hn["layers"].values():
        layer["original_names"] = ["renamed by the parser"]
    assert list(names_from_parsed(yolov8n, parsed_layers(hn)).values()) == [f"conv{n}" for n in YOLOV8N_LAYERS]


def test_a_head_matching_no_or_two_parsed_layers_is_an_error(yolov8n: ExportFacts) -> None:
    hn = _hn(yolov8n, YOLOV8N_LAYERS)
    for layer in hn["layers"].values():
        layer["original_names"] = []
    twin = dict(hn["layers"]["net/conv41"], output=["net/output_layer1"])
    hn["layers"]["net/conv40"] = twin
    with pytest.raises(
        DfcScriptError, match=r"found \[\] by original names and \['conv41', 'conv40'\] by output shape"
    ):
        names_from_parsed(yolov8n, parsed_layers(hn))
    del hn["layers"]["net/conv40"], hn["layers"]["net/conv41"]
    with pytest.raises(DfcScriptError, match="expected exactly one layer"):
        names_from_parsed(yolov8n, parsed_layers(hn))


def test_a_layer_map_must_name_every_head_and_only_heads(demo: ExportFacts) -> None:
    full = {h.tensor: f"conv{i}" for i, h in enumerate(demo.heads)}
    assert names_from_map(demo, full) == {h.node: f"conv{i}" for i, h in enumerate(demo.heads)}
    with pytest.raises(DfcScriptError, match="not head nodes"):
        names_from_map(demo, {**full, "/model.0/conv/Conv": "conv1"})
    with pytest.raises(DfcScriptError, match="no parsed layer name for end nodes"):
        names_from_map(demo, dict(list(full.items())[:5]))
    for name in ("../../../etc/passwd", "conv1, sigmoid)\nnormalization1", 41, ""):
        with pytest.raises(DfcScriptError, match=r"expected parsed layer names"):
            names_from_map(demo, {**full, demo.heads[0].tensor: name})


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda nms: nms.replace('"classes": 80,', '"classes": 80, "classes": 3,'), "key 'classes' given twice"),
        (lambda nms: nms.replace('"nms_iou_th": 0.7', '"nms_iou_th": NaN'), "NaN is not a JSON number"),
        (lambda nms: nms.replace('"classes": 80', '"classes": 8' + "0" * 400), "an integer of 401 digits"),
        (lambda nms: nms.replace('"classes": 80,', '"classes": 80, "clases": 80,'), "(unknown ['clases'])"),
        (lambda nms: nms.replace('"stride": 8,', '"stride": 8, "strides": 8,'), "(unknown ['strides'])"),
        (lambda nms: nms.replace('"conv41"', '"../conv41"'), "bbox_decoders[0].reg_layer: found '../conv41'"),
        (lambda nms: nms.replace('"conv42"', '"conv42, sigmoid)"'), "bbox_decoders[0].cls_layer: found 'conv42, s"),
    ],
)
def test_an_nms_config_a_lenient_reader_would_guess_at_fails_nms_keys_naming_what(
    yolov8n: ExportFacts, edit: Callable[[str], str], words: str
) -> None:
    """The NMS config is the harness's own format: read strictly, and a layer name is never script text."""
    alls, nms, table = _scripts(yolov8n, YOLOV8N_LAYERS)
    edited = edit(nms)
    assert edited != nms
    results = {r.name: r for r in yolov8_dfc.check_scripts(alls, edited, ScriptRequest(yolov8n, {}, table))}
    assert results["nms_keys"].passed is False and words in results["nms_keys"].message, results["nms_keys"].message


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (
            lambda hn: hn["layers"].update({"net/../x": {}}),
            "field layers.net/../x is 'net/../x', expected a layer name",
        ),
        (lambda hn: hn["layers"]["net/conv41"].update(output_shapes=[["80", 80, 64]]), "expected a list of shapes"),
        (lambda hn: hn["layers"]["net/conv41"].update(output=["net/output_layer1)"]), "expected a list of layer names"),
        (lambda hn: hn["layers"]["net/conv41"].update(type=3), "field layers.net/conv41.type is 3, expected a string"),
        (lambda hn: hn.update(layers=[]), "field layers is [], expected an object of fields"),
    ],
)
def test_an_hn_whose_layers_are_not_what_the_dfc_writes_is_refused_naming_the_layer(
    yolov8n: ExportFacts, edit: Callable[[dict[str, Any]], None], words: str
) -> None:
    hn = _hn(yolov8n, YOLOV8N_LAYERS)
    edit(hn)
    with pytest.raises(HarnessError, match=None) as caught:
        parsed_layers(hn, "demo.hn")
    assert str(caught.value).startswith("demo.hn") and words in str(caught.value), str(caught.value)


def test_end_nodes_that_do_not_pair_up_are_refused(demo: ExportFacts) -> None:
    with pytest.raises(DfcScriptError, match="expected one box and one class map per grid"):
        onnx_facts(DEMO, [h.node for h in demo.heads[:4]] + [demo.heads[5].node])


@st.composite
def _layouts(draw: st.DrawFn) -> tuple[ExportFacts, dict[str, str]]:
    nc, reg_max = draw(st.integers(1, 100)), draw(st.sampled_from([8, 16]))
    rows, cols = draw(st.integers(1, 20)), draw(st.integers(1, 20))
    numbers = draw(st.lists(st.integers(1, 300), min_size=6, max_size=6, unique=True))
    heads = []
    for stride in (8, 16, 32):
        grid = (rows * 32 // stride, cols * 32 // stride)
        for role, channels in ((HeadRole.BOX, 4 * reg_max), (HeadRole.CLASS, nc)):
            node = f"/head/{role.value}{stride}/Conv"
            heads.append(HeadTensor(f"{node}_output_0", node, role, channels, grid))
    facts = ExportFacts(
        "0" * 64,
        "images",
        (rows * 32, cols * 32),
        None,
        False,
        HeadFamily.YOLOV8,
        tuple(heads),
        source="synthetic.onnx",
    )
    return facts, {h.node: f"conv{n}" for h, n in zip(heads, numbers, strict=True)}


@given(_layouts())
def test_generated_scripts_pass_every_check_for_any_head_layout(layout: tuple[ExportFacts, dict[str, str]]) -> None:
    facts, names = layout
    table = table_from_names(facts, names, "layer map")
    alls = yolov8_dfc.render_alls(ScriptRequest(facts, names, table), "nms.json")
    nms = render_nms_json(yolov8_dfc.nms_config(facts, names, NmsSettings(0.25, 0.45, 300)))
    results = yolov8_dfc.check_scripts(alls, nms, ScriptRequest(facts, {}, table))
    assert [r for r in results if r.passed is not True] == []


# ---------------------------------------------------------------------------------------------- YOLO26

# The end nodes Ultralytics cuts a YOLO26 export at for Hailo: the one-to-one head's last convolutions, the
# box maps of the three scales, then the class maps (ultralytics 8.4.190: ultralytics/engine/exporter.py,
# export_hailo: f"/model.{head_index}/{branch_prefix}cv{branch}.{i}/{branch_prefix}cv{branch}.{i}.2/Conv"
# for branch in (2, 3) for i in scales).
ULTRALYTICS_END_NODES = [f"/model.23/one2one_cv{b}.{i}/one2one_cv{b}.{i}.2/Conv" for b in (2, 3) for i in range(3)]
YOLO26_LAYERS = (230, 245, 260, 232, 247, 262)  # box convs of strides 8, 16, 32, then class convs
CALIBRATION = 64
# ultralytics: ultralytics/engine/exporter.py, export_hailo's model script for raw_detect (the DFL-free head)
ULTRALYTICS_YOLO26_ALLS = (
    "normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n"
    "model_optimization_flavor(optimization_level=2)\n"
    "post_quantization_optimization(finetune, policy=enabled, dataset_size=64)\n"
    "quantization_param([output_layer1, output_layer2, output_layer3, output_layer4, output_layer5, output_layer6], "
    "precision_mode=a16_w16)\n"
)


@functools.cache
def _demo26() -> ExportFacts:
    return onnx_facts(DEMO26)


@pytest.fixture
def demo26() -> ExportFacts:
    return _demo26()


def _yolo26(facts: ExportFacts, outputs: Sequence[int] | None = None) -> tuple[str, dict[str, str], LayerTable]:
    table = parsed_layers(_hn(facts, YOLO26_LAYERS, outputs=outputs))
    names = names_from_parsed(facts, table)
    return yolo26_dfc.render_alls(ScriptRequest(facts, names, table, calibration_count=CALIBRATION)), names, table


def test_a_yolo26_export_is_cut_at_the_real_head_convolutions_box_maps_first(demo26: ExportFacts) -> None:
    assert demo26.family is HeadFamily.YOLO26_ONE2ONE
    assert [h.node for h in end_nodes_of(demo26)] == ULTRALYTICS_END_NODES
    nodes = {node.name: node for node in load_model(DEMO26).graph.node}
    assert all(nodes[h.node].op_type == "Conv" and nodes[h.node].output[0] == h.tensor for h in end_nodes_of(demo26))
    assert [(h.role, h.channels, h.grid) for h in end_nodes_of(demo26)] == [
        *(("box", 4, (g, g)) for g in (32, 16, 8)),
        *(("class", 2, (g, g)) for g in (32, 16, 8)),
    ]


def test_yolov8_and_yolo11_exports_keep_their_end_nodes_box_and_class_per_grid(
    yolov8n: ExportFacts, yolo11n: ExportFacts, demo: ExportFacts
) -> None:
    for facts in (yolov8n, yolo11n, demo):
        assert facts.family is HeadFamily.YOLOV8 and end_nodes_of(facts) == facts.heads
        assert [h.role for h in end_nodes_of(facts)] == ["box", "class"] * 3


def test_the_yolo26_script_is_ultralytics_with_a16_on_exactly_the_six_output_layers(demo26: ExportFacts) -> None:
    alls, names, table = _yolo26(demo26)
    assert alls == ULTRALYTICS_YOLO26_ALLS
    script = parse_alls(alls)
    assert sorted(script.precision) == [(f"output_layer{i}", "a16_w16") for i in range(1, 7)]
    assert not script.nms and script.nms_reference is None and script.activations == {}
    assert names == {node: f"conv{n}" for node, n in zip(ULTRALYTICS_END_NODES, YOLO26_LAYERS, strict=True)}
    results = yolo26_dfc.check_scripts(alls, None, ScriptRequest(demo26, names, table, calibration_count=CALIBRATION))
    assert [r.name for r in results] == [
        "layer_names",
        "a16_w16",
        "no_nms",
        "no_activation_change",
        "normalization",
        "optimization_level",
        "finetune",
    ]
    assert all(r.passed for r in results)


@given(st.permutations(range(1, 7)))
def test_the_a16_layers_are_the_output_layers_the_parsed_graph_has_the_heads_feed(outputs: list[int]) -> None:
    facts = _demo26()
    alls, names, table = _yolo26(facts, outputs)
    assert [layer for layer, _ in parse_alls(alls).precision] == [f"output_layer{i}" for i in outputs]
    assert all(
        r.passed
        for r in yolo26_dfc.check_scripts(alls, None, ScriptRequest(facts, names, table, calibration_count=CALIBRATION))
    )


def _edit(old: str, new: str) -> Callable[[str], str]:
    def edit(alls: str) -> str:
        assert old in alls
        return alls.replace(old, new)

    return edit


YOLO26_MISTAKES = {
    "a16 on five outputs": (
        _edit(", output_layer6]", "]"),
        "a16_w16",
        "found ['output_layer1', 'output_layer2', 'output_layer3', 'output_layer4', 'output_layer5']",
    ),
    "a16 on the head convs": (
        _edit("output_layer1, output_layer2, output_layer3, output_layer4, output_layer5, output_layer6", "conv230"),
        "a16_w16",
        "found ['conv230'], expected the head outputs",
    ),
    "a8 on an output as well": (
        lambda alls: alls + "quantization_param(output_layer4, precision_mode=a8_w8)\n",
        "a16_w16",
        "found [('output_layer4', 'a8_w8')]",
    ),
    "the YOLOv8 NMS op": (
        lambda alls: alls + 'nms_postprocess("nms.json", meta_arch=yolov8, engine=cpu)\n',
        "no_nms",
        "expected no NMS op",
    ),
    "a sigmoid on a class conv": (
        lambda alls: alls + "change_output_activation(conv232, sigmoid)\n",
        "no_activation_change",
        "found {'conv232': 'sigmoid'}",
    ),
    "no normalization": (
        _edit("normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n", ""),
        "normalization",
        "found no normalization command",
    ),
    "another optimization level": (
        _edit("optimization_level=2", "optimization_level=0"),
        "optimization_level",
        "found 0, expected 2",
    ),
    "finetune on another count": (
        _edit("dataset_size=64", "dataset_size=1024"),
        "finetune",
        "found {'policy': 'enabled', 'dataset_size': '1024'}",
    ),
}


@pytest.mark.parametrize("mistake", list(YOLO26_MISTAKES))
def test_each_yolo26_script_mistake_fails_its_check_alone_naming_found_expected_and_fix(
    demo26: ExportFacts, mistake: str
) -> None:
    edit, check, detail = YOLO26_MISTAKES[mistake]
    alls, names, table = _yolo26(demo26)
    results = {
        r.name: r
        for r in yolo26_dfc.check_scripts(
            edit(alls), None, ScriptRequest(demo26, names, table, calibration_count=CALIBRATION)
        )
    }
    assert results[check].passed is False
    assert detail in results[check].message
    assert re.fullmatch(r".+: found .+, expected .+\. Fix: .+", results[check].message, re.DOTALL)
    assert [r.name for r in failures(list(results.values()))] == [check]


def test_yolo26_head_layers_are_held_to_the_parsed_graph_and_placeholders_skip(demo26: ExportFacts) -> None:
    hn = _hn(demo26, YOLO26_LAYERS)
    hn["layers"]["net/conv230"]["output_shapes"] = [[-1, 32, 32, 2]]  # the box conv of stride 8 as a class map
    table = parsed_layers(hn)
    names = names_from_parsed(demo26, table)  # by original names
    results = {
        r.name: r
        for r in yolo26_dfc.check_scripts(
            ULTRALYTICS_YOLO26_ALLS, None, ScriptRequest(demo26, names, table, calibration_count=CALIBRATION)
        )
    }
    assert results["layer_names"].passed is False
    assert (
        "found grid (32, 32), 2 channels, expected a layer of grid (32, 32), 4 channels"
        in results["layer_names"].message
    )

    names = placeholder_names(demo26)
    table = table_from_names(demo26, names, "placeholder")
    assert yolo26_dfc.head_outputs(demo26, names, table) == tuple(f"output_layer{i}" for i in range(1, 7))
    results = {
        r.name: r
        for r in yolo26_dfc.check_scripts(
            ULTRALYTICS_YOLO26_ALLS, None, ScriptRequest(demo26, names, table, calibration_count=CALIBRATION)
        )
    }
    assert results["layer_names"].passed is None and "placeholders" in results["layer_names"].message
    assert not failures(list(results.values()))


def test_a_head_layer_feeding_no_output_layer_is_refused(demo26: ExportFacts) -> None:
    hn = _hn(demo26, YOLO26_LAYERS)
    hn["layers"]["net/conv262"]["output"] = []
    table = parsed_layers(hn)
    names = names_from_parsed(demo26, table)
    with pytest.raises(DfcScriptError, match=r"-> layer 'conv262': feeds output layers \[\], expected a layer feeding"):
        yolo26_dfc.head_outputs(demo26, names, table)


def test_the_one_to_many_head_is_compiled_only_when_asked_for(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    onnx.save(one_to_many_export(load_model(DEMO26)), model)
    with pytest.raises(
        DfcScriptError,
        match=r"found YOLO26's one-to-many head .*, expected YOLO26's one-to-one head .* \(the default\)\. Fix: .*"
        r"--head one2many",
    ):
        onnx_facts(model)
    facts = onnx_facts(model, head=HeadFamily.YOLO26_ONE2MANY)
    assert facts.family is HeadFamily.YOLO26_ONE2MANY
    assert [h.node for h in end_nodes_of(facts)] == [
        f"/model.23/cv{b}.{i}/cv{b}.{i}.2/Conv" for b in (2, 3) for i in range(3)
    ]
    alls, names, table = _yolo26(facts)
    assert alls == ULTRALYTICS_YOLO26_ALLS
    assert all(
        r.passed
        for r in yolo26_dfc.check_scripts(alls, None, ScriptRequest(facts, names, table, calibration_count=CALIBRATION))
    )


def test_an_end_to_end_export_has_no_one_to_many_head_and_a_yolov8_export_no_head_to_choose() -> None:
    with pytest.raises(
        DfcScriptError, match=r"found YOLO26's one-to-one head .*Fix: export the model with end2end=False"
    ):
        onnx_facts(DEMO26, head=HeadFamily.YOLO26_ONE2MANY)
    with pytest.raises(
        DfcScriptError, match=r"head yolo26-one2one asked for, but the export carries the YOLOv8/YOLO11"
    ):
        onnx_facts(DEMO, head=HeadFamily.YOLO26_ONE2ONE)


def test_an_export_of_both_yolo26_heads_is_refused_as_ambiguous(tmp_path: Path) -> None:
    both = tmp_path / "both.onnx"
    onnx.save(both_heads_export(load_model(DEMO26)), both)
    with pytest.raises(DfcScriptError, match=r"both.onnx: cannot be compiled: found no head to compile \(") as refused:
        onnx_facts(both)
    assert re.search(
        r"it has 2 outputs .*'output0', \[1, 300, 6\].*'output1', \[1, 6, 1344\].*, expected one head output: an "
        r"export of both YOLO26 heads cannot be compiled as one",
        str(refused.value),
    )


def test_an_end_to_end_export_whose_head_convolutions_are_not_found_is_refused(tmp_path: Path) -> None:
    """Worded from the finders' refusals (export_heads), the families the harness compiles named in the fix."""
    from onnxruntime.quantization import quantize_dynamic

    quantized = tmp_path / "yolo26n_int8.onnx"
    quantize_dynamic(DEMO26, quantized)  # every Conv becomes a ConvInteger
    with pytest.raises(
        DfcScriptError, match=r"yolo26n_int8.onnx: cannot be compiled: found no head to compile"
    ) as refused:
        onnx_facts(quantized)
    assert "Fix: give a float detect export of one of SSD, YOLOv8/YOLO11, YOLOv5/YOLOv7, YOLOX, YOLO26" in str(
        refused.value
    )


def test_yolo26_end_nodes_must_be_its_six_head_convolutions(demo26: ExportFacts) -> None:
    given_nodes = [h.tensor for h in reversed(demo26.heads)]  # tensors, in any order
    assert onnx_facts(DEMO26, given_nodes) == demo26
    with pytest.raises(DfcScriptError, match=r"a YOLO26 export is cut at its head convolutions, found by structure"):
        onnx_facts(DEMO26, ULTRALYTICS_END_NODES[:5])


# ---------------------------------------------------------------------------------------------- YOLOv5

# hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov5s.alls (commit 6845dd2b): meta_arch by position, the
# sigmoid on every output layer
ZOO_YOLOV5S_ALLS = (
    "normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n"
    "change_output_activation(sigmoid)\n"
    'nms_postprocess("../../postprocess_config/yolov5s_nms_config.json", yolov5, engine=cpu)\n'
    "model_optimization_config(calibration, batch_size=4)"
)
# hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/yolov5s_nms_config.json (commit 52b78424)
ZOO_YOLOV5S_NMS = {
    "nms_scores_th": 0.001,
    "nms_iou_th": 0.6,
    "image_dims": [640, 640],
    "max_proposals_per_class": 80,
    "background_removal": False,
    "classes": 80,
    "bbox_decoders": [
        {"name": "bbox_decoder55", "w": [10, 16, 33], "h": [13, 30, 23], "stride": 8, "encoded_layer": "conv55"},
        {"name": "bbox_decoder63", "w": [30, 62, 59], "h": [61, 45, 119], "stride": 16, "encoded_layer": "conv63"},
        {"name": "bbox_decoder70", "w": [116, 156, 373], "h": [90, 198, 326], "stride": 32, "encoded_layer": "conv70"},
    ],
}
YOLOV5S_LAYERS = (55, 63, 70)  # the head convs of strides 8, 16, 32 in the Model Zoo's parsed yolov5s
# Anchors as autoanchor leaves them: YOLOv5's defaults moved, in fractions of a pixel (37.5 and 390.5 round to
# the even pixel, as Python's round and the HEF check do).
AUTOANCHORS = (
    ((11.6, 14.3), (18.2, 33.9), (37.5, 25.1)),
    ((33.4, 66.8), (70.2, 49.6), (64.1, 131.7)),
    ((126.3, 97.4), (171.8, 214.2), (390.5, 347.9)),
)
AUTOANCHORS_PIXELS = (
    ((12, 14), (18, 34), (38, 25)),
    ((33, 67), (70, 50), (64, 132)),
    ((126, 97), (172, 214), (390, 348)),
)


Anchors = tuple[tuple[tuple[float, float], ...], ...]
YoloV5File = Callable[[int, int, Anchors], Path]


@pytest.fixture(scope="module")
def yolov5_file(tmp_path_factory: pytest.TempPathFactory) -> YoloV5File:
    """The YOLOv5-style export of (side, classes, anchors), made once a module."""
    made: dict[tuple[int, int, Anchors], Path] = {}

    def path(side: int, nc: int, anchors: Anchors) -> Path:
        if (side, nc, anchors) not in made:
            made[side, nc, anchors] = tmp_path_factory.mktemp("yolov5") / f"yolov5_{side}_{nc}.onnx"
            onnx.save(yolov5_export(side, nc, anchors), made[side, nc, anchors])
        return made[side, nc, anchors]

    return path


@pytest.fixture(scope="module")
def yolov5s(yolov5_file: YoloV5File) -> ExportFacts:
    """A YOLOv5s-shaped export: 640 input, 80 classes, YOLOv5's default anchors."""
    return onnx_facts(yolov5_file(640, 80, DEFAULT_ANCHORS))


@pytest.fixture(scope="module")
def autoanchored(yolov5_file: YoloV5File) -> ExportFacts:
    """A 64-pixel export of 2 classes with its own anchors, in fractions of a pixel."""
    return onnx_facts(yolov5_file(64, 2, AUTOANCHORS))


def _v5_scripts(
    facts: ExportFacts, numbers: tuple[int, ...] = YOLOV5S_LAYERS, settings: NmsSettings | None = None
) -> tuple[str, str, LayerTable]:
    table = parsed_layers(_hn(facts, numbers))
    names = names_from_parsed(facts, table)
    config = yolov5_dfc.nms_config(facts, names, settings or NmsSettings())
    alls = yolov5_dfc.render_alls(ScriptRequest(facts, names, table), "model_nms_config.json")
    return alls, render_nms_json(config), table


def test_a_yolov5_export_is_cut_at_its_three_head_convs_and_takes_no_head(
    yolov5s: ExportFacts, yolov5_file: YoloV5File
) -> None:
    assert yolov5s.family is HeadFamily.YOLOV5
    assert [h.node for h in end_nodes_of(yolov5s)] == [f"/model.24/m.{i}/Conv" for i in range(3)]
    assert [(h.role, h.channels, h.grid) for h in end_nodes_of(yolov5s)] == [
        ("anchored", 255, (g, g)) for g in (80, 40, 20)
    ]
    with pytest.raises(
        DfcScriptError, match=r"head yolo26-one2one asked for, but the export carries the YOLOv5/YOLOv7"
    ):
        onnx_facts(yolov5_file(640, 80, DEFAULT_ANCHORS), head=HeadFamily.YOLO26_ONE2ONE)


def test_yolov5_end_nodes_must_be_its_head_convolutions(yolov5s: ExportFacts, yolov5_file: YoloV5File) -> None:
    path = yolov5_file(640, 80, DEFAULT_ANCHORS)
    assert onnx_facts(path, [h.tensor for h in reversed(yolov5s.heads)]) == yolov5s
    with pytest.raises(DfcScriptError, match=r"a YOLOv5/YOLOv7 export is cut at its head convolutions, found by"):
        onnx_facts(path, [h.node for h in yolov5s.heads[:2]])


def test_the_yolov5s_nms_config_is_the_model_zoos(yolov5s: ExportFacts) -> None:
    alls, nms, table = _v5_scripts(yolov5s, settings=NmsSettings(0.001, 0.6, 80))
    assert json.loads(nms) == ZOO_YOLOV5S_NMS
    assert list(json.loads(nms)) == [k.name for k in yolov5_dfc.NMS_KEYS]
    assert alls == (
        "normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n"
        "change_output_activation(sigmoid)\n"
        'nms_postprocess("model_nms_config.json", meta_arch=yolov5, engine=cpu)\n'
    )
    results = yolov5_dfc.check_scripts(alls, nms, ScriptRequest(yolov5s, {}, table))
    assert [r.name for r in results] == [
        "nms_keys",
        "image_dims",
        "classes",
        "decoder_strides",
        "anchors",
        "layer_names",
        "encoded_layer",
        "sigmoid",
        "normalization",
        "nms_postprocess",
    ]
    assert all(r.passed for r in results), [r.message for r in results if not r.passed]


def test_the_model_zoos_own_yolov5s_script_passes_every_check(yolov5s: ExportFacts) -> None:
    """Its meta_arch given by position and its sigmoid on every output layer are read as the DFC reads them."""
    script = parse_alls(ZOO_YOLOV5S_ALLS)
    assert script.nms_options["meta_arch"] == "yolov5" and script.every_output_activation == "sigmoid"
    assert script.activation_of("conv55") == "sigmoid" and script.activations == {}
    table = parsed_layers(_hn(yolov5s, YOLOV5S_LAYERS))
    results = yolov5_dfc.check_scripts(ZOO_YOLOV5S_ALLS, json.dumps(ZOO_YOLOV5S_NMS), ScriptRequest(yolov5s, {}, table))
    assert all(r.passed for r in results), [r.message for r in results if not r.passed]


def test_anchors_in_fractions_of_a_pixel_are_written_rounded_and_the_check_says_so(
    autoanchored: ExportFacts, yolov5s: ExportFacts
) -> None:
    assert autoanchored.anchors == tuple(
        tuple((float(np.float32(w)), float(np.float32(h))) for w, h in stride) for stride in AUTOANCHORS
    )
    alls, nms, table = _v5_scripts(autoanchored)
    decoders = json.loads(nms)["bbox_decoders"]
    assert [tuple(zip(d["w"], d["h"], strict=True)) for d in decoders] == list(AUTOANCHORS_PIXELS)
    results = {r.name: r for r in yolov5_dfc.check_scripts(alls, nms, ScriptRequest(autoanchored, {}, table))}
    assert all(r.passed for r in results.values())
    assert "rounded to whole pixels from the export's stride 8 [(11.6, 14.3), (18.2, 33.9), (37.5, 25.1)]" in (
        results["anchors"].message
    )
    alls, nms, table = _v5_scripts(yolov5s)
    whole = {r.name: r for r in yolov5_dfc.check_scripts(alls, nms, ScriptRequest(yolov5s, {}, table))}
    assert whole["anchors"].passed and "rounded" not in whole["anchors"].message


def test_yolov5_scripts_with_placeholders_validate_all_but_the_names(autoanchored: ExportFacts, tmp_path: Path) -> None:
    names = placeholder_names(autoanchored)
    assert list(names.values()) == [f"UNRESOLVED_encoded_stride{s}" for s in (8, 16, 32)]
    files = _write(yolov5_dfc, tmp_path, "v5", autoanchored, names, NmsSettings())
    config = json.loads(files.nms_json.read_text())
    assert [(d["name"], d["stride"], d["encoded_layer"]) for d in config["bbox_decoders"]] == [
        (f"bbox_decoder_stride{s}", s, f"UNRESOLVED_encoded_stride{s}") for s in (8, 16, 32)
    ]
    assert json.loads(files.layer_names.read_text()) == names
    table = table_from_names(autoanchored, names, "placeholder")
    results = {r.name: r for r in validate_files(files.alls, files.nms_json, autoanchored, table)}
    assert results["layer_names"].passed is None and "placeholders" in results["layer_names"].message
    assert all(r.passed for name, r in results.items() if name != "layer_names")

    # A user's edit of the written JSON, read back from the file.
    config["bbox_decoders"][0]["w"], config["bbox_decoders"][0]["h"] = [10, 16, 33], [13, 30, 23]
    files.nms_json.write_text(json.dumps(config))
    failed = failures(validate_files(files.alls, files.nms_json, autoanchored, table))
    assert [r.name for r in failed] == ["anchors"]
    assert "YOLOv5's default anchors of stride 8" in failed[0].message

    files.alls.write_text(files.alls.read_text().replace("v5_nms_config.json", "other.json"))
    failed = failures(validate_files(files.alls, files.nms_json, autoanchored, table))
    assert [r.name for r in failed] == ["anchors", "nms_reference"] and "other.json" in failed[1].message


def _decoders(edit: Callable[[list[dict[str, Any]]], None]) -> Callable[[str, str], tuple[str, str]]:
    return _edit_nms(lambda config: edit(config["bbox_decoders"]))


def _swap(key: str, i: int, j: int) -> Callable[[list[dict[str, Any]]], None]:
    def apply(decoders: list[dict[str, Any]]) -> None:
        decoders[i][key], decoders[j][key] = decoders[j][key], decoders[i][key]

    return apply


def _anchors_reversed_across_strides(decoders: list[dict[str, Any]]) -> None:
    _swap("w", 0, 2)(decoders)
    _swap("h", 0, 2)(decoders)


def _defaults(decoders: list[dict[str, Any]]) -> None:
    for d, default in zip(decoders, DEFAULT_ANCHORS, strict=True):
        d["w"], d["h"] = [int(w) for w, _ in default], [int(h) for _, h in default]


def _update(i: int, **values: Any) -> Callable[[list[dict[str, Any]]], None]:
    return lambda decoders: decoders[i].update(values)


# mistake -> (edit, the checks that fail, in order, and what the first one's message says); on the
# autoanchored export, layers conv55, conv63, conv70
YOLOV5_MISTAKES: dict[str, tuple[Callable[[str, str], tuple[str, str]], list[str], str]] = {
    "default anchors for an autoanchored export": (
        _decoders(_defaults),
        ["anchors"],
        "bbox_decoders[0] (stride 8) anchors (w, h): found [(10, 13), (16, 30), (33, 23)] (YOLOv5's default anchors "
        "of stride 8; the export's are its own",
    ),
    "anchors reversed across strides": (
        _decoders(_anchors_reversed_across_strides),
        ["anchors"],
        "found [(126, 97), (172, 214), (390, 348)] (the export's anchors of stride 32: the strides' anchors swapped)",
    ),
    "w and h swapped": (
        _decoders(lambda d: d[1].update(w=d[1]["h"], h=d[1]["w"])),
        ["anchors"],
        "bbox_decoders[1] (stride 16) anchors (w, h): found [(67, 33), (50, 70), (132, 64)] (w and h swapped",
    ),
    "anchors in another order": (
        _decoders(lambda d: d[2].update(w=d[2]["w"][::-1], h=d[2]["h"][::-1])),
        ["anchors"],
        "(the export's anchors in another order",
    ),
    "anchors in fractions of a pixel": (
        _decoders(_update(0, w=[11.6, 18.2, 37.5])),
        ["anchors"],
        "bbox_decoders[0] (stride 8) w: found [11.6, 18.2, 37.5], expected whole pixels, integers (the HEF keeps "
        "anchors as uint32): [12, 18, 38]",
    ),
    "an anchor left out": (
        _decoders(_update(1, w=[33, 70], h=[67, 50])),
        ["anchors"],
        "found 2 widths and 2 heights, expected 3 of each: the stride's anchors, its map has 21 channels = 3 x (5 + 2)",
    ),
    "wrong classes": (_edit_nms(lambda c: c.update(classes=3)), ["classes"], "NMS config classes: found 3, expected 2"),
    "classes as a float": (_edit_nms(lambda c: c.update(classes=2.0)), ["classes"], "found 2.0, expected 2"),
    "wrong image dims": (
        _edit_nms(lambda c: c.update(image_dims=[640, 640])),
        ["image_dims"],
        "NMS config image_dims: found [640, 640], expected [64, 64]",
    ),
    "the YOLOv8 meta_arch": (
        _edit_alls("meta_arch=yolov5", "meta_arch=yolov8"),
        ["nms_postprocess"],
        "nms_postprocess meta_arch: found yolov8, expected yolov5",
    ),
    "no sigmoid": (
        _edit_alls("change_output_activation(sigmoid)\n", ""),
        ["sigmoid"],
        "activation of encoded_layer conv55 (bbox_decoders[0]): found none changed (logits reach the NMS op",
    ),
    "the sigmoid on two of three outputs": (
        _edit_alls(
            "change_output_activation(sigmoid)\n",
            "change_output_activation(conv55, sigmoid)\nchange_output_activation(conv63, sigmoid)\n",
        ),
        ["sigmoid"],
        "activation of encoded_layer conv70 (bbox_decoders[2]): found none changed",
    ),
    "a linear output under the sigmoid": (
        _edit_alls(
            "change_output_activation(sigmoid)\n",
            "change_output_activation(sigmoid)\nchange_output_activation(conv63, linear)\n",
        ),
        ["sigmoid"],
        "activation of encoded_layer conv63 (bbox_decoders[1]): found linear",
    ),
    "no normalization": (
        _edit_alls("normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n", ""),
        ["normalization"],
        "found no normalization command",
    ),
    "no nms_postprocess": (
        _edit_alls('nms_postprocess("model_nms_config.json", meta_arch=yolov5, engine=cpu)\n', ""),
        ["nms_postprocess"],
        "found no nms_postprocess command with a JSON path",
    ),
    "encoded layers of two strides swapped": (
        _decoders(_swap("encoded_layer", 0, 1)),
        ["encoded_layer"],
        "bbox_decoders[0].encoded_layer conv63: found grid 4x4, 21 channels (the head conv of stride 16), expected the "
        "head conv of stride 8: grid 8x8, 21 channels",
    ),
    "a layer the graph does not have": (
        _decoders(_update(2, encoded_layer="conv99")),
        ["layer_names"],
        "bbox_decoders[2].encoded_layer: found 'conv99', expected a layer of the parsed graph",
    ),
    "a decoder left out": (
        _decoders(lambda d: d.pop(1)),
        ["decoder_strides"],
        "bbox_decoders strides: found [8, 32], expected each stride of",
    ),
    "a stride twice": (
        _decoders(_update(0, stride=16)),
        ["decoder_strides", "encoded_layer"],
        "bbox_decoders strides: found [16, 16, 32]",
    ),
    "a key left out": (
        _edit_nms(lambda c: c.pop("background_removal")),
        ["nms_keys"],
        "(missing ['background_removal'])",
    ),
    "the YOLOv8 regression_length": (
        _edit_nms(lambda c: c.update(regression_length=16)),
        ["nms_keys"],
        "(unknown ['regression_length'])",
    ),
    "a YOLOv8 decoder": (
        _decoders(lambda d: d[0].update(reg_layer="conv55", cls_layer="conv55")),
        ["nms_keys"],
        "bbox_decoders[0]: found",
    ),
    "a threshold as a string": (
        _edit_nms(lambda c: c.update(nms_scores_th="0.2")),
        ["nms_keys"],
        'NMS config nms_scores_th: found "0.2", expected a number from 0 to 1',
    ),
}


@pytest.mark.parametrize("mistake", list(YOLOV5_MISTAKES))
def test_each_yolov5_script_mistake_fails_its_check_naming_field_found_expected_and_fix(
    autoanchored: ExportFacts, mistake: str
) -> None:
    edit, checks, detail = YOLOV5_MISTAKES[mistake]
    alls, nms, table = _v5_scripts(autoanchored)
    results = yolov5_dfc.check_scripts(*edit(alls, nms), ScriptRequest(autoanchored, {}, table))
    failed = failures(results)
    assert [r.name for r in failed] == checks, [r.message for r in failed]
    assert detail in failed[0].message, failed[0].message
    assert all(re.fullmatch(r".+: found .+, expected .+\. Fix: .+", r.message, re.DOTALL) for r in failed)
    if checks == ["nms_keys"]:
        names = {r.name for r in results if r.passed is None}
        assert names == {
            "image_dims",
            "classes",
            "decoder_strides",
            "anchors",
            "layer_names",
            "encoded_layer",
            "sigmoid",
        }


def test_a_yolov5_head_conv_of_another_shape_in_the_parsed_graph_fails_encoded_layer(autoanchored: ExportFacts) -> None:
    hn = _hn(autoanchored, YOLOV5S_LAYERS)
    hn["layers"]["net/conv63"]["output_shapes"] = [[-1, 4, 4, 14]]  # two anchors, as another export would have
    table = parsed_layers(hn)
    names = names_from_parsed(autoanchored, table)  # by original names
    alls = yolov5_dfc.render_alls(ScriptRequest(autoanchored, names, table), "nms.json")
    nms = render_nms_json(yolov5_dfc.nms_config(autoanchored, names, NmsSettings()))
    failed = failures(yolov5_dfc.check_scripts(alls, nms, ScriptRequest(autoanchored, {}, table)))
    assert [r.name for r in failed] == ["encoded_layer"]
    assert "encoded_layer conv63: found grid 4x4, 14 channels, expected the head conv of stride 16" in failed[0].message


@st.composite
def _anchored_layouts(draw: st.DrawFn) -> tuple[ExportFacts, dict[str, str]]:
    nc, na = draw(st.integers(1, 100)), draw(st.integers(1, 4))
    rows, cols = draw(st.integers(1, 20)), draw(st.integers(1, 20))
    numbers = draw(st.lists(st.integers(1, 300), min_size=3, max_size=3, unique=True))
    pixels = st.floats(2, 640, allow_nan=False, width=32)
    heads = []
    for i, stride in enumerate((8, 16, 32)):
        anchors = tuple(draw(st.lists(st.tuples(pixels, pixels), min_size=na, max_size=na)))
        node = f"/model.24/m.{i}/Conv"
        grid = (rows * 32 // stride, cols * 32 // stride)
        heads.append(HeadTensor(f"{node}_output_0", node, HeadRole.ANCHORED, na * (5 + nc), grid, anchors))
    facts = ExportFacts(
        "0" * 64, "images", (rows * 32, cols * 32), None, False, HeadFamily.YOLOV5, tuple(heads), source="v5.onnx"
    )
    return facts, {h.node: f"conv{n}" for h, n in zip(heads, numbers, strict=True)}


@given(_anchored_layouts(), st.integers(0, 2), st.integers(0, 3), st.sampled_from(["w", "h"]))
def test_generated_yolov5_scripts_pass_every_check_and_one_anchor_a_pixel_off_fails_anchors(
    layout: tuple[ExportFacts, dict[str, str]], stride: int, anchor: int, key: str
) -> None:
    facts, names = layout
    table = table_from_names(facts, names, "layer map")
    alls = yolov5_dfc.render_alls(ScriptRequest(facts, names, table), "nms.json")
    config = yolov5_dfc.nms_config(facts, names, NmsSettings(0.25, 0.45, 300))
    assert [
        r
        for r in yolov5_dfc.check_scripts(alls, render_nms_json(config), ScriptRequest(facts, {}, table))
        if r.passed is not True
    ] == []
    decoder = config["bbox_decoders"][stride]
    decoder[key][anchor % len(decoder[key])] += 1
    failed = failures(yolov5_dfc.check_scripts(alls, render_nms_json(config), ScriptRequest(facts, {}, table)))
    assert [r.name for r in failed] == ["anchors"] and f"bbox_decoders[{stride}]" in failed[0].message


def test_a_sigmoid_on_every_output_is_read_and_refused_where_boxes_or_logits_must_stay_raw(
    yolov8n: ExportFacts, demo26: ExportFacts
) -> None:
    """YOLOv8's box convs feed the DFL softmax raw; YOLO26's maps leave the HEF as they are."""
    alls, nms, table = _scripts(yolov8n, YOLOV8N_LAYERS)
    every = re.sub(r"(change_output_activation\(conv\d+, sigmoid\)\n)+", "change_output_activation(sigmoid)\n", alls)
    assert every.count("change_output_activation") == 1
    failed = failures(yolov8_dfc.check_scripts(every, nms, ScriptRequest(yolov8n, {}, table)))
    assert [r.name for r in failed] == ["sigmoid"]
    assert "activation of reg_layer conv41 (bbox_decoders[0]): found sigmoid" in failed[0].message
    assert "replace change_output_activation(sigmoid) (every output layer)" in failed[0].message

    alls26, names, table26 = _yolo26(demo26)
    failed = failures(
        yolo26_dfc.check_scripts(
            alls26 + "change_output_activation(sigmoid)\n",
            None,
            ScriptRequest(demo26, names, table26, calibration_count=CALIBRATION),
        )
    )
    assert [r.name for r in failed] == ["no_activation_change"]
    assert "found {'every output layer': 'sigmoid'}" in failed[0].message


def test_an_nms_config_of_a_head_without_one_is_refused(demo26: ExportFacts, tmp_path: Path) -> None:
    alls, nms = tmp_path / "m.alls", tmp_path / "m_nms_config.json"
    alls.write_text(ULTRALYTICS_YOLO26_ALLS)
    nms.write_text("{}")
    with pytest.raises(DfcScriptError, match=r"m_nms_config.json: .* carries a yolo26-one2one head, whose NMS config"):
        validate_files(alls, nms, demo26, table_from_names(demo26, placeholder_names(demo26), "placeholder"))


# ---------------------------------------------------------------------------------------------- YOLOX

# hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/nms_config_yolox_tiny.json (commit 6845dd2b)
ZOO_YOLOX_TINY_NMS = {
    "nms_scores_th": 0.2,
    "nms_iou_th": 0.45,
    "number_of_detection_heads": 3,
    "image_dims": [416, 416],
    "max_proposals_per_class": 100,
    "classes": 80,
    "bbox_decoders": [
        {
            "name": "bbox_decoder_8",
            "stride": 8,
            "reg_layer": "conv55",
            "objectness_layer": "conv56",
            "cls_layer": "conv54",
        },
        {
            "name": "bbox_decoder_16",
            "stride": 16,
            "reg_layer": "conv69",
            "objectness_layer": "conv70",
            "cls_layer": "conv68",
        },
        {
            "name": "bbox_decoder_32",
            "stride": 32,
            "reg_layer": "conv82",
            "objectness_layer": "conv83",
            "cls_layer": "conv81",
        },
    ],
}
# The Model Zoo's parsed yolox_tiny layers in end-node order (per stride box, class, objectness)
YOLOX_TINY_LAYERS = (55, 54, 56, 69, 68, 70, 82, 81, 83)


@pytest.fixture(scope="module")
def yolox_tiny(tmp_path_factory: pytest.TempPathFactory) -> ExportFacts:
    """A YOLOX-tiny-shaped export: 416 input, 80 classes."""
    path = tmp_path_factory.mktemp("yolox") / "yolox_416_80.onnx"
    onnx.save(yolox_export(side=416, nc=80), path)
    return onnx_facts(path)


def _x_scripts(facts: ExportFacts, settings: NmsSettings | None = None) -> tuple[str, str, LayerTable]:
    table = parsed_layers(_hn(facts, YOLOX_TINY_LAYERS))
    names = names_from_parsed(facts, table)
    config = yolox_dfc.nms_config(facts, names, settings or NmsSettings())
    return (
        yolox_dfc.render_alls(ScriptRequest(facts, names, table), "model_nms_config.json"),
        render_nms_json(config),
        table,
    )


def test_a_yolox_export_is_cut_at_its_nine_head_convs_and_takes_no_head(yolox_tiny: ExportFacts, tmp_path) -> None:
    assert yolox_tiny.family is HeadFamily.YOLOX
    assert [(h.role, h.channels) for h in end_nodes_of(yolox_tiny)] == [
        (HeadRole.BOX, 4),
        (HeadRole.CLASS, 80),
        (HeadRole.OBJECTNESS, 1),
    ] * 3
    path = tmp_path / "yolox.onnx"
    onnx.save(yolox_export(side=64, nc=2), path)
    with pytest.raises(DfcScriptError, match=r"head yolo26-one2one asked for, but the export carries the YOLOX head"):
        onnx_facts(path, head=HeadFamily.YOLO26_ONE2ONE)
    with pytest.raises(DfcScriptError, match=r"a YOLOX export is cut at its head convolutions, found by structure"):
        onnx_facts(path, [h.node for h in onnx_facts(path).heads[:3]])


def test_the_yolox_tiny_nms_config_is_the_model_zoos_and_every_check_passes(yolox_tiny: ExportFacts) -> None:
    alls, nms, table = _x_scripts(yolox_tiny, NmsSettings(0.2, 0.45, 100))
    assert json.loads(nms) == ZOO_YOLOX_TINY_NMS
    assert list(json.loads(nms)) == [k.name for k in yolox_dfc.NMS_KEYS]
    assert alls.splitlines() == [
        "normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])",
        *(f"change_output_activation(conv{n}, sigmoid)" for n in (56, 54, 70, 68, 83, 81)),
        'nms_postprocess("model_nms_config.json", meta_arch=yolox, engine=cpu)',
    ]
    results = yolox_dfc.check_scripts(alls, nms, ScriptRequest(yolox_tiny, {}, table))
    assert [r.name for r in results] == [
        "nms_keys",
        "image_dims",
        "classes",
        "number_of_detection_heads",
        "decoder_strides",
        "layer_names",
        "decoder_layers",
        "sigmoid",
        "normalization",
        "nms_postprocess",
    ]
    assert all(r.passed for r in results), [r.message for r in results if not r.passed]


def test_compile_dry_run_writes_and_checks_a_yolox_script_and_refuses_a_bbox_only_op(tmp_path: Path) -> None:
    path = tmp_path / "yolox.onnx"
    onnx.save(yolox_export(side=64, nc=2), path)
    facts = onnx_facts(path)
    names = placeholder_names(facts)
    assert sorted(names.values()) == sorted(
        f"UNRESOLVED_{word}_stride{s}" for s in (8, 16, 32) for word in ("reg", "cls", "obj")
    )
    files = _write(yolox_dfc, tmp_path / "out", "x", facts, names, NmsSettings())
    table = table_from_names(facts, names, "placeholder")
    results = {r.name: r for r in validate_files(files.alls, files.nms_json, facts, table)}
    assert results["layer_names"].passed is None
    assert all(r.passed for name, r in results.items() if name != "layer_names"), failures(results.values())
    only = NmsSettings(bbox_decoding_only=True)
    refused = r"for the YOLOX head .*; HailoRT has no bbox-only op of meta_arch yolox \(hailort: .*/yolox_post_process"
    with pytest.raises(DfcScriptError, match=refused):
        write_checked_scripts(tmp_path / "only", "x", facts, names, table, only, 0)
    assert not (tmp_path / "only").exists()


def _x_decoders(edit: Callable[[list[dict[str, Any]]], None]) -> Callable[[str, str], tuple[str, str]]:
    return _edit_nms(lambda config: edit(config["bbox_decoders"]))


# mistake -> (edit, the checks that fail, in order, and what the first one's message says); on the YOLOX-tiny
# shaped export, layers conv54..56, conv68..70, conv81..83
YOLOX_MISTAKES: dict[str, tuple[Callable[[str, str], tuple[str, str]], list[str], str]] = {
    "objectness and box layers swapped": (
        _x_decoders(lambda d: d[0].update(reg_layer="conv56", objectness_layer="conv55")),
        ["decoder_layers", "sigmoid"],
        "bbox_decoders[0].reg_layer conv56: found grid 52x52, 1 channels (the objectness conv of stride 8), expected "
        "the box conv of stride 8: grid 52x52, 4 channels",
    ),
    "class layers of two strides swapped": (
        _x_decoders(lambda d: (d[0].update(cls_layer="conv68"), d[1].update(cls_layer="conv54"))),
        ["decoder_layers"],
        "bbox_decoders[0].cls_layer conv68: found grid 26x26, 80 channels (the class conv of stride 16)",
    ),
    "the sigmoid on every output (the YOLOv5 script's)": (
        lambda alls, nms: (
            re.sub(r"change_output_activation\(conv\d+, sigmoid\)\n", "", alls).replace(
                "nms_postprocess", "change_output_activation(sigmoid)\nnms_postprocess"
            ),
            nms,
        ),
        ["sigmoid"],
        "activation of reg_layer conv55 (bbox_decoders[0]): found sigmoid, expected unchanged (the op takes exp",
    ),
    "no sigmoid on a class layer": (
        _edit_alls("change_output_activation(conv68, sigmoid)\n", ""),
        ["sigmoid"],
        "activation of cls_layer conv68 (bbox_decoders[1]): found none changed (logits reach the NMS op",
    ),
    "no sigmoid on an objectness layer": (
        _edit_alls("change_output_activation(conv83, sigmoid)\n", ""),
        ["sigmoid"],
        "activation of objectness_layer conv83 (bbox_decoders[2]): found none changed",
    ),
    "the YOLOv8 meta_arch": (
        _edit_alls("meta_arch=yolox", "meta_arch=yolov8"),
        ["nms_postprocess"],
        "nms_postprocess meta_arch: found yolov8, expected yolox",
    ),
    "a bbox-only op": (
        _edit_alls("engine=cpu)", "engine=cpu, bbox_decoding_only=True)"),
        ["nms_postprocess"],
        "nms_postprocess bbox_decoding_only: found True, expected absent: HailoRT has no bbox-only op of meta_arch",
    ),
    "wrong classes": (_edit_nms(lambda c: c.update(classes=79)), ["classes"], "NMS config classes: found 79"),
    "two detection heads": (
        _edit_nms(lambda c: c.update(number_of_detection_heads=2)),
        ["number_of_detection_heads"],
        "NMS config number_of_detection_heads: found 2, expected 3",
    ),
    "wrong image dims": (
        _edit_nms(lambda c: c.update(image_dims=[640, 640])),
        ["image_dims"],
        "found [640, 640], expected [416, 416]",
    ),
    "a decoder left out": (
        _x_decoders(lambda d: d.pop(2)),
        ["decoder_strides"],
        "bbox_decoders strides: found [8, 16], expected each stride of",
    ),
    "a layer the graph does not have": (
        _x_decoders(lambda d: d[1].update(objectness_layer="conv99")),
        ["layer_names", "sigmoid"],
        "bbox_decoders[1].objectness_layer: found 'conv99'",
    ),
    "a YOLOv8 decoder": (
        _x_decoders(lambda d: d[0].pop("objectness_layer")),
        ["nms_keys"],
        "(missing ['objectness_layer'])",
    ),
    "the YOLOv8 regression_length": (
        _edit_nms(lambda c: c.update(regression_length=16)),
        ["nms_keys"],
        "(unknown ['regression_length'])",
    ),
    "a threshold as a string": (
        _edit_nms(lambda c: c.update(nms_iou_th="0.45")),
        ["nms_keys"],
        'NMS config nms_iou_th: found "0.45", expected a number from 0 to 1',
    ),
    "no normalization": (
        _edit_alls("normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n", ""),
        ["normalization"],
        "found no normalization command",
    ),
}


@pytest.mark.parametrize("mistake", list(YOLOX_MISTAKES))
def test_each_yolox_script_mistake_fails_its_check_naming_field_found_expected_and_fix(
    yolox_tiny: ExportFacts, mistake: str
) -> None:
    edit, checks, detail = YOLOX_MISTAKES[mistake]
    alls, nms, table = _x_scripts(yolox_tiny)
    results = yolox_dfc.check_scripts(*edit(alls, nms), ScriptRequest(yolox_tiny, {}, table))
    failed = failures(results)
    assert [r.name for r in failed] == checks, [r.message for r in failed]
    assert detail in failed[0].message, failed[0].message
    assert all(re.fullmatch(r".+: found .+, expected .+\. Fix: .+", r.message, re.DOTALL) for r in failed)
    if checks == ["nms_keys"]:
        every = [
            r.name for r in yolox_dfc.check_scripts(*_x_scripts(yolox_tiny)[:2], ScriptRequest(yolox_tiny, {}, table))
        ]
        assert [r.name for r in results if r.passed is None] == every[1:-2]


# ---------------------------------------------------------------------------------------------- bbox-only op


def test_bbox_decoding_only_asks_the_model_script_for_the_bbox_only_op_with_the_nms_ops_own_config(
    demo: ExportFacts, autoanchored: ExportFacts, tmp_path: Path
) -> None:
    """As the Model Zoo's yolov5s_bbox_decoding_only.alls: an argument of nms_postprocess; the NMS config
    keeps its keys (yolov8s_bbox_decoding_only_nms_config.json). Both families' scripts validate and say
    that the host must run the NMS."""
    settings = NmsSettings(bbox_decoding_only=True)
    for facts, part, meta_arch in ((demo, yolov8_dfc, "yolov8"), (autoanchored, yolov5_dfc, "yolov5")):
        names = placeholder_names(facts)
        plain = _write(part, tmp_path / f"{meta_arch}-nms", "m", facts, names, NmsSettings())
        files = _write(part, tmp_path / meta_arch, "m", facts, names, settings)
        assert files.nms_json.read_text() == plain.nms_json.read_text()
        command = f'nms_postprocess("m_nms_config.json", meta_arch={meta_arch}, engine=cpu, bbox_decoding_only=True)'
        assert command in files.alls.read_text().splitlines()
        assert "bbox_decoding_only" not in plain.alls.read_text()
        table = table_from_names(facts, names, "placeholder")
        results = {r.name: r for r in validate_files(files.alls, files.nms_json, facts, table)}
        assert all(r.passed is not False for r in results.values()), failures(results.values())
        assert "the host must run the NMS" in results["nms_postprocess"].message
        said = {r.name: r for r in validate_files(plain.alls, plain.nms_json, facts, table)}
        assert "the host must run the NMS" not in said["nms_postprocess"].message


# ---------------------------------------------------------------------------------------------- SSD


@pytest.fixture(scope="module")
def ssd_facts(tmp_path_factory: pytest.TempPathFactory) -> ExportFacts:
    """The small SSD export (64x64, layers of 3 and 2 anchors, 2 classes and the background first) and its config."""
    from support.ssd_exports import ssd_config, ssd_export

    path = tmp_path_factory.mktemp("ssd") / "ssd.onnx"
    onnx.save(ssd_export(side=64, nc=3, seed=3), path)
    return onnx_facts(path, ssd=ssd_config())


SSD_LAYERS = (13, 14, 17, 18)  # reg and cls conv of each layer, largest grid first, as the Model Zoo numbers them


def _ssd_scripts(facts: ExportFacts) -> tuple[str, str, LayerTable]:
    table = parsed_layers(_hn(facts, SSD_LAYERS))
    names = names_from_parsed(facts, table)
    return (
        ssd_dfc.render_alls(ScriptRequest(facts, names, table), "model_nms_config.json"),
        render_nms_json(ssd_dfc.nms_config(facts, names, NmsSettings())),
        table,
    )


def test_an_ssd_export_is_cut_at_its_head_convs_and_its_nms_config_holds_the_ssd_configs_anchors(
    ssd_facts: ExportFacts,
) -> None:
    from support.ssd_exports import ANCHORS

    assert ssd_facts.family is HeadFamily.SSD
    assert [(h.role, h.channels, h.grid) for h in end_nodes_of(ssd_facts)] == [
        (HeadRole.ANCHOR_BOXES, 12, (16, 16)),
        (HeadRole.ANCHOR_CLASSES, 9, (16, 16)),
        (HeadRole.ANCHOR_BOXES, 8, (8, 8)),
        (HeadRole.ANCHOR_CLASSES, 6, (8, 8)),
    ]
    alls, nms, table = _ssd_scripts(ssd_facts)
    config = json.loads(nms)
    assert list(config) == [k.name for k in ssd_dfc.NMS_KEYS]
    assert {k: config[k] for k in ("centers_scale_factor", "bbox_dimensions_scale_factor", "classes")} == {
        "centers_scale_factor": 10,
        "bbox_dimensions_scale_factor": 5,
        "classes": 3,
    }
    assert (config["background_removal"], config["background_removal_index"]) == (True, 0)
    assert [(d["name"], d["reg_layer"], d["cls_layer"]) for d in config["bbox_decoders"]] == [
        ("bbox_decoder13", "conv13", "conv14"),
        ("bbox_decoder17", "conv17", "conv18"),
    ]
    assert [list(zip(d["w"], d["h"], strict=True)) for d in config["bbox_decoders"]] == [list(a) for a in ANCHORS]
    assert alls.splitlines() == [
        "normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])",
        "change_output_activation(conv14, sigmoid)",
        "change_output_activation(conv18, sigmoid)",
        'nms_postprocess("model_nms_config.json", meta_arch=ssd, engine=cpu)',
    ]
    results = ssd_dfc.check_scripts(alls, nms, ScriptRequest(ssd_facts, {}, table))
    assert [r.name for r in results] == [
        "nms_keys",
        "image_dims",
        "classes",
        "background",
        "box_coding",
        "anchors",
        "layer_names",
        "decoder_layers",
        "sigmoid",
        "normalization",
        "nms_postprocess",
    ]
    assert all(r.passed for r in results), [r.message for r in results if not r.passed]


def test_an_ssd_export_needs_its_config_and_a_config_of_another_channel_order_is_refused(
    ssd_facts: ExportFacts, tmp_path: Path
) -> None:
    import dataclasses

    from support.ssd_exports import ssd_export

    path = tmp_path / "ssd.onnx"
    onnx.save(ssd_export(side=64, nc=3, seed=3), path)
    with pytest.raises(HarnessError, match=r"--ssd-config"):
        onnx_facts(path)
    other = dataclasses.replace(ssd_facts, ssd=dataclasses.replace(ssd_facts.ssd, ty_index=1, tx_index=0))
    with pytest.raises(DfcScriptError, match=r"ty, tx, th, tw at \[1, 0, 2, 3\]; the Model Zoo's SSD NMS config"):
        ssd_dfc.nms_config(other, placeholder_names(other), NmsSettings())
    names = placeholder_names(ssd_facts)
    table = table_from_names(ssd_facts, names, "placeholder")
    only = NmsSettings(bbox_decoding_only=True)
    with pytest.raises(DfcScriptError, match=r"bbox_decoding_only asked for the SSD head .*meta_arch ssd \(hailort: "):
        write_checked_scripts(tmp_path / "x", "x", ssd_facts, names, table, only, 0)


def _ssd_decoders(edit: Callable[[list[dict[str, Any]]], None]) -> Callable[[str, str], tuple[str, str]]:
    return _edit_nms(lambda config: edit(config["bbox_decoders"]))


# mistake -> (edit, the checks that fail, in order, and what the first one's message says); layers conv13..18
SSD_MISTAKES: dict[str, tuple[Callable[[str, str], tuple[str, str]], list[str], str]] = {
    "anchors (h, w)": (
        _ssd_decoders(lambda d: d[0].update(w=d[0]["h"], h=d[0]["w"])),
        ["anchors"],
        "bbox_decoders[0] (grid 16x16) anchors (w, h): found [(0.2, 0.2), (0.14, 0.28), (0.28, 0.14)] (w and h",
    ),
    "the layers' anchors swapped": (
        _ssd_decoders(
            lambda d: (d[0].update(w=d[1]["w"], h=d[1]["h"]), d[1].update(w=[0.2, 0.28, 0.14], h=[0.2, 0.14, 0.28]))
        ),
        ["anchors"],
        "bbox_decoders[0] (grid 16x16) anchors (w, h): found [(0.45, 0.45), (0.6, 0.32)]",
    ),
    "TF's scale factors left out": (
        _edit_nms(lambda c: c.update(centers_scale_factor=1, bbox_dimensions_scale_factor=1)),
        ["box_coding"],
        "NMS config centers_scale_factor: found 1, expected 10",
    ),
    "the background kept": (
        _edit_nms(lambda c: c.update(background_removal=False)),
        ["background"],
        "NMS config background_removal: found false, expected true",
    ),
    "classes without the background": (_edit_nms(lambda c: c.update(classes=2)), ["classes"], "found 2, expected 3"),
    "regression and class layers swapped": (
        _ssd_decoders(lambda d: d[0].update(reg_layer="conv14", cls_layer="conv13")),
        ["decoder_layers", "sigmoid"],
        "bbox_decoders[0].reg_layer conv14: found grid 16x16, 9 channels",
    ),
    "class layers of two layers swapped": (
        _ssd_decoders(lambda d: (d[0].update(cls_layer="conv18"), d[1].update(cls_layer="conv14"))),
        ["decoder_layers"],
        "bbox_decoders[0].cls_layer conv18: found grid 8x8, 6 channels, expected the class conv of the reg_layer's",
    ),
    "no sigmoid on a class layer": (
        _edit_alls("change_output_activation(conv18, sigmoid)\n", ""),
        ["sigmoid"],
        "activation of cls_layer conv18 (bbox_decoders[1]): found none changed",
    ),
    "the sigmoid on every output": (
        lambda alls, nms: (
            re.sub(r"change_output_activation\(conv\d+, sigmoid\)\n", "", alls).replace(
                "nms_postprocess", "change_output_activation(sigmoid)\nnms_postprocess"
            ),
            nms,
        ),
        ["sigmoid"],
        "activation of reg_layer conv13 (bbox_decoders[0]): found sigmoid",
    ),
    "the YOLOv8 meta_arch": (
        _edit_alls("meta_arch=ssd", "meta_arch=yolov8"),
        ["nms_postprocess"],
        "nms_postprocess meta_arch: found yolov8, expected ssd",
    ),
    "a decoder left out": (_ssd_decoders(lambda d: d.pop(1)), ["anchors"], "found 1 decoders, expected 2"),
    "an anchor height of 0": (
        _ssd_decoders(lambda d: d[1].update(h=[0.45, 0])),
        ["nms_keys"],
        "bbox_decoders[1].h: found [0.45, 0], expected a list of positive numbers",
    ),
    "a YOLOv8 decoder": (
        _ssd_decoders(lambda d: d[0].update(stride=8)),
        ["nms_keys"],
        "(unknown ['stride'])",
    ),
}


@pytest.mark.parametrize("mistake", list(SSD_MISTAKES))
def test_each_ssd_script_mistake_fails_its_check_naming_field_found_expected_and_fix(
    ssd_facts: ExportFacts, mistake: str
) -> None:
    edit, checks, detail = SSD_MISTAKES[mistake]
    alls, nms, table = _ssd_scripts(ssd_facts)
    results = ssd_dfc.check_scripts(*edit(alls, nms), ScriptRequest(ssd_facts, {}, table))
    failed = failures(results)
    assert [r.name for r in failed] == checks, [r.message for r in failed]
    assert detail in failed[0].message, failed[0].message
    assert all(re.fullmatch(r".+: found .+, expected .+\. Fix: .+", r.message, re.DOTALL) for r in failed)


# ---------------------------------------------------------------------------------------------- the parts


def test_every_registered_family_has_a_dfc_part_the_dispatch_can_ask() -> None:
    """The dispatch asks each family through the registry: every part has the same names, one head is the
    default of those --head chooses between, and a head with an NMS op writes its NMS config."""
    functions = ("end_nodes", "write_scripts", "render_alls", "check_scripts")
    for family in REGISTERED:
        part = dfc_part(family.family)
        assert isinstance(part.HEAD, DfcHead) and part.HEAD.words and part.HEAD.export, family.family
        assert all(callable(getattr(part, name)) for name in functions), family.family
        assert bool(part.HEAD.fix) == bool(part.HEAD.option), family.family
    choices = head_options()
    assert sorted(choices) == ["one2many", "one2one"]
    assert [d.family for d in REGISTERED if dfc_part(d.family).HEAD.default] == [choices["one2one"]]
