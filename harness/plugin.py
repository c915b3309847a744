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
from harness.errors import HarnessError

OPTIONS = {
    "decoder": "run the decoder conformance suite against a six-output decoder 'package.module:function'",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hailo-harness", "accuracy-regression gates for Hailo-compiled detectors")
    for name, help_text in OPTIONS.items():
        group.addoption(f"--{name}", dest=f"harness_{name}", default=None, help=help_text)
        parser.addini(f"harness_{name}", help_text)


def _option(config: pytest.Config, name: str) -> str | None:
    value = config.getoption(f"harness_{name}") or config.getini(f"harness_{name}")
    return str(value) if value else None


class GateFailure(Exception):
    """A gate that did not hold; its message is the whole failure report."""


class ConformanceItem(pytest.Item):
    def __init__(self, *, decoder_target: str, prop: Property, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.decoder_target = decoder_target
        self.prop = prop

    def runtest(self) -> None:
        failure = check_property(load_decoder(self.decoder_target), self.prop)
        if failure:
            raise GateFailure(f"decoder {self.decoder_target} breaks '{self.prop.sentence}': {failure}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: object = None) -> str:
        if isinstance(excinfo.value, GateFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int, str]:
        return "hailo-harness", 0, f"decoder conformance: {self.prop.sentence}"


class HarnessSuite(pytest.Collector):
    """The gate items the options ask for."""

    def collect(self) -> list[pytest.Item]:
        items: list[pytest.Item] = []
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
    suite = HarnessSuite.from_parent(session, name="hailo-harness")
    items.extend(suite.collect())


@pytest.fixture
def decoder_conformance() -> Callable[[Decoder], None]:
    """``decoder_conformance(my_decode)`` asserts that every conformance property holds for it."""

    def check(decoder: Decoder) -> None:
        failures = {k: v for k, v in run_conformance(decoder).items() if v}
        assert not failures, "decoder breaks:\n" + "\n".join(f"- {k}: {v}" for k, v in failures.items())

    return check
