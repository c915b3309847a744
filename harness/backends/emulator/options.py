"""What an emulated HEF is built with: the calibration, what the compiler would put inside, how outputs arrive."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from harness.core import defaults
from harness.core.errors import HarnessError
from harness.core.settings import SsdConfig
from harness.core.specs import FormatType


class CalibrationMethod(str, enum.Enum):
    """How activation ranges are taken from the calibration images (onnxruntime's calibrators).

    onnxruntime's ``quantize_static`` builds its entropy calibrator with 128 histogram bins and 128
    quantized bins, so the only threshold it tries is the whole range: ENTROPY gives the MinMax
    ranges there (measured with onnxruntime 1.32). PERCENTILE clips at the 0.001 / 99.999 percentiles.
    """

    MINMAX = "minmax"
    ENTROPY = "entropy"
    PERCENTILE = "percentile"


@dataclass(frozen=True)
class EmulatorOptions:
    """Settings of one emulated HEF.

    - ``calibration_count``: how many calibration images are used (the first ones given); the
      Dataflow Compiler's default calibration set size is 64.
    - ``calibration_method``, ``per_channel`` (int8 weights per output channel): onnxruntime static
      quantization, activations uint8, weights int8.
    - ``sigmoid_inside``: a Sigmoid after each class conv, as ``change_output_activation(<cls conv>,
      sigmoid)`` in a model script puts it into the HEF; without it the class outputs are logits.
    - ``nms``: the HailoRT YOLOv8 NMS op after the heads, one HAILO_NMS_BY_CLASS output; it applies
      no sigmoid itself. ``score_threshold``, ``iou_threshold``, ``max_proposals_per_class`` are
      its settings (the Model Zoo's yolov8 NMS config: 0.2, 0.7, 100).
    - ``bbox_only``: in place of the NMS op, the same op compiled ``bbox_decoding_only`` (HailoRT's bbox-only
      op of YOLOv8 or YOLOv5): one FLOAT32 output of every proposal's box and class values, the NMS left to
      the host (:mod:`harness.formats.bbox_only`).
    - ``output_bits``: the raw head outputs' bits on the device: 8, or 16 as Ultralytics compiles
      YOLO26's six output layers (``quantization_param(..., precision_mode=a16_w16)``; here the
      outputs are 16-bit over the range calibrated for them, the weights stay int8).
    - ``output_format``: raw head outputs as device values (UINT8, or UINT16 with 16 bits) or
      dequantized FLOAT32.
    - ``end_nodes``: the head nodes (or tensors) to cut at; ``None`` finds them by structure.
    - ``ssd``: an SSD export's anchors and box coding (its config file): with them alone its heads are
      found, and its NMS op, HailoRT's SSD op, decodes with them.

    Only the calibration images, the model and ``quantization_settings`` decide the quantized model.
    """

    calibration_count: int = defaults.CALIBRATION_COUNT
    calibration_method: CalibrationMethod = CalibrationMethod.MINMAX
    per_channel: bool = False
    sigmoid_inside: bool = False
    nms: bool = False
    bbox_only: bool = False
    score_threshold: float = defaults.SCORE_THRESHOLD
    iou_threshold: float = defaults.IOU_THRESHOLD
    max_proposals_per_class: int = defaults.MAX_PER_CLASS
    output_format: FormatType = FormatType.FLOAT32
    end_nodes: tuple[str, ...] | None = None
    output_bits: int = 8
    ssd: SsdConfig | None = None

    def __post_init__(self) -> None:
        if self.calibration_count < 1:
            raise HarnessError(f"emulator options: calibration_count is {self.calibration_count}, expected >= 1")
        if not isinstance(self.calibration_method, CalibrationMethod):
            raise HarnessError(
                f"emulator options: calibration_method is {self.calibration_method!r}, "
                f"expected one of {[m.value for m in CalibrationMethod]}"
            )
        if self.output_bits not in (8, 16):
            raise HarnessError(f"emulator options: output_bits is {self.output_bits!r}, expected 8 or 16")
        if self.output_format not in (self.device_type, FormatType.FLOAT32):
            raise HarnessError(
                f"emulator options: output_format is {self.output_format!r} with {self.output_bits}-bit outputs, "
                f"expected FormatType.{self.device_type.name} or FLOAT32"
            )
        if self.nms and self.output_format is not FormatType.FLOAT32:
            # hailort: hailort/libhailort/include/hailo/hailort.h (HAILO_NMS_BY_CLASS: float32 records)
            raise HarnessError(
                f"emulator options: output_format is {self.output_format.name} with nms, expected FLOAT32 "
                "(the NMS_BY_CLASS output holds float32 records)"
            )
        if self.bbox_only and self.nms:
            raise HarnessError(
                "emulator options: nms and bbox_only both set, expected one: the bbox-only op is the NMS op "
                "compiled bbox_decoding_only, in its place"
            )
        if self.bbox_only and self.output_format is not FormatType.FLOAT32:
            # hailort: libhailort/src/net_flow/ops/yolov8_bbox_only_post_process.cpp, validate_format_info
            raise HarnessError(
                f"emulator options: output_format is {self.output_format.name} with bbox_only, expected FLOAT32 "
                "(the bbox-only op writes float32 only)"
            )
        for field in ("score_threshold", "iou_threshold"):
            value = getattr(self, field)
            if not 0.0 <= value <= 1.0:
                raise HarnessError(f"emulator options: {field} is {value}, expected a value in [0, 1]")
        if self.max_proposals_per_class < 1:
            raise HarnessError(
                f"emulator options: max_proposals_per_class is {self.max_proposals_per_class}, expected >= 1"
            )
        if self.end_nodes is not None and (isinstance(self.end_nodes, str) or not self.end_nodes):
            raise HarnessError(f"emulator options: end_nodes is {self.end_nodes!r}, expected a tuple of node names")

    @property
    def device_type(self) -> FormatType:
        """The raw head outputs' type on the device."""
        return FormatType.UINT16 if self.output_bits == 16 else FormatType.UINT8

    def quantization_settings(self) -> dict[str, object]:
        """The settings that change the quantized model (part of its cache key)."""
        return {
            "calibration_count": self.calibration_count,
            "calibration_method": self.calibration_method.value,
            "per_channel": self.per_channel,
            "sigmoid_inside": self.sigmoid_inside,
            "end_nodes": list(self.end_nodes) if self.end_nodes is not None else None,
            "output_bits": self.output_bits,
            "ssd_config": None if self.ssd is None else self.ssd.digest,  # the heads it finds, the anchors kept
        }
