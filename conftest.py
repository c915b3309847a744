"""Project-wide test setup: where the real fixtures live, and hypothesis profiles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

ROOT = Path(__file__).resolve().parent


def fixtures_root() -> Path:
    """``HARNESS_FIXTURES`` if set, else ``../shared/fixtures`` beside the project."""
    return Path(os.environ.get("HARNESS_FIXTURES", ROOT.parent / "shared" / "fixtures"))


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The real fixture folder; tests that need it skip with the reason when it is absent."""
    root = fixtures_root()
    if not (root / "SOURCES.md").is_file():
        reason = f"real fixtures not found at {root} (set HARNESS_FIXTURES or place shared/ beside the project)"
        if os.environ.get("HARNESS_REQUIRE_FIXTURES"):
            pytest.fail(reason)
        pytest.skip(reason)
    return root
