"""The export quantized into an emulated HEF on the CPU: its calibration images, its build (cached
by content), the export check before any work, and where a failed one lost its accuracy."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core.errors import HarnessError
from harness.core.files import shared_cache
from harness.core.path_names import EMULATED_HAILO, PathKind
from harness.families import descriptor
from harness.inputs.calibration import LIST_SUFFIX
from harness.inputs.demo import IN_DOMAIN, OFF_DOMAIN, demo_split
from harness.pipeline.backends.descriptor import Backend, BackendDescriptor, OpenRunner

if TYPE_CHECKING:
    from harness.backends.emulator import EmulatedHef
    from harness.core.settings import EvalSettings, SsdConfig
    from harness.inputs.calibration import CalibrationSource
    from harness.inputs.export_facts import ExportFacts
    from harness.pipeline.factory import RunContext
    from harness.pipeline.spec import PathSpec


def calibration_source(spec: PathSpec, run: RunContext) -> tuple[CalibrationSource, int]:
    """The emulator's calibration images and how many of them: a folder, the demo set's named
    split, or by default the demo's in-domain frames on the demo set and the evaluated images
    themselves on any other (all of them where there are fewer than the count)."""
    if spec.calibration in (IN_DOMAIN, OFF_DOMAIN) or (spec.calibration is None and run.is_demo):
        return demo_split(run.cache_dir, spec.calibration or IN_DOMAIN), spec.calibration_count
    if spec.calibration is None:
        images = [s.path for s in run.dataset.samples]
        return images, min(spec.calibration_count, len(images))
    folder = Path(spec.calibration)
    if not folder.is_dir() and not (folder.suffix.lower() == LIST_SUFFIX and folder.is_file()):
        raise HarnessError(
            f"--calibration {folder}: not a folder of images nor a list file (*.txt) of them "
            f"(or {IN_DOMAIN!r} / {OFF_DOMAIN!r})"
        )
    return folder, spec.calibration_count


def _calibration(spec: PathSpec, run: RunContext) -> str:
    """The calibration images in words, and what the DFC would make of them."""
    source, count = calibration_source(spec, run)
    if isinstance(source, list):
        note = f"the first {count} of the evaluated images (the emulator's quantization ranges)"
    else:
        named = spec.calibration if spec.calibration in (IN_DOMAIN, OFF_DOMAIN) else IN_DOMAIN if run.is_demo else None
        listed = isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() == LIST_SUFFIX
        where = f"the demo set's {named} frames" if named else "the list" if listed else "the folder"
        note = f"{count} images of {where} {source} (the emulator's quantization ranges)"
    from harness.inputs.calibration import calibration_shortfall, calibration_size

    shortfall = calibration_shortfall(count, available=calibration_size(source))
    return f"{note}; a HEF compiled from them: {shortfall}" if shortfall else note


def _calibration_facts(spec: PathSpec, run: RunContext) -> tuple[tuple[str, str], ...]:
    """The calibration images as a blessing records them: which and how many, and their sha256."""
    from harness.inputs.calibration import calibration_paths, images_digest

    source, count = calibration_source(spec, run)
    default = IN_DOMAIN if spec.calibration is None and run.is_demo else None
    named = spec.calibration if spec.calibration in (IN_DOMAIN, OFF_DOMAIN) else default
    if named:
        words = f"the demo's {named} frames"
    elif isinstance(source, (str, os.PathLike)):
        words = os.fspath(source)
    else:
        words = "the evaluated images"
    digest = images_digest(calibration_paths(source, count))
    return (("calibration", f"{words} ({count})"), ("calibration_sha256", digest))


def emulated_hef(spec: PathSpec, run: RunContext) -> EmulatedHef:
    """The emulated HEF of ``spec`` (cached by content in the run's cache folder). The class sigmoid
    and HailoRT's NMS op go in as asked where the head family's HEF has them at all: a YOLO26 HEF
    has neither (:class:`~harness.core.head_family.HeadFamily`), and its outputs are 16-bit unless
    ``spec.output_bits`` says 8, as Ultralytics compiles its six output layers a16_w16
    (ultralytics: ultralytics/engine/exporter.py, ``export_hailo``). ``spec.bbox_only``: the NMS op compiled
    bbox_decoding_only in its place (a YOLO26 or YOLOX head is refused: HailoRT has no such op for it)."""
    from harness.backends.emulator import EmulatorOptions, build_emulated_hef

    source, count = calibration_source(spec, run)
    host = descriptor(run.family).host_postprocess
    bits = spec.output_bits if spec.output_bits is not None else 16 if host else 8
    options = EmulatorOptions(
        output_bits=bits,
        calibration_count=count,
        sigmoid_inside=spec.sigmoid_inside and not host,
        nms=spec.hef_nms and not host and not spec.bbox_only,
        bbox_only=spec.bbox_only,
        score_threshold=run.settings.score_threshold,
        iou_threshold=run.settings.iou_threshold,
        max_proposals_per_class=run.settings.max_per_class,
        ssd=run.facts.ssd,
    )
    return build_emulated_hef(
        run.onnx, source, options, emulator_cache(run.cache_dir), progress=run.log, onnx_sha256=run.facts.sha256
    )


def emulator_cache(cache_dir: Path) -> Path:
    """Where emulated HEFs are kept: ``emulator/`` in the shared cache (:func:`~harness.core.files.shared_cache`;
    an emulated HEF is keyed by its export, calibration images, options and the emulator's code, and
    written whole)."""
    return shared_cache(cache_dir) / "emulator"


def _open(spec: PathSpec, run: RunContext, settings: EvalSettings, stack: ExitStack) -> OpenRunner:
    from harness.backends.emulator import EmulatorRunner

    hef = emulated_hef(spec, run)
    run.log(f"Hailo path: {hef.label}")
    known = run.facts.sha256 if run.facts.source == os.fspath(run.onnx) else ""  # the export's, read once
    return OpenRunner(stack.enter_context(EmulatorRunner(hef)), run.onnx, hef.content_hash, known)


def _preflight(spec: PathSpec, onnx: Path, cache_dir: Path, ssd: SsdConfig | None) -> ExportFacts:
    """Refuse an export the emulator cannot take, checked once per its content (and SSD config ``ssd``);
    the export's facts."""
    from harness.backends.emulator import EmulatorOptions, check_export
    from harness.backends.emulator.build import export_check
    from harness.inputs.export_facts import export_facts, record_passed

    options = EmulatorOptions(sigmoid_inside=spec.sigmoid_inside, bbox_only=spec.bbox_only, ssd=ssd)
    facts = export_facts(onnx, cache_dir, ssd=ssd)
    passed = export_check(options)
    if passed not in facts.passed:
        check_export(onnx, options)
        facts = record_passed(facts, passed, cache_dir)
    return facts


def _locate(spec: PathSpec, run: RunContext, frames: Sequence[Path]) -> list[dict[str, object]]:
    """The emulated HEF's worst layers: per-tensor SQNR against the float graph on ``frames``."""
    from harness.backends.emulator.localisation import layer_sqnr, worst_layers  # onnx: only here

    run.log(f"localisation: per-tensor SQNR of the emulated HEF against the float graph on {len(frames)} images")
    return worst_layers(layer_sqnr(emulated_hef(spec, run), frames))


DESCRIPTOR = BackendDescriptor(
    Backend.EMULATOR,
    PathKind.EMULATED,
    (EMULATED_HAILO,),
    _open,
    _calibration,
    takes=frozenset({"record", "calibration", "output_bits", "bbox_only"}),
    job_path=True,
    preflight=_preflight,
    locate=_locate,
    calibration_facts=_calibration_facts,
    help="the export as an emulated HEF on the CPU",
)
