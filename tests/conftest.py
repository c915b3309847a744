"""What every test shares: tests/ on sys.path, so that tests/support (synthetic results, fakes, encoders,
references) imports as ``from support import ...`` from any room; and the fake Dataflow Compiler fixture."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from harness.core.files import SHARED_CACHE_VARIABLE

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


def pytest_configure(config: pytest.Config) -> None:
    """One shared cache for the whole run (:func:`harness.core.files.shared_cache`), for every pytest-xdist
    worker and every pytester or CLI subprocess (they inherit the environment): an emulated HEF is
    quantized, and the demo set generated, once per content, not once per test's cache folder. A test
    of what a run says as it makes them unsets it."""
    if SHARED_CACHE_VARIABLE not in os.environ:
        os.environ[SHARED_CACHE_VARIABLE] = tempfile.mkdtemp(prefix="hailo-harness-tests-shared-")
        config.stash[_OWN_SHARED_CACHE] = os.environ[SHARED_CACHE_VARIABLE]


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_OWN_SHARED_CACHE, None)
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)
        del os.environ[SHARED_CACHE_VARIABLE]


_OWN_SHARED_CACHE = pytest.StashKey[str]()


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
