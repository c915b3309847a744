"""The harness's gates as pytest items (:mod:`harness.cli.plugin` collects them): a decoder's
conformance property, a HEF's static check, each gate of the job (run once, at the first), and a
shard's store; a gate that does not hold fails with its own message, and Ctrl-C during the harness's
work ends the session with one line."""

from __future__ import annotations

import contextlib
import shlex
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from harness.pipeline.spec import JobConfig
from harness.verdict.gate_id import GateId

if TYPE_CHECKING:
    from harness.conformance.suite import Property
    from harness.core.checks import CheckResult
    from harness.pipeline.job import JobResult


class GateFailure(Exception):
    """A gate that did not hold; its message is the whole failure report."""


class WeakBaselineWarning(UserWarning):
    """A gate passed against a baseline too weak to fail (blessed with ``--accept-weak-baseline`` or made so): pytest
    counts it among the warnings, never among plain passes."""


class GateItem(pytest.Item):
    """A harness gate: its failure report is the gate's own message, not a traceback."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: object = None) -> str:
        if isinstance(excinfo.value, GateFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))


class ConformanceItem(GateItem):
    def __init__(self, *, decoder_target: str, prop: Property, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.decoder_target = decoder_target
        self.prop = prop

    def runtest(self) -> None:
        from harness.conformance.suite import check_property, load_decoder

        failure = check_property(load_decoder(self.decoder_target), self.prop)
        if failure:
            raise GateFailure(f"decoder {self.decoder_target} breaks '{self.prop.sentence}': {failure}")

    def reportinfo(self) -> tuple[str, int, str]:
        return "hailo-harness", 0, f"decoder conformance: {self.prop.sentence}"


class StaticCheckItem(GateItem):
    def __init__(self, *, result: CheckResult | None, error: str | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.result = result
        self.error = error

    def runtest(self) -> None:
        if self.error is not None:
            raise GateFailure(self.error)
        assert self.result is not None
        for key, value in (("check", self.result.name), ("message", self.result.message)):
            self.user_properties.append((key, value))
        if self.result.passed is None:
            raise pytest.skip.Exception(self.result.message, _use_item_location=True)
        if not self.result.passed:
            raise GateFailure(f"HEF static check {self.result.name} failed: {self.result.message}")

    def reportinfo(self) -> tuple[str, int, str]:
        return "hailo-harness", 0, f"HEF static check {self.name}"


JOB = pytest.StashKey[JobConfig]()
_JOB_RESULT = pytest.StashKey[object]()
SHARD_VALUES = pytest.StashKey[dict[str, Any]]()


def _run_job_once(item: pytest.Item) -> JobResult:
    """The job behind every gate item, run once per session (per worker under xdist; the prediction
    and calibration caches are shared on disk). A job that could not run fails its first item with
    what the command line says of the error (bad input, a file the environment refused, or an
    internal error with its traceback in ``<cache>/logs``), and the others with a pointer to it."""
    from harness.cli.main import INTERNAL_ERROR, failure, logged, write_log
    from harness.pipeline.job import JobResult, run_job

    config = item.config
    if _JOB_RESULT not in config.stash:
        job_config = config.stash[JOB]
        with one_line_on_interrupt():
            try:
                config.stash[_JOB_RESULT] = run_job(job_config, log=live_lines(config))
            except Exception as error:
                config.stash[_JOB_RESULT] = (error, item.name)
                status, words = failure(error)
                if status == INTERNAL_ERROR:
                    command = shlex.join(("pytest", *config.invocation_params.args))
                    words = f"{words}; {logged(write_log(command, error, job_config.cache_dir / 'logs'))}"
                raise GateFailure(f"the evaluation could not run: {words}") from error
    job = config.stash[_JOB_RESULT]
    if isinstance(job, tuple):
        raise GateFailure(f"the evaluation could not run: see {job[1]} for why")
    assert isinstance(job, JobResult)
    return job


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during the harness's own work: pytest ends the session with its status for it (2) and
    one line, ``Interrupted: <why>``, where a bare KeyboardInterrupt shows the frame it hit, deep in
    onnxruntime or PIL, and a pointer to the full traceback."""

    __module__ = "builtins"  # Python's one-line form names the class alone, as it does KeyboardInterrupt


INTERRUPTED = "hailo-harness stopped; nothing half-written is kept, and a rerun resumes from what its caches hold"


@contextlib.contextmanager
def one_line_on_interrupt() -> Iterator[None]:
    """A KeyboardInterrupt inside as :class:`Interrupted` (the caches and journals are written whole or
    cut back to their last whole record: nothing more needs saying)."""
    try:
        yield
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(INTERRUPTED) from None


def live_lines(config: pytest.Config) -> Callable[[str], None]:
    """The job's progress lines on pytest's terminal as they happen (not captured; pytest-xdist's
    workers have no terminal: their lines are dropped)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return lambda line: None

    def write(line: str) -> None:
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.write_line(f"hailo-harness: {line}")

    return write


class JobGateItem(GateItem):
    def __init__(self, *, gate_id: GateId, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.gate_id = gate_id

    def runtest(self) -> None:
        job = _run_job_once(self)
        gate = job.gate(self.gate_id)
        if gate is None:
            raise GateFailure(f"{self.name}: the run produced no such gate (gates: {[g.name for g in job.gates]})")
        for key in ("baseline", "observed", "tolerance"):
            self.user_properties.append((key, getattr(gate, key)))
        if gate.interval is not None:
            self.user_properties.append(("interval", f"[{gate.interval.low:.4f}, {gate.interval.high:.4f}]"))
        self.user_properties.extend(("cause", c.name) for c in gate.causes)
        self.user_properties.append(("report", str(job.reports["html"])))
        if not gate.passed:
            raise GateFailure(f"{gate.message}\nreport: {job.reports['html']}")
        if gate.weak:
            self.user_properties.append(("weak", gate.weak))
            warning = WeakBaselineWarning(f"{self.name}: WEAK PASS, its baseline cannot fail: {gate.weak}")
            warnings.warn_explicit(warning, WeakBaselineWarning, "hailo-harness", 0)  # the gate's, not a source line

    def reportinfo(self) -> tuple[str, int, str]:
        return "hailo-harness", 0, f"gate {self.name}"


class CalibrationCheckItem(GateItem):
    """``--calibration-check``: the job's calibration set judged before any compile
    (:func:`~harness.doctor.calibration_check.check_calibration`) on the job's images at its threshold; it fails
    where the set is unfit, naming the cause and the images to add."""

    def runtest(self) -> None:
        from harness.cli.main import failure
        from harness.doctor.calibration_check import check_calibration
        from harness.pipeline.factory import load_dataset, prepare_run

        job = self.config.stash[JOB]
        log = live_lines(self.config)
        assert job.hailo.calibration is not None
        with one_line_on_interrupt():
            try:
                data = load_dataset(job.dataset, job.split, job.cache_dir, job.images, log)
                run = prepare_run(
                    job.onnx,
                    data,
                    job.settings,
                    job.cache_dir,
                    progress=False,
                    log=log,
                    max_unreadable=job.max_unreadable,
                )
                found = check_calibration(
                    run, job.hailo.calibration, job.hailo.calibration_count, out=job.report_dir, log=log
                )
            except Exception as error:
                raise GateFailure(f"the calibration check could not run: {failure(error)[1]}") from error
        self.user_properties.extend((("verdict", found.verdict), ("reason", found.reason)))
        if not found.fit:
            added = f"; add the {len(found.additions)} images listed in {found.written[0]}" if found.written else ""
            raise GateFailure(f"calibration {found.calibration} is unfit ({found.verdict}): {found.reason}{added}")

    def reportinfo(self) -> tuple[str, int, str]:
        return "hailo-harness", 0, "calibration check"


class ShardItem(GateItem):
    """``--shard K/N``: the job's paths on this runner's share of the images, stored for
    ``hailo-harness merge`` (which gates the union); it fails only where the share could not be stored."""

    def runtest(self) -> None:
        from harness.cli.main import failure
        from harness.pipeline.shard import run_shard

        config = self.config
        job, values = config.stash[JOB], config.stash[SHARD_VALUES]
        with one_line_on_interrupt():
            try:
                stored = run_shard(job, values["shard"], values, log=live_lines(config))
            except Exception as error:
                raise GateFailure(f"the shard could not run: {failure(error)[1]}") from error
        self.user_properties.append(("store", str(stored.manifest.store)))
        for line in stored.lines():
            live_lines(config)(line)

    def reportinfo(self) -> tuple[str, int, str]:
        return "hailo-harness", 0, f"shard {self.name}"
