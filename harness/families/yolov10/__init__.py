"""YOLOv10: Ultralytics' ``v10Detect``, whose one-to-one head (``one2one_cv2/one2one_cv3``) is exported end to end:
per stride a box map of 4 x reg_max 16 DFL bins and a class map, then the top-k of the sigmoided class scores,
``[1, max_det, 6]`` rows, no NMS (ultralytics: ultralytics/nn/modules/head.py, ``v10Detect``, ``Detect.forward``,
``Detect.postprocess``). HailoRT has no op for that top-k (its YOLOv8 op NMSes): its HEF ends at the head
convolutions and the sigmoid and the top-k run on the host, as Ultralytics compiles an end-to-end head
(ultralytics: ultralytics/engine/exporter.py, ``export_hailo``: the ``one2one_cv2``/``one2one_cv3`` convolutions
as end nodes, no NMS config, ``metadata.yaml`` ``nms: false``)."""

from harness.core.head_family import HeadFamily
from harness.families.descriptor import FamilyDescriptor

DESCRIPTOR = FamilyDescriptor(
    HeadFamily.YOLOV10, "YOLOv10", __name__, sigmoid_compiled=False, dfl_boxes=True, end_to_end=True
)
