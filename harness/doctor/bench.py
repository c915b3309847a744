"""The bench: one model on one dataset with its clean reference, its clean path under test and
their baselines: everything a failure mode is injected into."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.backends.emulator import EmulatedHef
from harness.conformance.suite import Decoder
from harness.core import defaults
from harness.core.checks import CheckResult
from harness.core.errors import HarnessError
from harness.core.settings import EvalSettings
from harness.doctor.description import hef_description
from harness.inputs.dataset import Dataset, DatasetError
from harness.inputs.demo import DEMO_ONNX
from harness.inputs.hef.reader import HefInfo
from harness.pipeline.detect import (
    DetectionPath,
)
from harness.pipeline.factory import RunContext, emulated_hef, evaluate_spec, load_dataset, open_path, prepare_run
from harness.pipeline.spec import REFERENCE, Backend, PathSpec, SettingsSpec, golden_roots
from harness.verdict.diagnosis_evidence import MIN_BOXES, matched_share
from harness.verdict.golden import BlessedAgreement, Golden, baseline_file
from harness.verdict.golden_blessing import golden_from_result
from harness.verdict.golden_reading import load_golden
from harness.verdict.hef_checks import CheckContext, run_checks
from harness.verdict.metrics.agreement import agreement
from harness.verdict.result import PathResult


def subset(dataset: Dataset, indices: Sequence[int]) -> Dataset:
    """The samples at ``indices`` (kept in dataset order), with a manifest of their own."""
    samples = tuple(dataset.samples[i] for i in sorted(set(indices)))
    ids = [s.image_id for s in samples]
    manifest = hashlib.sha256("\0".join([dataset.manifest, *ids]).encode()).hexdigest()
    kept = set(ids)
    missing = tuple(i for i in dataset.missing_labels if i in kept)
    return replace(dataset, samples=samples, missing_labels=missing, unreadable=(), manifest=manifest)


@dataclass(frozen=True)
class Bench:
    """One model on one dataset, with everything a mode is injected into: the run (model, the whole
    dataset, settings, caches), the images the modes run on (``dataset``: all of them or the first
    few), the clean ONNX reference, the clean path under test (``subject_spec``: the emulated HEF's
    NMS path, or the ONNX path where the emulator refuses the model: ``emulator_refusal``), the
    emulated HEF, and the baselines."""

    run: RunContext
    dataset: Dataset
    subject_spec: PathSpec
    hef: EmulatedHef | None
    emulator_refusal: str
    reference: PathResult
    subject: PathResult
    baselines: Mapping[str, Golden] = field(default_factory=dict)
    baseline_sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def bbox_only(self) -> bool:
        """The path under test is a bbox-only HEF: HailoRT's NMS op compiled ``bbox_decoding_only``, the NMS the
        host's."""
        return self.subject_spec.bbox_only

    @property
    def onnx(self) -> Path:
        return self.run.onnx

    @property
    def settings(self) -> EvalSettings:
        return self.run.settings

    @property
    def model_names(self) -> tuple[str, ...]:
        return self.run.names

    @property
    def original_hw(self) -> dict[str, tuple[int, int]]:
        return self.dataset.original_hw

    def path(self, stack: ExitStack, spec: PathSpec, settings: EvalSettings | None = None) -> DetectionPath:
        return stack.enter_context(open_path(spec, self.run, settings))

    def subject_path(self, stack: ExitStack, settings: EvalSettings | None = None) -> DetectionPath:
        """The clean path under test, under ``settings`` (default: the bench's)."""
        return self.path(stack, self.subject_spec, settings)

    def raw_spec(self, decoder: Decoder) -> PathSpec:
        """A host decoder over raw head outputs: the emulated raw-output HEF's (sigmoid inside; neither an NMS op
        nor its bbox-only form), or the ONNX cut at its heads where the emulator refuses the model."""
        if self.hef is None:
            return PathSpec(Backend.ONNX, decoder=decoder)
        return replace(self.subject_spec, hef_nms=False, bbox_only=False, decoder=decoder)

    def raw_path(self, stack: ExitStack, decoder: Decoder) -> DetectionPath:
        return self.path(stack, self.raw_spec(decoder))

    def evaluate_path(self, path: DetectionPath, dataset: Dataset | None = None) -> PathResult:
        return self.run.evaluate_path(path, dataset or self.dataset)

    def reference_for(self, result: PathResult) -> PathResult:
        """The ONNX reference relabelled with ``result``'s class map (the map changes no prediction)."""
        if result.settings.class_map == self.reference.settings.class_map:
            return self.reference
        with ExitStack() as stack:
            settings = replace(self.settings, class_map=result.settings.class_map)
            return self.evaluate_path(self.path(stack, REFERENCE, settings))

    @property
    def reference_top_score(self) -> float | None:
        """The float model's highest score on the bench's images (None: it finds no box)."""
        return max((float(p.scores.max()) for p in self.reference.predictions if len(p)), default=None)

    def own_agreement(self, path: str) -> BlessedAgreement | None:
        """What a clean run of ``path`` does against the reference (its matched share and mean absolute score drift:
        its own noise, :mod:`harness.verdict.score_shift`): what its baseline blessed, or, for the path under test
        without one, the clean run's (what blessing it would keep); None for the reference itself."""
        golden = self.baselines.get(path)
        if golden is not None and golden.agreement is not None:
            return golden.agreement
        if path != self.subject.path or self.subject is self.reference:
            return None
        clean = agreement(self.reference.predictions, self.subject.predictions)
        return BlessedAgreement(matched_share(clean), clean.mean_abs_score_drift)

    def require_boxes(self) -> None:
        """Refuses, in one line, images on which the float model finds fewer than
        :data:`~harness.verdict.diagnosis_evidence.MIN_BOXES` boxes: no gate of a clean run could be told from a
        broken one's on them."""
        found = self.reference.box_counts.total
        if found < MIN_BOXES:
            raise DatasetError(
                f"dataset {self.dataset.root}: the float model finds {found} box{'' if found == 1 else 'es'} on the "
                f"{len(self.dataset.samples)} images the doctor runs on at score threshold "
                f"{self.settings.score_threshold:g}, expected at least {MIN_BOXES}: give it more images (--first) or "
                "images of the model's task"
            )

    @property
    def description(self) -> HefInfo:
        """The clean HEF description the static checks read (see :func:`hef_description`)."""
        return hef_description(self.onnx, self.run.facts, self.settings, self.hef)

    def checks(self, info: HefInfo) -> tuple[CheckResult, ...]:
        """The static checks of ``info``, the class outputs' score floor the float model's own highest score on the
        bench's images where that is below the default (no fixed floor where the model has its own)."""
        top = self.reference_top_score
        own = top is not None and top < defaults.MIN_SCORE_CAP
        context = CheckContext(
            info,
            self.run.facts,
            self.dataset.names,
            self.settings.score_threshold,
            min_score_cap=top if own and top is not None else defaults.MIN_SCORE_CAP,
            score_cap_source="the float model's own highest score on these images" if own else "",
        )
        return run_checks(context)


def _baseline(golden_root: Path, onnx: Path, clean: PathResult, dataset: Dataset) -> tuple[Golden, str]:
    file = baseline_file(golden_roots(golden_root, onnx), onnx, clean.path, Path(dataset.root).name)
    if file.exists():
        golden = load_golden(file)
        # a baseline of other images or other settings (another operating threshold) holds nothing here
        if golden.provenance.dataset_manifest == dataset.manifest and not golden.settings.differences(clean.settings):
            return golden, f"golden {file}"
    return golden_from_result(clean), f"clean run of {clean.label} on the same {len(dataset.samples)} images"


def open_bench(
    onnx: Path = DEMO_ONNX,
    dataset: Path | None = None,
    first: int | None = None,
    split: str = defaults.SPLIT,
    images: Path | None = None,
    max_unreadable: float = defaults.MAX_UNREADABLE,
    calibration: str | None = None,
    cache_dir: Path = defaults.CACHE_DIR,
    golden_root: Path = defaults.GOLDEN_DIR,
    settings: SettingsSpec | None = None,
    log: Callable[[str], None] = lambda line: None,
    bbox_only: bool = False,
) -> Bench:
    """The bench of ``onnx`` on ``dataset`` (default: the demo validation set; a COCO file with its
    ``images`` folder), its ``first`` images if given. ``calibration``: as the emulator's everywhere
    (a folder, ``in-domain`` / ``off-domain``; default the demo's in-domain split on the demo set,
    else the dataset's images). ``bbox_only``: the path under test a bbox-only HEF (HailoRT's NMS op compiled
    ``bbox_decoding_only``, the host's NMS after it). ``log`` gets a line per step of the bench's set-up."""
    full = load_dataset(dataset, split, Path(cache_dir), images, log)
    if not full.samples:
        raise DatasetError(f"dataset {full.root}: no readable images to run the doctor on")
    run = prepare_run(onnx, full, settings, Path(cache_dir), progress=False, log=log, max_unreadable=max_unreadable)
    full = run.dataset  # images without labels take the model's class names here
    data = subset(full, range(min(first, len(full.samples)))) if first else full
    spec = PathSpec(Backend.EMULATOR, calibration=calibration, bbox_only=bbox_only)
    reference = evaluate_spec(REFERENCE, run, data)
    hef: EmulatedHef | None
    try:
        hef, refusal = emulated_hef(spec, run), ""
    except HarnessError as error:
        hef, refusal, spec = None, str(error), REFERENCE
    subject = evaluate_spec(spec, run, data) if hef is not None else reference
    # The modes' own evaluations are the doctor's lines to tell (harness.doctor.table.run_doctor).
    bench = Bench(replace(run, log=lambda line: None), data, spec, hef, refusal, reference, subject)
    baselines, sources = {}, {}
    for clean in {reference.path: reference, subject.path: subject}.values():
        baselines[clean.path], sources[clean.path] = _baseline(golden_root, bench.onnx, clean, data)
    return replace(bench, baselines=baselines, baseline_sources=sources)
