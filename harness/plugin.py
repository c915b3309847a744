"""The pytest plugin (entry point ``pytest11: hailo_harness``).

Options are also ini keys (``[tool.pytest.ini_options]`` or ``pytest.ini``). The harness' gates
are collected as ordinary test items under ``hailo-harness``, so they show up, fail and report
like any test, also in JUnit XML and under pytest-xdist.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.backends.dfc import DfcNotInstalled, load_sdk
from harness.backends.hailort import OUTPUT_FORMATS
from harness.conformance import PROPERTIES, Decoder, Property, check_property, load_decoder, run_conformance
from harness.data.dataset import load_yolo
from harness.detect import EMULATED_HAILO, HAILO, ONNX
from harness.errors import HarnessError
from harness.hef.checks import CheckContext, CheckResult, facts_from_onnx, run_checks
from harness.hef.reader import read_hef
from harness.job import DEMO_DATASET_NAME, DEMO_ONNX, IN_DOMAIN, OFF_DOMAIN, JobConfig, JobResult, run_job

GATE_KINDS = ("map", "map50_95", "score_saturation", "box_count")

OPTIONS = {
    "hef": "HEF to gate: its static checks run as test items (with or without Hailo hardware)",
    "onnx": "ONNX export of the model (static checks; with --dataset, or the demo model, the evaluation gates)",
    "har": "optimized HAR of the model (hailo-harness compile writes one): its Dataflow Compiler emulation stages "
    "are evaluated and the first stage that loses accuracy is named (needs hailo_sdk_client)",
    "dataset": "labelled dataset (YOLO folder or yaml): with --onnx, both paths are evaluated and gated on it",
    "calibration": f"calibration images for the emulated HEF, or {IN_DOMAIN!r} / {OFF_DOMAIN!r} (demo)",
    "score_threshold": "score threshold of the evaluation (also checked against the one compiled into the HEF)",
    "golden": "golden baselines folder (default: golden/ of the project)",
    "backend": "the Hailo path's backend: emulator (default) or hailort",
    "report": "folder for the Markdown / JSON / HTML reports (default: reports/latest)",
    "hailo_device": "Hailo device id(s) for --backend hailort, comma-separated (default: any)",
    "hailo_format": "output type asked of HailoRT: float32 (HailoRT dequantizes; default) or uint8 (the harness does)",
    "decoder": "run the decoder conformance suite against a six-output decoder 'package.module:function'",
}
BACKENDS = ("emulator", "hailort")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hailo-harness", "accuracy-regression gates for Hailo-compiled detectors")
    for name, help_text in OPTIONS.items():
        group.addoption(f"--{name.replace('_', '-')}", dest=f"harness_{name}", default=None, help=help_text)
        parser.addini(f"harness_{name}", help_text)
    group.addoption(
        "--update-golden", action="store_true", dest="harness_update_golden", help="bless this run as the baseline"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hailo_hw: needs a Hailo device and hailo_platform (HailoRT)")
    config.addinivalue_line("markers", "dfc: needs the Hailo Dataflow Compiler (hailo_sdk_client)")


def _option(config: pytest.Config, name: str) -> str | None:
    value = config.getoption(f"harness_{name}") or config.getini(f"harness_{name}")
    return str(value) if value else None


class GateFailure(Exception):
    """A gate that did not hold; its message is the whole failure report."""


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


def _static_check_items(parent: pytest.Collector, hef_path: str) -> list[pytest.Item]:
    """One item per static check; when the inputs cannot be read, one failing item that says why."""
    config = parent.config
    try:
        onnx_path, dataset_path = _option(config, "onnx"), _option(config, "dataset")
        threshold = _option(config, "score_threshold")
        ctx = CheckContext(
            hef=read_hef(hef_path),
            model=facts_from_onnx(onnx_path) if onnx_path else None,
            dataset_names=load_yolo(dataset_path).names if dataset_path else None,
            eval_score_threshold=float(threshold) if threshold else None,
        )
    except (HarnessError, ValueError) as error:
        return [StaticCheckItem.from_parent(parent, name="test_hef_static[inputs]", result=None, error=str(error))]
    return [StaticCheckItem.from_parent(parent, name=f"test_hef_static[{r.name}]", result=r) for r in run_checks(ctx)]


_JOB = pytest.StashKey[object]()


def _job_config(config: pytest.Config) -> JobConfig:
    onnx = _option(config, "onnx")
    assert onnx is not None
    dataset, golden, report = _option(config, "dataset"), _option(config, "golden"), _option(config, "report")
    threshold, hef, har = _option(config, "score_threshold"), _option(config, "hef"), _option(config, "har")
    defaults = JobConfig()
    return JobConfig(
        onnx=Path(onnx),
        dataset=Path(dataset) if dataset else None,
        calibration=_option(config, "calibration") or IN_DOMAIN,
        golden_root=Path(golden) if golden else defaults.golden_root,
        report_dir=Path(report) if report else defaults.report_dir,
        score_threshold=float(threshold) if threshold else defaults.score_threshold,
        update_golden=bool(config.getoption("harness_update_golden")),
        invocation=("pytest", *config.invocation_params.args),
        progress=False,
        backend=_option(config, "backend") or "emulator",
        hef=Path(hef) if hef else None,
        hailo_devices=tuple(d for d in (_option(config, "hailo_device") or "").split(",") if d),
        hailo_format=OUTPUT_FORMATS[_option(config, "hailo_format") or "float32"],
        har=Path(har) if har else None,
    )


def _run_job_once(config: pytest.Config) -> JobResult:
    """The job behind every gate item, run once per session (per worker under xdist; the prediction
    and calibration caches are shared on disk)."""
    if _JOB not in config.stash:
        try:
            config.stash[_JOB] = run_job(_job_config(config), log=lambda line: None)
        except HarnessError as error:
            config.stash[_JOB] = error
    job = config.stash[_JOB]
    if isinstance(job, HarnessError):
        raise GateFailure(f"the evaluation could not run: {job}")
    assert isinstance(job, JobResult)
    return job


class JobGateItem(GateItem):
    def runtest(self) -> None:
        job = _run_job_once(self.config)
        gate = next((g for g in job.gates if g.name == self.name), None)
        if gate is None:
            raise GateFailure(f"{self.name}: the run produced no such gate (gates: {[g.name for g in job.gates]})")
        for key in ("baseline", "observed", "tolerance"):
            self.user_properties.append((key, getattr(gate, key)))
        if gate.interval is not None:
            self.user_properties.append(("interval", f"[{gate.interval.low:.4f}, {gate.interval.high:.4f}]"))
        self.user_properties.extend(("cause", c.name) for c in gate.causes)
        self.user_properties.append(("report", str(job.reports["html"])))
        if not gate.passed:
            raise GateFailure(gate.message)

    def reportinfo(self) -> tuple[str, int, str]:
        return "hailo-harness", 0, f"gate {self.name}"


def _job_gate_items(parent: pytest.Collector) -> list[pytest.Item]:
    config = parent.config
    backend = _option(config, "backend") or "emulator"
    if backend not in BACKENDS:
        raise pytest.UsageError(f"--backend {backend!r}: expected one of {list(BACKENDS)}")
    hailo_format = _option(config, "hailo_format")
    if hailo_format and hailo_format not in OUTPUT_FORMATS:
        raise pytest.UsageError(f"--hailo-format {hailo_format!r}: expected one of {list(OUTPUT_FORMATS)}")
    if backend == "hailort" and not _option(config, "hef"):
        raise pytest.UsageError("--backend hailort: give the HEF to run on the device (--hef model.hef)")
    job_config = _job_config(config)
    if job_config.har is not None:
        try:
            load_sdk()  # the stages need the Dataflow Compiler: a usage error here, not a failure per gate
        except DfcNotInstalled as error:
            raise pytest.UsageError(f"--har {job_config.har}: {error}") from error
    dataset = job_config.dataset.name if job_config.dataset else DEMO_DATASET_NAME
    hailo = HAILO if backend == "hailort" else EMULATED_HAILO
    names = [f"test_{kind}[{dataset}-{path}]" for path in (ONNX, hailo) for kind in GATE_KINDS]
    names.append(f"test_path_agreement[{dataset}-{hailo}]")
    if job_config.har is not None:
        names.append(f"test_stages[{dataset}]")
    return [JobGateItem.from_parent(parent, name=name) for name in names]


class HarnessSuite(pytest.Collector):
    """The gate items the options ask for."""

    def collect(self) -> list[pytest.Item]:
        items: list[pytest.Item] = []
        hef_path = _option(self.config, "hef")
        if hef_path:
            items.extend(_static_check_items(self, hef_path))
        onnx, dataset = _option(self.config, "onnx"), _option(self.config, "dataset")
        if onnx and (dataset or Path(onnx).resolve() == DEMO_ONNX):
            # The gates need labelled images: --dataset, or the demo model's own set.
            items.extend(_job_gate_items(self))
        target = _option(self.config, "decoder")
        if target:
            try:
                load_decoder(target)  # a bad target is a usage error at collection, not seven failures
            except HarnessError as error:
                raise pytest.UsageError(str(error)) from error
            for prop in PROPERTIES:
                slug = re.sub(r"\W+", "_", prop.sentence).strip("_")
                items.append(
                    ConformanceItem.from_parent(
                        self, name=f"test_decoder_conformance[{slug}]", decoder_target=target, prop=prop
                    )
                )
        return items


def _hardware_skip_reason() -> str | None:
    if importlib.util.find_spec("hailo_platform") is None:
        return "hailo_platform (HailoRT's Python wheel from Hailo) is not installed"
    from hailo_platform import Device  # HailoRT's device scan (hailort: bindings/python/platform/hailo_platform)

    if not Device.scan():
        return "no Hailo device found (hailo_platform Device.scan() is empty)"
    return None


def _skip_unavailable(items: list[pytest.Item]) -> None:
    """``hailo_hw`` items skip without HailoRT or a device, ``dfc`` items without the Dataflow Compiler."""
    reasons: dict[str, str | None] = {}
    for item in items:
        if item.get_closest_marker("hailo_hw"):
            if "hailo_hw" not in reasons:
                reasons["hailo_hw"] = _hardware_skip_reason()
            if reasons["hailo_hw"]:
                item.add_marker(pytest.mark.skip(reason=str(reasons["hailo_hw"])))
        if item.get_closest_marker("dfc") and importlib.util.find_spec("hailo_sdk_client") is None:
            item.add_marker(pytest.mark.skip(reason="the Hailo Dataflow Compiler (hailo_sdk_client) is not installed"))


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    _skip_unavailable(items)
    suite = HarnessSuite.from_parent(session, name="hailo-harness", nodeid="hailo-harness")
    items.extend(suite.collect())


@pytest.fixture
def decoder_conformance() -> Callable[[Decoder], None]:
    """``decoder_conformance(my_decode)`` asserts that every conformance property holds for it."""

    def check(decoder: Decoder) -> None:
        failures = {k: v for k, v in run_conformance(decoder).items() if v}
        assert not failures, "decoder breaks:\n" + "\n".join(f"- {k}: {v}" for k, v in failures.items())

    return check
