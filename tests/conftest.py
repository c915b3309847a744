"""Fixtures the tests of the Dataflow Compiler backend share."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import ModuleType

import pytest


@pytest.fixture
def sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The fake ``hailo_sdk_client`` (tests/fake_hailo_sdk_client.py) in place of the DFC, reset around the test."""
    import fake_hailo_sdk_client as fake

    fake.reset()
    monkeypatch.setitem(sys.modules, "hailo_sdk_client", fake)
    yield fake
    fake.reset()


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester runs that write no pytest cache: a path option written with a space (``--hef m.hef``)
    moves pytest's rootdir to that file's folder, which may be the read-only shared fixtures."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:cacheprovider")
    return pytester
