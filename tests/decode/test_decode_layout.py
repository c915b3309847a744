"""The head layout: outputs of known roles laid out by stride, the same layout as specs paired by grid
and channels, and refusals naming the grid and outputs."""

from __future__ import annotations

import pytest

from harness.core.errors import HeadPairingError, SpecError
from harness.core.head_family import HeadRole
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.decode.layout import HeadOutput, layout_of, pair_by_grid

BOX, CLASS, OBJECTNESS = HeadRole.BOX, HeadRole.CLASS, HeadRole.OBJECTNESS


def _spec(name: str, stride: int, channels: int) -> OutputSpec:
    return OutputSpec(name, (640 // stride, 640 // stride, channels), FormatOrder.NHWC, FormatType.FLOAT32)


def _outputs(*extra: HeadOutput) -> list[HeadOutput]:
    """Class before box and the smallest grid first: the layout orders them, not the listing."""
    found = [
        HeadOutput(f"{kind}{s}", role, (640 // s, 640 // s), channels)
        for s in (32, 16, 8)
        for kind, role, channels in (("c", CLASS, 80), ("b", BOX, 64))
    ]
    return [*found, *extra]


def test_outputs_of_known_roles_are_laid_out_stride_ascending_box_first():
    layout = layout_of(_outputs(), (640, 640))
    assert [level.stride for level in layout.levels] == [8, 16, 32]
    assert [o.name for o in layout.outputs] == ["b8", "c8", "b16", "c16", "b32", "c32"]
    assert [o.name for o in layout.of_role(CLASS)] == ["c8", "c16", "c32"]
    assert (layout.reg_max, layout.classes, layout.cells) == (16, 80, 80 * 80 + 40 * 40 + 20 * 20)


def test_paired_specs_give_the_layout_of_their_roles_with_their_specs():
    specs = {s.name: s for s in (_spec(f"{k}{s}", s, 80 if k == "c" else 64) for s in (8, 16, 32) for k in "cb")}
    paired = pair_by_grid(specs, (640, 640))
    assert [(o.name, o.role) for o in paired.outputs] == [
        (o.name, o.role) for o in layout_of(_outputs(), (640, 640)).outputs
    ]
    assert all(o.host_spec is specs[o.name] for o in paired.outputs)


def test_an_objectness_output_has_its_place_in_its_stride():
    layout = layout_of(_outputs(HeadOutput("o8", OBJECTNESS, (80, 80), 1)), (640, 640))
    assert layout.levels[0].objectness is not None and layout.levels[1].objectness is None
    assert [o.name for o in layout.outputs[:3]] == ["b8", "c8", "o8"]


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        (
            _outputs(HeadOutput("b8bis", BOX, (80, 80), 64)),
            r"grid 80x80: outputs .*'b8bis' \(box\).*one box and one class map per grid",
        ),
        (_outputs()[1:], r"grid 20x20: outputs 'b32' \(box\); expected one box and one class map per grid"),
        (
            _outputs(HeadOutput("b7", BOX, (7, 7), 64), HeadOutput("c7", CLASS, (7, 7), 80)),
            r"grid 7x7 .*one integral stride",
        ),
        (
            [*(o for o in _outputs() if o.name != "c8"), HeadOutput("c8", CLASS, (80, 80), 81)],
            r"class heads \(nc\) have different channel counts",
        ),
        ([], r"no outputs given"),
    ],
    ids=["two boxes on a grid", "no class output", "no integral stride", "nc differs", "nothing"],
)
def test_a_layout_that_does_not_hold_is_refused_naming_the_grid_and_outputs(outputs, expected):
    with pytest.raises(HeadPairingError, match=expected):
        layout_of(outputs, (640, 640))


def test_an_output_of_a_graph_has_no_host_spec_to_hand_out():
    with pytest.raises(SpecError, match=r"output 'b8': field 'spec' is None; expected the output's host spec"):
        _ = layout_of(_outputs(), (640, 640)).levels[0].box.host_spec


def test_an_ssd_exports_head_tensors_give_the_layout_the_ssd_decoder_reads_from_their_specs() -> None:
    from harness.decode.layout import layout_of_tensors
    from harness.families.ssd import decode as ssd
    from harness.inputs.onnx_graph import export_heads

    from support.ssd_exports import ANCHORS, ssd_config, ssd_export

    heads = export_heads(ssd_export(side=96), ssd=ssd_config()).heads
    specs = {h.tensor: OutputSpec(h.tensor, (*h.grid, h.channels), FormatOrder.NHWC, FormatType.FLOAT32) for h in heads}
    of_tensors, of_specs = layout_of_tensors(heads, (96, 96)), ssd.layout(specs, (96, 96), ANCHORS)
    assert [(v.stride, v.grid, v.box.name, v.classes.name, v.anchors) for v in of_tensors.levels] == [
        (v.stride, v.grid, v.box.name, v.classes.name, v.anchors) for v in of_specs.levels
    ]
    assert of_tensors.classes == 3 and [v.anchors for v in of_tensors.levels] == list(ANCHORS)
    box, cls = of_tensors.levels[0].box, of_tensors.levels[1].classes
    with pytest.raises(
        HeadPairingError, match=r"grid 24x24: outputs .*expected an SSD layer's regression map and class"
    ):
        layout_of([box, HeadOutput("other", HeadRole.ANCHOR_BOXES, box.grid, box.channels)], (96, 96), {})
    assert cls.role is HeadRole.ANCHOR_CLASSES
