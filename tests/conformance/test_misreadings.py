"""A decoder's mistake named by reproduction over one frame or several: the misreading (and the heads it
was made on) under which the family's reference decoder returns what the decoder returned on every frame."""

from dataclasses import replace

import numpy as np
import pytest

from harness.conformance import misreadings, words
from harness.conformance.decoder_misreadings import DECODER_MISREADINGS
from harness.conformance.misreadings import DecodedFrame, head_sets, reproduce, reproduce_path
from harness.conformance.scenes import family_scenes
from harness.conformance.suite import SceneRecipe, make_scene
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.core.specs import FormatOrder
from harness.doctor.mistakes import paired_by_listing_order_of
from harness.families.yolov5.decode import decode as yolov5_decode
from harness.families.yolov8.decode import decode

from support import wrong_decoders

NHWC, FCR = FormatOrder.NHWC, FormatOrder.FCR
MIXED = SceneRecipe(box_order=FCR, class_orders=(NHWC, NHWC, FCR))  # the field report's mix of orders


def _frames(decoder, recipe, seeds=(0, 1, 2)):
    scenes = [make_scene(recipe, seed) for seed in seeds]
    return scenes[0], [DecodedFrame(s.outputs, decoder(s.outputs, s.specs, s.config)) for s in scenes]


def _reproduce(decoder, recipe, seeds=(0, 1, 2)):
    scene, frames = _frames(decoder, recipe, seeds)
    return reproduce(frames, scene.specs, scene.config, scene.family, scene.layout)


def test_channel_first_on_the_fcr_heads_alone_is_named_as_an_fcr_misreading_on_every_frame():
    found = _reproduce(wrong_decoders.fcr_channel_first, MIXED)
    assert found is not None and found.frames == 3
    assert found.name == misreadings.FCR_READ_CHANNEL_FIRST
    assert found.words == f"the FCR heads (box0, box1, box2, cls2) {misreadings.CHANNEL_FIRST}"


def test_channel_first_on_heads_that_are_not_all_fcr_is_named_channel_first():
    found = _reproduce(wrong_decoders.box_heads_channel_first, SceneRecipe())
    assert found is not None and found.name == misreadings.READ_CHANNEL_FIRST
    assert found.words.startswith("the box heads of all 3 strides")


@pytest.mark.parametrize(
    ("decoder", "recipe", "name"),
    [
        (wrong_decoders.dfl_interleaved, SceneRecipe(), misreadings.DFL_BINS_INTERLEAVED),
        (wrong_decoders.sigmoid_twice, SceneRecipe(), misreadings.SIGMOID_APPLIED_TWICE),
        (
            wrong_decoders.yolov5_anchors_reversed,
            SceneRecipe(family=HeadFamily.YOLOV5, reg_max=1),  # one config for every frame, as a path has
            words.ANCHOR_GROUPS_REVERSED,
        ),
        (
            wrong_decoders.yolov5_class_major,
            SceneRecipe(family=HeadFamily.YOLOV5, reg_max=1),
            misreadings.ANCHORED_READ_CLASS_MAJOR,
        ),
        (wrong_decoders.ssd_x_first, SceneRecipe(family=HeadFamily.SSD), words.SSD_CODING_X_FIRST),
        (wrong_decoders.ssd_no_scales, SceneRecipe(family=HeadFamily.SSD), words.SSD_SCALE_FACTORS_LEFT_OUT),
        (
            wrong_decoders.ssd_anchors_height_width,
            SceneRecipe(family=HeadFamily.SSD),
            words.SSD_ANCHORS_HEIGHT_WIDTH,
        ),
        (wrong_decoders.ssd_background_kept, SceneRecipe(family=HeadFamily.SSD), words.SSD_BACKGROUND_AS_CLASS),
        (wrong_decoders.ssd_class_major, SceneRecipe(family=HeadFamily.SSD), misreadings.ANCHORED_READ_CLASS_MAJOR),
        (wrong_decoders.ssd_no_exp, SceneRecipe(family=HeadFamily.SSD), words.SIZES_WITHOUT_THE_EXP),
        (wrong_decoders.ssd_softmax, SceneRecipe(family=HeadFamily.SSD), words.SSD_SCORES_SOFTMAXED),
        (
            wrong_decoders.ssd_background_as_the_first_class,
            SceneRecipe(family=HeadFamily.SSD),
            words.SSD_BACKGROUND_AS_FIRST_CLASS,
        ),
        (wrong_decoders.yolox_no_exp, SceneRecipe(family=HeadFamily.YOLOX, reg_max=1), words.SIZES_WITHOUT_THE_EXP),
    ],
)
def test_each_misreading_reproduced_on_every_frame_is_named_by_its_name(decoder, recipe, name):
    found = _reproduce(decoder, recipe)
    assert found is not None and found.name == name and found.name in words.REPRODUCED_NAMES


def test_every_name_a_diagnosis_may_give_is_one_misreadings_name_in_the_order_they_are_tried():
    tried = [
        *(m.name for m in misreadings.MISREADINGS),
        misreadings.FCR_READ_CHANNEL_FIRST,
        *(m.name for m in family_scenes(HeadFamily.YOLOV5).config_misreadings()),
        *(m.name for m in family_scenes(HeadFamily.SSD).config_misreadings()),
        *(m.name for m in family_scenes(HeadFamily.YOLOX).config_misreadings()),
        *(m.name for m in DECODER_MISREADINGS),
        *(m.name for m in family_scenes(HeadFamily.YOLOV5).coordinate_misreadings()),
    ]
    assert list(words.REPRODUCED_NAMES) == list(dict.fromkeys(tried))  # a name two families share, once
    for family in HeadFamily:  # every family's own are among them
        scenes = family_scenes(family)
        assert {m.name for m in (*scenes.config_misreadings(), *scenes.coordinate_misreadings())} <= set(tried)


def test_a_misreading_that_holds_on_one_frame_but_not_another_is_not_named():
    scene, (wrong, *_) = _frames(wrong_decoders.box_heads_channel_first, SceneRecipe(), seeds=(0,))
    other = make_scene(SceneRecipe(), 1)
    right = DecodedFrame(other.outputs, decode(other.outputs, other.specs, other.config))
    assert reproduce([wrong], scene.specs, scene.config, scene.family, scene.layout) is not None
    assert reproduce([wrong, right], scene.specs, scene.config, scene.family, scene.layout) is None


def test_a_mistake_no_misreading_makes_is_not_reproduced():
    assert _reproduce(wrong_decoders.drops_the_weakest, SceneRecipe()) is None


def test_the_fcr_heads_are_a_head_set_of_their_own_only_where_some_heads_are_not_fcr():
    mixed = make_scene(MIXED, 0)
    sets = {s.words: s for s in head_sets(mixed.layout, mixed.specs)}
    assert [o.name for o in sets["the FCR heads (box0, box1, box2, cls2)"].heads] == ["box0", "box1", "box2", "cls2"]
    fcr_only = {words for words, s in sets.items() if s.fcr}
    assert "the box heads of all 3 strides" in fcr_only and "the class head of stride 32 (cls2)" in fcr_only
    assert not {"every head", "the class heads of all 3 strides", "the class head of stride 8 (cls0)"} & fcr_only
    every_fcr = make_scene(replace(MIXED, class_orders=(FCR,) * 3), 0)
    assert not any(s.fcr for s in head_sets(every_fcr.layout, every_fcr.specs))


def test_the_reference_decoder_itself_is_reproduced_by_no_misreading_of_a_scene_it_decodes_alike():
    # a correct decode is nothing to name: callers ask only where the decoder differs from the reference
    scene, frames = _frames(yolov5_decode, SceneRecipe(family=HeadFamily.YOLOV5, reg_max=1))
    assert reproduce(frames, scene.specs, scene.config, scene.family, scene.layout) is None


def test_a_path_no_misreading_reproduces_says_so_with_the_first_differing_frame_s_evidence():
    scenes = [make_scene(SceneRecipe(), seed) for seed in (0, 1, 2)]
    right = [DecodedFrame(s.outputs, decode(s.outputs, s.specs, s.config)) for s in scenes[:1]]
    wrong = [
        DecodedFrame(s.outputs, wrong_decoders.drops_the_weakest(s.outputs, s.specs, s.config)) for s in scenes[1:]
    ]
    scene = scenes[0]
    found = reproduce_path([*right, *wrong], scene.specs, scene.config, scene.family)
    assert found is not None and (found.frames, found.differing, found.reproduction) == (3, 2, None)
    assert found.unreproduced.startswith(misreadings.NOT_REPRODUCED)
    assert found.unreproduced.endswith(
        "on frame 2 of 3: 3 detections where the reference decoder returns 4, per class {0: 1, 1: 2} where "
        "{0: 2, 1: 2}; paired by class and score, boxes differ by up to 0.0 px and scores by up to 0.000"
    )


def test_a_misreading_past_the_memory_is_named_where_it_happens_not_by_its_symptom():
    # the boxes of the reference decoder's detections written y first, not "boxes come back x/y swapped"
    found = _reproduce(wrong_decoders.xy_swapped, SceneRecipe())
    assert found is not None and found.name == words.BOXES_WRITTEN_Y_FIRST
    # YOLOv5's centre without its -0.5: every candidate half a cell down and right, then the NMS
    found = _reproduce(wrong_decoders.yolov5_grid_without_half, SceneRecipe(family=HeadFamily.YOLOV5, reg_max=1))
    assert found is not None and found.name == words.CENTRES_HALF_CELL_DOWN_RIGHT
    # YOLOv3's centre: the anchored maps' tx, ty seen as (p + 0.5) / 2 by the reference decoder
    found = _reproduce(wrong_decoders.yolov5_yolov3_centre, SceneRecipe(family=HeadFamily.YOLOV5, reg_max=1))
    assert found is not None and found.name == words.CENTRES_AS_YOLOV3
    # the heads paired by the outputs' order, each class buffer read on its box head's grid
    scene = make_scene(SceneRecipe(reg_max=1, family=HeadFamily.YOLO26_ONE2ONE), 3)
    mixed = scene.renamed({k: k for k in scene.outputs}, ["box0", "box1", "box2", "cls1", "cls2", "cls0"])
    got = wrong_decoders.yolo26_paired_by_position(mixed.outputs, mixed.specs, mixed.config)
    found = reproduce([DecodedFrame(mixed.outputs, got)], mixed.specs, mixed.config, mixed.family, mixed.layout)
    assert found is not None and found.name == words.HEADS_PAIRED_BY_OUTPUT_ORDER


def test_the_evidence_of_a_difference_never_hides_a_box_or_score_that_is_not_a_number():
    scene = make_scene(SceneRecipe(), 0)
    boxes, scores = scene.expected.boxes.copy(), scene.expected.scores.copy()
    boxes[0, 0], scores[1] = np.nan, np.nan
    said = misreadings.difference(Detections(boxes, scores, scene.expected.class_ids), scene.expected)
    assert said.endswith("boxes differ by up to inf px and scores by up to inf")
    assert misreadings.difference(scene.expected, scene.expected).endswith("up to 0.0 px and scores by up to 0.000")


# The outputs as a HEF may list them: box and objectness maps as they come, the class maps smallest grid first.
LISTED = ["box0", "objectness0", "box1", "objectness1", "box2", "objectness2", "class2", "class1", "class0"]


def _paired_across_grids(objects, seeds):
    """Frames of YOLOX scenes (objects planted at strides 8, 16, 32, 8, ... in turn) decoded by a host decoder
    that pairs the heads in listing order, each class map resampled to its box map's grid."""
    paired = paired_by_listing_order_of(HeadFamily.YOLOX)
    frames = []
    for seed in seeds:
        scene = make_scene(SceneRecipe(family=HeadFamily.YOLOX, reg_max=1, objects=objects), seed)
        scene = scene.renamed({k: k for k in scene.outputs}, LISTED)
        frames.append(DecodedFrame(scene.outputs, paired(scene.outputs, scene.specs, scene.config)))
    return scene, frames


def test_misreadings_that_reproduce_a_path_alike_are_rivals_none_named_until_a_frame_separates_them():
    # objects at strides 8 and 16 alone: the pairing loses the stride 8 one, and so would the class head of
    # stride 8 read channel-first; nothing on these frames says which
    scene, alike = _paired_across_grids(2, (0, 1, 2))
    assert all(len(frame.got) == 1 for frame in alike)
    found = reproduce_path(alike, scene.specs, scene.config, scene.family)
    assert found is not None and found.reproduction is None and found.differing == 3
    assert [r.name for r in found.rivals] == [words.READ_CHANNEL_FIRST, words.HEADS_PAIRED_BY_OUTPUT_ORDER]
    assert found.unreproduced.startswith("2 known misreadings reproduce it alike on every frame (read_channel_first: ")
    assert "none is named over the others; on frame 1 of 3: " in found.unreproduced
    # a frame with an object at stride 32 too: the pairing loses it, a channel-first class head of stride 8 keeps it
    _, separating = _paired_across_grids(4, (3,))
    found = reproduce_path([*alike, *separating], scene.specs, scene.config, scene.family)
    assert found is not None and found.rivals == ()
    assert found.reproduction is not None and found.reproduction.name == words.HEADS_PAIRED_BY_OUTPUT_ORDER
