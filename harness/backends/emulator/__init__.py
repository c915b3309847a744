"""Emulator backend: an ONNX quantized by onnxruntime into an emulated HEF, run on the CPU (emulation, not a device)."""

from harness.backends.emulator.build import DEFAULT_CACHE_DIR, EmulatedHef, build_emulated_hef, check_export
from harness.backends.emulator.options import CalibrationMethod, EmulatorOptions
from harness.backends.emulator.runner import EmulatorRunner

__all__ = [
    "DEFAULT_CACHE_DIR",
    "CalibrationMethod",
    "EmulatedHef",
    "EmulatorOptions",
    "EmulatorRunner",
    "build_emulated_hef",
    "check_export",
]
