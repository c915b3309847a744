"""The DFC model script and NMS config: written as the Model Zoo writes them, and every mismatch caught."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.dfc.scripts import (
    NMS_KEYS,
    DfcScriptError,
    LayerTable,
    NmsSettings,
    OnnxFacts,
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
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.onnx_graph import HeadTensor, load_model

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


def _hn(facts: OnnxFacts, numbers: tuple[int, ...], net: str = "net") -> dict[str, Any]:
    """An HN as the DFC's translation has it: scoped names, NHWC output shapes, ONNX nodes in original_names."""
    layers: dict[str, Any] = {
        f"{net}/input_layer1": {"type": "input_layer", "output": [], "output_shapes": [[-1, 8, 8, 3]]}
    }
    for i, (head, number) in enumerate(zip(facts.heads, numbers, strict=True)):
        out = f"{net}/output_layer{i + 1}"
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
def demo() -> OnnxFacts:
    return onnx_facts(load_model(DEMO), str(DEMO))


@pytest.fixture(scope="module")
def yolov8n(shared_fixtures: Path) -> OnnxFacts:
    path = shared_fixtures / "onnx" / "yolov8n_coco80_640_int8.onnx"
    return onnx_facts(load_model(path), str(path))


@pytest.fixture(scope="module")
def yolo11n(shared_fixtures: Path) -> OnnxFacts:
    path = shared_fixtures / "onnx" / "yolo11n_coco80_320_int8.onnx"
    return onnx_facts(load_model(path), str(path))


def _scripts(facts: OnnxFacts, numbers: tuple[int, ...]) -> tuple[str, str, LayerTable]:
    table = parsed_layers(_hn(facts, numbers))
    names = names_from_parsed(facts, table)
    return (
        render_alls(facts, names, "model_nms_config.json"),
        render_nms_json(nms_config(facts, names, NmsSettings())),
        table,
    )


def test_yolov8n_scripts_are_the_model_zoos(yolov8n: OnnxFacts) -> None:
    alls, nms, table = _scripts(yolov8n, YOLOV8N_LAYERS)
    zoo_alls = ZOO_YOLOV8N_ALLS.replace("../../postprocess_config/yolov8n_nms_config.json", "model_nms_config.json")
    assert alls == zoo_alls
    assert json.loads(nms) == {**_unscope(ZOO_YOLOV8N_NMS), "background_removal_index": 0}
    assert list(json.loads(nms)) == list(NMS_KEYS)
    assert all(r.passed for r in validate_scripts(alls, nms, yolov8n, table))


def test_yolo11n_320_scripts_take_its_grids_and_input(yolo11n: OnnxFacts) -> None:
    alls, nms, table = _scripts(yolo11n, YOLO11N_LAYERS)
    config = json.loads(nms)
    assert config["image_dims"] == [320, 320]
    assert config["classes"] == 80 and config["regression_length"] == 16
    assert config["bbox_decoders"] == ZOO_YOLO11N_DECODERS
    assert [table.get(d["reg_layer"]).grid for d in config["bbox_decoders"]] == [(40, 40), (20, 20), (10, 10)]
    assert parse_alls(alls).activations == {"conv54": "sigmoid", "conv65": "sigmoid", "conv80": "sigmoid"}
    assert all(r.passed for r in validate_scripts(alls, nms, yolo11n, table))


def test_demo_scripts_with_placeholders_validate_all_but_the_names(demo: OnnxFacts, tmp_path: Path) -> None:
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
def test_each_mistake_fails_its_check_naming_field_found_expected_and_fix(yolov8n: OnnxFacts, mistake: str) -> None:
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


def test_a_model_script_naming_another_json_fails(demo: OnnxFacts, tmp_path: Path) -> None:
    names = placeholder_names(demo)
    files = write_scripts(tmp_path, "demo", demo, names, NmsSettings())
    files.alls.write_text(files.alls.read_text().replace("demo_nms_config.json", "other.json"))
    results = {
        r.name: r
        for r in validate_files(files.alls, files.nms_json, demo, table_from_names(demo, names, "placeholder"))
    }
    assert results["nms_reference"].passed is False and "other.json" in results["nms_reference"].message


def test_parsed_names_come_from_original_names_else_from_the_output_shape(yolov8n: OnnxFacts) -> None:
    hn = _hn(yolov8n, YOLOV8N_LAYERS)
    assert list(names_from_parsed(yolov8n, parsed_layers(hn)).values()) == [f"conv{n}" for n in YOLOV8N_LAYERS]
    for layer in hn["layers"].values():
        layer["original_names"] = ["renamed by the parser"]
    assert list(names_from_parsed(yolov8n, parsed_layers(hn)).values()) == [f"conv{n}" for n in YOLOV8N_LAYERS]


def test_a_head_matching_no_or_two_parsed_layers_is_an_error(yolov8n: OnnxFacts) -> None:
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


def test_a_layer_map_must_name_every_head_and_only_heads(demo: OnnxFacts) -> None:
    full = {h.tensor: f"conv{i}" for i, h in enumerate(demo.heads)}
    assert names_from_map(demo, full) == {h.node: f"conv{i}" for i, h in enumerate(demo.heads)}
    with pytest.raises(DfcScriptError, match="not head nodes"):
        names_from_map(demo, {**full, "/model.0/conv/Conv": "conv1"})
    with pytest.raises(DfcScriptError, match="no parsed layer name for end nodes"):
        names_from_map(demo, dict(list(full.items())[:5]))


def test_end_nodes_that_do_not_pair_up_are_refused(demo: OnnxFacts) -> None:
    with pytest.raises(DfcScriptError, match="expected one box and one class map per grid"):
        onnx_facts(load_model(DEMO), str(DEMO), [h.node for h in demo.heads[:4]] + [demo.heads[5].node])


@st.composite
def _layouts(draw: st.DrawFn) -> tuple[OnnxFacts, dict[str, str]]:
    nc, reg_max = draw(st.integers(1, 100)), draw(st.sampled_from([8, 16]))
    rows, cols = draw(st.integers(1, 20)), draw(st.integers(1, 20))
    numbers = draw(st.lists(st.integers(1, 300), min_size=6, max_size=6, unique=True))
    heads = []
    for stride in (8, 16, 32):
        grid = (rows * 32 // stride, cols * 32 // stride)
        for role, channels in (("box", 4 * reg_max), ("class", nc)):
            node = f"/head/{role}{stride}/Conv"
            heads.append(HeadTensor(f"{node}_output_0", node, role, channels, grid))  # type: ignore[arg-type]
    facts = OnnxFacts("synthetic.onnx", "images", (rows * 32, cols * 32), tuple(heads))
    return facts, {h.node: f"conv{n}" for h, n in zip(heads, numbers, strict=True)}


@given(_layouts())
def test_generated_scripts_pass_every_check_for_any_head_layout(layout: tuple[OnnxFacts, dict[str, str]]) -> None:
    facts, names = layout
    alls = render_alls(facts, names, "nms.json")
    nms = render_nms_json(nms_config(facts, names, NmsSettings(0.25, 0.45, 300)))
    results = validate_scripts(alls, nms, facts, table_from_names(facts, names, "layer map"))
    assert [r for r in results if r.passed is not True] == []
