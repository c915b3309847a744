"""HailoRT failures as harness errors: each names the HEF, the device, what happened and what to do.

hailo_platform raises Python classes that ``ExceptionWrapper.create_exception_from_status`` picks by
libhailort status (hailort: hailort/libhailort/bindings/python/platform/hailo_platform/pyhailort/pyhailort.py).
They live in ``hailo_platform.pyhailort.pyhailort``; the package itself exports only ``HailoRTException``
(hailort: .../platform/hailo_platform/__init__.py). Names differ between versions: 4.18 has
``HailoRTPCIeDriverException`` and no ``HailoRTHEFNotCompatibleWithDevice``; 5.1 adds both
``HailoRTHEFNotCompatibleWithDevice`` and ``HailoRTDriverOperationFailedException`` (the PCIe name kept
as an alias). Every status without a class of its own arrives as the base ``HailoRTException`` with
the status name in its message, ``libhailort failed with error: <code> (<HAILO_STATUS>)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TypeVar

from harness.core.errors import HarnessError

T = TypeVar("T")

DEVELOPER_ZONE = "https://hailo.ai/developer-zone/"


class HailoRTError(HarnessError):
    """HailoRT could not run a HEF; the message says which HEF, on which device, and what to do."""


class HailoRTMissingError(HailoRTError):
    """hailo_platform (HailoRT's Python wheel) is not installed or cannot be imported."""


class HefInvalidError(HailoRTError):
    """HailoRT rejects the file as a HEF."""


class HefNotCompatibleError(HailoRTError):
    """The HEF was compiled for another device architecture."""


class DeviceFailureError(HailoRTError):
    """The device or its driver failed, is missing or is in use."""


class InferenceTimeoutError(HailoRTError):
    """Inference timed out on every try."""


@dataclass(frozen=True)
class Failure:
    """Where a HailoRT call failed: the HEF, the device(s) asked for, HailoRT's version and the step."""

    hef: str
    device: str
    version: str
    action: str


# Status names that arrive in a base HailoRTException's message and mean the device, not the HEF
# (hailort: hailort/libhailort/include/hailo/hailort.h, HAILO_STATUS__X: 73 HAILO_DEVICE_IN_USE,
# 74 HAILO_OUT_OF_PHYSICAL_DEVICES, 76 HAILO_INVALID_DRIVER_VERSION; 26 HAILO_INVALID_HEF, 36
# HAILO_DRIVER_OPERATION_FAILED (HAILO_DRIVER_FAIL in 4.18) and 93 HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE
# have classes of their own where the version defines them).
_DEVICE_STATUSES = {
    "HAILO_DEVICE_IN_USE": "the device is in use by another process: stop it (hailortcli monitor shows who) or pick "
    "another device",
    "HAILO_OUT_OF_PHYSICAL_DEVICES": "no Hailo device found: none is connected and free, or none matches the device "
    "ids given; `hailortcli scan` lists what HailoRT sees",
    "HAILO_INVALID_DRIVER_VERSION": "the PCIe driver and the HailoRT library differ in version: install the driver "
    "of the same HailoRT version",
}


def _classes(pyhailort: ModuleType, *names: str) -> tuple[type[BaseException], ...]:
    """The exception classes of ``names`` that this HailoRT version defines."""
    found = (getattr(pyhailort, name, None) for name in names)
    return tuple(c for c in found if isinstance(c, type) and issubclass(c, BaseException))


def _is(error: BaseException, pyhailort: ModuleType, class_names: tuple[str, ...], statuses: tuple[str, ...]) -> bool:
    """``error`` is one of ``class_names``, or a base HailoRTException naming one of ``statuses``
    (the form an older HailoRT gives a status it has no class for)."""
    return isinstance(error, _classes(pyhailort, *class_names)) or any(s in str(error) for s in statuses)


def translate(error: BaseException, pyhailort: ModuleType, where: Failure) -> HailoRTError | None:
    """A hailo_platform exception -> the harness error for it; None if ``error`` is not HailoRT's."""
    base = _classes(pyhailort, "HailoRTException")
    if not base or not isinstance(error, base):
        return None
    detail = f"{type(error).__name__}: {error}"
    head = f"HEF {where.hef!r} on {where.device} (HailoRT {where.version}), {where.action}"
    if _is(error, pyhailort, ("HailoRTInvalidHEFException",), ("HAILO_INVALID_HEF",)):
        return HefInvalidError(
            f"{head}: HailoRT rejects the HEF as invalid ({detail}); check the file is complete "
            "(`hailo-harness inspect` reads its header and checksum) and compiled by a Dataflow Compiler "
            f"that HailoRT {where.version} supports"
        )
    if _is(error, pyhailort, ("HailoRTHEFNotCompatibleWithDevice",), ("HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE",)):
        return HefNotCompatibleError(
            f"{head}: the HEF was compiled for another device ({detail}); compile it for this device's "
            "architecture (hw_arch hailo8, hailo8l, hailo10h, ...) or run it on a matching device"
        )
    driver = ("HailoRTDriverOperationFailedException", "HailoRTPCIeDriverException")
    if _is(error, pyhailort, driver, ("HAILO_DRIVER_OPERATION_FAILED", "HAILO_DRIVER_FAIL")):
        return DeviceFailureError(
            f"{head}: the Hailo driver failed ({detail}); see `dmesg | grep hailo`, check the PCIe driver "
            f"matches HailoRT {where.version}, then reset the device or reboot"
        )
    status = next((name for name in _DEVICE_STATUSES if name in str(error)), None)
    if status is not None:
        return DeviceFailureError(f"{head}: {detail}; {_DEVICE_STATUSES[status]}")
    return HailoRTError(f"{head}: {detail}; see hailort.log in the working directory for HailoRT's own account")


def is_timeout(error: BaseException, pyhailort: ModuleType) -> bool:
    """Whether ``error`` is HailoRT's timeout (``HAILO_TIMEOUT`` -> ``HailoRTTimeout``)."""
    return isinstance(error, _classes(pyhailort, "HailoRTTimeout"))


def guarded(call: Callable[[], T], pyhailort: ModuleType, where: Failure) -> T:
    """``call()``, with HailoRT's exceptions raised as harness errors."""
    try:
        return call()
    except Exception as error:
        mapped = translate(error, pyhailort, where)
        if mapped is None:
            raise
        raise mapped from error
