"""What each of a job's results was made from (:mod:`harness.verdict.changes`), recorded in its
provenance before it is blessed or reported: the HEF (a device's file, or the emulated HEF the
emulator built), the calibration images where its backend knows them (which, how many, the sha256
of their bytes), the settings, the harness version and its code digest, the HailoRT and Dataflow
Compiler versions where installed, the device and its firmware where one ran it (as its runner
identified them; a path whose runner did not: its runtime's words)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from harness.core.environment import code_digest
from harness.core.path_names import PathKind
from harness.pipeline.backends import describe
from harness.pipeline.cache import detection_code
from harness.pipeline.factory import RunContext
from harness.pipeline.spec import PathSpec
from harness.verdict.changes import settings_words
from harness.verdict.result import PathResult

_ENVIRONMENT = (("hailort", "hailort"), ("hailo_dataflow_compiler", "dfc"))  # environment() name -> fact


def with_made_from(results: Sequence[PathResult], specs: Sequence[PathSpec], run: RunContext) -> tuple[PathResult, ...]:
    """``results`` (one per spec of ``specs``, in their order) each with what it was made from."""
    return tuple(
        replace(r, provenance=replace(r.provenance, made_from=made_from(r, spec, run)))
        for r, spec in zip(results, specs, strict=True)
    )


def made_from(result: PathResult, spec: PathSpec, run: RunContext) -> tuple[tuple[str, str], ...]:
    """The facts of :data:`harness.verdict.changes.FACTS` ``result`` was made from, beyond the model's
    sha256 and the dataset's manifest (its provenance has those)."""
    prov = result.provenance
    found: list[tuple[str, str]] = []
    hef = _hef_sha256(result, run)
    if hef:
        found.append(("hef_sha256", hef))
    calibration = describe(spec.backend).calibration_facts
    if calibration is not None:
        found += calibration(spec, run)
    found += [
        ("settings", settings_words(result.settings.to_dict())),
        ("harness_version", prov.harness_version),
        ("code_digest", _code()),
    ]
    versions = dict(prov.environment)
    found += [(fact, versions[name]) for name, fact in _ENVIRONMENT if name in versions]
    if result.hardware:
        ran_on = dict(prov.made_from)  # what the runner recorded: the device's id and firmware
        found.append(("device", ran_on.get("device", prov.runtime)))
        found += [("firmware", ran_on["firmware"])] if "firmware" in ran_on else []
    return tuple(dict(found).items())


def _hef_sha256(result: PathResult, run: RunContext) -> str:
    """The HEF the path ran: the model file where it is one, else the one its runner built (the
    emulated HEF: the path's shared-cache entry that is not the dataset's); empty for none."""
    prov = result.provenance
    if Path(prov.model_path).suffix.lower() == ".hef":
        return prov.model_sha256
    if result.made_by is PathKind.FLOAT:
        return ""
    built = [e for e in prov.shared_cache if e != run.dataset.cache_entry]
    return built[0].sha256 if built else ""


def _code() -> str:
    """The digest of the code that makes and measures predictions: the detection code the prediction
    cache is keyed by, and the metrics."""
    return hashlib.sha256(f"{detection_code()} {code_digest('verdict/metrics')}".encode()).hexdigest()
