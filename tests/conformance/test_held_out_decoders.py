"""Held-out decoders (tests/support/one_bug_decoders.py), one mistake each, written apart from the harness's
decoders: the conformance suite catches each and names it by reproducing it, on the planted scene and, over
several frames at once, as the doctor reproduces a host decoder's path; a mistake no known misreading makes is
caught and said to be none of them."""

from dataclasses import replace

import pytest

from harness.conformance import words
from harness.conformance.misreadings import NOT_REPRODUCED, DecodedFrame, reproduce, reproduce_path
from harness.conformance.scenes import family_scenes
from harness.conformance.suite import make_scene, run_conformance
from harness.core.specs import FormatType

from support.one_bug_decoders import HELD_OUT, WITHOUT_A_MISTAKE


@pytest.mark.parametrize(
    ("decoder", "family", "bbox_only"),
    [pytest.param(*row, id=f"{row[1].value}{'-bbox-only' if row[2] else ''}") for row in WITHOUT_A_MISTAKE],
)
def test_each_held_out_reader_without_its_mistake_holds_every_property(decoder, family, bbox_only):
    results = run_conformance(decoder, family=family, bbox_only=bbox_only)
    assert not any(results.values()), {sentence: failure for sentence, failure in results.items() if failure}


@pytest.mark.parametrize(
    ("decoder", "family", "bbox_only", "name", "named_as"), [pytest.param(*row, id=row[0].__name__) for row in HELD_OUT]
)
def test_each_held_out_decoder_is_caught_and_every_failure_names_its_mistake(
    decoder, family, bbox_only, name, named_as
):
    results = run_conformance(decoder, family=family, bbox_only=bbox_only)
    failed = [sentence for sentence, failure in results.items() if failure]
    assert failed, "caught by no property"
    first = results[failed[0]]
    assert named_as in first, first
    assert name is None or name in words.REPRODUCED_NAMES
    # every property that catches it (logit maps, quantized ones, other inputs) names it so, not the first alone
    unnamed = name is None and not bbox_only
    assert all((NOT_REPRODUCED in results[sentence]) == unnamed for sentence in failed), results


# The held-out decoders named by reproduction on raw heads: reproduced over three frames at once, of the scene
# their mistake shows on (each object found where it is not). (Codes taken for values saturate every score at 1:
# which of thousands of tied boxes an NMS keeps is not a misreading's to reproduce frame after frame.)
EVERY_SCENE = [row for row in HELD_OUT if not row[2] and row[3] is not None and "codes" not in row[0].__name__]

# The misreadings that show only on a scene of their own: FCR heads among NHWC ones, 16-bit outputs, anchors other
# than YOLOv5's defaults (the family's base scene has those).
SHOWN_ON = {
    words.FCR_READ_CHANNEL_FIRST: lambda base: family_scenes(base.family).fcr_mixed(base),
    words.SIXTEEN_BIT_READ_AS_EIGHT: lambda base: replace(base, format_type=FormatType.UINT16),
    words.DEFAULT_ANCHORS_TAKEN: lambda base: replace(base, drawn_anchors=True),
}


@pytest.mark.parametrize(
    ("decoder", "family", "bbox_only", "name", "named_as"),
    [pytest.param(*row, id=row[0].__name__) for row in EVERY_SCENE],
)
def test_each_held_out_decoder_is_reproduced_on_every_frame_of_a_path_by_its_misreading_alone(
    decoder, family, bbox_only, name, named_as
):
    base = SHOWN_ON.get(name, lambda base: base)(family_scenes(family).recipe())
    logits = name == words.CLASSES_TAKEN_AS_PROBABILITIES
    scenes = [make_scene(replace(base, logits=logits), seed) for seed in (0, 1, 2)]
    if name == words.HEADS_PAIRED_BY_OUTPUT_ORDER:  # the first map of a role taken last: out of grid order
        scenes = [s.renamed({k: k for k in s.outputs}, _one_role_rotated(s)) for s in scenes]
    frames = [DecodedFrame(s.outputs, decoder(s.outputs, s.specs, s.config)) for s in scenes]
    scene = scenes[0]
    found = reproduce(frames, scene.specs, scene.config, family, scene.layout)
    assert found is not None and found.name == name and found.frames == 3, found
    # as the doctor reads a host decoder's path: named only where no other known misreading reproduces it alike
    path = reproduce_path(frames, scene.specs, scene.config, family)
    assert path is not None and path.differing == 3 and not path.rivals, path
    assert path.reproduction is not None and path.reproduction.name == name, path


def _one_role_rotated(scene):
    """The outputs' names: the box maps in grid order, every other role's rotated by one grid (each read on the
    next grid's box map: their planted cells land on other cells, together)."""
    by_role = [
        [level.outputs[i].name for level in scene.layout.levels] for i in range(len(scene.layout.levels[0].outputs))
    ]
    boxes, *others = by_role
    return boxes + [name for names in others for name in names[1:] + names[:1]]
