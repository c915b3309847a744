"""Host code around what the harness runs: a detection path with image and detection mistakes around
it, and a runner that lists its outputs in another order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from harness.backends.base import InputSpec, Runner, RunnerBase
from harness.core.detections import (
    Detections,
)
from harness.core.errors import SpecError
from harness.core.specs import OutputSpec
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
        self.model_file = inner.model_file
        self.model_sha256 = inner.model_sha256
        self.variant = f"{inner.variant}+{mistake}"
        self.settings = inner.settings
        self.input_hw = inner.input_hw
        self.model_names = inner.model_names
        self.runtime = inner.runtime
        self.score_ceiling = inner.score_ceiling
        self._before, self._after = before, after

    @property
    def fps(self) -> float | None:
        return self.inner.fps

    def detect(self, image: np.ndarray) -> FrameResult:
        frame = self.inner.detect(self._before(image) if self._before else image)
        if self._after is None:
            return frame
        return FrameResult(self._after(frame.detections, image.shape[:2]), frame.cells)


class ListedRunner(RunnerBase):
    """A runner whose outputs are listed in ``order`` (as another compiler run may list them)."""

    def __init__(self, runner: Runner, order: Sequence[str]) -> None:
        specs = runner.output_specs
        if sorted(order) != sorted(specs):
            raise SpecError(f"output order {list(order)}: expected the runner's outputs {sorted(specs)}")
        self._runner, self._order = runner, tuple(order)

    @property
    def score_ceiling(self) -> float | None:
        return getattr(self._runner, "score_ceiling", None)

    @property
    def label(self) -> str:
        return f"{self._runner.label}, outputs listed {list(self._order)}"

    @property
    def input_specs(self) -> Mapping[str, InputSpec]:
        return self._runner.input_specs

    @property
    def output_specs(self) -> dict[str, OutputSpec]:
        specs = self._runner.output_specs
        return {name: specs[name] for name in self._order}

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs = self._runner.infer(feed)
        return {name: outputs[name] for name in self._order}
