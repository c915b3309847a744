"""The failure modes: each with its injection into a bench and the diagnosis that must name it."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Protocol, cast

import yaml

from harness.backends.base import Runner
from harness.conformance.decoder_misreadings import read_on_grid
from harness.conformance.words import HEADS_PAIRED_BY_OUTPUT_ORDER
from harness.core.errors import HarnessError, HeadPairingError
from harness.core.head_family import HeadFamily
from harness.core.settings import Preprocess
from harness.decode.heads import decoder, head_layout
from harness.doctor.adapters import HostPath, ListedRunner
from harness.doctor.bench import Bench
from harness.doctor.description import with_nms
from harness.doctor.mistakes import (
    BOX_RANGE,
    SCORE_SHIFT,
    GridReading,
    box_range_collapsed,
    fcr_read_channel_first_of,
    host_nms_left_out,
    host_nms_run_twice,
    normalised_again,
    paired_by_listing_order_of,
    records_read_x_first,
    reversed_channels,
    scores_shifted,
    sigmoid_on_probabilities_of,
    sigmoid_on_scores,
)
from harness.doctor.mode import Injected, Mode, Refusal, Subject, host_decoder
from harness.families import REGISTERED, descriptor, part
from harness.inputs.dataset import DatasetError
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import OFF_DOMAIN
from harness.pipeline.factory import emulated_hef, open_runner, path_over
from harness.pipeline.spec import PathSpec
from harness.verdict.diagnosis_evidence import CAP_TIE

NMS_TEMPLATE_CLASSES = 80
WRONG_REGRESSION_LENGTH = 8
WRONG_NMS_SCORE_THRESHOLD = 0.25


# -------------------------------------------------------------------------------------------- the modes


REFUSALS: tuple[Refusal, ...] = (
    Refusal("class_names_reordered", DatasetError, "the same names in another order"),
    Refusal("not_raw_heads", HeadPairingError, "is not a raw head map"),
    # a raw-head pairing refused over the one output HailoRT names after its NMS op, ``<op>_nms_postprocess``
    # (hailort: libhailort/src/hef/hef.cpp, ``op_proto.output_pads()[0].name()``): its bbox-only buffer
    Refusal("not_raw_heads", HeadPairingError, "_nms_postprocess' ("),
    Refusal("no_dfl_box_head", HeadPairingError, "expected exactly one with 4 * reg_max channels"),
)


def _emulated_otherwise(bench: Bench, stack: ExitStack, spec: PathSpec) -> Injected:
    """The path of ``spec``, an emulated HEF built otherwise than the bench's, with that HEF: its static checks
    run beside the path's gates, as a user's ``test_hef_static`` runs beside the accuracy gates."""
    return Injected(bench.path(stack, spec), hef=emulated_hef(spec, bench.run))


def _calibration_off_domain(bench: Bench, stack: ExitStack) -> Injected:
    """The HEF calibrated on images off the task; a gap where it still represents every score the float model gives
    on the bench's images (its cap above their highest: nothing on them is capped, no gate can tell)."""
    injected = _emulated_otherwise(bench, stack, replace(bench.subject_spec, calibration=OFF_DOMAIN))
    top = bench.reference_top_score
    ceiling = injected.hef.score_ceiling if injected.hef is not None else None
    if top is None or ceiling is None or ceiling < top - CAP_TIE:  # a score this close to the cap is not capped
        return injected
    return replace(
        injected,
        gap=f"its class outputs still represent scores up to {ceiling:.4f}, the float model's highest on these images "
        f"being {top:.4f} (a cap within {CAP_TIE:g} of it stops none): no score is capped on them",
    )


def _nms_without_sigmoid(bench: Bench, stack: ExitStack) -> Injected:
    return _emulated_otherwise(bench, stack, replace(bench.subject_spec, sigmoid_inside=False))


def _host_sigmoid_on_probabilities(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, sigmoid_on_probabilities_of(bench.run.family)))


def _host_sigmoid_on_nms_scores(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(HostPath(bench.subject_path(stack), "sigmoid on scores", after=sigmoid_on_scores))


def _scores_shifted(bench: Bench, stack: ExitStack) -> Injected:
    inner = bench.subject_path(stack)
    return Injected(HostPath(inner, f"scores shifted {SCORE_SHIFT:+g}", after=scores_shifted(bench.settings)))


def _raw_decoder_on_nms_buffer(bench: Bench, stack: ExitStack) -> Injected:
    # the harness's own raw-head decoder of the family over the NMS (or bbox-only) HEF's one output, as the
    # field's host code kept its raw decoder
    return Injected(bench.path(stack, replace(bench.subject_spec, decoder=decoder(bench.run.family))))


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


def _classes_listed_smallest_grid_first(runner: Runner, bench: Bench) -> list[str]:
    """The runner's outputs listed as a HEF may list them: box maps (and objectness maps) as they come, then
    the class maps, smallest grid first (the family's layout tells which is which)."""
    specs = runner.output_specs
    layout = head_layout(bench.run.family, specs, bench.settings.input_hw)
    classes = {level.class_name for level in layout.levels}
    others = [n for n in specs if n not in classes]
    return [*others, *sorted(classes, key=lambda n: specs[n].grid[0] * specs[n].grid[1])]


def heads_paired_across_grids(read: GridReading = read_on_grid) -> Callable[[Bench, ExitStack], Injected]:
    """The injection of a host decoder pairing heads in listing order (each class map put on its box head's grid
    by ``read``) over outputs that list the class heads smallest grid first."""

    def inject(bench: Bench, stack: ExitStack) -> Injected:
        spec = bench.raw_spec(paired_by_listing_order_of(bench.run.family, read))
        opened = stack.enter_context(open_runner(spec, bench.run))
        listed = ListedRunner(opened.runner, _classes_listed_smallest_grid_first(opened.runner, bench))
        return Injected(path_over(replace(opened, runner=listed), spec, bench.run))

    return inject


def _fcr_read_channel_first(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.raw_path(stack, fcr_read_channel_first_of(bench.run.family)))


def _host_nms_left_out(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.path(stack, replace(bench.subject_spec, decoder=host_nms_left_out(bench.run.family))))


def _host_nms_run_twice(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(bench.path(stack, replace(bench.subject_spec, decoder=host_nms_run_twice(bench.run.family))))


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


# Which subjects a shared mode is offered to: its HEF has the output the mistake misreads (the family's facts:
# harness.families.descriptor).


def _nms_op_with_sigmoid(s: Subject) -> bool:
    """An NMS op (or its bbox-only form) that reads the class sigmoid compiled into the HEF."""
    return bool(s.family.nms_op) and s.family.sigmoid_compiled


def _raw_probabilities(s: Subject) -> bool:
    """Raw head maps that hold probabilities (the sigmoid compiled in), which a host decoder reads."""
    return s.family.sigmoid_compiled


def _nms_op(s: Subject) -> bool:
    """One output of HailoRT's NMS op (by class, or its bbox-only buffer), not raw heads."""
    return bool(s.family.nms_op)


def _nms_buffer(s: Subject) -> bool:
    """HailoRT's NMS_BY_CLASS buffer: records of y_min, x_min, y_max, x_max, score."""
    return s.nms_buffer


def _separate_box_and_class_maps(s: Subject) -> bool:
    """Raw heads with a box map and a class map of their own per grid, which a host pairs (not one anchored map
    per stride, not an SSD layer's maps per anchor)."""
    return not s.family.anchored


def _dfl_box_maps(s: Subject) -> bool:
    """Raw DFL box maps (4 x reg_max bins) beside an NMS op, as the DFC quantizes them."""
    return s.family.dfl_boxes and bool(s.family.nms_op)


def _described_nms_op(s: Subject) -> bool:
    """An NMS op (not bbox-only) whose every field the export gives (an SSD op's anchors and box coding are its
    config's), as :func:`~harness.doctor.description.hef_description` describes it."""
    return s.nms_buffer and not s.family.config_option


def _described_dfl_nms_op(s: Subject) -> bool:
    return _described_nms_op(s) and s.family.dfl_boxes


def _bbox_only(s: Subject) -> bool:
    return s.bbox_only


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
        offered=_nms_op_with_sigmoid,
    ),
    Mode(
        "host_sigmoid_on_probabilities",
        "host sigmoid over raw class outputs that are post-sigmoid already",
        "host decoder forcing a sigmoid over the raw-output HEF's post-sigmoid class heads",
        "sigmoid_applied_twice",
        _host_sigmoid_on_probabilities,
        offered=_raw_probabilities,
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
        "the harness' raw-heads path over the emulated NMS (or bbox-only) HEF's one output",
        "not_raw_heads",
        _raw_decoder_on_nms_buffer,
        needs_emulator=True,
        offered=_nms_op,
    ),
    Mode(
        "nms_records_read_x_first",
        "NMS records read x-first (they are y_min, x_min, y_max, x_max)",
        "wrapper re-reading each box as an x-first record in the model input",
        "yx_swapped",
        _records_x_first,
        offered=_nms_buffer,
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
        HEADS_PAIRED_BY_OUTPUT_ORDER,  # named by reproducing it (harness.conformance.decoder_misreadings)
        heads_paired_across_grids(),
        offered=_separate_box_and_class_maps,
    ),
    Mode(
        "fcr_read_channel_first",
        "FCR head outputs read channel-first",
        "host decoder reshaping FCR outputs as [C, H, W]",
        "fcr_read_channel_first",
        _fcr_read_channel_first,
        every_family=True,
    ),
    Mode(
        "box_range_collapsed",
        "box convs quantized on a range far too coarse (the DFC at a reduced optimization level)",
        f"the raw-output HEF's DFL logits clipped to +-{BOX_RANGE:g}, the class outputs as they are",
        "box_regression_collapse",
        host_decoder(box_range_collapsed),
        needs_emulator=True,
        offered=_dfl_box_maps,
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
        offered=_described_nms_op,
    ),
    Mode(
        "nms_regression_length_wrong",
        "NMS config with the wrong regression length",
        f"HEF description with the NMS op's regression_length {WRONG_REGRESSION_LENGTH}",
        "regression_length",
        _nms_regression_length_wrong,
        offered=_described_dfl_nms_op,
    ),
    Mode(
        "nms_score_threshold_differs",
        "the HEF's NMS score threshold differs from the evaluation's",
        f"HEF description with the NMS op's score_threshold {WRONG_NMS_SCORE_THRESHOLD}",
        "score_threshold",
        _nms_score_threshold_differs,
        offered=_described_nms_op,
    ),
    Mode(
        "host_nms_left_out",
        "a bbox-only HEF's buffer read without the host's NMS (the device runs none)",
        "host reading the bbox-only buffer, each proposal's best class at or above the threshold kept, no NMS",
        "host_nms_missing",
        _host_nms_left_out,
        needs_emulator=True,
        offered=_bbox_only,
    ),
    Mode(
        "host_nms_run_twice",
        "the host's NMS run twice over a bbox-only HEF's buffer (a library's, then the user's own)",
        "host running the NMS over the bbox-only buffer, then again per class at the same IoU threshold",
        "none",
        _host_nms_run_twice,
        needs_emulator=True,
        gap="a greedy NMS per class at one IoU threshold leaves no two boxes of a class above it, so a second pass "
        "keeps every box: the detections are the clean run's, and no gate can fail (nor should it)",
        offered=_bbox_only,
    ),
)


class FamilyModes(Protocol):
    """A head family's ``modes`` part: the same functions in every family's module."""

    def shared_gaps(self) -> Mapping[str, str]:
        """Why no gate can catch a shared mode offered to the family (by the mode's name), where none can on
        its heads."""
        ...

    def own_modes(self) -> tuple[Mode, ...]:
        """The modes only a user of the family's heads meets, with their injections."""
        ...


def family_modes(family: HeadFamily) -> FamilyModes:
    """``family``'s ``modes`` part."""
    return cast(FamilyModes, part(family, "modes"))


def offered(mode: Mode, subject: Subject) -> bool:
    """Whether ``mode`` is offered to ``subject``: every family's, or its predicate holds of it."""
    return mode.every_family or (mode.offered is not None and mode.offered(subject))


def modes_for(family: HeadFamily, bbox_only: bool = False) -> tuple[Mode, ...]:
    """The modes a user of ``family``'s heads can meet (its Hailo path a bbox-only HEF where ``bbox_only``): the
    shared ones offered to it (:func:`offered`), in the order of :data:`MODES`, each with the gap its ``modes`` part
    states for it where it states one, then its own (an own mode with a predicate only where it holds)."""
    subject = Subject(descriptor(family), bbox_only)
    its = family_modes(family)
    gaps = its.shared_gaps()
    shared = (replace(m, gap=gaps[m.name]) if m.name in gaps else m for m in MODES if offered(m, subject))
    own = (m for m in its.own_modes() if m.offered is None or m.offered(subject))
    return (*shared, *own)


def static_checks_control(family: HeadFamily, bbox_only: bool = False) -> bool:
    """Whether the static checks of the family's clean HEF description are a clean control: its HEF has an NMS
    op the description can give (:func:`~harness.doctor.description.hef_description`)."""
    return _described_nms_op(Subject(descriptor(family), bbox_only))


def modes_by_name() -> Mapping[str, Mode]:
    """Every mode by its name: the shared ones and each registered family's own."""
    own = (m for d in REGISTERED for m in family_modes(d.family).own_modes())
    return {m.name: m for m in (*MODES, *own)}


def inject(mode: Mode | str, bench: Bench, stack: ExitStack) -> Injected:
    """``mode`` injected into ``bench``; runners and temporary files live as long as ``stack``."""
    mode = modes_by_name()[mode] if isinstance(mode, str) else mode
    if mode.needs_emulator and bench.hef is None:
        raise HarnessError(f"mode {mode.name}: needs an emulated HEF; the emulator refuses {bench.onnx.name}")
    return mode.inject(bench, stack)
