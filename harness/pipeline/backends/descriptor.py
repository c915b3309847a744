"""What the pipeline knows of one backend, as one typed object (:class:`BackendDescriptor`): its
path names and kind, the options it takes and needs, the thresholds its model compiles in, its
calibration note, and how it opens. The registry (:mod:`harness.pipeline.backends`) holds one per
:class:`Backend`; spec, options, factory and job ask it instead of comparing backends."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core.path_names import PathKind

if TYPE_CHECKING:
    from harness.backends.base import Runner
    from harness.core.settings import EvalSettings, SsdConfig
    from harness.inputs.export_facts import ExportFacts
    from harness.pipeline.detect import DetectionPath
    from harness.pipeline.factory import RunContext
    from harness.pipeline.spec import PathSpec


class Backend(str, enum.Enum):
    ONNX = "onnx"  # the float export in onnxruntime
    EMULATOR = "emulator"  # the export quantized into an emulated HEF on the CPU
    HAILORT = "hailort"  # a compiled HEF on a Hailo device
    DFC = "dfc"  # an optimized HAR in the Dataflow Compiler's emulator
    REPLAY = "replay"  # a Hailo path's outputs recorded before (--record), served for the same inputs


@dataclass(frozen=True)
class CompiledThresholds:
    """The NMS thresholds compiled into a Hailo path's model (``source`` says where, in words)."""

    score_threshold: float
    iou_threshold: float
    source: str


@dataclass(frozen=True)
class OpenRunner:
    """A backend's runner fed like a HEF, the model file it runs and what else fixes its outputs
    (the cache variant); ``model_sha256``: that file's, where it is known without reading the file
    (a replayed model's, recorded in its store: the file may not be on this machine), else empty."""

    runner: Runner
    model_file: Path
    variant: str
    model_sha256: str = ""


@dataclass(frozen=True)
class SpecOption:
    """A :class:`~harness.pipeline.spec.PathSpec` option that only some backends take: its field,
    its flag, and the refusal where another backend is given it (``{owners}``: the backends that
    take it, the first with the others in brackets; ``{listed}``: all of them; ``{name}``: the
    backend given)."""

    field: str
    flag: str
    refusal: str


# In the order a spec's options are refused.
SPEC_OPTIONS = (
    SpecOption("hef", "--hef", "--hef belongs to --backend {owners}, not --backend {name}"),
    SpecOption("replay", "--replay", "--replay STORE and --backend replay go together"),
    SpecOption("record", "--record", "--record belongs to a Hailo path ({listed}), not --backend {name}"),
    SpecOption("har", "--har", "--har belongs to --backend {owners}, not --backend {name}"),
    SpecOption("hailo_devices", "--hailo-device", "--hailo-device belongs to --backend {owners}, not --backend {name}"),
    SpecOption("calibration", "--calibration", "--calibration belongs to --backend {owners}, not --backend {name}"),
    SpecOption("output_bits", "--output-bits", "--output-bits belongs to --backend {owners}, not --backend {name}"),
    SpecOption("bbox_only", "--bbox-only", "--bbox-only belongs to --backend {owners}, not --backend {name}"),
)

Log = Callable[[str], None]


def _none(spec: PathSpec, log: Log) -> CompiledThresholds | None:
    return None


@dataclass(frozen=True)
class BackendDescriptor:
    """One backend, described once.

    ``help``: what it runs, in ``--backend``'s help. ``names``: the path names its paths carry (a
    replay carries the recorded path's: none of its own); ``name_of`` picks one per spec where there
    are several. ``kind``: what makes its outputs (``recorded``: a replay's recorded kind). ``takes``:
    the :data:`SPEC_OPTIONS` fields it takes; ``needs``: (field, refusal) of those it cannot run
    without. ``job_path``: it can be a job's Hailo path. ``open``: its runner, fed like a HEF;
    ``own_path``: a path of its own instead where no host decoder is asked for (the float export's
    decode tail). ``compiled``: the NMS thresholds its model compiles in; ``calibration``: what it
    was calibrated on, in words. ``preflight`` (spec, export, cache folder, an SSD export's config) and ``check`` (spec,
    settings): its refusals before any work; a preflight that reads the export's facts hands them on
    (the run reads them once). ``locate``: where a failed path lost its accuracy
    (per-layer rows for the report), given a few frames. ``calibration_facts``: the calibration images
    it quantized with, as a blessing records them (``calibration``: which and how many, in words;
    ``calibration_sha256``: their bytes), and the HEF compiled with its model where that is not the
    file it runs (a HAR: ``hef_sha256``); None where its model does not record them."""

    backend: Backend
    kind: PathKind
    names: tuple[str, ...]
    open: Callable[[PathSpec, RunContext, EvalSettings, ExitStack], OpenRunner]
    calibration: Callable[[PathSpec, RunContext], str]
    help: str
    takes: frozenset[str] = frozenset()
    needs: tuple[tuple[str, str], ...] = ()
    job_path: bool = False
    name_of: Callable[[PathSpec], str] | None = None
    recorded: Callable[[PathSpec], PathKind] | None = None
    own_path: Callable[[RunContext, EvalSettings], AbstractContextManager[DetectionPath]] | None = None
    compiled: Callable[[PathSpec, Log], CompiledThresholds | None] = _none
    preflight: Callable[[PathSpec, Path, Path, SsdConfig | None], ExportFacts | None] | None = None
    check: Callable[[PathSpec, EvalSettings], None] | None = None
    locate: Callable[[PathSpec, RunContext, Sequence[Path]], list[dict[str, object]]] | None = None
    calibration_facts: Callable[[PathSpec, RunContext], tuple[tuple[str, str], ...]] | None = None

    def path_name(self, spec: PathSpec) -> str:
        """The name results, baselines and gates of ``spec``'s path carry."""
        return self.name_of(spec) if self.name_of is not None else self.names[0]
