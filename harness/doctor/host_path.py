"""A detection path with host code around it (the doctor's image and detection mistakes)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.core.detections import (
    Detections,
)
from harness.pipeline.detect import (
    DetectionPath,
    FrameResult,
)


class HostPath:
    """A detection path with host code around it: ``before`` changes each image before the path
    sees it, ``after`` the detections (original-image pixels) it returns. Its cache variant is the
    inner path's plus ``mistake``."""

    def __init__(
        self,
        inner: DetectionPath,
        mistake: str,
        before: Callable[[np.ndarray], np.ndarray] | None = None,
        after: Callable[[Detections, tuple[int, int]], Detections] | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.emulated = inner.emulated
        self.model_path = inner.model_path
        self.model_sha256 = inner.model_sha256
        self.variant = f"{inner.variant}+{mistake}"
        self.settings = inner.settings
        self.input_hw = inner.input_hw
        self.model_names = inner.model_names
        self._before, self._after = before, after

    @property
    def fps(self) -> float | None:
        return self.inner.fps

    def detect(self, image: np.ndarray) -> FrameResult:
        frame = self.inner.detect(self._before(image) if self._before else image)
        if self._after is None:
            return frame
        return FrameResult(self._after(frame.detections, image.shape[:2]), frame.cells)
