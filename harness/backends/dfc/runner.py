"""An optimized HAR in the Dataflow Compiler's emulator, one stage at a time, as a
:class:`~harness.backends.base.Runner`: fed like a HEF (uint8 NHWC RGB 0-255; the model script's
normalization divides by 255 inside), outputs as the host would see a HEF's FLOAT32 ones.

- ``fp_optimized``: ``InferenceContext.SDK_FP_OPTIMIZED``, the float model with the model script's
  changes (normalization, sigmoid, NMS); ``quantized``: ``SDK_QUANTIZED``, the quantized model,
  outputs dequantized.
- ``ClientRunner(har=...)``, then ``with runner.infer_context(ctx) as c: runner.infer(context=c,
  dataset=...)``, which returns the HAR's outputs as an unnamed list in its output order
  (hailo_model_zoo: hailo_model_zoo/core/infer/runner_infer.py); they are named ``output0``, ...
  here. Several ``(N, H, W, C)`` float arrays are the raw head maps (the head layout pairs them by grid
  and channels, not by name); one ``(N, classes, 5, max_proposals)`` array is the output of an
  ``nms_postprocess`` in the model script, per class ``[y_min, x_min, y_max, x_max, score]``
  normalised with zero-score padding, as the Model Zoo reads it
  (hailo_model_zoo: hailo_model_zoo/core/postprocessing/detection/detection_common.py, tf_postproc_nms).
  Which of the two a HAR has is seen from one probe frame when the runner opens.

The emulation context is entered once per runner and held until it closes: the DFC builds its
emulation graph when the context is entered.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from harness.backends.base import InputSpec, RunnerBase
from harness.backends.dfc.compiler import DfcError, load_sdk
from harness.core.documents import Fields, read_json
from harness.core.errors import HarnessError, SpecError
from harness.core.path_names import EmulationStage
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec
from harness.formats.nms_buffer import BBOX_PARAMS

INPUT_NAME = "input"
HAR_SUFFIX = "_optimized.har"  # compile_hef writes <stem>_optimized.har beside <stem>_nms_config.json
_PROBE_GREY = 114  # the letterbox colour: a probe frame as evaluation would pad it

T = TypeVar("T")


_INFERENCE_CONTEXTS = {EmulationStage.FP_OPTIMIZED: "SDK_FP_OPTIMIZED", EmulationStage.QUANTIZED: "SDK_QUANTIZED"}


def output_specs(arrays: tuple[np.ndarray, ...], source: str) -> dict[str, OutputSpec]:
    """The specs of one emulated batch's outputs: raw head maps or one NMS output (see the module); the
    head layout says later whether the maps form one (:func:`harness.decode.layout.layout_of`)."""
    shapes = [a.shape for a in arrays]
    if len(arrays) == 1 and arrays[0].ndim == 4 and arrays[0].shape[2] == BBOX_PARAMS:
        _, classes, _, max_proposals = arrays[0].shape
        nms = NmsShape(int(classes), int(max_proposals))
        return {
            "output0": OutputSpec("output0", arrays[0].shape[1:], FormatOrder.NMS_BY_CLASS, FormatType.FLOAT32, nms=nms)
        }
    if len(arrays) > 1 and all(a.ndim == 4 for a in arrays):
        return {
            f"output{i}": OutputSpec(f"output{i}", a.shape[1:], FormatOrder.NHWC, FormatType.FLOAT32)
            for i, a in enumerate(arrays)
        }
    raise SpecError(
        f"{source}: the emulator returned outputs of shapes {shapes}, expected raw head maps (N, H, W, C) "
        f"or one NMS output (N, classes, {BBOX_PARAMS}, max_proposals)"
    )


def compiled_nms_thresholds(har: str | os.PathLike[str]) -> tuple[float, float] | None:
    """``(nms_scores_th, nms_iou_th)`` of the NMS config that ``hailo-harness compile`` wrote beside
    ``har`` (``<stem>_nms_config.json`` for ``<stem>_optimized.har``); None where there is none."""
    har = Path(har)
    if not har.name.endswith(HAR_SUFFIX):
        return None
    config = har.with_name(har.name[: -len(HAR_SUFFIX)] + "_nms_config.json")
    if not config.is_file():
        return None
    fields = Fields(read_json(config, "NMS config beside the HAR"), os.fspath(config))
    return fields.number("nms_scores_th", lo=0, hi=1), fields.number("nms_iou_th", lo=0, hi=1)


def check_compiled_thresholds(har: str | os.PathLike[str], score_threshold: float, iou_threshold: float) -> None:
    """A HAR's NMS keeps what its compiled thresholds keep: where its NMS config lies beside it, they
    must be the evaluation's, or every stage would differ from the float model by the thresholds alone."""
    compiled = compiled_nms_thresholds(har)
    if compiled is not None and compiled != (score_threshold, iou_threshold):
        raise HarnessError(
            f"HAR {os.fspath(har)}: compiled with NMS score / IoU thresholds {compiled[0]:g} / {compiled[1]:g} (its "
            f"NMS config beside it), the evaluation is at {score_threshold:g} / {iou_threshold:g}: the stages would "
            f"not be comparable; evaluate at --score-threshold {compiled[0]:g} --iou-threshold {compiled[1]:g}, or "
            "compile with the evaluation's thresholds"
        )


class HarRunner(RunnerBase):
    """One emulation stage of an optimized HAR (``hailo-harness compile`` writes it beside the HEF).

    ``input_hw``: the model input's ``(H, W)`` (the ONNX's). ``sdk``: the ``hailo_sdk_client`` module,
    imported when not given.
    """

    emulated = True

    def __init__(
        self,
        har: str | os.PathLike[str],
        stage: EmulationStage | str,
        input_hw: tuple[int, int],
        sdk: ModuleType | None = None,
    ) -> None:
        self.har = Path(har)
        self.stage = EmulationStage(stage)
        self._source = f"HAR {os.fspath(self.har)!r} ({self.stage.value} emulation)"
        if not self.har.is_file():
            raise HarnessError(f"{self._source}: no such file, expected the optimized HAR (hailo-harness compile)")
        self._sdk = sdk if sdk is not None else load_sdk()
        self._input = InputSpec(INPUT_NAME, (*input_hw, 3), FormatOrder.NHWC, FormatType.UINT8)
        self._stack = ExitStack()
        try:
            client = self._call("load", lambda: self._sdk.ClientRunner(har=os.fspath(self.har)))
            context = getattr(self._sdk.InferenceContext, _INFERENCE_CONTEXTS[self.stage])
            self._context = self._call(
                "infer_context", lambda: self._stack.enter_context(client.infer_context(context))
            )
            self._client = client
            probe = np.full((1, *input_hw, 3), _PROBE_GREY, dtype=np.uint8)
            self._output_specs = output_specs(self._arrays(probe), self._source)
        except BaseException:
            self._stack.close()
            raise

    def _call(self, action: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except HarnessError:
            raise
        except Exception as error:
            raise DfcError(f"{self._source}: {action} failed: {type(error).__name__}: {error}") from error

    @property
    def label(self) -> str:
        return f"HAR {self.har.name} in the Dataflow Compiler's {self.stage.value} emulation"

    @property
    def input_specs(self) -> dict[str, InputSpec]:
        return {INPUT_NAME: self._input}

    @property
    def output_specs(self) -> dict[str, OutputSpec]:
        return dict(self._output_specs)

    def _arrays(self, images: np.ndarray) -> tuple[np.ndarray, ...]:
        """``images``: ``(N, H, W, 3)`` RGB 0-255, fed as float32 (the HAR normalizes); the outputs in
        the DFC's order, each with the batch first."""
        batch = np.asarray(images)
        if batch.ndim != 4 or batch.shape[1:] != self._input.shape:
            raise SpecError(
                f"{self._source}: images of shape {batch.shape}, expected (N, {', '.join(map(str, self._input.shape))})"
                " NHWC RGB 0-255"
            )
        outputs: Any = self._call(
            "infer", lambda: self._client.infer(context=self._context, dataset=batch.astype(np.float32))
        )
        arrays = tuple(np.asarray(o) for o in outputs) if isinstance(outputs, (list, tuple)) else (np.asarray(outputs),)
        if any(a.ndim == 0 or a.shape[0] != len(batch) for a in arrays):
            raise SpecError(
                f"{self._source}: outputs of shapes {[a.shape for a in arrays]} for {len(batch)} frames, "
                "expected the batch first"
            )
        return arrays

    def infer_batch(self, feed: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """``{input: (n, H, W, 3)}`` in one call of the DFC's emulator -> one ``{output: array}`` per frame."""
        if set(feed) != {INPUT_NAME}:
            raise SpecError(f"{self._source}: feed has inputs {sorted(feed)}, expected [{INPUT_NAME!r}]")
        arrays = self._arrays(feed[INPUT_NAME])
        if len(arrays) != len(self._output_specs):
            raise SpecError(f"{self._source}: {len(arrays)} outputs, the probe frame gave {len(self._output_specs)}")
        return [{name: a[i] for name, a in zip(self._output_specs, arrays, strict=True)} for i in range(len(arrays[0]))]

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if set(feed) == {INPUT_NAME} and np.asarray(feed[INPUT_NAME]).shape[:1] != (1,):
            raise SpecError(f"{self._source}: infer takes one frame (1, H, W, 3); infer_batch takes several")
        return self.infer_batch(feed)[0]

    def close(self) -> None:
        self._stack.close()
