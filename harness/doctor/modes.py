"""The failure modes: each with its injection into a bench and the diagnosis that must name it."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, cast

import yaml

from harness.backends.base import Runner
from harness.core import defaults
from harness.core.errors import HarnessError, HeadPairingError
from harness.core.head_family import HeadFamily
from harness.core.settings import NmsMode, Preprocess
from harness.decode.heads import decoder
from harness.decode.layout import DEFAULT_BOX_CHANNELS
from harness.doctor.adapters import HostPath, ListedRunner
from harness.doctor.bench import Bench
from harness.doctor.description import with_nms
from harness.doctor.mistakes import (
    BOX_RANGE,
    SCORE_SHIFT,
    box_distances_read_as_dfl,
    box_range_collapsed,
    fcr_read_channel_first,
    normalised_again,
    one2one_with_nms,
    one_class_per_anchor,
    paired_by_listing_order,
    records_read_x_first,
    reversed_channels,
    scores_shifted,
    sigmoid_on_probabilities,
    sigmoid_on_scores,
    sixteen_bit_read_as_eight,
)
from harness.families import part
from harness.families.yolov8.decode import decode
from harness.inputs.dataset import Dataset, DatasetError
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import OFF_DOMAIN
from harness.inputs.hef.reader import HefInfo
from harness.pipeline.detect import (
    DetectionPath,
)
from harness.pipeline.factory import open_runner, path_over

ONE2MANY_IOU = 0.45  # a YOLOv8 pipeline's host NMS: Ultralytics' (best class per anchor) at this IoU
NMS_TEMPLATE_CLASSES = 80
WRONG_REGRESSION_LENGTH = 8
WRONG_NMS_SCORE_THRESHOLD = 0.25


# -------------------------------------------------------------------------------------------- the modes


@dataclass(frozen=True)
class Injected:
    """What a mode changed: the path to evaluate (and the dataset it sees), or a HEF description
    for the static checks."""

    path: DetectionPath | None = None
    dataset: Dataset | None = None
    description: HefInfo | None = None


Inject = Callable[[Bench, ExitStack], Injected]


@dataclass(frozen=True)
class Mode:
    """One failure mode. ``expected``: the diagnosis that must name it, a rule of
    :data:`harness.verdict.diagnosis.RULES`, a static check of :mod:`harness.verdict.hef_checks` or a refusal of
    :data:`REFUSALS`; ``detail`` a word the top finding's text must contain as well. ``gap``, when
    set, says why no gate can catch the mode (it is still injected and diagnosed). ``every_family``: the users
    of every head family make it; else the families whose ``modes`` part names it (:class:`FamilyModes`)."""

    name: str
    mistake: str
    injection: str
    expected: str
    inject: Inject
    needs_emulator: bool = False
    needs_labels: bool = False  # the mistake lives in the dataset's class names
    detail: str = ""
    gap: str = ""
    every_family: bool = False


@dataclass(frozen=True)
class Refusal:
    """An error the harness raises for a mistake it refuses to measure, recognised by its type and a
    phrase of its message."""

    name: str
    error: type[HarnessError]
    phrase: str


REFUSALS: tuple[Refusal, ...] = (
    Refusal("class_names_reordered", DatasetError, "the same names in another order"),
    Refusal("not_raw_heads", HeadPairingError, "is not a raw head map"),
    Refusal("no_dfl_box_head", HeadPairingError, "expected exactly one with 4 * reg_max channels"),
)


def _calibration_off_domain(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.path(stack, replace(bench.subject_spec, calibration=OFF_DOMAIN)))


def _nms_without_sigmoid(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.path(stack, replace(bench.subject_spec, sigmoid_inside=False)))


def _host_sigmoid_on_probabilities(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, sigmoid_on_probabilities))


def _host_sigmoid_on_nms_scores(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(HostPath(bench.subject_path(stack), "sigmoid on scores", after=sigmoid_on_scores))


def _scores_shifted(bench: Bench, stack: ExitStack) -> Injected:
    inner = bench.subject_path(stack)
    return Injected(HostPath(inner, f"scores shifted {SCORE_SHIFT:+g}", after=scores_shifted(bench.settings)))


def _raw_decoder_on_nms_buffer(bench: Bench, stack: ExitStack) -> Injected:
    # the harness's own raw-head decoder over the NMS HEF's one output, as the field's host code kept its raw decoder
    return Injected(bench.path(stack, replace(bench.subject_spec, decoder=decode)))


def _records_x_first(bench: Bench, stack: ExitStack) -> Injected:
    inner = bench.subject_path(stack)
    return Injected(HostPath(inner, "records read x-first", after=records_read_x_first(bench.settings)))


def _input_normalised_twice(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(HostPath(bench.subject_path(stack), "input /255 twice", before=normalised_again))


def _bgr_input(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(HostPath(bench.subject_path(stack), "BGR input", before=reversed_channels))


def _resize_not_letterbox(bench: Bench, stack: ExitStack) -> Injected:
    other = Preprocess.LETTERBOX if bench.settings.preprocess is Preprocess.RESIZE else Preprocess.RESIZE
    return Injected(bench.subject_path(stack, replace(bench.settings, preprocess=other)))


def _classes_listed_smallest_grid_first(runner: Runner) -> list[str]:
    specs = runner.output_specs
    boxes = [n for n, s in specs.items() if s.channels == DEFAULT_BOX_CHANNELS]
    classes = sorted((n for n in specs if n not in boxes), key=lambda n: specs[n].grid[0] * specs[n].grid[1])
    return [*boxes, *classes]


def _heads_paired_across_grids(bench: Bench, stack: ExitStack) -> Injected:
    spec = bench.raw_spec(paired_by_listing_order)
    opened = stack.enter_context(open_runner(spec, bench.run))
    listed = ListedRunner(opened.runner, _classes_listed_smallest_grid_first(opened.runner))
    return Injected(path_over(replace(opened, runner=listed), spec, bench.run))


def _fcr_read_channel_first(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, fcr_read_channel_first))


def _box_range_collapsed(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, box_range_collapsed))


def _sixteen_bit_read_as_eight(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, sixteen_bit_read_as_eight(decoder(bench.run.family))))


def _one2one_with_nms(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, one2one_with_nms()))


def _one2one_as_one2many(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, one2one_with_nms(ONE2MANY_IOU, NmsMode.ULTRALYTICS, multi_label=False)))


def _box_distances_read_as_dfl(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, box_distances_read_as_dfl(decoder(bench.run.family))))


def _dfl_decoder_on_distance_heads(bench: Bench, stack: ExitStack) -> Injected:
    # the harness's own YOLOv8 decoder (DFL, box heads of 4 x reg_max >= 8 channels) over YOLO26's heads
    return Injected(bench.raw_path(stack, decode))


def _one_class_per_anchor(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, one_class_per_anchor))


def _class_names_swapped(bench: Bench, stack: ExitStack) -> Injected:
    """A copy of the dataset description: the same images and labels, the first two names swapped."""
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hailo-harness-doctor-")))
    names = list(bench.dataset.names)
    names[0], names[1] = names[1], names[0]
    (folder / "val.txt").write_text("".join(f"{s.path.resolve()}\n" for s in bench.dataset.samples), encoding="utf-8")
    root = str(Path(bench.dataset.root).resolve())
    description = {"path": root, "val": str(folder / "val.txt"), "names": dict(enumerate(names))}
    (folder / "data.yaml").write_text(yaml.safe_dump(description, sort_keys=False), encoding="utf-8")
    return Injected(bench.subject_path(stack), load_yolo(folder / "data.yaml"))


def _class_map_wrong(bench: Bench, stack: ExitStack) -> Injected:
    n = len(bench.dataset.names)
    shifted = tuple((i + 1) % len(bench.model_names) for i in range(n))
    return Injected(bench.subject_path(stack, replace(bench.settings, class_map=shifted)))


def _nms_classes_wrong(bench: Bench, stack: ExitStack) -> Injected:
    classes = len(bench.model_names)
    wrong = NMS_TEMPLATE_CLASSES if classes != NMS_TEMPLATE_CLASSES else classes + 1
    return Injected(description=with_nms(bench.description, classes=wrong))


def _nms_regression_length_wrong(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(description=with_nms(bench.description, regression_length=WRONG_REGRESSION_LENGTH))


def _nms_score_threshold_differs(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(description=with_nms(bench.description, score_threshold=WRONG_NMS_SCORE_THRESHOLD))


MODES: tuple[Mode, ...] = (
    Mode(
        "calibration_off_domain",
        "calibrated on 64 images that show none of the classes",
        "emulated HEF quantized on the demo's 64 off-domain calibration frames",
        "score_cap",
        _calibration_off_domain,
        needs_emulator=True,
        every_family=True,
    ),
    Mode(
        "nms_without_sigmoid",
        "NMS HEF compiled without the sigmoid on the class convs",
        "emulated HEF with HailoRT's NMS op and class logits (sigmoid_inside=False, nms=True)",
        "sigmoid_missing",
        _nms_without_sigmoid,
        needs_emulator=True,
    ),
    Mode(
        "host_sigmoid_on_probabilities",
        "host sigmoid over raw class outputs that are post-sigmoid already",
        "host decoder forcing a sigmoid over the raw-output HEF's post-sigmoid class heads",
        "sigmoid_applied_twice",
        _host_sigmoid_on_probabilities,
    ),
    Mode(
        "host_sigmoid_on_nms_scores",
        "host sigmoid over the NMS output's scores",
        "wrapper applying a sigmoid to every detection score of the path under test",
        "sigmoid_applied_twice",
        _host_sigmoid_on_nms_scores,
        every_family=True,
    ),
    Mode(
        "scores_shifted_on_device",
        "the device scores the same objects uniformly lower",
        f"every score of the path under test moved by {SCORE_SHIFT:+g}, the boxes kept",
        "confidence_shift",
        _scores_shifted,
        every_family=True,
    ),
    Mode(
        "raw_decoder_on_nms_buffer",
        "the raw-head decoder run over a HAILO_NMS_BY_CLASS buffer",
        "the harness' raw-heads path over the emulated NMS HEF's one output",
        "not_raw_heads",
        _raw_decoder_on_nms_buffer,
        needs_emulator=True,
    ),
    Mode(
        "nms_records_read_x_first",
        "NMS records read x-first (they are y_min, x_min, y_max, x_max)",
        "wrapper re-reading each box as an x-first record in the model input",
        "yx_swapped",
        _records_x_first,
    ),
    Mode(
        "input_normalised_twice",
        "the host divides by 255 on top of the HEF's normalization layer",
        "wrapper feeding uint8(image / 255)",
        "input_normalised_twice",
        _input_normalised_twice,
        every_family=True,
    ),
    Mode(
        "bgr_input",
        "BGR frames fed where the model expects RGB",
        "wrapper reversing the colour channels of each image",
        "channels_swapped",
        _bgr_input,
        every_family=True,
    ),
    Mode(
        "resize_not_letterbox",
        "plain resize in the path under test, letterbox in the reference",
        "path under test with settings preprocess=resize",
        "settings_differ",
        _resize_not_letterbox,
        detail="preprocess",
        every_family=True,
    ),
    Mode(
        "heads_paired_across_grids",
        "box and class heads paired by listing order across grids",
        "host decoder pairing heads in listing order, outputs listed class heads smallest grid first",
        "heads_paired_across_grids",
        _heads_paired_across_grids,
    ),
    Mode(
        "fcr_read_channel_first",
        "FCR head outputs read channel-first",
        "host decoder reshaping FCR outputs as [C, H, W]",
        "fcr_read_channel_first",
        _fcr_read_channel_first,
    ),
    Mode(
        "box_range_collapsed",
        "box convs quantized on a range far too coarse (the DFC at a reduced optimization level)",
        f"the raw-output HEF's DFL logits clipped to +-{BOX_RANGE:g}, the class outputs as they are",
        "box_regression_collapse",
        _box_range_collapsed,
        needs_emulator=True,
    ),
    Mode(
        "sixteen_bit_read_as_eight",
        "16-bit outputs (YOLO26's a16 output layers) read as 8-bit buffers",
        "host decoder reading each uint16 output buffer's first H x W x C bytes as its codes",
        "sixteen_bit_read_as_eight",
        _sixteen_bit_read_as_eight,
        needs_emulator=True,
    ),
    Mode(
        "one2one_decoded_with_nms",
        "YOLO26's one-to-one head decoded with an NMS instead of its top-k",
        "host decoder running the evaluation's NMS (its IoU threshold, per class) over the one-to-one head's anchors",
        "nms_on_one_to_one",
        _one2one_with_nms,
    ),
    Mode(
        "one2one_decoded_as_one2many",
        "YOLO26's one-to-one head decoded as a one-to-many head, with a YOLOv8 pipeline's NMS",
        "host decoder running Ultralytics' NMS (best class per anchor, IoU "
        f"{ONE2MANY_IOU:g}) over the one-to-one head's anchors",
        "nms_on_one_to_one",
        _one2one_as_one2many,
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
        "the harness' YOLOv8 raw-head decoder over the YOLO26 HEF's six outputs (refused where no head has "
        "4 x reg_max >= 8 channels, as with the demo's 2 classes; a class head of 8, 12, ... 80 channels "
        "would be taken for the box head)",
        "no_dfl_box_head",
        _dfl_decoder_on_distance_heads,
    ),
    Mode(
        "one_class_per_anchor",
        "YOLO26's top-k keeping one class per anchor (its best), never a second",
        f"host decoder keeping the best class of the {defaults.MAX_TOTAL} anchors with the best class score",
        "none",
        _one_class_per_anchor,
        gap="the same detections as the top-k wherever no anchor passes the score threshold with two classes, "
        "which a one-to-one head (one prediction an object) rarely does at a deployment threshold: no frame of "
        "the demo does at 0.2",
    ),
    Mode(
        "class_names_swapped",
        "the dataset names its classes in another order than the model",
        "dataset copy (same images and labels) with the first two class names swapped",
        "class_names_reordered",
        _class_names_swapped,
        needs_labels=True,
        every_family=True,
    ),
    Mode(
        "class_map_wrong",
        "an explicit class map that pairs each dataset class with the wrong model class",
        "settings class_map mapping dataset class i to model class i + 1",
        "dataset_class_order",
        _class_map_wrong,
        needs_labels=True,
        every_family=True,
    ),
    Mode(
        "nms_classes_wrong",
        "NMS config with the wrong class count",
        f"HEF description with the NMS op's classes set to the template's {NMS_TEMPLATE_CLASSES}",
        "nms_classes_vs_onnx",
        _nms_classes_wrong,
    ),
    Mode(
        "nms_regression_length_wrong",
        "NMS config with the wrong regression length",
        f"HEF description with the NMS op's regression_length {WRONG_REGRESSION_LENGTH}",
        "regression_length",
        _nms_regression_length_wrong,
    ),
    Mode(
        "nms_score_threshold_differs",
        "the HEF's NMS score threshold differs from the evaluation's",
        f"HEF description with the NMS op's score_threshold {WRONG_NMS_SCORE_THRESHOLD}",
        "score_threshold",
        _nms_score_threshold_differs,
    ),
)

MODES_BY_NAME: Mapping[str, Mode] = {m.name: m for m in MODES}


class FamilyModes(Protocol):
    """A head family's ``modes`` part: the same functions in every family's module."""

    def doctor_modes(self) -> tuple[str, ...]:
        """The names of the modes (:data:`MODES`) a user of the family's heads meets beyond every family's."""
        ...

    def static_checks_control(self) -> bool:
        """Whether the static HEF checks of the family's clean HEF description are a clean control (they
        describe a YOLOv8 NMS HEF)."""
        ...


def family_modes(family: HeadFamily) -> FamilyModes:
    """``family``'s ``modes`` part."""
    return cast(FamilyModes, part(family, "modes"))


def modes_for(family: HeadFamily) -> tuple[Mode, ...]:
    """The modes a user of ``family``'s heads can meet: every family's and those its ``modes`` part names
    (YOLOv8's DFL and NMS-op modes are not YOLO26's), in the order of :data:`MODES`."""
    own = family_modes(family).doctor_modes()
    return tuple(m for m in MODES if m.every_family or m.name in own)


def inject(mode: Mode | str, bench: Bench, stack: ExitStack) -> Injected:
    """``mode`` injected into ``bench``; runners and temporary files live as long as ``stack``."""
    mode = MODES_BY_NAME[mode] if isinstance(mode, str) else mode
    if mode.needs_emulator and bench.hef is None:
        raise HarnessError(f"mode {mode.name}: needs an emulated HEF; the emulator refuses {bench.onnx.name}")
    return mode.inject(bench, stack)
