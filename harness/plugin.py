"""The pytest plugin (entry point ``pytest11: hailo_harness``).

Options are also ini keys (``[tool.pytest.ini_options]`` or ``pytest.ini``). The harness' gates
are collected as ordinary test items under ``hailo-harness``, so they show up, fail and report
like any test, also in JUnit XML and under pytest-xdist.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from harness.conformance import PROPERTIES, Decoder, Property, check_property, load_decoder, run_conformance
from harness.data.dataset import load_yolo
from harness.errors import HarnessError
from harness.hef.checks import CheckContext, CheckResult, facts_from_onnx, run_checks
from harness.hef.reader import read_hef

OPTIONS = {
    "hef": "HEF to gate: its static checks run as test items (with or without Hailo hardware)",
    "onnx": "ONNX export the HEF was compiled from (input size, classes, box channels, grids)",
    "dataset": "labelled dataset (YOLO folder or yaml) the model is evaluated on",
    "score_threshold": "score threshold of the evaluation (checked against the one compiled into the HEF)",
    "decoder": "run the decoder conformance suite against a six-output decoder 'package.module:function'",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hailo-harness", "accuracy-regression gates for Hailo-compiled detectors")
    for name, help_text in OPTIONS.items():
        group.addoption(f"--{name.replace('_', '-')}", dest=f"harness_{name}", default=None, help=help_text)
        parser.addini(f"harness_{name}", help_text)


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


class HarnessSuite(pytest.Collector):
    """The gate items the options ask for."""

    def collect(self) -> list[pytest.Item]:
        items: list[pytest.Item] = []
        hef_path = _option(self.config, "hef")
        if hef_path:
            items.extend(_static_check_items(self, hef_path))
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


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    suite = HarnessSuite.from_parent(session, name="hailo-harness", nodeid="hailo-harness")
    items.extend(suite.collect())


@pytest.fixture
def decoder_conformance() -> Callable[[Decoder], None]:
    """``decoder_conformance(my_decode)`` asserts that every conformance property holds for it."""

    def check(decoder: Decoder) -> None:
        failures = {k: v for k, v in run_conformance(decoder).items() if v}
        assert not failures, "decoder breaks:\n" + "\n".join(f"- {k}: {v}" for k, v in failures.items())

    return check
