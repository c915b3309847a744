"""The doctor modes a user of either YOLO26 head meets beyond the shared ones (:mod:`harness.doctor.modes`):
its 16-bit outputs and its box heads of 4 distances misread."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack

from harness.decode.heads import decoder
from harness.doctor.bench import Bench
from harness.doctor.mistakes import box_distances_read_as_dfl, sixteen_bit_read_as_eight
from harness.doctor.mode import Injected, Mode, host_decoder
from harness.families.yolov8.decode import decode as yolov8_decode


def shared_gaps() -> Mapping[str, str]:
    return {}


def _sixteen_bit_read_as_eight(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, sixteen_bit_read_as_eight(decoder(bench.run.family))))


def _box_distances_read_as_dfl(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, box_distances_read_as_dfl(decoder(bench.run.family))))


YOLO26_MODES: tuple[Mode, ...] = (
    Mode(
        "sixteen_bit_read_as_eight",
        "16-bit outputs (YOLO26's a16 output layers) read as 8-bit buffers",
        "host decoder reading each uint16 output buffer's first H x W x C bytes as its codes",
        "sixteen_bit_read_as_eight",
        _sixteen_bit_read_as_eight,
        needs_emulator=True,
    ),
    Mode(
        "box_distances_read_as_dfl",
        "YOLO26's reg_max 1 box heads (4 distances) read as DFL bins",
        "host decoder putting each side's one channel through a DFL of one bin (softmax, then the integral "
        "against bin index 0)",
        "box_distances_read_as_dfl",
        _box_distances_read_as_dfl,
    ),
    Mode(
        "yolov8_decoder_on_yolo26",
        "a YOLOv8/YOLO11 decoder (DFL box heads, reg_max 16) kept for YOLO26's heads of 4 distances",
        "a YOLOv8 raw-head decoder over the YOLO26 HEF's six outputs (refused where no head has "
        "4 x reg_max >= 8 channels, as with the demo's 2 classes; a class head of 8, 12, ... 80 channels "
        "would be taken for the box head)",
        "no_dfl_box_head",
        host_decoder(yolov8_decode),  # a YOLOv8 decoder (DFL, 4 x reg_max >= 8 channels) over YOLO26's heads
    ),
)
