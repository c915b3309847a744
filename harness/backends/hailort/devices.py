"""Which Hailo devices a process opens where several are given: one pytest-xdist worker per device."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.core.errors import HarnessError

_WORKER = re.compile(r"gw(\d+)")  # pytest-xdist names its workers gw0, gw1, ... (PYTEST_XDIST_WORKER)


def worker_devices(devices: Sequence[str], worker: str | None) -> tuple[str, ...]:
    """The devices a process opens: all of them as one virtual device outside pytest-xdist (``worker``
    None) or with one device given; worker ``gwN`` the N-th device alone, so that no two workers open
    the same device. More workers than devices is refused (a device is opened by one process)."""
    found = _WORKER.fullmatch(worker) if worker else None
    if len(devices) < 2 or found is None:
        return tuple(devices)
    index = int(found.group(1))
    if index >= len(devices):
        raise HarnessError(
            f"--hailo-device {','.join(devices)}: pytest-xdist worker {worker} has no device of its own "
            f"({len(devices)} devices); expected one --hailo-device per worker (pytest -n {len(devices)})"
        )
    return (devices[index],)
