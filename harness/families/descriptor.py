"""What the harness knows of one head family, as one typed object (:class:`FamilyDescriptor`): its facts
as data, and where its parts live. The registry (:mod:`harness.families`) holds one per
:class:`~harness.core.head_family.HeadFamily`; every room asks it instead of comparing families."""

from __future__ import annotations

from dataclasses import dataclass

from harness.core.head_family import HeadFamily

# The rooms a family has a part in: each names a module of the family's folder, which the room loads
# through :func:`harness.families.part` (and only that room: each part imports nothing above its room).
ROOMS = ("onnx", "decode", "emulator", "dfc", "scenes", "checks", "modes")


@dataclass(frozen=True)
class FamilyDescriptor:
    """One head family.

    - ``family``: its member; ``display``: its name in sentences ("YOLOv5/YOLOv7");
    - ``parts``: the package its parts are modules of (one per room of :data:`ROOMS`);
    - ``nms_op``: the kind of HailoRT's NMS op that decodes its HEF (``meta_arch`` of the DFC's
      ``nms_postprocess``; hailort: hailort/libhailort/hef.proto, ``ProtoHEFNmsOp``), ``""`` where none does;
    - ``bbox_only_op``: HailoRT's bbox-only op of the family, ``""`` where it has none (hailort:
      libhailort/src/hef/hef.cpp, ``create_yolov8_bbox_only_op_metadata``, ``create_yolov5_bbox_only_op_metadata``);
    - ``sigmoid_compiled``: the HEF holds the class sigmoid (HailoRT's op reads probabilities);
    - ``anchored``: each box is coded against an anchor box of the model (YOLOv5/YOLOv7 per stride in input
      pixels, SSD per layer as fractions of the input: ``DecodeConfig.anchors``);
    - ``objectness``: a score = objectness x class family;
    - ``dfl_boxes``: its box maps hold 4 x ``regression_length`` DFL bins, which its NMS op softmaxes
      (hailort: hailort/libhailort/hef.proto, ``ProtoHEFYolov8NmsOp.regression_length``);
    - ``config_option``: the option that carries what no graph holds (SSD's ``--ssd-config``), else ``""``;
    - ``cut_at_end_nodes``: its export is cut at end nodes given by name (the Hailo parser's), its finder telling
      their roles (YOLOv8's, by its decode tail); else its heads are found by structure alone, and end nodes
      given for its export must be those;
    - ``end_to_end``: its export's head output is end to end, ``[1, max_det, 6]`` rows of a top-k (no NMS).
    """

    family: HeadFamily
    display: str
    parts: str
    nms_op: str = ""
    bbox_only_op: str = ""
    sigmoid_compiled: bool = True
    anchored: bool = False
    objectness: bool = False
    dfl_boxes: bool = False
    config_option: str = ""
    cut_at_end_nodes: bool = False
    end_to_end: bool = False

    @property
    def host_postprocess(self) -> bool:
        """True where the sigmoid and the selection of boxes run on the host, not inside the HEF."""
        return not self.nms_op

    @property
    def nms_output(self) -> str:
        """The name HailoRT gives the NMS op's output layer (hailort: libhailort/src/hef/hef.cpp,
        ``op_proto.output_pads()[0].name()``; e.g. ``yolov8_nms_postprocess``), ``""`` without an op."""
        return f"{self.nms_op}_nms_postprocess" if self.nms_op else ""
