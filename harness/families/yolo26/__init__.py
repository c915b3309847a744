"""YOLO26: box maps of 4 (reg_max 1) and class maps per stride. Its HEF ends at the head convolutions:
Ultralytics compiles it without the class sigmoid and without an NMS op, both run on the host
(ultralytics: ultralytics/engine/exporter.py, ``export_hailo``). Two heads: one-to-one (top-k, no NMS) and
one-to-many (NMS); their parts are the sub-packages ``one2one`` and ``one2many``."""

from harness.core.head_family import HeadFamily
from harness.families.descriptor import FamilyDescriptor

ONE2ONE = FamilyDescriptor(
    HeadFamily.YOLO26_ONE2ONE, "YOLO26 (one-to-one)", f"{__name__}.one2one", sigmoid_compiled=False, end_to_end=True
)
ONE2MANY = FamilyDescriptor(
    HeadFamily.YOLO26_ONE2MANY, "YOLO26 (one-to-many)", f"{__name__}.one2many", sigmoid_compiled=False
)
