"""Runs a compiled HEF on a Hailo device through hailo_platform, HailoRT's Python API, one batch at a time.

Written against hailo_platform 4.18 / 4.23 (Hailo-8, Hailo-8L; branch ``hailo8``) and 5.1 (Hailo-10H;
``master``) as published in hailo-ai/hailort, ``hailort/libhailort/bindings/python/platform/hailo_platform/``
(``pyhailort/pyhailort.py``, ``__init__.py``) and ``hailort/libhailort/bindings/python/src/`` (the pybind
layer). hailo_platform is imported here only, when a runner is made.

Two APIs, the same outputs:

- ``vstreams``: ``VDevice`` -> ``ConfigureParams.create_from_hef(hef, interface=HailoStreamInterface.PCIe)``
  -> ``vdevice.configure`` -> ``InputVStreamParams.make`` / ``OutputVStreamParams.make`` -> ``InferVStreams``
  inside ``network_group.activate(...)``, ``.infer({name: frames})``.
- ``infer_model`` (the only one on Hailo-10H): ``vdevice.create_infer_model(path)`` ->
  ``.output(name).set_format_type`` -> ``configure()`` -> ``create_bindings()`` -> ``set_buffer`` ->
  ``configured.run([bindings], timeout_ms)`` -> ``get_buffer()``.

Outputs are described from the HEF's own vstream infos. FLOAT32: HailoRT dequantizes. UINT8: the device's
own values (uint8, or uint16 for 16-bit outputs), each OutputSpec carrying the quant info for the harness to
dequantize. NMS outputs come back in hailo_platform's Python forms, which
:func:`harness.formats.nms_buffer.decode_nms` reads: per class a ``(n, 5)`` array, ``[classes, 5, max]``
with ``tf_nms_format``, or for NMS_BY_SCORE a list of ``Detection`` objects.
"""

from __future__ import annotations

import enum
import importlib.util
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from harness.backends.base import InputSpec, RunnerBase
from harness.backends.hailort.errors import (
    DEVELOPER_ZONE,
    Failure,
    HailoRTError,
    HailoRTMissingError,
    InferenceTimeoutError,
    guarded,
    is_timeout,
    translate,
)
from harness.backends.hailort.identity import DeviceIdentity, device_facts, identify_all
from harness.backends.hailort.in_flight import DeviceQueue
from harness.backends.hailort.vstream_specs import input_spec, numpy_dtype, output_spec
from harness.core.errors import HarnessError, SpecError
from harness.core.specs import FormatOrder, FormatType, OutputSpec

log = logging.getLogger(__name__)

T = TypeVar("T")

_NMS_ORDERS = (FormatOrder.NMS_BY_CLASS, FormatOrder.NMS_BY_SCORE)
# hailo_platform's FormatOrder member (hailort: bindings/python/src/pyhailort.cpp, enum_<hailo_format_order_t>)
_BY_SCORE_MEMBER = "HAILO_NMS_BY_SCORE"


class Api(str, enum.Enum):
    """Which hailo_platform inference API runs the HEF; AUTO takes InferModel where this HailoRT has it."""

    AUTO = "auto"
    VSTREAMS = "vstreams"
    INFER_MODEL = "infer_model"


@dataclass(frozen=True)
class _HailoRT:
    platform: ModuleType  # hailo_platform
    pyhailort: ModuleType  # hailo_platform.pyhailort.pyhailort: the exception classes
    version: str


def load_hailort(hef: str) -> _HailoRT:
    """Import hailo_platform, or say how to get it."""
    try:
        platform = importlib.import_module("hailo_platform")
        pyhailort = importlib.import_module("hailo_platform.pyhailort.pyhailort")
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] != "hailo_platform":
            raise HailoRTMissingError(f"HEF {hef!r}: hailo_platform cannot be imported ({error})") from error
        raise HailoRTMissingError(
            f"HEF {hef!r}: the hailort backend needs hailo_platform, HailoRT's Python wheel, which is not "
            f"installed. Install the hailort wheel for this Python from Hailo's Developer Zone ({DEVELOPER_ZONE}), "
            "the same version as the HailoRT PCIe driver and firmware on this machine (`hailortcli fw-control "
            "identify` prints them). Without HailoRT or a device, use the emulator backend "
            "(--backend emulator: the HEF path emulated from the ONNX, labelled emulated)."
        ) from None
    except Exception as error:  # 4.x raises MissingPyHRTLib / ImportError on a broken or mismatched install
        raise HailoRTMissingError(
            f"HEF {hef!r}: hailo_platform is installed but does not import ({type(error).__name__}: {error}); "
            f"reinstall the hailort wheel matching the driver version from {DEVELOPER_ZONE}"
        ) from error
    return _HailoRT(platform, pyhailort, str(getattr(platform, "__version__", "of unknown version")))


def _unwrap_frame(nms: Any) -> Any:
    """One frame's NMS list: 4.18's InferModel ``get_buffer()`` wraps it in a list of frames
    (``output_raw_buffer_to_nms_format([buffer], ...)``, hailort: pyhailort.py 4.18); 5.1 does not."""
    if isinstance(nms, list) and len(nms) == 1 and isinstance(nms[0], list):
        return nms[0]
    return nms


class _VStreams:
    """InferVStreams inside an activated network group (hailort: pyhailort.py, ``InferVStreams``,
    ``ConfiguredNetwork.activate``)."""

    def __init__(self, hr: ModuleType, vdevice: Any, hef: Any, config: _Config, infos: Sequence[Any]) -> None:
        self.specs = {info.name: output_spec(info, config.format_type, config.nms_order) for info in infos}
        params = hr.ConfigureParams.create_from_hef(hef, interface=hr.HailoStreamInterface.PCIe)
        for group_params in params.values():
            group_params.batch_size = config.batch_size  # ConfigureParams.batch_size (pybind ConfigureNetworkParams)
        network_group = vdevice.configure(hef, params)[0]  # the HEF's first network group, HailoRT's default
        inputs = hr.InputVStreamParams.make(
            network_group, format_type=hr.FormatType.UINT8, timeout_ms=config.timeout_ms
        )
        # AUTO: "the same format returned from the device (usually uint8)" (pyhailort.py, OutputVStreamParams.make)
        out_type = hr.FormatType.FLOAT32 if config.format_type is FormatType.FLOAT32 else hr.FormatType.AUTO
        outputs = hr.OutputVStreamParams.make(network_group, format_type=out_type, timeout_ms=config.timeout_ms)
        self._stack = ExitStack()
        try:
            self._pipeline = self._stack.enter_context(
                hr.InferVStreams(network_group, inputs, outputs, tf_nms_format=config.tf_nms_format)
            )
            self._stack.enter_context(network_group.activate(network_group.create_params()))
        except BaseException:
            self._stack.close()
            raise

    def run(self, name: str, frames: np.ndarray) -> dict[str, Any]:
        """``{output: per-frame sequence}``: arrays ``(n, ...)``, or for NMS a list over frames."""
        results: dict[str, Any] = self._pipeline.infer({name: frames})
        return results

    def close(self) -> None:
        self._stack.close()


class _InferModel:
    """InferModel / ConfiguredInferModel with one Bindings per frame (hailort: pyhailort.py, ``InferModel``,
    ``ConfiguredInferModel.create_bindings``, ``run``, ``Bindings.InferStream.get_buffer``)."""

    def __init__(
        self, hr: ModuleType, vdevice: Any, config: _Config, inputs: Sequence[Any], infos: Sequence[Any]
    ) -> None:
        self._model = vdevice.create_infer_model(config.hef)
        self.specs = {
            info.name: output_spec(
                info, config.format_type, config.nms_order, self._model.output(info.name).quant_infos
            )
            for info in infos
        }
        self._model.set_batch_size(config.batch_size)
        for info in inputs:
            self._model.input(info.name).set_format_type(hr.FormatType.UINT8)
        for name, spec in self.specs.items():
            stream = self._model.output(name)
            if spec.is_nms:
                if spec.format_order is FormatOrder.NMS_BY_SCORE:
                    stream.set_format_order(getattr(hr.FormatOrder, _BY_SCORE_MEMBER))
            else:
                stream.set_format_type(getattr(hr.FormatType, spec.format_type.name))
        self._stack = ExitStack()
        self._configured = self._stack.enter_context(self._model.configure())
        self._tf = config.tf_nms_format
        self._timeout_ms = config.timeout_ms

    def _buffer(self, name: str) -> np.ndarray:
        spec = self.specs[name]
        # BY_SCORE: the host frame in bytes, "with assumption that the buffer type is uint8"
        # (hailort: bindings/python/src/bindings_common.hpp, get_pybind_shape)
        dtype = (
            np.dtype(np.uint8) if spec.format_order is FormatOrder.NMS_BY_SCORE else numpy_dtype(spec.format_type, name)
        )
        return np.empty(tuple(self._model.output(name).shape), dtype=dtype)

    def _read(self, bindings: Any, name: str) -> Any:
        stream = bindings.output(name)
        spec = self.specs[name]
        if not spec.is_nms:
            return stream.get_buffer()
        tf = self._tf and spec.format_order is FormatOrder.NMS_BY_CLASS  # no tf form for BY_SCORE (pyhailort.py)
        return _unwrap_frame(stream.get_buffer(tf_format=tf))

    def _bindings(self, name: str, frames: np.ndarray) -> list[Any]:
        all_bindings = []
        for frame in frames:
            bindings = self._configured.create_bindings()
            bindings.input(name).set_buffer(np.ascontiguousarray(frame))
            for output in self.specs:
                bindings.output(output).set_buffer(self._buffer(output))
            all_bindings.append(bindings)
        return all_bindings

    def run(self, name: str, frames: np.ndarray) -> dict[str, Any]:
        all_bindings = self._bindings(name, frames)
        self._configured.run(all_bindings, self._timeout_ms)
        return self.outputs(all_bindings)

    def outputs(self, all_bindings: Sequence[Any]) -> dict[str, Any]:
        return {output: [self._read(b, output) for b in all_bindings] for output in self.specs}

    @property
    def runs_async(self) -> bool:
        """Whether this HailoRT's ConfiguredInferModel launches a job without waiting (``run_async``)."""
        return hasattr(self._configured, "run_async")

    def submit(self, name: str, frames: np.ndarray, done: Callable[[], None]) -> tuple[Any, list[Any]]:
        """The frames launched on the device, not waited for: the job (its ``wait(timeout_ms)``) and its bindings.
        ``run`` itself is ``run_async`` then ``job.wait`` (hailort 4.23.0 and 5.2.0: hailort/libhailort/bindings/
        python/platform/hailo_platform/pyhailort/pyhailort.py, ``ConfiguredInferModel.run``, ``run_async``,
        ``wait_for_async_ready``, ``get_async_queue_size``; ``AsyncInferJob.wait``); each releases the GIL
        (bindings/python/src/infer_model_api.cpp). ``done`` is called on HailoRT's thread when the job ends."""
        all_bindings = self._bindings(name, frames)
        queue = getattr(self._configured, "get_async_queue_size", None)
        if queue is None or len(frames) <= queue():  # more than the queue holds would time out (pyhailort.py)
            self._configured.wait_for_async_ready(self._timeout_ms, len(frames))

        def completed(completion_info: Any) -> None:
            done()

        job = self._configured.run_async(all_bindings, completed)
        return job, all_bindings

    def close(self) -> None:
        self._stack.close()


# The output types the runner asks HailoRT for, by their command-line names: FLOAT32 (HailoRT dequantizes)
# or UINT8 (the device's own UINT8/UINT16, dequantized by the harness from the HEF's quant infos).


@dataclass(frozen=True)
class _Config:
    hef: str
    format_type: FormatType
    batch_size: int
    timeout_ms: int
    tf_nms_format: bool
    nms_order: FormatOrder


class HailoRTRunner(RunnerBase):
    """A HEF on Hailo hardware as a :class:`~harness.backends.base.Runner`.

    ``infer({input: uint8 (1, H, W, C)})`` runs one frame, :meth:`infer_batch` several in one call. Raw
    outputs arrive ``(H, W, C)`` (FLOAT32, or the device type with quant infos in the specs); NMS outputs in
    hailo_platform's Python forms. ``fps`` is frames per second of wall time inside the infer calls.

    ``device_ids``: HailoRT device ids (PCIe ``0000:01:00.0``) for ``VDevice.create_params().device_ids``;
    several make one virtual device; None takes a free device. ``batch_size``: HailoRT's batch (frames per
    call must be a multiple of it). ``retries``: further tries after a ``HailoRTTimeout``.
    ``nms_order``: NMS_BY_CLASS (the HEF's default) or NMS_BY_SCORE (InferModel only; HailoRT >= 4.20).
    """

    emulated = False

    def __init__(
        self,
        hef_path: str | os.PathLike[str],
        *,
        format_type: FormatType = FormatType.FLOAT32,
        api: Api | str = Api.AUTO,
        device_ids: Sequence[str] | None = None,
        batch_size: int = 1,
        timeout_ms: int = 10000,
        retries: int = 2,
        tf_nms_format: bool = False,
        nms_order: FormatOrder = FormatOrder.NMS_BY_CLASS,
    ) -> None:
        self.hef_path = Path(hef_path)
        hef = os.fspath(hef_path)
        self._check_arguments(hef, format_type, api, device_ids, batch_size, timeout_ms, retries, nms_order)
        if not self.hef_path.is_file():
            raise HarnessError(f"HEF {hef!r}: no such file")
        self.device_ids = tuple(device_ids) if device_ids else None
        self.retries = retries
        self.batch_size = batch_size
        self.timeout_ms = timeout_ms
        self._hr = load_hailort(hef)
        self.hailort_version = self._hr.version
        self._config = _Config(hef, format_type, batch_size, timeout_ms, tf_nms_format, nms_order)
        self._frames = 0
        self._seconds = 0.0
        self._queue = DeviceQueue()  # the batches submitted and not yet collected
        self._session: _VStreams | _InferModel | None = None
        self._vdevice: Any = None
        self.physical_devices: tuple[str, ...] = ()
        # Which devices ran it and their firmware (harness.backends.hailort.identity), as its results record them
        self.identities: tuple[DeviceIdentity, ...] = ()
        self.made_from: tuple[tuple[str, str], ...] = ()
        hr = self._hr.platform
        hef_object = self._guard(lambda: hr.HEF(hef), "reading the HEF")
        self.api = self._resolve_api(Api(api), nms_order)
        inputs = self._guard(hef_object.get_input_vstream_infos, "reading its input vstream infos")
        outputs = self._guard(hef_object.get_output_vstream_infos, "reading its output vstream infos")
        self._input_specs = {info.name: input_spec(info) for info in inputs}
        try:
            self._vdevice = self._guard(lambda: hr.VDevice(self._vdevice_params()), "opening the device")
            self.physical_devices = tuple(self._guard(self._vdevice.get_physical_devices_ids, "listing its devices"))
            self.identities = identify_all(self._vdevice)
            self.made_from = device_facts(self.identities)
            if self.api is Api.INFER_MODEL:
                self._session = self._guard(
                    lambda: _InferModel(hr, self._vdevice, self._config, inputs, outputs), "configuring it (InferModel)"
                )
            else:
                self._session = self._guard(
                    lambda: _VStreams(hr, self._vdevice, hef_object, self._config, outputs), "configuring it (vstreams)"
                )
        except BaseException:
            self.close()
            raise
        self._output_specs = dict(self._session.specs)
        log.info("%s: runner ready", self.label)

    # ------------------------------------------------------------------------------------------ setup

    @staticmethod
    def _check_arguments(
        hef: str,
        format_type: FormatType,
        api: Api | str,
        device_ids: Sequence[str] | None,
        batch_size: int,
        timeout_ms: int,
        retries: int,
        nms_order: FormatOrder,
    ) -> None:
        if format_type not in (FormatType.FLOAT32, FormatType.UINT8):
            raise HarnessError(f"HEF {hef!r}: format_type {format_type!r}, expected FormatType.FLOAT32 or UINT8")
        if api not in [a.value for a in Api]:
            raise HarnessError(f"HEF {hef!r}: api {api!r}, expected one of {[a.value for a in Api]}")
        if device_ids is not None and (isinstance(device_ids, str) or not all(isinstance(d, str) for d in device_ids)):
            raise HarnessError(f"HEF {hef!r}: device_ids {device_ids!r}, expected a list of device id strings")
        for field, value, least in (
            ("batch_size", batch_size, 1),
            ("timeout_ms", timeout_ms, 1),
            ("retries", retries, 0),
        ):
            if not isinstance(value, int) or value < least:
                raise HarnessError(f"HEF {hef!r}: {field} {value!r}, expected an integer >= {least}")
        if nms_order not in _NMS_ORDERS:
            raise HarnessError(f"HEF {hef!r}: nms_order {nms_order!r}, expected NMS_BY_CLASS or NMS_BY_SCORE")

    def _resolve_api(self, api: Api, nms_order: FormatOrder) -> Api:
        has_infer_model = hasattr(self._hr.platform.VDevice, "create_infer_model")
        if api is Api.AUTO:
            api = Api.INFER_MODEL if has_infer_model else Api.VSTREAMS
        if api is Api.INFER_MODEL and not has_infer_model:
            raise HailoRTError(
                f"HEF {self._config.hef!r}: api 'infer_model' asked, HailoRT {self.hailort_version} has no "
                "VDevice.create_infer_model: use api 'vstreams' or a newer HailoRT"
            )
        if nms_order is FormatOrder.NMS_BY_SCORE:
            if api is not Api.INFER_MODEL:
                # InferVStreams parses every NMS output as BY_CLASS (pyhailort.py, InferVStreams.infer)
                raise HailoRTError(
                    f"HEF {self._config.hef!r}: nms_order NMS_BY_SCORE needs api 'infer_model' "
                    "(InferVStreams reads NMS outputs as BY_CLASS only)"
                )
            if not hasattr(self._hr.platform.FormatOrder, _BY_SCORE_MEMBER):
                raise HailoRTError(
                    f"HEF {self._config.hef!r}: nms_order NMS_BY_SCORE asked, HailoRT {self.hailort_version} has "
                    "no FormatOrder.HAILO_NMS_BY_SCORE (introduced in HailoRT 4.20): use NMS_BY_CLASS"
                )
        return api

    def _vdevice_params(self) -> Any:
        hr = self._hr.platform
        params = hr.VDevice.create_params()
        if self.device_ids:
            params.device_ids = list(self.device_ids)  # VDeviceParams.device_ids (pybind VDeviceParamsWrapper)
        if self.api is Api.VSTREAMS:
            # without the model scheduler, so that network_group.activate() activates (with the scheduler it
            # is deprecated and a no-op; pyhailort.py, ConfiguredNetwork.activate)
            params.scheduling_algorithm = hr.HailoSchedulingAlgorithm.NONE
        return params

    @property
    def _device_text(self) -> str:
        if self.device_ids:
            return f"Hailo device {', '.join(self.device_ids)}"
        return "the first free Hailo device"

    def _guard(self, call: Callable[[], T], action: str) -> T:
        where = Failure(self._config.hef, self._device_text, self.hailort_version, action)
        return guarded(call, self._hr.pyhailort, where)

    # ------------------------------------------------------------------------------------------ Runner

    @property
    def label(self) -> str:
        devices = ", ".join(self.physical_devices) or self._device_text
        # the firmware is part of what ran it: a firmware update is another prediction cache key
        firmware = dict(self.made_from).get("firmware")
        on = f"firmware {firmware}, " if firmware else ""
        return f"HEF {self.hef_path.name} on {devices} ({on}HailoRT {self.hailort_version}, {self.api.value} API)"

    @property
    def input_specs(self) -> dict[str, InputSpec]:
        return dict(self._input_specs)

    @property
    def output_specs(self) -> dict[str, OutputSpec]:
        return dict(self._output_specs)

    @property
    def fps(self) -> float | None:
        """Frames per second of wall time spent in infer calls (retries included) or with a submitted batch on
        the device; None before any frame."""
        seconds = self._seconds + self._queue.busy.seconds
        if not self._frames or seconds <= 0:
            return None
        return self._frames / seconds

    @property
    def frames(self) -> int:
        return self._frames

    def _frames_of(self, feed: Mapping[str, np.ndarray], batch: int | None) -> tuple[str, np.ndarray]:
        if len(self._input_specs) != 1:
            raise SpecError(f"HEF {self._config.hef!r}: inputs {sorted(self._input_specs)}, the runner feeds one")
        spec = next(iter(self._input_specs.values()))
        if set(feed) != {spec.name}:
            raise SpecError(f"HEF {self._config.hef!r}: feed has inputs {sorted(feed)}, expected {[spec.name]}")
        array = np.asarray(feed[spec.name])
        n = array.shape[0] if array.ndim == len(spec.shape) + 1 else -1
        if array.dtype != np.uint8 or array.shape[1:] != spec.shape or n < 1 or (batch is not None and n != batch):
            expected = f"(1, {', '.join(map(str, spec.shape))})" if batch else f"(n, {', '.join(map(str, spec.shape))})"
            raise SpecError(
                f"HEF {self._config.hef!r}: input {spec.name!r}: {array.dtype} {array.shape}, expected uint8 "
                f"{expected} NHWC RGB 0-255 (the /255 normalization is inside the HEF)"
            )
        if n % self.batch_size:
            raise SpecError(
                f"HEF {self._config.hef!r}: {n} frames in one call, expected a multiple of batch_size {self.batch_size}"
            )
        return spec.name, np.ascontiguousarray(array)

    def _run(self, name: str, frames: np.ndarray) -> dict[str, Any]:
        if self._session is None:
            raise HailoRTError(f"{self.label}: runner used after close")
        session = self._session
        start = time.perf_counter()
        try:
            results = self._retried(lambda: session.run(name, frames))
            self._frames += len(frames)
            return results
        finally:
            self._seconds += time.perf_counter() - start

    def _retried(self, call: Callable[[], T]) -> T:
        """``call()``, tried again after each HailoRT timeout, ``retries + 1`` times in all; HailoRT's other
        exceptions raised as harness errors."""
        where = Failure(self._config.hef, self._device_text, self.hailort_version, "running inference")
        for attempt in range(self.retries + 1):
            try:
                return call()
            except Exception as error:
                if not is_timeout(error, self._hr.pyhailort):
                    mapped = translate(error, self._hr.pyhailort, where)
                    if mapped is None:
                        raise
                    raise mapped from error
                log.warning("%s: inference timed out (try %d of %d)", self.label, attempt + 1, self.retries + 1)
        raise self._timed_out()

    def _timed_out(self) -> InferenceTimeoutError:
        return InferenceTimeoutError(
            f"HEF {self._config.hef!r} on {self._device_text} (HailoRT {self.hailort_version}): inference timed "
            f"out {self.retries + 1} times in a row, after {self.timeout_ms} ms each; check that no other "
            "process holds the device (`hailortcli monitor`), that the HEF runs at all (`hailortcli run "
            f"{self.hef_path.name}`), then raise timeout_ms or reset the device"
        )

    def infer_batch(self, feed: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
        """``{input: uint8 (n, H, W, C)}`` in one HailoRT call -> one ``{output: array or NMS form}`` per frame."""
        name, frames = self._frames_of(feed, None)
        results = self._run(name, frames)
        return [{output: results[output][i] for output in self._output_specs} for i in range(len(frames))]

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, Any]:
        name, frames = self._frames_of(feed, 1)
        results = self._run(name, frames)
        return {output: results[output][0] for output in self._output_specs}

    def submit_batch(self, feed: Mapping[str, np.ndarray]) -> Callable[[], list[dict[str, Any]]]:
        """``{input: uint8 (n, H, W, C)}`` handed to the device without waiting; the returned call waits for
        it and gives what :meth:`infer_batch` would. InferModel's ``run_async`` where this HailoRT has it
        (several jobs in the device's queue), else one device thread running the batches in turn (InferVStreams
        infers blocking, the GIL released). Batches end in the order submitted; a failure is raised, translated,
        by the call of the batch it failed; :meth:`close` waits for every batch still in flight."""
        name, frames = self._frames_of(feed, None)
        session = self._session
        if session is None:
            raise HailoRTError(f"{self.label}: runner used after close")
        if isinstance(session, _InferModel) and session.runs_async:
            busy = self._queue.busy
            busy.begin()
            try:
                job, bindings = self._guard(lambda: session.submit(name, frames, busy.end), "running inference")
            except BaseException:
                busy.end()
                raise
            flight = self._queue.add(lambda: self._await(session, job, bindings, len(frames)))
        else:
            flight = self._queue.on_thread(self._run, name, frames)

        def result() -> list[dict[str, Any]]:
            results = self._queue.collect(flight)
            return [{output: results[output][i] for output in self._output_specs} for i in range(len(frames))]

        return result

    def _await(self, session: _InferModel, job: Any, bindings: list[Any], count: int) -> dict[str, Any]:
        """A launched job's outputs, waited for ``timeout_ms`` at a time, ``retries + 1`` times at most."""
        self._retried(lambda: job.wait(self.timeout_ms))
        self._frames += count
        return session.outputs(bindings)

    def close(self) -> None:
        try:
            self._queue.settle()
        finally:
            self._release()

    def _release(self) -> None:
        session, self._session = self._session, None
        vdevice, self._vdevice = self._vdevice, None
        try:
            if session is not None:
                self._guard(session.close, "closing the inference pipeline")
        finally:
            if vdevice is not None:
                self._guard(vdevice.release, "releasing the device")


def hardware_skip_reason() -> str | None:
    """Why tests that need a Hailo device cannot run here, or None when one is found."""
    if importlib.util.find_spec("hailo_platform") is None:
        return "hailo_platform (HailoRT's Python wheel from Hailo) is not installed"
    from hailo_platform import Device  # HailoRT's device scan (hailort: bindings/python/platform/hailo_platform)

    if not Device.scan():
        return "no Hailo device found (hailo_platform Device.scan() is empty)"
    return None
