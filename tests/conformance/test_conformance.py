"""The conformance suite passes the harness' decoder and names each wrong decoder's mistake."""

import numpy as np
import pytest

from harness.conformance import suite as conformance
from harness.conformance.suite import SceneRecipe, check_property, make_scene, properties, run_conformance
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily
from harness.core.specs import FormatType
from harness.decode.yolo import decode
from harness.decode.yolo26 import decode_one2many, decode_one2one

from support import wrong_decoders

PROPERTIES = properties()


def test_the_harness_decoder_satisfies_every_property():
    assert run_conformance(decode) == {p.sentence: None for p in PROPERTIES}


@pytest.mark.parametrize(
    ("decoder", "sentence", "words"),
    [
        (wrong_decoders.xy_swapped, "finds every planted object", conformance.XY_SWAPPED),
        (wrong_decoders.no_sigmoid, "applies the sigmoid to logit class outputs", conformance.SIGMOID_MISSING),
        (wrong_decoders.sigmoid_twice, "finds every planted object", conformance.SIGMOID_TWICE),
        (wrong_decoders.no_half_cell, "finds every planted object", conformance.HALF_CELL),
        (wrong_decoders.fcr_channel_first, "reads FCR heads channel-last", conformance.FCR_CHANNEL_FIRST),
        (wrong_decoders.paired_by_order, "pairs heads by grid", conformance.PAIRED_ACROSS_GRIDS),
        (
            wrong_decoders.dfl_interleaved,
            "finds every planted object",
            f"the box heads of all 3 strides {conformance.DFL_INTERLEAVED}",
        ),
        (
            wrong_decoders.every_head_channel_first,
            "finds every planted object",
            f"every head {conformance.CHANNEL_FIRST}",
        ),
        (
            wrong_decoders.box_heads_channel_first,
            "finds every planted object",
            f"the box heads of all 3 strides {conformance.CHANNEL_FIRST}",
        ),
        (
            wrong_decoders.coarsest_class_head_channel_first,
            "finds every planted object",
            f"the class head of stride 32 (cls2) {conformance.CHANNEL_FIRST}",
        ),
    ],
)
def test_each_wrong_decoder_fails_with_its_mistake_named(decoder, sentence, words):
    prop = next(p for p in PROPERTIES if p.sentence.startswith(sentence))
    failure = check_property(decoder, prop)
    assert failure is not None and words in failure


def test_an_fcr_misreading_is_named_on_the_fcr_heads_it_was_made_on():
    prop = next(p for p in PROPERTIES if p.sentence.startswith("reads FCR heads channel-last"))
    failure = check_property(wrong_decoders.fcr_channel_first, prop)
    assert failure is not None and f"the FCR heads (box0, box1, box2, cls2) {conformance.CHANNEL_FIRST}" in failure


def test_16_bit_outputs_read_as_8_bit_fail_only_the_uint16_property_and_are_named():
    results = run_conformance(wrong_decoders.sixteen_bit_read_as_eight)
    failing = {k: v for k, v in results.items() if v}
    assert list(failing) == ["reads UINT16 outputs (16-bit output layers) through their quant info"]
    assert f"every head {conformance.SIXTEEN_AS_EIGHT}" in next(iter(failing.values()))


def test_a_mistake_no_misreading_reproduces_is_said_to_be_none_of_them():
    failure = check_property(wrong_decoders.drops_the_weakest, PROPERTIES[0])
    assert failure is not None and failure.endswith(conformance.NOT_REPRODUCED)
    assert "expected 4 planted detections, got 3" in failure


def test_wrong_decoders_pass_the_properties_their_mistake_does_not_touch():
    # FCR misreading only shows on FCR-labelled heads; list-order pairing only on shuffled outputs.
    results = run_conformance(wrong_decoders.fcr_channel_first)
    assert [k for k, v in results.items() if v] == ["reads FCR heads channel-last, like NHWC"]
    results = run_conformance(wrong_decoders.paired_by_order)
    assert [k for k, v in results.items() if v] == [
        "pairs heads by grid and channels, whatever the outputs' order or names"
    ]


def test_a_decoder_that_raises_is_reported_with_its_type_message_and_the_line_that_raised():
    def broken(outputs, specs, config):
        raise KeyError("cv2.0")

    assert "raised KeyError: 'cv2.0' at " in check_property(broken, PROPERTIES[0])
    failure = check_property(wrong_decoders.raises_without_a_message, PROPERTIES[0])
    line = next(i for i, text in enumerate(open(wrong_decoders.__file__), 1) if "raise StopIteration" in text)
    assert failure.endswith(
        f"raised StopIteration: (no message) at {wrong_decoders.__file__}:{line} in raises_without_a_message"
    )


def test_a_decoder_returning_another_type_is_named():
    failure = check_property(lambda o, s, c: [], PROPERTIES[0])
    assert "returned list, expected harness.core.detections.Detections" in failure


@pytest.mark.parametrize("seed", range(5))
def test_planted_objects_are_the_only_cells_above_threshold(seed):
    scene = make_scene(SceneRecipe(logits=True), seed)
    above = sum(int((v > 0).sum()) for k, v in scene.outputs.items() if k.startswith("cls"))
    assert above <= len(scene.expected) == 4


def test_uint8_scene_carries_quant_info_and_uint8_arrays():
    scene = make_scene(SceneRecipe(format_type=FormatType.UINT8), 0)
    assert all(a.dtype == np.uint8 for a in scene.outputs.values())
    assert all(len(s.quant) == 1 for s in scene.specs.values())


def test_load_decoder_explains_what_is_wrong_with_the_target():
    with pytest.raises(HarnessError, match="has no function 'nope'"):
        conformance.load_decoder("harness.decode.yolo:nope")
    assert conformance.load_decoder("harness.decode.yolo:decode") is decode


@pytest.mark.parametrize("family", [HeadFamily.YOLO26_ONE2ONE, HeadFamily.YOLO26_ONE2MANY])
@pytest.mark.parametrize("decoder", [decode_one2one, decode_one2many])
def test_the_harness_yolo26_decoders_satisfy_every_property_of_either_yolo26_head(decoder, family):
    assert run_conformance(decoder, family=family) == {p.sentence: None for p in properties(family)}


def test_a_yolov8_decoder_given_yolo26_heads_fails_every_property_and_a_yolo26_decoder_yolov8_heads():
    assert all(run_conformance(decode, family=HeadFamily.YOLO26_ONE2ONE).values())
    assert all(run_conformance(decode_one2one).values())


def test_a_yolo26_decoder_pairing_outputs_by_position_is_named_as_paired_across_grids():
    results = run_conformance(wrong_decoders.yolo26_paired_by_position, family=HeadFamily.YOLO26_ONE2ONE)
    assert [k for k, v in results.items() if v] == [
        "pairs heads by grid and channels, whatever the outputs' order or names"
    ]
    assert (
        conformance.PAIRED_ACROSS_GRIDS
        in results["pairs heads by grid and channels, whatever the outputs' order or names"]
    )


def test_yolo26_scenes_plant_the_four_distances_themselves():
    scene = make_scene(SceneRecipe(reg_max=1), 0)
    assert {s.channels for s in scene.specs.values()} == {4, 2}
    assert len(scene.expected) == SceneRecipe().objects
