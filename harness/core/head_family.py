"""Which detect head a model carries (the one fact that picks its decoder and what its HEF compiles in),
and what each of its outputs is."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class HeadFamily(str, enum.Enum):
    """Which detect head an export carries, and so how its raw maps are laid out and decoded. Each member's
    facts (HailoRT's op, anchors, objectness, what its HEF compiles in) are its
    :class:`~harness.families.descriptor.FamilyDescriptor`, and its parts (head finder, decoder, emulator op, DFC
    script, static checks, conformance scenes, doctor modes) the modules of its folder ``harness/families/<name>/``,
    registered once in :mod:`harness.families`.

    - ``YOLOV8``: YOLOv8/YOLO11, box maps of 4 x reg_max DFL bins, decoded then NMS'd;
    - ``YOLO26_ONE2ONE``: YOLO26's one-to-one head (exported end to end, ``[1, max_det, 6]``): top-k, no NMS;
    - ``YOLO26_ONE2MANY``: YOLO26's one-to-many head (``[1, 4 + nc, anchors]``): box maps of 4, then NMS;
    - ``YOLOV10``: YOLOv10's one-to-one head (exported end to end): 4 x reg_max DFL bins per box, top-k, no NMS;
    - ``YOLOV5``: YOLOv5/YOLOv7's anchor-based head: per stride one map of ``na x (5 + nc)`` channels;
    - ``YOLOX``: YOLOX's anchor-free head: per stride a box map of 4, an objectness map and a class map;
    - ``SSD``: an SSD head: per layer a regression map of ``4 x na`` channels and a class map of ``na x nc``, its
      anchors and box coding given in a config (:class:`~harness.core.settings.SsdConfig`).
    """

    YOLOV8 = "yolov8"
    YOLO26_ONE2ONE = "yolo26-one2one"
    YOLO26_ONE2MANY = "yolo26-one2many"
    YOLOV5 = "yolov5"
    YOLOX = "yolox"
    SSD = "ssd"
    YOLOV10 = "yolov10"


class HeadRole(str, enum.Enum):
    """What one raw output of a detect head holds (:mod:`harness.decode.layout` says which output is which).

    - ``BOX``: 4 x reg_max channels, the sides left, top, right, bottom: distances in cells with
      reg_max 1 (YOLO26), DFL bins otherwise (YOLOv8/YOLO11: reg_max 16);
    - ``CLASS``: nc class scores, logits or (the sigmoid compiled in) probabilities;
    - ``OBJECTNESS``: one score per anchor, for the families that have one in a map of its own;
    - ``ANCHORED``: box, objectness and class channels of every anchor of a stride in one map
      (YOLOv5/YOLOv7: ``na x (5 + nc)`` channels, anchor-major: per anchor x, y, w, h, objectness, then
      the nc class scores; hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp, ``X_INDEX`` ..
      ``CLASSES_START_INDEX``);
    - ``ANCHOR_BOXES``: an SSD layer's regression map, 4 channels per anchor (ty, tx, th, tw in the order the
      config gives), anchor-major (hailort: libhailort/src/net_flow/ops/ssd_post_process.cpp, ``reg_idx``);
    - ``ANCHOR_CLASSES``: an SSD layer's class map, nc channels per anchor, anchor-major (``cls_idx``).
    """

    BOX = "box"
    CLASS = "class"
    OBJECTNESS = "objectness"
    ANCHORED = "anchored"
    ANCHOR_BOXES = "anchor-boxes"
    ANCHOR_CLASSES = "anchor-classes"


@dataclass(frozen=True)
class HeadTensor:
    """One raw head map of an export: ``tensor`` ``[1, channels, grid_h, grid_w]`` produced by node ``node``
    (found by :func:`harness.inputs.onnx_graph.export_heads`; what the maps are together is their
    :class:`~harness.decode.layout.HeadLayout`)."""

    tensor: str
    node: str
    role: HeadRole
    channels: int
    grid: tuple[int, int]
    # per anchor of the stride its (width, height) in input pixels, where the role is ANCHORED; of an SSD
    # layer's regression map (ANCHOR_BOXES), as fractions of the input, its SSD config's
    anchors: tuple[tuple[float, float], ...] = ()
