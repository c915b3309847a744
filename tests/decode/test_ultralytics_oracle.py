"""The harness's decoders against Ultralytics' Hailo backend, on inputs and results recorded by
``tools/ultralytics_oracle.py`` (Ultralytics 8.4.190 in a venv of its own; nothing here imports it).

Recorded in ``tests/support/data/ultralytics_oracle/``: four fire/smoke fixture frames letterboxed to 256x256;
per frame the HAILO_NMS_BY_CLASS buffer of the emulated YOLO11n demo HEF (HailoRT NMS compiled in) and
the six raw head maps of the YOLO26n demo export; and Ultralytics' detections of each after its
predictor's NMS (``x1, y1, x2, y2, score, class``), in input pixels and after ``scale_boxes`` in
original-image pixels. Compared:

- ``HailoBackend._decode_nms`` with :func:`harness.formats.nms_buffer.decode_nms_by_class`;
- ``HailoBackend._decode_raw`` with the one-to-one head (``end2end``) and
  :func:`harness.families.yolo26.one2one.decode.decode`; without ``end2end`` and ``non_max_suppression``, with
  :func:`harness.families.yolo26.one2many.decode.decode` in Ultralytics' NMS mode, best class per anchor as the
  predictor asks (``multi_label`` False); both read the export's one-to-one head maps, the only ones it has;
- ``scale_boxes`` with :func:`harness.core.detections.unletterbox`: a documented difference (below).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.core.detections import Detections, Letterbox, unletterbox
from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec
from harness.families.yolo26.one2many.decode import decode as decode_one2many
from harness.families.yolo26.one2one.decode import decode as decode_one2one
from harness.formats.nms_buffer import decode_nms_by_class
from harness.inputs.preprocess import letterbox, load_image

DATA = Path(__file__).resolve().parents[1] / "support" / "data" / "ultralytics_oracle"
BOX_TOLERANCE_PX = 1e-3
# Ultralytics' sigmoid is torch's, the harness's numpy's: they may round a float32 step apart.
SCORE_TOLERANCE = 1e-6
PATHS = ("nms", "one2one", "one2many")


@dataclass(frozen=True)
class Recorded:
    meta: dict[str, Any]
    inputs: dict[str, np.ndarray]
    results: dict[str, np.ndarray]
    ultralytics: dict[str, Any]
    provenance: dict[str, Any]

    @property
    def input_hw(self) -> tuple[int, int]:
        height, width = self.meta["input_hw"]
        return height, width

    def original_hw(self, frame: int) -> tuple[int, int]:
        height, width = self.meta["frames"][frame]["original_hw"]
        return height, width

    def ultralytics_detections(self, path: str, frame: int, space: str) -> Detections:
        rows = self.results[f"{path}_{frame}_{space}"]
        return Detections(rows[:, :4], rows[:, 4], rows[:, 5].astype(np.int64))


@pytest.fixture(scope="module")
def recorded() -> Recorded:
    with np.load(DATA / "inputs.npz") as inputs, np.load(DATA / "ultralytics.npz") as results:
        return Recorded(
            json.loads((DATA / "inputs.json").read_text()),
            dict(inputs),
            dict(results),
            json.loads((DATA / "ultralytics.json").read_text()),
            json.loads((DATA / "provenance.json").read_text()),
        )


def harness_detections(recorded: Recorded, path: str, frame: int) -> Detections:
    """The harness's decoding of one recorded frame, in model-input pixels."""
    if path == "nms":
        nms = recorded.meta["nms"]
        shape = NmsShape(nms["classes"], nms["max_bboxes_per_class"])
        host_shape = (shape.number_of_classes, 5, shape.max_bboxes_per_class)
        spec = OutputSpec(nms["output"], host_shape, FormatOrder.NMS_BY_CLASS, FormatType.FLOAT32, nms=shape)
        return decode_nms_by_class(recorded.inputs[f"nms_{frame}"], spec, recorded.input_hw)
    heads = recorded.meta["raw"]
    specs = {
        h["tensor"]: OutputSpec(h["tensor"], (*h["grid"], h["channels"]), FormatOrder.NHWC, FormatType.FLOAT32)
        for h in heads
    }
    outputs = {h["tensor"]: recorded.inputs[f"raw_{frame}_{k}"] for k, h in enumerate(heads)}
    predictor = recorded.meta["predictor"]
    config = DecodeConfig(
        input_hw=recorded.input_hw,
        score_threshold=predictor["conf"],
        iou_threshold=predictor["iou"],
        max_total=predictor["max_det"],
        mode=NmsMode.ULTRALYTICS,
        multi_label=False,
    )
    return (decode_one2one if path == "one2one" else decode_one2many)(outputs, specs, config)


def pair(a: Detections, b: Detections) -> np.ndarray:
    """For each detection of ``a`` its one partner in ``b`` (same class, score within SCORE_TOLERANCE,
    the nearest box); asserts the two sets match one to one."""
    assert len(a) == len(b), f"{len(a)} detections against {len(b)}"
    distance = np.abs(a.boxes[:, None, :] - b.boxes[None, :, :]).max(axis=2, initial=0)
    fits = (a.class_ids[:, None] == b.class_ids[None, :]) & (
        np.abs(a.scores[:, None] - b.scores[None, :]) <= SCORE_TOLERANCE
    )
    partner = np.where(fits, distance, np.inf).argmin(axis=1) if len(a) else np.zeros(0, np.int64)
    assert fits[np.arange(len(a)), partner].all(), "a detection without a partner of its class and score"
    assert len(set(partner.tolist())) == len(a), "two detections share one partner"
    return partner


def box_difference(a: Detections, b: Detections) -> float:
    partner = pair(a, b)
    return float(np.abs(a.boxes - b.boxes[partner]).max(initial=0))


def score_difference(a: Detections, b: Detections) -> float:
    partner = pair(a, b)
    return float(np.abs(a.scores - b.scores[partner]).max(initial=0))


def test_the_recorded_results_are_ultralytics_decoding_of_the_recorded_inputs(recorded: Recorded) -> None:
    digest = hashlib.sha256((DATA / "inputs.npz").read_bytes()).hexdigest()
    assert recorded.provenance["inputs"]["inputs_npz_sha256"] == digest
    assert recorded.provenance["ultralytics"]["decoded_inputs_npz_sha256"] == digest
    for name, expected in recorded.provenance["ultralytics"]["results_sha256"].items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == expected, name
    assert recorded.provenance["ultralytics"]["ultralytics"] == "8.4.190"
    assert len(recorded.meta["frames"]) == len(recorded.ultralytics["frames"]) == 4


@pytest.mark.parametrize("path", PATHS)
def test_the_harness_decodes_each_frame_to_ultralytics_detections_in_input_pixels(
    recorded: Recorded, path: str
) -> None:
    compared = 0
    for frame in range(len(recorded.meta["frames"])):
        ours = harness_detections(recorded, path, frame)
        theirs = recorded.ultralytics_detections(path, frame, "input")
        assert box_difference(ours, theirs) <= BOX_TOLERANCE_PX
        assert score_difference(ours, theirs) <= SCORE_TOLERANCE
        compared += len(theirs)
    assert compared >= 20  # enough detections to mean something


def test_nms_by_class_records_decode_bit_for_bit_as_ultralytics(recorded: Recorded) -> None:
    """The NMS buffer holds float32 records; both libraries scale y/x normalised values by the input size
    in float32, so nothing may differ at all. The NMS op keeps ``score >= threshold``, the predictor
    ``score > conf``: with both at the same value the sets agree unless a score equals it exactly."""
    for frame in range(len(recorded.meta["frames"])):
        ours = harness_detections(recorded, "nms", frame)
        theirs = recorded.ultralytics_detections("nms", frame, "input")
        partner = pair(ours, theirs)
        np.testing.assert_array_equal(ours.boxes, theirs.boxes[partner])
        np.testing.assert_array_equal(ours.scores, theirs.scores[partner])


@pytest.mark.parametrize("path", PATHS)
def test_unletterbox_gives_scale_boxes_in_original_pixels(recorded: Recorded, path: str) -> None:
    """Both divide by the ratios the image was resized by, the rounded size over the original one per
    axis (ultralytics 8.4.190: ultralytics/utils/ops.py, ``scale_boxes``), and subtract the whole pixels
    LetterBox padded with."""
    for frame in range(len(recorded.meta["frames"])):
        geometry = Letterbox.fit(recorded.original_hw(frame), recorded.input_hw)
        ours = unletterbox(harness_detections(recorded, path, frame), geometry)
        assert box_difference(ours, recorded.ultralytics_detections(path, frame, "original")) <= BOX_TOLERANCE_PX


def test_the_resized_image_maps_back_onto_the_whole_original(recorded: Recorded) -> None:
    """The resize puts the original's edges on the rounded size's edges (``cv2.resize`` maps extent onto
    extent), so the box of the whole resized image comes back as the whole original image; one ratio for
    both axes would leave it short wherever a size was rounded (3 of these 4 frames)."""
    for frame in range(len(recorded.meta["frames"])):
        (oh, ow), fit = recorded.original_hw(frame), Letterbox.fit(recorded.original_hw(frame), recorded.input_hw)
        new_w, new_h = round(ow * fit.scale_x), round(oh * fit.scale_y)
        box = np.array([[fit.pad_x, fit.pad_y, fit.pad_x + new_w, fit.pad_y + new_h]], np.float32)
        whole = Detections(box, np.ones(1, np.float32), np.zeros(1, np.int64))
        np.testing.assert_allclose(unletterbox(whole, fit, clip=False).boxes[0], [0, 0, ow, oh], atol=1e-4)


@pytest.mark.fixtures
def test_harness_frames_are_the_pixels_ultralytics_feeds_a_hailo_model(
    recorded: Recorded, shared_fixtures: Path
) -> None:
    """The harness's load + letterbox of each fixture image against the uint8 NHWC input Ultralytics'
    predictor and HailoBackend.forward build from it (cv2 decode, LetterBox, BGR->RGB, /255 and *255 back)."""
    for frame, theirs in zip(recorded.meta["frames"], recorded.ultralytics["frames"], strict=True):
        image = shared_fixtures / frame["image"]
        assert hashlib.sha256(image.read_bytes()).hexdigest() == frame["sha256"]
        pixels, _ = letterbox(load_image(image), recorded.input_hw)
        assert hashlib.sha256(pixels.tobytes()).hexdigest() == theirs["hef_input_sha256"], frame["image"]
