"""What every test shares: tests/ on sys.path, so that tests/support (synthetic results, fakes, encoders,
references) imports as ``from support import ...`` from any room; and the fake Dataflow Compiler fixture."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


@pytest.fixture
def sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The fake ``hailo_sdk_client`` (support/fake_hailo_sdk_client.py) in place of the DFC, reset around the test."""
    from support import fake_hailo_sdk_client as fake

    fake.reset()
    monkeypatch.setitem(sys.modules, "hailo_sdk_client", fake)
    yield fake
    fake.reset()


@pytest.fixture(autouse=True)
def _package_versions_read_again() -> Iterator[None]:
    """The package versions a process reads once (``harness.core.environment.environment``) are read
    again after each test: a fake ``hailo_platform`` or ``hailo_sdk_client`` a test installed must not
    stay in the cache keys of the tests after it (a fresh process never sees it)."""
    from harness.core.environment import environment

    yield
    environment.cache_clear()
