"""What to do about each mistake a diagnosis names by its misreading: the fix of every name a reproduction can
give (:data:`harness.conformance.words.REPRODUCED_NAMES`), and those the conformance rules share."""

from __future__ import annotations

from collections.abc import Mapping

from harness.conformance import words as misreadings

# hailort: hailort/libhailort/include/hailo/hailort.h, HAILO_FORMAT_ORDER_FCR and NHWC: [N, H, W, C] on the host
FIX_CHANNEL_LAST = "read FCR outputs channel-last, exactly like NHWC (HailoRT hands both to the host as [N, H, W, C])"
# ultralytics: ultralytics/engine/exporter.py (export_hailo: YOLO26's output layers a16_w16);
# hailort: hailort/libhailort/include/hailo/hailort.h (HAILO_FORMAT_TYPE_UINT16: two bytes a value)
FIX_SIXTEEN_BIT = (
    "read 16-bit outputs as uint16 (their vstream info says UINT16), or ask HailoRT for float32 and let it dequantize"
)
FIX_SIGMOID_ONCE = (
    "apply the sigmoid once: class outputs whose limvals lie inside [0, 1] (see hailo-harness inspect) hold "
    "probabilities; decode them with classes_are_probabilities=True"
)
FIX_ANCHORS = (
    "take config.anchors as given: per stride, ascending, each anchor's (width, height) in input pixels, the "
    "export's own (hailo-harness inspect shows them)"
)
FIX_SSD = (
    "decode each anchor's regression values as config.ssd says: ty, tx, th, tw at its indices, the centre "
    "offsets divided by centers_scale_factor and the log sizes by bbox_dimensions_scale_factor, each anchor "
    "(width, height) as fractions of the input"
)
# What to do about each misreading a host decoder is reproduced with.
REPRODUCED_FIXES: Mapping[str, str] = {
    misreadings.SIXTEEN_BIT_READ_AS_EIGHT: FIX_SIXTEEN_BIT,
    misreadings.FCR_READ_CHANNEL_FIRST: FIX_CHANNEL_LAST,
    misreadings.READ_CHANNEL_FIRST: (
        "read every raw output channel-last, (H, W, C): HailoRT hands NHWC and FCR outputs to the host as "
        "[N, H, W, C] (channel-first, NCHW, is the ONNX export's layout)"
    ),
    # ultralytics: ultralytics/nn/modules/block.py, ``DFL``: the box map viewed (4, reg_max): side-major
    misreadings.DFL_BINS_INTERLEAVED: (
        "read a box map's 4 x reg_max channels side-major: the reg_max bins of the left distance first, then "
        "top, right and bottom"
    ),
    # hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp (each anchor's 5 + nc entries contiguous)
    misreadings.ANCHORED_READ_CLASS_MAJOR: (
        "read an anchored map anchor-major: anchor a's tx, ty, tw, th, objectness and nc class scores are "
        "channels a x (5 + nc) onwards"
    ),
    misreadings.SIGMOID_APPLIED_TWICE: FIX_SIGMOID_ONCE,
    misreadings.OBJECTNESS_MISSING: (
        "score each entry objectness x class (YOLOv5/YOLOv7, YOLOX): a high class score under a low objectness "
        "is no detection"
    ),
    misreadings.ANCHOR_GROUPS_REVERSED: FIX_ANCHORS,
    misreadings.ANCHORS_HEIGHT_WIDTH: FIX_ANCHORS,
    misreadings.DEFAULT_ANCHORS_TAKEN: FIX_ANCHORS,
    # hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp (extract_bbox_detections, extract_bbox_classes)
    misreadings.SSD_CODING_X_FIRST: FIX_SSD,
    misreadings.SSD_SCALE_FACTORS_LEFT_OUT: FIX_SSD,
    misreadings.SSD_ANCHORS_HEIGHT_WIDTH: FIX_SSD,
    misreadings.SSD_BACKGROUND_AS_CLASS: (
        "leave the SSD config's background class out of the detections (the first or the last of each anchor's "
        "class values); where it is the first, every class id after it is one lower"
    ),
    # Megvii-BaseDetection/YOLOX: yolox/models/yolo_head.py (``decode_outputs``: ``exp(wh) * stride``);
    # tensorflow/models: research/object_detection/box_coders/faster_rcnn_box_coder.py (``_decode``: ``exp(tw) * wa``)
    misreadings.SIZES_WITHOUT_THE_EXP: (
        "size each box by the exp of its raw width and height codes (YOLOX: exp(t_wh) x stride; SSD: "
        "exp(t_wh / bbox_dimensions_scale_factor) x the anchor's width and height)"
    ),
    # hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp (``extract_bbox_classes``: no activation)
    misreadings.SSD_BACKGROUND_AS_FIRST_CLASS: (
        "read an anchor's classes after the SSD config's background class: with the background first, class k of "
        "the model is class value k + 1"
    ),
    misreadings.SSD_SCORES_SOFTMAXED: (
        "read an SSD HEF's class values as the scores they are (the sigmoid compiled into the HEF, as the model "
        "scores each class); no softmax over an anchor's classes"
    ),
    # hailort: hailort/include/hailo/quantization.hpp (dequantize_output)
    misreadings.QUANT_INFO_LEFT_OUT: (
        "dequantize a UINT8/UINT16 output through its quant info, (code - zero_point) x scale, before reading it"
    ),
    misreadings.BOX_CHANNELS_READ_Y_FIRST: (
        "read a box map x first: distances left, top, right, bottom (YOLOv8/YOLO11, YOLO26), tx, ty, tw, th "
        "(YOLOv5/YOLOv7, YOLOX)"
    ),
    misreadings.CLASSES_TAKEN_AS_PROBABILITIES: (
        "put class outputs that hold logits (quant limvals or values outside [0, 1]) through one sigmoid"
    ),
    misreadings.HEADS_PAIRED_BY_OUTPUT_ORDER: (
        "pair each box head with the class (and objectness) head of the same grid size, never by output name "
        "or list order"
    ),
    misreadings.ANCHOR_GROUPS_BY_OUTPUT_ORDER: FIX_ANCHORS,
    # hailort: hailort/include/hailo/hailort.h (hailo_bbox_float32_t: y_min, x_min, y_max, x_max)
    misreadings.BOXES_WRITTEN_Y_FIRST: (
        "return boxes x first (x_min, y_min, x_max, y_max); only HailoRT's NMS records are y first"
    ),
    # ultralytics/yolov5: models/yolo.py (Detect.forward)
    misreadings.CENTRES_AS_YOLOV3: "compute a YOLOv5/YOLOv7 centre as (2 sigmoid(t) - 0.5 + cell) x stride",
    misreadings.CENTRES_HALF_CELL_UP_LEFT: (
        "put each anchor point at its cell's centre, (column + 0.5, row + 0.5) x stride, where the family's "
        "box coding does (YOLOv8/YOLO11, YOLO26, YOLOv10, SSD)"
    ),
    misreadings.CENTRES_HALF_CELL_DOWN_RIGHT: (
        "add no half cell where the family's box coding has none: YOLOX's centre is (t + cell) x stride, "
        "YOLOv5's (2 t - 0.5 + cell) x stride"
    ),
}
