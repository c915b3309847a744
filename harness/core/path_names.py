"""The names of the detection paths: which model runs where. A result, a baseline file and a gate
carry one of these; nothing else says which backend produced them."""

from __future__ import annotations

from enum import Enum

ONNX = "onnx"  # the float export in onnxruntime: the reference
EMULATED_HAILO = "emulated-hailo"  # the export as an emulated HEF on the CPU
HAILO = "hailo"  # a HEF on a Hailo device
# The Dataflow Compiler's emulator on an optimized HAR: float with the model script's changes, quantized.
DFC_FP_OPTIMIZED, DFC_QUANTIZED = "dfc-fp-optimized", "dfc-quantized"
DEVICE_PATHS = (EMULATED_HAILO, HAILO, DFC_FP_OPTIMIZED, DFC_QUANTIZED)  # paths fed like a HEF: uint8 NHWC 0-255


class PathKind(str, Enum):
    """What made a path's outputs: decided once, where the path is built (its backend's descriptor),
    and carried into its result and every report. Only a ``DEVICE`` path is labelled hardware."""

    FLOAT = "float"  # the float export on the host: the reference
    EMULATED = "emulated"  # a Hailo model emulated on the CPU (an emulated HEF, the DFC's emulator)
    DEVICE = "device"  # a HEF on a Hailo device
    REPLAYED = "replayed"  # outputs an earlier path recorded, served again (that path's kind is the recording's)


class EmulationStage(str, Enum):
    """The DFC emulator's views of an optimized HAR: float with the model script's changes, and quantized."""

    FP_OPTIMIZED = "fp_optimized"
    QUANTIZED = "quantized"


# How a replayed path's runtime begins (backends/replay): its outputs were recorded before, not made now.
REPLAYED_FROM = "replayed from "
