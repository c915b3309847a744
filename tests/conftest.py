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
