"""Which Hailo devices ran a HEF and the firmware on each, as HailoRT's control API reports them: the
facts a device path's results record they were made on (``device``, ``firmware``).

hailo_platform 4.23.0 and 5.2.0 alike (hailort: hailort/libhailort/bindings/python/platform/hailo_platform/
pyhailort/pyhailort.py): ``VDevice.get_physical_devices()`` -> a ``Device`` per physical device id (each
opened beside the virtual device, released after use: ``Device.release``); ``Device.device_id`` (PCIe
BDF, an IP address or "Integrated"); ``Device.control.identify()`` -> ``BoardInformation`` with
``firmware_version`` (a ``HailoFirmwareVersion``: ``major``, ``minor``, ``revision``), ``is_release``,
``device_architecture`` (``DeviceArchitectureTypes``, printed by its name) and ``serial_number``
(NUL-padded; empty where the board was never configured).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

UNKNOWN = "unknown"


@dataclass(frozen=True)
class DeviceIdentity:
    """One physical device: its id, its architecture and serial number where the board has them, and
    its firmware version (``4.23.0``; ``4.23.0 (develop)`` for a develop build), or why it is unknown."""

    device_id: str
    architecture: str
    serial: str
    firmware: str

    @property
    def words(self) -> str:
        """``0000:01:00.0 (HAILO8, serial HLLWM2B214900345)``: what a reviewer calls the device."""
        known = [part for part in (self.architecture, f"serial {self.serial}" if self.serial else "") if part]
        return f"{self.device_id} ({', '.join(known)})" if known else self.device_id


def _field(value: object) -> str:
    """A board information string as HailoRT prints it: NUL padding and blanks dropped."""
    return str(value).rstrip("\x00").strip()


def firmware_words(board: Any) -> str:
    """``BoardInformation.firmware_version`` as ``major.minor.revision``, marked ``(develop)`` where
    the firmware is not a release build (``BoardInformation.is_release``)."""
    version = board.firmware_version
    words = f"{int(version.major)}.{int(version.minor)}.{int(version.revision)}"
    return words if board.is_release else f"{words} (develop)"


def identify(device: Any) -> DeviceIdentity:
    """One opened ``Device`` identified through its control API; an identify that fails leaves the
    firmware ``unknown (<why>)`` and is logged, so that the run goes on and its record says so."""
    device_id = _field(device.device_id)
    try:
        board = device.control.identify()
    except Exception as error:  # a device that does not answer: its firmware is not known, not guessed
        log.warning("Hailo device %s: identify failed (%s: %s)", device_id, type(error).__name__, error)
        return DeviceIdentity(device_id, "", "", f"{UNKNOWN} (identify failed: {type(error).__name__})")
    return DeviceIdentity(
        device_id, _field(board.device_architecture), _field(board.serial_number), firmware_words(board)
    )


def identify_all(vdevice: Any) -> tuple[DeviceIdentity, ...]:
    """Every physical device of an opened ``VDevice``, each released once identified; none where this
    HailoRT cannot open them beside the virtual device (logged)."""
    try:
        devices = vdevice.get_physical_devices()
    except Exception as error:
        log.warning("Hailo devices: cannot open them to identify (%s: %s)", type(error).__name__, error)
        return ()
    found = []
    for device in devices:
        try:
            found.append(identify(device))
        finally:
            device.release()
    return tuple(found)


def device_facts(identities: Sequence[DeviceIdentity]) -> tuple[tuple[str, str], ...]:
    """The ``device`` and ``firmware`` facts (harness.verdict.changes.FACTS) of the devices that ran a
    path: each device in words; the one firmware version where all run the same, else each device's."""
    if not identities:
        return ()
    versions = dict.fromkeys(i.firmware for i in identities)
    firmware = (
        next(iter(versions)) if len(versions) == 1 else ", ".join(f"{i.device_id} {i.firmware}" for i in identities)
    )
    return (("device", ", ".join(i.words for i in identities)), ("firmware", firmware))
