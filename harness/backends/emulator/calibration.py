"""The frames fed to onnxruntime's calibrators, letterboxed (grey 114) to the input size as
evaluation prepares frames, uint8 NHWC as a HEF takes them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from onnxruntime.quantization import CalibrationDataReader

from harness.inputs.preprocess import letterbox, load_image


class CalibrationFrames(CalibrationDataReader):
    """Feeds ``{input_name: uint8 (1, H, W, 3)}`` per image, each loaded and letterboxed when asked for."""

    def __init__(self, paths: Sequence[Path], input_name: str, input_hw: tuple[int, int]) -> None:
        self._paths = tuple(paths)
        self._input_name = input_name
        self._input_hw = input_hw
        self._next: Iterator[Path] = iter(self._paths)

    def get_next(self) -> dict[str, np.ndarray] | None:
        path = next(self._next, None)
        if path is None:
            return None
        frame, _ = letterbox(load_image(path), self._input_hw)
        return {self._input_name: frame[None]}

    def __len__(self) -> int:
        return len(self._paths)
