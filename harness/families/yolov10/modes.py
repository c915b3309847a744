"""The doctor modes a user of YOLOv10 heads meets beyond every family's (:mod:`harness.doctor.modes`): none yet
(no shipped YOLOv10 export to inject them into)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.doctor.mode import Mode


def shared_gaps() -> Mapping[str, str]:
    return {}


def own_modes() -> tuple[Mode, ...]:
    return ()
