"""The conformance suite passes the harness' decoder and names each wrong decoder's mistake."""

from dataclasses import replace

import numpy as np
import pytest

from harness.conformance import decoder_misreadings as later
from harness.conformance import misreadings
from harness.conformance import suite as conformance
from harness.conformance.scenes import family_scenes
from harness.conformance.suite import SceneRecipe, check_property, make_scene, properties, run_conformance
from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily
from harness.core.specs import FormatType
from harness.families.ssd import scenes as ssd_scenes
from harness.families.ssd.decode import decode as ssd_decode
from harness.families.yolo26.one2many.decode import decode as decode_one2many
from harness.families.yolo26.one2one.decode import decode as decode_one2one
from harness.families.yolov5.decode import DEFAULT_ANCHORS
from harness.families.yolov5.decode import decode as yolov5_decode
from harness.families.yolov8.decode import decode
from harness.families.yolox import scenes as yolox_scenes
from harness.families.yolox.decode import decode as yolox_decode

from support import wrong_decoders

PROPERTIES = properties()


def test_the_harness_decoder_satisfies_every_property():
    assert run_conformance(decode) == {p.sentence: None for p in PROPERTIES}


@pytest.mark.parametrize(
    ("decoder", "sentence", "words"),
    [
        (wrong_decoders.xy_swapped, "finds every planted object", f"{later.Y_FIRST} ({conformance.XY_SWAPPED})"),
        (
            wrong_decoders.no_sigmoid,
            "applies the sigmoid to logit class outputs",
            f"{later.NO_SIGMOID} ({conformance.SIGMOID_MISSING}",
        ),
        (wrong_decoders.sigmoid_twice, "finds every planted object", conformance.SIGMOID_TWICE),
        (
            wrong_decoders.no_half_cell,
            "finds every planted object",
            f"{later.HALF_CELL_UP_LEFT} ({conformance.HALF_CELL}",
        ),
        (wrong_decoders.fcr_channel_first, "reads FCR heads channel-last", conformance.FCR_CHANNEL_FIRST),
        # caught, named by its symptom: a class map resampled to another grid is no reading of its memory
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
    # it finds nothing there: the naming says the story is the likelier one, not the only one
    assert conformance.NOTHING_FOUND in next(iter(failing.values()))


def test_a_mistake_no_misreading_reproduces_is_said_to_be_none_of_them():
    failure = check_property(wrong_decoders.drops_the_weakest, PROPERTIES[0])
    assert failure is not None and conformance.NOT_REPRODUCED in failure
    assert "expected 4 planted detections, got 3" in failure
    # the scene's evidence: what differed, classes, boxes and scores
    assert failure.endswith(
        "on this scene, 3 detections where the scene holds 4, per class {0: 1, 1: 2} where {0: 2, 1: 2}; paired by "
        "class and score, boxes differ by up to 0.0 px and scores by up to 0.000"
    )


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
        conformance.load_decoder("harness.families.yolov8.decode:nope")
    assert conformance.load_decoder("harness.families.yolov8.decode:decode") is decode


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
    failure = results["pairs heads by grid and channels, whatever the outputs' order or names"]
    assert f"{conformance.PAIRED_ACROSS_GRIDS}: {later.PAIRED_BY_ORDER}" in failure


def test_yolo26_scenes_plant_the_four_distances_themselves():
    scene = make_scene(SceneRecipe(reg_max=1), 0)
    assert {s.channels for s in scene.specs.values()} == {4, 2}
    assert len(scene.expected) == SceneRecipe().objects


# ------------------------------------------------------------------------ YOLOv5/YOLOv7 (anchored maps)

YOLOV5 = properties(HeadFamily.YOLOV5)
OBJECTNESS_PROPERTY = "scores objectness x class: a high class score under a low objectness is no detection"
ANCHORS_PROPERTY = "takes each anchor's (width, height) from config.anchors, per stride"
LOGIT_PROPERTIES = [
    "applies the sigmoid to logit class outputs",
    "reads UINT8 logit outputs through their quant info",
    "reads UINT16 outputs (16-bit output layers) through their quant info",
]


def test_yolov5_properties_are_yolov8s_sentences_then_two_of_the_family_s_own():
    assert [p.sentence for p in YOLOV5] == [p.sentence for p in PROPERTIES] + [OBJECTNESS_PROPERTY, ANCHORS_PROPERTY]


@pytest.mark.parametrize("decoder", [yolov5_decode, wrong_decoders.yolov5_by_hand])
def test_the_harness_yolov5_decoder_and_one_written_by_hand_satisfy_every_yolov5_property(decoder):
    assert run_conformance(decoder, family=HeadFamily.YOLOV5) == {p.sentence: None for p in YOLOV5}


def test_a_yolov8_decoder_given_anchored_maps_fails_every_yolov5_property_and_a_yolov5_decoder_yolov8_heads():
    assert all(run_conformance(decode, family=HeadFamily.YOLOV5).values())
    assert all(run_conformance(yolov5_decode).values())


ALL = None  # every property fails
# Each held-out YOLOv5 decoder (one mistake), the properties it fails, and the words that name its mistake
# in the first failure (the one the plugin and the doctor show).
YOLOV5_MISTAKES = [
    (wrong_decoders.yolov5_objectness_ignored, ALL, f"every head {conformance.OBJECTNESS_LEFT_OUT}"),
    (wrong_decoders.yolov5_anchors_reversed, ALL, conformance.ANCHORS_REVERSED),
    (wrong_decoders.yolov5_anchor_wh_swapped, ALL, conformance.ANCHORS_WH_SWAPPED),
    (wrong_decoders.yolov5_default_anchors, [ANCHORS_PROPERTY], conformance.DEFAULT_ANCHORS_USED),
    (
        wrong_decoders.yolov5_anchors_by_order,
        ["pairs heads by grid and channels, whatever the outputs' order or names"],
        f"{conformance.ANCHORS_BY_ORDER}: {later.ANCHORS_BY_OUTPUT_ORDER}",
    ),
    (wrong_decoders.yolov5_channel_first, ALL, f"every head {conformance.CHANNEL_FIRST}"),
    (
        wrong_decoders.yolov5_fcr_channel_first,
        ["reads FCR heads channel-last, like NHWC"],
        f"{conformance.FCR_CHANNEL_FIRST}: the FCR heads (p3, p5) {conformance.CHANNEL_FIRST}",
    ),
    (wrong_decoders.yolov5_class_major, ALL, f"every head {conformance.CLASS_MAJOR}"),
    (wrong_decoders.yolov5_sigmoid_twice, ALL, f"every head {conformance.SIGMOID_AGAIN}"),
    (wrong_decoders.yolov5_no_sigmoid, LOGIT_PROPERTIES, f"{later.NO_SIGMOID} ({conformance.SIGMOID_MISSING}"),
    (wrong_decoders.yolov5_grid_without_half, ALL, f"{later.HALF_CELL_DOWN_RIGHT} ({conformance.HALF_CELL}"),
    (
        wrong_decoders.yolov5_sixteen_bit_read_as_eight,
        ["reads UINT16 outputs (16-bit output layers) through their quant info"],
        f"every head {conformance.SIXTEEN_AS_EIGHT}",
    ),
    (wrong_decoders.yolov5_yolov3_centre, ALL, family_scenes(HeadFamily.YOLOV5).YOLOV3_CENTRE),
]


@pytest.mark.parametrize(
    ("decoder", "failing", "words"), [pytest.param(*row, id=row[0].__name__) for row in YOLOV5_MISTAKES]
)
def test_each_wrong_yolov5_decoder_fails_the_properties_its_mistake_touches_and_is_named(decoder, failing, words):
    results = run_conformance(decoder, family=HeadFamily.YOLOV5)
    failed = [sentence for sentence, failure in results.items() if failure]
    assert failed == ([p.sentence for p in YOLOV5] if failing is ALL else failing)
    assert words in results[failed[0]]


def test_every_held_out_yolov5_decoder_is_in_the_table():
    held_out = {n for n in dir(wrong_decoders) if n.startswith("yolov5_") and n != "yolov5_by_hand"}
    assert held_out == {d.__name__ for d, _, _ in YOLOV5_MISTAKES}


# ------------------------------------------------------------------------ YOLOX (box, objectness, class maps)

YOLOX = properties(HeadFamily.YOLOX)


def test_yolox_properties_are_yolov8s_sentences_then_the_objectness_one():
    assert [p.sentence for p in YOLOX] == [p.sentence for p in PROPERTIES] + [OBJECTNESS_PROPERTY]


@pytest.mark.parametrize("decoder", [yolox_decode, wrong_decoders.yolox_by_hand])
def test_the_harness_yolox_decoder_and_one_written_by_hand_satisfy_every_yolox_property(decoder):
    assert run_conformance(decoder, family=HeadFamily.YOLOX) == {p.sentence: None for p in YOLOX}


def test_a_yolov5_or_yolov8_decoder_given_yolox_maps_fails_every_yolox_property():
    assert all(run_conformance(yolov5_decode, family=HeadFamily.YOLOX).values())
    assert all(run_conformance(decode, family=HeadFamily.YOLOX).values())


# Each held-out YOLOX decoder (one mistake), the properties it fails, and the words that name its mistake.
YOLOX_MISTAKES = [
    (
        wrong_decoders.yolox_objectness_ignored,
        ALL,
        f"the objectness heads of all 3 strides {conformance.OBJECTNESS_LEFT_OUT}",
    ),
    (
        wrong_decoders.yolox_paired_by_order,
        ["pairs heads by grid and channels, whatever the outputs' order or names"],
        conformance.PAIRED_ACROSS_GRIDS,
    ),
    (wrong_decoders.yolox_channel_first, ALL, f"every head {conformance.CHANNEL_FIRST}"),
    (wrong_decoders.yolox_box_channel_first, ALL, f"the box heads of all 3 strides {conformance.CHANNEL_FIRST}"),
    (
        wrong_decoders.yolox_fcr_channel_first,
        ["reads FCR heads channel-last, like NHWC"],
        f"{conformance.FCR_CHANNEL_FIRST}: the FCR heads (box0, box1, box2, class2, objectness2) "
        f"{conformance.CHANNEL_FIRST}",
    ),
    (
        wrong_decoders.yolox_sigmoid_twice,
        ALL,
        f"the class and objectness heads of all 3 strides {conformance.SIGMOID_AGAIN}",
    ),
    (wrong_decoders.yolox_no_sigmoid, LOGIT_PROPERTIES, f"{later.NO_SIGMOID} ({conformance.SIGMOID_MISSING}"),
    (wrong_decoders.yolox_half_cell_centre, ALL, f"{later.HALF_CELL_DOWN_RIGHT} ({conformance.HALF_CELL}"),
    (
        wrong_decoders.yolox_sixteen_bit_read_as_eight,
        ["reads UINT16 outputs (16-bit output layers) through their quant info"],
        f"every head {conformance.SIXTEEN_AS_EIGHT}",
    ),
    (wrong_decoders.yolox_no_exp, ALL, yolox_scenes.SIZES_LINEAR),
]


@pytest.mark.parametrize(
    ("decoder", "failing", "words"), [pytest.param(*row, id=row[0].__name__) for row in YOLOX_MISTAKES]
)
def test_each_wrong_yolox_decoder_fails_the_properties_its_mistake_touches_and_is_named(decoder, failing, words):
    results = run_conformance(decoder, family=HeadFamily.YOLOX)
    failed = [sentence for sentence, failure in results.items() if failure]
    assert failed == ([p.sentence for p in YOLOX] if failing is ALL else failing)
    assert words in results[failed[0]]


def test_every_held_out_yolox_decoder_is_in_the_table():
    held_out = {n for n in dir(wrong_decoders) if n.startswith("yolox_") and n != "yolox_by_hand"}
    assert held_out == {d.__name__ for d, _, _ in YOLOX_MISTAKES}


# ------------------------------------------------------------------------ SSD (per-anchor regression and class maps)

SSD = properties(HeadFamily.SSD)
SSD_OWN = [
    "takes the anchors and box coding from config.ssd, per layer",
    "leaves out the background class where config.ssd puts it, first or last",
]
BACKGROUND_PROPERTY = SSD_OWN[1]


def test_ssd_properties_are_yolov8s_sentences_but_the_logit_ones_then_two_of_the_family_s_own():
    """HailoRT's SSD op applies no activation: an SSD decoder is never given logits."""
    logit_free = [p.sentence for p in PROPERTIES if p.sentence not in LOGIT_PROPERTIES[:2]]
    assert [p.sentence for p in SSD] == logit_free + SSD_OWN


@pytest.mark.parametrize("decoder", [ssd_decode, wrong_decoders.ssd_by_hand])
def test_the_harness_ssd_decoder_and_one_written_by_hand_satisfy_every_ssd_property(decoder):
    assert run_conformance(decoder, family=HeadFamily.SSD) == {p.sentence: None for p in SSD}


# Each held-out SSD decoder (one mistake), the properties it fails, and the words that name its mistake.
SSD_MISTAKES = [
    (wrong_decoders.ssd_x_first, ALL, misreadings.SSD_X_FIRST),
    (wrong_decoders.ssd_no_scales, ALL, misreadings.SSD_SCALES_LEFT_OUT),
    (wrong_decoders.ssd_anchors_height_width, ALL, misreadings.SSD_ANCHORS_WH_SWAPPED),
    (wrong_decoders.ssd_background_kept, ALL, misreadings.SSD_BACKGROUND_KEPT),
    (wrong_decoders.ssd_channel_first, ALL, f"every head {conformance.CHANNEL_FIRST}"),
    (wrong_decoders.ssd_class_major, ALL, f"every head {conformance.CLASS_MAJOR}"),
    (
        wrong_decoders.ssd_fcr_channel_first,
        ["reads FCR heads channel-last, like NHWC"],
        f"{conformance.FCR_CHANNEL_FIRST}: the FCR heads (box0, box1, box2, cls2) {conformance.CHANNEL_FIRST}",
    ),
    (
        wrong_decoders.ssd_sixteen_bit_read_as_eight,
        ["reads UINT16 outputs (16-bit output layers) through their quant info"],
        f"every head {conformance.SIXTEEN_AS_EIGHT}",
    ),
    (wrong_decoders.ssd_centre_at_the_corner, ALL, f"{later.HALF_CELL_UP_LEFT} ({conformance.HALF_CELL}"),
    (wrong_decoders.ssd_no_exp, ALL, ssd_scenes.SIZES_LINEAR),
    (wrong_decoders.ssd_softmax, ALL, ssd_scenes.SCORES_SOFTMAXED),
    # right where the background is the last: the one property that puts it there passes
    (
        wrong_decoders.ssd_background_as_the_first_class,
        [p.sentence for p in SSD if p.sentence != BACKGROUND_PROPERTY],
        ssd_scenes.BACKGROUND_FIRST_READ,
    ),
]


@pytest.mark.parametrize(
    ("decoder", "failing", "words"), [pytest.param(*row, id=row[0].__name__) for row in SSD_MISTAKES]
)
def test_each_wrong_ssd_decoder_fails_the_properties_its_mistake_touches_and_is_named(decoder, failing, words):
    results = run_conformance(decoder, family=HeadFamily.SSD)
    failed = [sentence for sentence, failure in results.items() if failure]
    assert failed == ([p.sentence for p in SSD] if failing is ALL else failing)
    assert words in results[failed[0]]


def test_every_held_out_ssd_decoder_is_in_the_table():
    held_out = {n for n in dir(wrong_decoders) if n.startswith("ssd_") and n != "ssd_by_hand"}
    assert held_out == {d.__name__ for d, _, _ in SSD_MISTAKES}


@pytest.mark.parametrize("seed", range(5))
def test_an_ssd_scene_holds_the_background_high_where_nothing_is_planted_first_or_last(seed):
    for last in (False, True):
        scene = make_scene(SceneRecipe(family=HeadFamily.SSD, background_last=last), seed)
        background = scene.config.ssd.background_class
        assert background == (2 if last else 0)
        values = np.concatenate([v.reshape(-1, 3) for n, v in scene.outputs.items() if n.startswith("cls")])
        assert (values[:, background] > 0.5).sum() == len(values) - len(scene.expected)


# ------------------------------------------------------------------------ bbox-only buffers (the host's NMS)

BBOX_ONLY = {family: properties(family, bbox_only=True) for family in (HeadFamily.YOLOV8, HeadFamily.YOLOV5)}
NMS_PROPERTY = "runs the NMS over the proposals: a weaker duplicate of an object is no detection"


def test_bbox_only_properties_are_yolov8s_sentences_a_float_buffer_can_hold_and_the_nms():
    assert [p.sentence for p in BBOX_ONLY[HeadFamily.YOLOV8]] == [
        PROPERTIES[0].sentence,
        PROPERTIES[1].sentence,
        NMS_PROPERTY,
    ]
    assert [p.sentence for p in BBOX_ONLY[HeadFamily.YOLOV5]] == [
        *(p.sentence for p in BBOX_ONLY[HeadFamily.YOLOV8]),
        OBJECTNESS_PROPERTY,
    ]
    with pytest.raises(HarnessError, match=r"'yolox': HailoRT has no bbox-only op for it"):
        properties(HeadFamily.YOLOX, bbox_only=True)
    assert conformance.conformance_head("yolov5-bbox-only") == (HeadFamily.YOLOV5, True)
    assert conformance.conformance_head("ssd") == (HeadFamily.SSD, False)


@pytest.mark.parametrize("family", [HeadFamily.YOLOV8, HeadFamily.YOLOV5])
@pytest.mark.parametrize("decoder", ["reference", "by_hand"])
def test_the_harness_bbox_only_decoder_and_one_written_by_hand_satisfy_every_bbox_only_property(family, decoder):
    decode = conformance.bbox_only_decoder(family) if decoder == "reference" else wrong_decoders.bbox_only_by_hand
    results = run_conformance(decode, family=family, bbox_only=True)
    assert results == {p.sentence: None for p in BBOX_ONLY[family]}


BBOX_ONLY_MISTAKES = [
    (wrong_decoders.bbox_only_x_first, HeadFamily.YOLOV8, ALL, conformance.BBOX_X_FIRST),
    (wrong_decoders.bbox_only_not_scaled, HeadFamily.YOLOV8, ALL, conformance.BBOX_NOT_SCALED),
    (wrong_decoders.bbox_only_no_nms, HeadFamily.YOLOV5, ALL, conformance.BBOX_NO_NMS),
    (wrong_decoders.bbox_only_objectness_left_out, HeadFamily.YOLOV5, ALL, conformance.BBOX_OBJECTNESS_LEFT_OUT),
    # caught, named by its symptom: the sigmoid put on objectness x class, past what the buffer holds
    (wrong_decoders.bbox_only_sigmoid, HeadFamily.YOLOV5, ALL, conformance.SIGMOID_TWICE),
]


@pytest.mark.parametrize(
    ("decoder", "family", "failing", "words"),
    [pytest.param(*row, id=row[0].__name__) for row in BBOX_ONLY_MISTAKES],
)
def test_each_wrong_bbox_only_decoder_fails_the_properties_its_mistake_touches_and_is_named(
    decoder, family, failing, words
):
    results = run_conformance(decoder, family=family, bbox_only=True)
    failed = [sentence for sentence, failure in results.items() if failure]
    assert failed == ([p.sentence for p in BBOX_ONLY[family]] if failing is ALL else failing)
    assert words in results[failed[0]]


def test_every_held_out_bbox_only_decoder_is_in_the_table():
    held_out = {n for n in dir(wrong_decoders) if n.startswith("bbox_only_") and n != "bbox_only_by_hand"}
    assert held_out == {d.__name__ for d, *_ in BBOX_ONLY_MISTAKES}


@pytest.mark.parametrize("seed", range(5))
def test_yolov5_decoys_reach_the_threshold_by_class_or_by_objectness_alone_never_by_their_product(seed):
    recipe = SceneRecipe(family=HeadFamily.YOLOV5, logits=True, decoys=8)
    scene = make_scene(recipe, seed)
    # per (cell, anchor) its 5 + nc values: each anchor's are contiguous in an anchored map
    entries = np.concatenate([v.reshape(-1, 5 + recipe.classes) for v in scene.outputs.values()])
    p = 1 / (1 + np.exp(-entries.astype(np.float64)))
    objectness, best_class = p[:, 4], p[:, 5:].max(axis=1)
    reaching = (objectness >= 0.25) | (best_class >= 0.25)
    by_product = objectness * best_class >= 0.25
    assert by_product.sum() == len(scene.expected) == recipe.objects
    assert (reaching & ~by_product).sum() == recipe.decoys
    assert ((objectness < 0.25) & (best_class >= 0.25)).sum() == recipe.decoys // 2


@pytest.mark.parametrize("seed", range(5))
def test_drawn_anchors_are_neither_square_nor_yolov5_s_defaults(seed):
    anchors = make_scene(SceneRecipe(family=HeadFamily.YOLOV5, drawn_anchors=True), seed).config.anchors
    assert anchors != DEFAULT_ANCHORS and anchors != anchors[::-1]
    assert all(abs(w - h) >= 0.2 * max(w, h) for group in anchors for w, h in group)


def test_yolov5_scenes_plant_objects_on_each_stride_in_turn_in_one_anchored_map_per_stride():
    scene = make_scene(SceneRecipe(family=HeadFamily.YOLOV5, classes=3, objects=6), 0)
    assert {name: spec.shape for name, spec in scene.specs.items()} == {
        "p3": (32, 40, 24),
        "p4": (16, 20, 24),
        "p5": (8, 10, 24),
    }
    assert scene.strides.tolist() == [8, 16, 32, 8, 16, 32]


def test_right_detections_are_never_taken_for_a_symptom_whatever_their_scores():
    scene = make_scene(SceneRecipe(), 0)
    squeezed = Detections(scene.expected.boxes, np.linspace(0.55, 0.7, len(scene.expected)), scene.expected.class_ids)
    assert conformance.name_mistake(squeezed, replace(scene, expected=squeezed)) is None


def test_a_family_the_suite_plants_no_scenes_for_is_refused_naming_those_it_does(monkeypatch):
    monkeypatch.setattr(conformance, "SCENE_FAMILIES", (HeadFamily.YOLOV8, HeadFamily.YOLOV5))
    with pytest.raises(HarnessError, match=r"'yolox': the conformance suite plants no scenes.*\['yolov8', 'yolov5'\]"):
        properties(HeadFamily.YOLOX)
