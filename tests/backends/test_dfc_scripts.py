"""The DFC model script and NMS config: written as the Model Zoo writes them, and every mismatch caught."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.dfc.scripts import (
    NMS_KEYS,
    DfcScriptError,
    LayerTable,
    NmsSettings,
    end_nodes_of,
    failures,
    names_from_map,
    names_from_parsed,
    nms_config,
    onnx_facts,
    parse_alls,
    parsed_layers,
    placeholder_names,
    render_alls,
    render_nms_json,
    table_from_names,
    validate_files,
    validate_scripts,
    write_scripts,
)
from harness.backends.dfc.yolo26_script import head_outputs, render_yolo26_alls, validate_yolo26_script
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.inputs.demo import DEMO26_ONNX as DEMO26
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.export_facts import ExportFacts
from harness.inputs.onnx_graph import load_model

from support.yolo26_exports import both_heads_export, one_to_many_export

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
        render_alls(facts, names, "model_nms_config.json"),
        render_nms_json(nms_config(facts, names, NmsSettings())),
        table,
    )


def test_yolov8n_scripts_are_the_model_zoos(yolov8n: ExportFacts) -> None:
    alls, nms, table = _scripts(yolov8n, YOLOV8N_LAYERS)
    zoo_alls = ZOO_YOLOV8N_ALLS.replace("../../postprocess_config/yolov8n_nms_config.json", "model_nms_config.json")
    assert alls == zoo_alls
    assert json.loads(nms) == {**_unscope(ZOO_YOLOV8N_NMS), "background_removal_index": 0}
    assert list(json.loads(nms)) == list(NMS_KEYS)
    assert all(r.passed for r in validate_scripts(alls, nms, yolov8n, table))


def test_yolo11n_320_scripts_take_its_grids_and_input(yolo11n: ExportFacts) -> None:
    alls, nms, table = _scripts(yolo11n, YOLO11N_LAYERS)
    config = json.loads(nms)
    assert config["image_dims"] == [320, 320]
    assert config["classes"] == 80 and config["regression_length"] == 16
    assert config["bbox_decoders"] == ZOO_YOLO11N_DECODERS
    assert [table.get(d["reg_layer"]).grid for d in config["bbox_decoders"]] == [(40, 40), (20, 20), (10, 10)]
    assert parse_alls(alls).activations == {"conv54": "sigmoid", "conv65": "sigmoid", "conv80": "sigmoid"}
    assert all(r.passed for r in validate_scripts(alls, nms, yolo11n, table))


def test_demo_scripts_with_placeholders_validate_all_but_the_names(demo: ExportFacts, tmp_path: Path) -> None:
    names = placeholder_names(demo)
    files = write_scripts(tmp_path, "demo", demo, names, NmsSettings())
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
    results = {r.name: r for r in validate_scripts(*edit(alls, nms), yolov8n, table)}
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
    files = write_scripts(tmp_path, "demo", demo, names, NmsSettings())
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
    results = {r.name: r for r in validate_scripts(alls, edited, yolov8n, table)}
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
    alls = render_alls(facts, names, "nms.json")
    nms = render_nms_json(nms_config(facts, names, NmsSettings(0.25, 0.45, 300)))
    results = validate_scripts(alls, nms, facts, table_from_names(facts, names, "layer map"))
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
    return render_yolo26_alls(head_outputs(facts, names, table), CALIBRATION), names, table


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
    results = validate_yolo26_script(alls, demo26, names, table, CALIBRATION)
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
    assert all(r.passed for r in validate_yolo26_script(alls, facts, names, table, CALIBRATION))


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
    results = {r.name: r for r in validate_yolo26_script(edit(alls), demo26, names, table, CALIBRATION)}
    assert results[check].passed is False
    assert detail in results[check].message
    assert re.fullmatch(r".+: found .+, expected .+\. Fix: .+", results[check].message, re.DOTALL)
    assert [r.name for r in failures(list(results.values()))] == [check]


def test_yolo26_head_layers_are_held_to_the_parsed_graph_and_placeholders_skip(demo26: ExportFacts) -> None:
    hn = _hn(demo26, YOLO26_LAYERS)
    hn["layers"]["net/conv230"]["output_shapes"] = [[-1, 32, 32, 2]]  # the box conv of stride 8 as a class map
    table = parsed_layers(hn)
    names = names_from_parsed(demo26, table)  # by original names
    results = {r.name: r for r in validate_yolo26_script(ULTRALYTICS_YOLO26_ALLS, demo26, names, table, CALIBRATION)}
    assert results["layer_names"].passed is False
    assert (
        "found grid (32, 32), 2 channels, expected a layer of grid (32, 32), 4 channels"
        in results["layer_names"].message
    )

    names = placeholder_names(demo26)
    table = table_from_names(demo26, names, "placeholder")
    assert head_outputs(demo26, names, table) == tuple(f"output_layer{i}" for i in range(1, 7))
    results = {r.name: r for r in validate_yolo26_script(ULTRALYTICS_YOLO26_ALLS, demo26, names, table, CALIBRATION)}
    assert results["layer_names"].passed is None and "placeholders" in results["layer_names"].message
    assert not failures(list(results.values()))


def test_a_head_layer_feeding_no_output_layer_is_refused(demo26: ExportFacts) -> None:
    hn = _hn(demo26, YOLO26_LAYERS)
    hn["layers"]["net/conv262"]["output"] = []
    table = parsed_layers(hn)
    names = names_from_parsed(demo26, table)
    with pytest.raises(DfcScriptError, match=r"-> layer 'conv262': feeds output layers \[\], expected a layer feeding"):
        head_outputs(demo26, names, table)


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
    assert all(r.passed for r in validate_yolo26_script(alls, facts, names, table, CALIBRATION))


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
    with pytest.raises(
        DfcScriptError,
        match=r"cannot be compiled: .*last convolutions .*it has 2 outputs .*'output0', \[1, 300, 6\].*'output1', "
        r"\[1, 6, 1344\].*, expected one head output: an export of both YOLO26 heads cannot be compiled as one",
    ):
        onnx_facts(both)


def test_an_end_to_end_export_whose_head_convolutions_are_not_found_is_refused(tmp_path: Path) -> None:
    from onnxruntime.quantization import quantize_dynamic

    quantized = tmp_path / "yolo26n_int8.onnx"
    quantize_dynamic(DEMO26, quantized)  # every Conv becomes a ConvInteger
    with pytest.raises(
        DfcScriptError,
        match=r"yolo26n_int8.onnx: cannot be compiled: found neither a YOLOv8/YOLO11 head .* nor a YOLO26 head "
        r"\('main_graph': last convolutions \[\], expected the six head convolutions.*Fix: give a float",
    ):
        onnx_facts(quantized)


def test_yolo26_end_nodes_must_be_its_six_head_convolutions(demo26: ExportFacts) -> None:
    given_nodes = [h.tensor for h in reversed(demo26.heads)]  # tensors, in any order
    assert onnx_facts(DEMO26, given_nodes) == demo26
    with pytest.raises(DfcScriptError, match=r"a YOLO26 export is cut at its head convolutions, found by structure"):
        onnx_facts(DEMO26, ULTRALYTICS_END_NODES[:5])
