"""The keys of an NMS config (:class:`NmsKey`), and those the Model Zoo's NMS configs share: each family's
part lists its config's keys, in its order, from these and its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.backends.dfc.checks import is_count, is_fraction


def is_bool(value: object) -> bool:
    return isinstance(value, bool)


@dataclass(frozen=True)
class NmsKey:
    """A key of an NMS config: its ``name`` and, where the key check reads its type, ``fits`` and what is
    ``expected`` in words (a key without ``fits`` is held to the export by a check of its own)."""

    name: str
    fits: Callable[[object], bool] | None = None
    expected: str = ""


# The keys the Model Zoo's NMS configs share, each typed where the key check reads it
# (hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/yolov5s_nms_config.json, nms_config_yolox_tiny.json,
# mobilenet_ssd_nms_postprocess_config.json, yolov11n_nms_config.json); each family lists its own in its order.
SCORES_TH = NmsKey("nms_scores_th", is_fraction, "a number from 0 to 1")
IOU_TH = NmsKey("nms_iou_th", is_fraction, "a number from 0 to 1")
MAX_PROPOSALS = NmsKey("max_proposals_per_class", is_count, "an integer of at least 1")
IMAGE_DIMS = NmsKey("image_dims")
CLASSES = NmsKey("classes")
BACKGROUND_REMOVAL = NmsKey("background_removal", is_bool, "true or false")
BACKGROUND_INDEX = NmsKey("background_removal_index", lambda v: is_count(v) or v == 0, "an integer of at least 0")
BBOX_DECODERS = NmsKey("bbox_decoders")
