"""A fake of the part of hailo_platform (HailoRT's Python API) that harness.backends.hailort uses, computed
by the emulator backend, so that the HailoRT runner's contract can be tested without HailoRT or a device.

Names, signatures, shapes, orders, NMS forms and exceptions follow hailo-ai/hailort:
``hailort/libhailort/bindings/python/platform/hailo_platform/pyhailort/pyhailort.py`` and ``__init__.py``,
``hailort/libhailort/bindings/python/src/{pyhailort.cpp, infer_model_api.cpp, bindings_common.hpp}``, in
profiles: 4.18 (NMS order ``HAILO_NMS`` = 9, ``HailoRTPCIeDriverException``, InferModel's NMS
``get_buffer()`` wrapped in a list of frames) and 5.1 (``HAILO_NMS_BY_CLASS`` / ``HAILO_NMS_BY_SCORE``,
``HailoRTHEFNotCompatibleWithDevice``, ``HailoRTDriverOperationFailedException``), and 4.23, which behaves
as 5.1 does there. The 4.23 and 5.1 profiles are held to hailo_platform 4.23.0 and 5.2.0 built from
source (``api``, checked by tests/backends/test_hailort_oracle.py). The NMS list and tf
forms are ports of pyhailort's own Python conversions. Outputs come from an EmulatedHef per HEF path:
raw heads as the device's uint8 values (dequantized ``(q - zp) * scale`` for FLOAT32), NMS as the
emulator's HAILO_NMS_BY_CLASS buffer.

Install with :meth:`FakeHailoRT.install` (``monkeypatch.setitem(sys.modules, "hailo_platform", ...)``).
Faults: :meth:`FakeHailoRT.fail` makes a stage raise what ``ExceptionWrapper.create_exception_from_status``
raises for a libhailort status.
"""

from __future__ import annotations

import enum
import functools
import importlib.machinery
import os
import queue
import struct
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from harness.backends.emulator import EmulatedHef, EmulatorRunner

BBOX_PARAMS = 5  # HailoRTDefaults.BBOX_PARAMS()
DETECTION_SIZE = 22  # sizeof(hailo_detection_t), packed
DEFAULT_VSTREAM_TIMEOUT_MS = 10000
DEFAULT_VSTREAM_QUEUE_SIZE = 2

# libhailort status codes (hailort: hailort/libhailort/include/hailo/hailort.h, HAILO_STATUS__X)
STATUS_CODES = {
    "HAILO_TIMEOUT": 4,
    "HAILO_INVALID_HEF": 26,
    "HAILO_DRIVER_OPERATION_FAILED": 36,
    "HAILO_DEVICE_IN_USE": 73,
    "HAILO_OUT_OF_PHYSICAL_DEVICES": 74,
    "HAILO_INVALID_DRIVER_VERSION": 76,
    "HAILO_QUEUE_IS_FULL": 82,
    "HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE": 93,
}


@dataclass(frozen=True)
class Profile:
    """What differs between the HailoRT versions read: 4.18 (pyhailort.py at 01e4c7f) and 5.1 (at 19b0443)."""

    version: str
    legacy_nms: bool  # NMS order HAILO_NMS = 9; no HAILO_NMS_BY_CLASS / HAILO_NMS_BY_SCORE
    # status name -> (exception class, message) of create_exception_from_status
    classes: Mapping[str, tuple[str, str]]
    infer_model: bool = True


_COMMON = {
    "HAILO_TIMEOUT": ("HailoRTTimeout", "Received a timeout - hailort has failed because a timeout had occurred"),
    "HAILO_INVALID_OPERATION": (
        "HailoRTInvalidOperationException",
        "Invalid operation. See hailort.log for more information",
    ),
    "HAILO_INVALID_ARGUMENT": (
        "HailoRTInvalidArgumentException",
        "Invalid argument. See hailort.log for more information",
    ),
    "HAILO_NOT_FOUND": ("HailoRTNotFoundException", "Item not found. See hailort.log for more information"),
    "HAILO_INVALID_HEF": ("HailoRTInvalidHEFException", "Invalid HEF. See hailort.log for more information"),
    "HAILO_NETWORK_GROUP_NOT_ACTIVATED": ("HailoRTNetworkGroupNotActivatedException", "Network group is not activated"),
}
HAILORT_4_18 = Profile(
    "4.18.0",
    legacy_nms=True,
    classes={
        **_COMMON,
        "HAILO_DRIVER_FAIL": (
            "HailoRTPCIeDriverException",
            "PCIe driver failure. run 'dmesg | grep hailo' for more information",
        ),
    },
)
_LINE_5_CLASSES = {
    **_COMMON,
    "HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE": (
        "HailoRTHEFNotCompatibleWithDevice",
        "HEF file is not compatible with device. See hailort.log for more information",
    ),
    "HAILO_DRIVER_OPERATION_FAILED": (
        "HailoRTDriverOperationFailedException",
        "Failure in hailort driver ioctl. run 'dmesg | grep hailo' for more information",
    ),
}
HAILORT_5_1 = Profile("5.1.1", legacy_nms=False, classes=_LINE_5_CLASSES)
# 4.23.0 (the hailo8 branch's head, built from source and held to this fake by tests/backends/test_hailort_oracle.py):
# no legacy HAILO_NMS order, InferModel's NMS get_buffer() one frame, the 5.x exception classes.
HAILORT_4_23 = Profile("4.23.0", legacy_nms=False, classes=_LINE_5_CLASSES)


class FormatType(enum.IntEnum):
    """py::enum_<hailo_format_type_t>(m, "FormatType") (hailort: bindings/python/src/pyhailort.cpp)."""

    AUTO = 0
    UINT8 = 1
    UINT16 = 2
    FLOAT32 = 3


def _format_order(profile: Profile) -> type[enum.IntEnum]:
    """py::enum_<hailo_format_order_t>(m, "FormatOrder"), the members used here, per version."""
    members = {"AUTO": 0, "NHWC": 1, "NHCW": 2, "FCR": 3, "F8CR": 4, "NHW": 5, "NC": 6, "NCHW": 11}
    if profile.legacy_nms:
        members["HAILO_NMS"] = 9
    else:
        members.update(HAILO_NMS_ON_CHIP=21, HAILO_NMS_BY_CLASS=22, HAILO_NMS_BY_SCORE=23)
    order: type[enum.IntEnum] = enum.IntEnum("FormatOrder", members)  # type: ignore[misc]
    return order


class HailoStreamInterface(enum.IntEnum):
    # hailort: include/hailo/hailort.h, hailo_stream_interface_t (held to hailo_platform by test_hailort_oracle.py)
    PCIe = 0
    ETH = 1
    MIPI = 2
    INTEGRATED = 3


class HailoSchedulingAlgorithm(enum.IntEnum):
    NONE = 0
    ROUND_ROBIN = 1


class DeviceArchitectureTypes(enum.IntEnum):
    """(hailort: pyhailort.py, ``DeviceArchitectureTypes``, printed by its name.)"""

    HAILO8_A0 = 0
    HAILO8 = 1
    HAILO8L = 2
    HAILO15H = 3
    HAILO15L = 4
    HAILO15M = 5
    HAILO10H = 6

    def __str__(self) -> str:
        return self.name


class HailoFirmwareVersion:
    """(hailort: pyhailort.py, ``HailoFirmwareVersion``: ``<III`` major, minor, revision; the mode and type as
    strings here, which the harness does not read.)"""

    FW_VERSION_FORMAT = "<III"

    def __init__(
        self, firmware_version_buffer: bytes, is_release: bool, extended_context_switch_buffer: bool, fw_type: str
    ) -> None:
        self.major, self.minor, self.revision = struct.unpack(self.FW_VERSION_FORMAT, firmware_version_buffer)
        self.mode = "release" if is_release else "develop"
        self.fw_type = fw_type
        self.extended_context_switch_buffer = extended_context_switch_buffer

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.revision} ({self.mode},{self.fw_type})"

    @classmethod
    def construct_from_params(
        cls,
        major: int,
        minor: int,
        revision: int,
        is_release: bool,
        extended_context_switch_buffer: bool,
        fw_type: str,
    ) -> HailoFirmwareVersion:
        buffer = struct.pack(HailoFirmwareVersion.FW_VERSION_FORMAT, major, minor, revision)
        return cls(buffer, is_release, extended_context_switch_buffer, fw_type)


class BoardInformation:
    """What ``Control.identify()`` returns (hailort: pyhailort.py, ``BoardInformation``; string fields NUL-padded
    as the control protocol sends them)."""

    def __init__(
        self,
        protocol_version: int,
        fw_version_major: int,
        fw_version_minor: int,
        fw_version_revision: int,
        logger_version: int,
        board_name: str,
        is_release: bool,
        extended_context_switch_buffer: bool,
        device_architecture: int,
        serial_number: str,
        part_number: str,
        product_name: str,
    ) -> None:
        self.protocol_version = protocol_version
        self.firmware_version = HailoFirmwareVersion.construct_from_params(
            fw_version_major, fw_version_minor, fw_version_revision, is_release, extended_context_switch_buffer, "app"
        )
        self.logger_version = logger_version
        self.board_name = board_name
        self.is_release = is_release
        self.device_architecture = DeviceArchitectureTypes(device_architecture)
        self.serial_number = serial_number
        self.part_number = part_number
        self.product_name = product_name


@dataclass(frozen=True)
class Board:
    """A fake device's identity: its firmware version (``major.minor.revision``), whether a release build,
    architecture and serial number."""

    firmware: str
    is_release: bool = True
    architecture: DeviceArchitectureTypes = DeviceArchitectureTypes.HAILO8
    serial: str = "HLLWM2B214900345"

    def information(self) -> BoardInformation:
        major, minor, revision = (int(part) for part in self.firmware.split("."))
        padded = self.serial.ljust(16, "\x00")
        return BoardInformation(
            2, major, minor, revision, 2, "Hailo-8\x00", self.is_release, False, self.architecture, padded, "", ""
        )


class HailoRTCustomException(Exception):
    """_pyhailort.HailoRTCustomException: raised by the pybind layer, not a pyhailort HailoRTException."""


@dataclass
class QuantInfo:
    qp_zp: float
    qp_scale: float
    limvals_min: float
    limvals_max: float


@dataclass
class HailoFormat:
    type: Any
    order: Any
    flags: int = 0


@dataclass(frozen=True)
class NmsShape:
    """pybind NmsShape of 5.1: number_of_classes, max_bboxes_per_class, max_accumulated_mask_size."""

    number_of_classes: int
    max_bboxes_per_class: int
    max_accumulated_mask_size: int = 0


class VStreamInfo:
    """pybind VStreamInfo: ``shape`` by format order; ``nms_shape`` only on NMS vstreams."""

    def __init__(
        self,
        name: str,
        network_name: str,
        fmt: HailoFormat,
        shape: tuple[int, ...],
        quant: QuantInfo,
        nms: NmsShape | None = None,
    ) -> None:
        self.name = name
        self.network_name = network_name
        self.direction = 0
        self.format = fmt
        self.quant_info = quant
        self._shape = shape
        self._nms = nms

    @property
    def shape(self) -> tuple[int, ...]:
        if self._nms is None:
            return self._shape
        if self.format.order.name == "HAILO_NMS_BY_SCORE":
            raise HailoRTCustomException("Format order has no shape")
        return (self._nms.number_of_classes, BBOX_PARAMS, self._nms.max_bboxes_per_class)

    @property
    def nms_shape(self) -> NmsShape:
        if self._nms is None:
            raise HailoRTCustomException("nms_shape is availale only on nms order vstreams")
        return self._nms

    def __repr__(self) -> str:
        return f'VStreamInfo("{self.name}")'


# ---------------------------------------------------------------------------------------------- NMS forms


def nms_to_class_list(raw: np.ndarray, number_of_classes: int) -> list[np.ndarray]:
    """Port of ``HailoRTTransformUtils.output_raw_buffer_to_nms_format_single_frame``."""
    frame: list[np.ndarray] = []
    offset = 0
    for _ in range(number_of_classes):
        amount = int(raw[offset])
        offset += 1
        if amount == 0:
            frame.append(np.empty([0, BBOX_PARAMS]))
        else:
            frame.append(raw[offset : offset + BBOX_PARAMS * amount].reshape(amount, BBOX_PARAMS))
            offset += BBOX_PARAMS * amount
    return frame


def nms_to_tf(raw: np.ndarray, nms: NmsShape, empty_bbox: np.floating[Any] | np.ndarray) -> np.ndarray:
    """Port of ``output_raw_buffer_to_nms_tf_format_single_frame`` + the swapaxes of ``..._tf_format``:
    ``[classes, 5, max]`` padded with the (dequantized) empty bbox."""
    frame = np.empty([nms.number_of_classes, nms.max_bboxes_per_class, BBOX_PARAMS], dtype=np.float32)
    offset = 0
    for k in range(nms.number_of_classes):
        amount = int(raw[offset])
        offset += 1
        if amount:
            frame[k][:amount][:] = raw[offset : offset + BBOX_PARAMS * amount].reshape(amount, BBOX_PARAMS)
            offset += BBOX_PARAMS * amount
        frame[k][amount:][:] = empty_bbox
    return np.swapaxes(frame, 1, 2)


def by_class_to_by_score(raw: np.ndarray, nms: NmsShape) -> bytes:
    """A BY_CLASS frame as the BY_SCORE frame of the same detections: uint16 count, packed
    {5 x float32, uint16 class_id} records by score descending, sized for classes x per-class max."""
    records: list[tuple[float, int, tuple[float, ...]]] = []
    for k, boxes in enumerate(nms_to_class_list(raw, nms.number_of_classes)):
        records.extend((float(b[4]), k, tuple(float(v) for v in b)) for b in boxes)
    records.sort(key=lambda r: -r[0])  # stable: class order among equal scores
    total = nms.number_of_classes * nms.max_bboxes_per_class
    out = struct.pack("<H", len(records)) + b"".join(struct.pack("<5fH", *box, k) for _, k, box in records)
    return out + bytes(2 + DETECTION_SIZE * total - len(out))


class Detection:
    """pyhailort ``Detection``: y_min, x_min, y_max, x_max, score, class_id."""

    def __init__(self, y_min: float, x_min: float, y_max: float, x_max: float, score: float, class_id: int) -> None:
        self.y_min, self.x_min, self.y_max, self.x_max, self.score, self.class_id = (
            y_min,
            x_min,
            y_max,
            x_max,
            score,
            class_id,
        )


def by_score_to_detections(raw: np.ndarray) -> list[Detection]:
    """What ``_pyhailort.convert_nms_by_score_buffer_to_detections`` + ``Detection(...)`` give."""
    data = bytes(np.ascontiguousarray(raw).view(np.uint8))
    (count,) = struct.unpack_from("<H", data)
    return [Detection(*struct.unpack_from("<5fH", data, 2 + DETECTION_SIZE * i)) for i in range(count)]


# ---------------------------------------------------------------------------------------------- the fake


@functools.lru_cache(maxsize=8)
def _emulator(hef: EmulatedHef) -> EmulatorRunner:
    """One onnxruntime session per emulated HEF, shared by every fake made in a test session."""
    return EmulatorRunner(hef, threads=1)


@dataclass
class _Model:
    """One HEF: its emulated model, network group name and vstream infos."""

    hef: EmulatedHef
    group: str
    runner: EmulatorRunner
    inputs: list[VStreamInfo] = field(default_factory=list)
    outputs: list[VStreamInfo] = field(default_factory=list)


class FakeHailoRT:
    """hailo_platform over emulated HEFs: ``hefs`` maps HEF paths to EmulatedHef, ``devices`` what
    ``Device.scan()`` finds, ``boards`` what each answers to ``identify()`` (default: firmware of the
    profile's version, a release build). Records what was asked: ``vdevice_params``, ``batch_sizes``,
    ``calls``; ``opened_devices``: the ``Device`` objects made and not yet released."""

    def __init__(
        self,
        hefs: Mapping[str | os.PathLike[str], EmulatedHef],
        profile: Profile = HAILORT_5_1,
        devices: Sequence[str] = ("0000:01:00.0",),
        latency_s: float = 0.0,
        async_queue_size: int = 8,
        memo: bool = False,
        boards: Mapping[str, Board] | None = None,
    ) -> None:
        self.profile = profile
        self.devices = list(devices)
        self.boards = {d: Board(profile.version) for d in self.devices} | dict(boards or {})
        self.opened_devices = 0
        self.latency_s = latency_s  # each frame's time on the device, its outputs computed within it where they can be
        self.async_queue_size = async_queue_size  # ConfiguredInferModel.get_async_queue_size: frames in flight at most
        self.memo = memo  # outputs kept by the frame's bytes: a frame seen before costs the latency alone
        self._memo: dict[tuple[str, bytes], dict[str, np.ndarray]] = {}
        self.threads: list[threading.Thread] = []  # the device threads async runs started
        self.FormatOrder = _format_order(profile)
        self.faults: dict[str, list[str]] = defaultdict(list)
        self.vdevice_params: list[dict[str, Any]] = []
        self.batch_sizes: list[int] = []
        self.calls: list[tuple[str, int]] = []
        self.warnings: list[str] = []
        self.released = 0
        self._models = {os.path.realpath(path): self._model(hef, Path(path).stem) for path, hef in hefs.items()}
        self.pyhailort = self._pyhailort_module()
        self.api: dict[str, Any] = {}
        self.module = self._platform_module()

    # ------------------------------------------------------------------------------------ setup

    def _nms_order(self) -> Any:
        return self.FormatOrder["HAILO_NMS" if self.profile.legacy_nms else "HAILO_NMS_BY_CLASS"]

    def _model(self, hef: EmulatedHef, group: str) -> _Model:
        model = _Model(hef, group, _emulator(hef))
        network = f"{group}/{group}"
        spec = hef.input
        model.inputs.append(
            VStreamInfo(
                spec.name,
                network,
                HailoFormat(FormatType.UINT8, self.FormatOrder["NHWC"]),
                spec.shape,
                QuantInfo(0.0, 1.0, 0.0, 255.0),
            )
        )
        if hef.options.nms:
            ((name, nms_spec),) = hef.output_specs.items()
            assert nms_spec.nms is not None
            nms = NmsShape(nms_spec.nms.number_of_classes, nms_spec.nms.max_bboxes_per_class)
            # quant_info {0, 1, 0, 0}: "In order to pass is_qp_valid check in pyhailort"
            # (hailort: src/net_flow/ops/nms_post_process.cpp, NmsOpMetadata::get_output_vstream_info)
            fmt = HailoFormat(FormatType.FLOAT32, self._nms_order())
            model.outputs.append(VStreamInfo(name, network, fmt, (), QuantInfo(0.0, 1.0, 0.0, 0.0), nms))
        else:
            for head in hef.heads:
                q = head.quant[0]
                fmt = HailoFormat(FormatType.UINT8, self.FormatOrder[head.format_order.name])
                quant = QuantInfo(q.zero_point, q.scale, q.limvals_min, q.limvals_max)
                model.outputs.append(VStreamInfo(head.name, network, fmt, head.shape, quant))
        return model

    def fail(self, stage: str, status: str, times: int = 1) -> None:
        """The next ``times`` calls of ``stage`` (hef, vdevice, configure, infer, identify) fail with libhailort
        ``status``."""
        self.faults[stage].extend([status] * times)

    def _check(self, stage: str) -> None:
        if self.faults[stage]:
            raise self._exception(self.faults[stage].pop(0))

    def _exception(self, status: str) -> Exception:
        """Port of ``ExceptionWrapper.create_exception_from_status`` for this profile."""
        if status in self.profile.classes:
            name, message = self.profile.classes[status]
            exception: Exception = getattr(self.pyhailort, name)(message)
            return exception
        code = STATUS_CODES.get(status, 0)
        return self.pyhailort.HailoRTException(f"libhailort failed with error: {code} ({status})")

    def model(self, hef_source: object) -> _Model:
        if not isinstance(hef_source, str):
            raise ValueError("HEF can only be created from a file path (str) or a buffer (bytes)")
        self._check("hef")
        model = self._models.get(os.path.realpath(hef_source))
        if model is None:
            raise self._exception("HAILO_INVALID_HEF")
        return model

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Put the fake where ``import hailo_platform`` finds it, for one test."""
        monkeypatch.setitem(sys.modules, "hailo_platform", self.module)
        monkeypatch.setitem(sys.modules, "hailo_platform.pyhailort", self.module.pyhailort)
        monkeypatch.setitem(sys.modules, "hailo_platform.pyhailort.pyhailort", self.pyhailort)

    # ------------------------------------------------------------------------------------ device work

    def frame_outputs(self, model: _Model, frame: np.ndarray, paced: bool = True) -> dict[str, np.ndarray]:
        """One frame as the device + HailoRT's host ops leave it: raw uint8 heads or the BY_CLASS float32 buffer,
        ``latency_s`` after it was started (its computing included, where it takes less); ``paced`` False: at
        once (the caller keeps the pace of a whole job)."""
        deadline = time.perf_counter() + (self.latency_s if paced else 0.0)
        key = (model.group, frame[::4, ::4].tobytes())  # a 16th of the frame: enough to tell images apart
        outputs = self._memo.get(key) if self.memo else None
        if outputs is None:
            feed = {model.hef.input.name: frame[None]}
            outputs = model.runner.infer(feed) if model.hef.options.nms else model.runner.raw_heads(feed)
            if self.memo:
                self._memo[key] = outputs
        left = deadline - time.perf_counter()
        if left > 0:
            time.sleep(left)
        return outputs

    def to_user(self, info: VStreamInfo, raw: np.ndarray, user_type: Any) -> np.ndarray:
        """Device value -> the user buffer format: as is, or dequantized ``(q - zp) * scale`` in float32
        (hailort: include/hailo/quantization.hpp, Quantization::dequantize_output)."""
        device_type = info.format.type
        user_type = device_type if user_type == FormatType.AUTO else user_type
        if user_type == device_type:
            return raw
        if user_type == FormatType.FLOAT32:
            q = info.quant_info
            return ((raw.astype(np.float32) - np.float32(q.qp_zp)) * np.float32(q.qp_scale)).astype(np.float32)
        raise self.pyhailort.HailoRTInvalidArgumentException("Invalid argument. See hailort.log for more information")

    # ------------------------------------------------------------------------------------ modules

    def _pyhailort_module(self) -> ModuleType:
        module = ModuleType("hailo_platform.pyhailort.pyhailort")

        class HailoRTException(Exception):
            pass

        module.HailoRTException = HailoRTException  # type: ignore[attr-defined]
        for name, _ in self.profile.classes.values():
            setattr(module, name, type(name, (HailoRTException,), {}))
        if not self.profile.legacy_nms:
            # "HailoRTPCIeDriverException is deprecated, use HailoRTDriverOperationFailedException instead"
            module.HailoRTPCIeDriverException = module.HailoRTDriverOperationFailedException  # type: ignore[attr-defined]
        return module

    def _platform_module(self) -> ModuleType:
        fake = self
        exc = self.pyhailort
        FormatOrder = self.FormatOrder

        def nms_order_name(fmt: HailoFormat) -> str:
            return str(fmt.order.name)

        def is_nms(fmt: HailoFormat) -> bool:
            return nms_order_name(fmt) in ("HAILO_NMS", "HAILO_NMS_BY_CLASS", "HAILO_NMS_BY_SCORE")

        class HEF:
            def __init__(self, hef_source: object) -> None:
                self._model = fake.model(hef_source)
                self._path = hef_source

            def get_network_group_names(self) -> list[str]:
                return [self._model.group]

            def get_input_vstream_infos(self, name: str | None = None) -> list[VStreamInfo]:
                return list(self._model.inputs)

            def get_output_vstream_infos(self, name: str | None = None) -> list[VStreamInfo]:
                return list(self._model.outputs)

        @dataclass
        class ConfigureNetworkParams:
            batch_size: int = 0  # HAILO_DEFAULT_BATCH_SIZE
            power_mode: int = 0
            stream_params_by_name: dict[str, Any] = field(default_factory=dict)
            network_params_by_name: dict[str, Any] = field(default_factory=dict)

        class ConfigureParams:
            @staticmethod
            def create_from_hef(hef: HEF, interface: HailoStreamInterface) -> dict[str, ConfigureNetworkParams]:
                if not isinstance(interface, HailoStreamInterface):
                    raise exc.HailoRTInvalidArgumentException("Invalid argument. See hailort.log for more information")
                return {hef._model.group: ConfigureNetworkParams()}

        class VDeviceParams:
            def __init__(self) -> None:
                self.device_ids: list[str] = []
                self.device_count = 1
                self.scheduling_algorithm = HailoSchedulingAlgorithm.ROUND_ROBIN
                self.group_id = "UNIQUE"
                self.multi_process_service = False

        @dataclass
        class VStreamParams:
            user_buffer_format: HailoFormat
            timeout_ms: int
            queue_size: int

        def make_params(
            network: ConfiguredNetwork, infos: list[VStreamInfo], format_type: Any, timeout_ms: Any, queue_size: Any
        ) -> dict[str, VStreamParams]:
            fmt_type = FormatType.AUTO if format_type is None else format_type
            return {
                i.name: VStreamParams(
                    HailoFormat(fmt_type, i.format.order),
                    DEFAULT_VSTREAM_TIMEOUT_MS if timeout_ms is None else timeout_ms,
                    DEFAULT_VSTREAM_QUEUE_SIZE if queue_size is None else queue_size,
                )
                for i in infos
            }

        class InputVStreamParams:
            @staticmethod
            def make(
                configured_network: ConfiguredNetwork,
                quantized: Any = None,
                format_type: Any = None,
                timeout_ms: Any = None,
                queue_size: Any = None,
                network_name: Any = None,
            ) -> dict[str, Any]:
                return make_params(
                    configured_network, configured_network._model.inputs, format_type, timeout_ms, queue_size
                )

        class OutputVStreamParams:
            @staticmethod
            def make(
                configured_network: ConfiguredNetwork,
                quantized: Any = None,
                format_type: Any = None,
                timeout_ms: Any = None,
                queue_size: Any = None,
                network_name: Any = None,
            ) -> dict[str, Any]:
                return make_params(
                    configured_network, configured_network._model.outputs, format_type, timeout_ms, queue_size
                )

        class EmptyContextManager:
            def __enter__(self) -> None:
                return None

            def __exit__(self, *args: object) -> None:
                return None

        class ActivatedNetworkContextManager:
            def __init__(self, network: ConfiguredNetwork) -> None:
                self._network = network

            def __enter__(self) -> ConfiguredNetwork:
                self._network.active = True
                return self._network

            def __exit__(self, *args: object) -> None:
                self._network.active = False

        class ConfiguredNetwork:
            def __init__(self, model: _Model, scheduled: bool) -> None:
                self._model = model
                self._scheduled = scheduled
                self.active = False

            @property
            def name(self) -> str:
                return self._model.group

            @staticmethod
            def create_params() -> object:
                return object()  # ActivateNetworkGroupParams.default()

            def activate(self, network_group_params: object = None) -> Any:
                if self._scheduled:
                    fake.warnings.append("Calls to `activate()` when working with scheduler are deprecated!")
                    return EmptyContextManager()
                return ActivatedNetworkContextManager(self)

            def get_networks_names(self) -> list[str]:
                return [f"{self._model.group}/{self._model.group}"]

            def get_input_vstream_infos(self, network_name: str | None = None) -> list[VStreamInfo]:
                return list(self._model.inputs)

            def get_output_vstream_infos(self, network_name: str | None = None) -> list[VStreamInfo]:
                return list(self._model.outputs)

        def check_frame_shape(model: _Model, name: str, frame_shape: tuple[int, ...]) -> None:
            info = next((i for i in model.inputs if i.name == name), None)
            if info is None:
                raise exc.HailoRTNotFoundException("Item not found. See hailort.log for more information")
            if frame_shape != tuple(info.shape):
                raise exc.HailoRTInvalidArgumentException("Invalid argument. See hailort.log for more information")

        class InferVStreams:
            def __init__(
                self,
                configured_net_group: ConfiguredNetwork,
                input_vstreams_params: dict[str, Any],
                output_vstreams_params: dict[str, Any],
                tf_nms_format: bool = False,
            ) -> None:
                self._network = configured_net_group
                self._inputs = input_vstreams_params
                self._outputs = output_vstreams_params
                self._tf = tf_nms_format
                self._open = False

            def __enter__(self) -> InferVStreams:
                self._open = True
                return self

            def __exit__(self, *args: object) -> None:
                self._open = False

            def infer(self, input_data: dict[str, np.ndarray]) -> dict[str, Any]:
                network = self._network
                if not (network.active or network._scheduled):
                    raise exc.HailoRTNetworkGroupNotActivatedException("Network group is not activated")
                (name,) = input_data
                frames = input_data[name]
                if frames.dtype.itemsize != 1:  # InferVStreams._validate_input_data_format_type, UINT8 user format
                    raise exc.HailoRTException(f"{name} numpy array item size is {frames.dtype.itemsize}, not 1")
                check_frame_shape(network._model, name, frames.shape[1:])
                fake._check("infer")
                fake.calls.append(("InferVStreams.infer", len(frames)))
                per_frame = [fake.frame_outputs(network._model, f) for f in frames]
                results: dict[str, Any] = {}
                for info in network._model.outputs:
                    user = self._outputs[info.name].user_buffer_format
                    if not is_nms(info.format):
                        results[info.name] = np.stack([fake.to_user(info, p[info.name], user.type) for p in per_frame])
                    elif self._tf:  # output_raw_buffer_to_nms_tf_format, empty bbox dequantized with quant_info
                        empty = np.float32((0 - info.quant_info.qp_zp) * info.quant_info.qp_scale)
                        results[info.name] = np.stack(
                            [nms_to_tf(p[info.name], info.nms_shape, empty) for p in per_frame]
                        )
                    else:  # output_raw_buffer_to_nms_format: a list over frames of per-class lists
                        n = info.nms_shape.number_of_classes
                        results[info.name] = [nms_to_class_list(p[info.name], n) for p in per_frame]
                return results

        class InferStream:
            """InferModel.InferStream: name, shape, format, quant_infos, is_nms, set_format_type/order."""

            def __init__(self, info: VStreamInfo) -> None:
                self._info = info
                self._format = HailoFormat(info.format.type, info.format.order)

            @property
            def name(self) -> str:
                return self._info.name

            @property
            def format(self) -> HailoFormat:
                return self._format

            @property
            def is_nms(self) -> bool:
                return is_nms(self._format)

            @property
            def quant_infos(self) -> list[QuantInfo]:
                return [self._info.quant_info]

            @property
            def shape(self) -> list[int]:
                """get_pybind_shape (hailort: bindings/python/src/bindings_common.hpp)."""
                if nms_order_name(self._format) == "HAILO_NMS_BY_SCORE":
                    nms = self._info.nms_shape
                    return [2 + DETECTION_SIZE * nms.number_of_classes * nms.max_bboxes_per_class]
                if self.is_nms:
                    nms = self._info.nms_shape
                    return [nms.number_of_classes * (1 + BBOX_PARAMS * nms.max_bboxes_per_class)]
                return list(self._info.shape)

            def set_format_type(self, type: Any) -> None:
                self._format.type = type

            def set_format_order(self, order: Any) -> None:
                self._format.order = order

        class InferModel:
            def __init__(self, model: _Model, hef_path: str, scheduled: bool) -> None:
                self._model = model
                self._hef_path = hef_path
                self._scheduled = scheduled
                self._streams = {i.name: InferStream(i) for i in [*model.inputs, *model.outputs]}
                self.batch_size = 0

            def _stream(self, name: str, names: list[str]) -> InferStream:
                if name == "" and len(names) == 1:
                    name = names[0]
                if name not in names:
                    raise exc.HailoRTNotFoundException("Item not found. See hailort.log for more information")
                return self._streams[name]

            @property
            def input_names(self) -> list[str]:
                return [i.name for i in self._model.inputs]

            @property
            def output_names(self) -> list[str]:
                return [i.name for i in self._model.outputs]

            def input(self, name: str = "") -> InferStream:
                return self._stream(name, self.input_names)

            def output(self, name: str = "") -> InferStream:
                return self._stream(name, self.output_names)

            def set_batch_size(self, batch_size: int) -> None:
                self.batch_size = batch_size

            def configure(self) -> ConfiguredInferModel:
                fake._check("configure")
                fake.batch_sizes.append(self.batch_size)
                return ConfiguredInferModel(self)

        class BindingStream:
            """ConfiguredInferModel.Bindings.InferStream: set_buffer / get_buffer(tf_format)."""

            def __init__(self, stream: InferStream) -> None:
                self._stream = stream
                self._buffer: np.ndarray | None = None

            def _frame_bytes(self) -> int:
                fmt = self._stream.format
                item = (
                    1
                    if nms_order_name(fmt) == "HAILO_NMS_BY_SCORE"
                    else np.dtype(
                        {FormatType.UINT8: np.uint8, FormatType.UINT16: np.uint16, FormatType.FLOAT32: np.float32}[
                            fmt.type
                        ]
                    ).itemsize
                )
                return int(np.prod(self._stream.shape)) * item

            def set_buffer(self, buffer: np.ndarray) -> None:
                if not buffer.flags.c_contiguous:
                    raise exc.HailoRTException("Buffer must be C_CONTIGUOUS")
                if buffer.nbytes != self._frame_bytes():  # HailoRT checks the buffer is one frame exactly
                    raise exc.HailoRTInvalidArgumentException("Invalid argument. See hailort.log for more information")
                self._buffer = buffer

            def _write(self, data: np.ndarray | bytes) -> None:
                """What the device + host ops write into the user's memory: the bytes, whatever its dtype."""
                assert self._buffer is not None
                raw = np.frombuffer(data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes(), np.uint8)
                self._buffer.reshape(-1).view(np.uint8)[:] = raw

            def get_buffer(self, tf_format: bool | None = False) -> Any:
                buffer = self._buffer
                if tf_format is None or buffer is None or not self._stream.is_nms:
                    return buffer
                info = self._stream._info
                order = nms_order_name(self._stream.format)
                if order == "HAILO_NMS_BY_SCORE":
                    if tf_format:
                        raise exc.HailoRTException(f"Use of tf format is unsupported for format order: {order}.")
                    return by_score_to_detections(buffer)
                empty = np.float32((0 - info.quant_info.qp_zp) * info.quant_info.qp_scale)
                if tf_format:
                    return nms_to_tf(buffer.reshape(-1), info.nms_shape, empty)
                frame = nms_to_class_list(buffer, info.nms_shape.number_of_classes)
                # 4.18: output_raw_buffer_to_nms_format([self._buffer], ...) -> a list of one frame
                return [frame] if fake.profile.legacy_nms else frame

        class Bindings:
            def __init__(self, model: InferModel) -> None:
                self._model = model
                self._streams = {name: BindingStream(s) for name, s in model._streams.items()}

            def input(self, name: str = "") -> BindingStream:
                return self._streams[self._model.input(name).name]

            def output(self, name: str = "") -> BindingStream:
                return self._streams[self._model.output(name).name]

        class AsyncInferCompletionInfo:
            def __init__(self, exception: Exception | None) -> None:
                self.exception = exception

        class AsyncInferJob:
            """A launched job: done on the device thread; ``wait`` raises HailoRTTimeout until it is, and the
            job's failure after (pyhailort.py ``AsyncInferJob.wait``: the C++ job's status)."""

            def __init__(self, bindings: list[Bindings], callback: Any) -> None:
                self._bindings, self._callback = bindings, callback
                self._done = threading.Event()
                self._error: Exception | None = None

            def wait(self, timeout_ms: int) -> None:
                fake.calls.append(("AsyncInferJob.wait", len(self._bindings)))
                if not self._done.wait(timeout_ms / 1000):
                    raise fake._exception("HAILO_TIMEOUT")
                if self._error is not None:
                    raise self._error

        class ConfiguredInferModel:
            def __init__(self, model: InferModel) -> None:
                self._infer_model: InferModel | None = model
                self.active = False
                self._jobs: queue.Queue[AsyncInferJob | None] = queue.Queue()
                self._queued = threading.Semaphore(fake.async_queue_size)  # frames the device's queue still takes
                self._device: threading.Thread | None = None

            def __enter__(self) -> ConfiguredInferModel:
                return self

            def __exit__(self, *args: object) -> None:
                if self._device is not None:  # the jobs queued run to their end, then the device thread stops
                    self._jobs.put(None)
                    self._device.join()
                self._infer_model = None

            def create_bindings(self, input_buffers: Any = None, output_buffers: Any = None) -> Bindings:
                assert self._infer_model is not None, "ConfiguredInferModel used after its context"
                return Bindings(self._infer_model)

            def get_async_queue_size(self) -> int:
                return fake.async_queue_size

            def wait_for_async_ready(self, timeout_ms: int = 1000, frames_count: int = 1) -> None:
                taken = 0
                deadline = time.perf_counter() + timeout_ms / 1000
                while taken < frames_count:
                    if not self._queued.acquire(timeout=max(0.0, deadline - time.perf_counter())):
                        for _ in range(taken):
                            self._queued.release()
                        raise fake._exception("HAILO_TIMEOUT")
                    taken += 1
                for _ in range(taken):  # ready: the frames fit; run_async takes them
                    self._queued.release()

            def run_async(self, bindings: list[Bindings], callback: Any = None) -> AsyncInferJob:
                model = self._infer_model
                assert model is not None, "ConfiguredInferModel used after its context"
                if not (model._scheduled or self.active):
                    raise exc.HailoRTNetworkGroupNotActivatedException("Network group is not activated")
                fake.calls.append(("ConfiguredInferModel.run_async", len(bindings)))
                for _ in bindings:
                    if not self._queued.acquire(blocking=False):
                        raise fake._exception("HAILO_QUEUE_IS_FULL")
                if self._device is None:
                    self._device = threading.Thread(target=self._work, name="fake-hailo-device", daemon=True)
                    fake.threads.append(self._device)
                    self._device.start()
                job = AsyncInferJob(bindings, callback)
                self._jobs.put(job)
                return job

            def _work(self) -> None:
                while (job := self._jobs.get()) is not None:
                    deadline = time.perf_counter() + fake.latency_s * len(job._bindings)  # its frames back to back
                    try:
                        fake._check("infer")
                        self._infer(job._bindings, paced=False)
                    except Exception as error:
                        job._error = error
                    left = deadline - time.perf_counter()
                    if left > 0:  # one wait per job: the device's frames need no Python in between
                        time.sleep(left)
                    for _ in job._bindings:
                        self._queued.release()
                    if job._callback is not None:
                        job._callback(completion_info=AsyncInferCompletionInfo(job._error))
                    job._done.set()

            def run(self, bindings: list[Bindings], timeout: int) -> None:
                model = self._infer_model
                assert model is not None, "ConfiguredInferModel used after its context"
                if not (model._scheduled or self.active):
                    raise exc.HailoRTNetworkGroupNotActivatedException("Network group is not activated")
                fake._check("infer")
                fake.calls.append(("ConfiguredInferModel.run", len(bindings)))
                self._infer(bindings)

            def _infer(self, bindings: list[Bindings], paced: bool = True) -> None:
                model = self._infer_model
                assert model is not None, "ConfiguredInferModel used after its context"
                for b in bindings:
                    (name,) = model.input_names
                    frame = b.input(name).get_buffer()
                    if frame is None:
                        raise exc.HailoRTInvalidOperationException(
                            "Invalid operation. See hailort.log for more information"
                        )
                    check_frame_shape(model._model, name, frame.shape)
                    outputs = fake.frame_outputs(model._model, frame, paced)
                    for info in model._model.outputs:
                        stream = b.output(info.name)
                        order = nms_order_name(stream._stream.format)
                        if order == "HAILO_NMS_BY_SCORE":
                            stream._write(by_class_to_by_score(outputs[info.name], info.nms_shape))
                        elif is_nms(stream._stream.format):
                            stream._write(outputs[info.name])
                        else:
                            stream._write(fake.to_user(info, outputs[info.name], stream._stream.format.type))

        class VDevice:
            def __init__(self, params: VDeviceParams | None = None, *, device_ids: list[str] | None = None) -> None:
                self._params = params or VDevice.create_params()
                asked = list(device_ids or self._params.device_ids)
                fake.vdevice_params.append(
                    {"device_ids": asked, "scheduling_algorithm": self._params.scheduling_algorithm}
                )
                fake._check("vdevice")
                if any(d not in fake.devices for d in asked) or not fake.devices:
                    raise fake._exception("HAILO_OUT_OF_PHYSICAL_DEVICES")
                self._ids = asked or fake.devices[:1]
                self._released = False

            @staticmethod
            def create_params() -> VDeviceParams:
                return VDeviceParams()

            @property
            def _scheduled(self) -> bool:
                return bool(self._params.scheduling_algorithm != HailoSchedulingAlgorithm.NONE)

            def configure(self, hef: HEF, configure_params_by_name: dict[str, Any] | None = None) -> list[Any]:
                fake._check("configure")
                params = (configure_params_by_name or {}).get(hef._model.group, ConfigureNetworkParams())
                fake.batch_sizes.append(params.batch_size)
                return [ConfiguredNetwork(hef._model, self._scheduled)]

            def get_physical_devices_ids(self) -> list[str]:
                return list(self._ids)

            def get_physical_devices(self) -> list[Device]:
                return [Device(device_id) for device_id in self.get_physical_devices_ids()]

            def release(self) -> None:
                if not self._released:
                    fake.released += 1
                self._released = True

            def __enter__(self) -> VDevice:
                return self

            def __exit__(self, *args: object) -> None:
                self.release()

        class VDeviceWithInferModel(VDevice):
            def create_infer_model(self, hef_source: object, name: str = "") -> InferModel:
                return InferModel(fake.model(hef_source), str(hef_source), self._scheduled)

        class Control:
            """Device.control (hailort: pyhailort.py, ``Control``): identify() of the board."""

            def __init__(self, device: Device) -> None:
                self._device_object = device

            @property
            def device_id(self) -> str:
                return self._device_object.device_id

            def identify(self) -> BoardInformation:
                if self._device_object._released:
                    raise exc.HailoRTInvalidOperationException("The device in use has been released.")
                fake._check("identify")
                return fake.boards[self.device_id].information()

        class Device:
            @classmethod
            def scan(cls) -> list[str]:
                return list(fake.devices)

            def __init__(self, device_id: str | None = None) -> None:
                if device_id is None:
                    if not fake.devices:
                        raise exc.HailoRTException("HailoRT device not found in the system")
                    device_id = fake.devices[0]
                if device_id not in fake.devices:
                    raise fake._exception("HAILO_OUT_OF_PHYSICAL_DEVICES")
                self._device_id = device_id
                self._released = False
                self._control_object = Control(self)
                fake.opened_devices += 1

            def __enter__(self) -> Device:
                return self

            def __exit__(self, *args: object) -> None:
                self.release()

            def release(self) -> None:
                if not self._released:
                    fake.opened_devices -= 1
                self._released = True

            @property
            def device_id(self) -> str:
                return self._device_id

            @property
            def control(self) -> Control:
                return self._control_object

        module = ModuleType("hailo_platform")
        module.__spec__ = importlib.machinery.ModuleSpec("hailo_platform", None)
        pyhailort_package = ModuleType("hailo_platform.pyhailort")
        pyhailort_package.pyhailort = self.pyhailort  # type: ignore[attr-defined]
        exported = {
            "__version__": self.profile.version,
            "pyhailort": pyhailort_package,
            "HEF": HEF,
            "ConfigureParams": ConfigureParams,
            "FormatType": FormatType,
            "FormatOrder": FormatOrder,
            "HailoStreamInterface": HailoStreamInterface,
            "HailoSchedulingAlgorithm": HailoSchedulingAlgorithm,
            "InputVStreamParams": InputVStreamParams,
            "OutputVStreamParams": OutputVStreamParams,
            "InferVStreams": InferVStreams,
            "VDevice": VDeviceWithInferModel if self.profile.infer_model else VDevice,
            "Device": Device,
            "HailoRTException": exc.HailoRTException,
        }
        identified = {
            "Control": Control,
            "BoardInformation": BoardInformation,
            "HailoFirmwareVersion": HailoFirmwareVersion,
            "DeviceArchitectureTypes": DeviceArchitectureTypes,
        }
        for name, value in identified.items():
            setattr(self.pyhailort, name, value)
        for name, value in exported.items():
            setattr(module, name, value)
        for name, value in exported.items():
            if name not in ("__version__", "pyhailort"):
                setattr(self.pyhailort, name, value)
        # What the fake stands in for, by its name in hailo_platform.pyhailort.pyhailort (held to the real
        # module by tests/backends/test_hailort_oracle.py); the vstream infos are the pybind11 module's (_pyhailort).
        self.api = {
            **{k: v for k, v in exported.items() if k not in ("__version__", "pyhailort")},
            "VDevice": exported["VDevice"],
            **identified,
            "ConfiguredNetwork": ConfiguredNetwork,
            "ActivatedNetworkContextManager": ActivatedNetworkContextManager,
            "EmptyContextManager": EmptyContextManager,
            **(
                {
                    "InferModel": InferModel,
                    "InferModel.InferStream": InferStream,
                    "ConfiguredInferModel": ConfiguredInferModel,
                    "ConfiguredInferModel.Bindings": Bindings,
                    "ConfiguredInferModel.Bindings.InferStream": BindingStream,
                    "AsyncInferJob": AsyncInferJob,
                }
                if self.profile.infer_model
                else {}
            ),
        }
        return module
