"""HailoRT backend: a compiled HEF run on a Hailo device through hailo_platform (HailoRT's Python API).

hailo_platform is imported only when a :class:`HailoRTRunner` is made; without it the runner raises
:class:`HailoRTMissingError` saying where to get it and that the emulator backend is the alternative.
"""

from harness.backends.hailort.errors import (
    DeviceFailureError,
    HailoRTError,
    HailoRTMissingError,
    HefInvalidError,
    HefNotCompatibleError,
    InferenceTimeoutError,
)
from harness.backends.hailort.runner import Api, HailoRTRunner, hardware_skip_reason

__all__ = [
    "Api",
    "DeviceFailureError",
    "HailoRTError",
    "HailoRTMissingError",
    "HailoRTRunner",
    "HefInvalidError",
    "HefNotCompatibleError",
    "InferenceTimeoutError",
    "hardware_skip_reason",
]
