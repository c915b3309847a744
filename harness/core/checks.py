"""A named check's outcome: passed, failed (naming field, found, expected and the fix) or not applicable."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    """``passed`` is None when the check does not apply (the message says why)."""

    name: str
    passed: bool | None
    message: str

    @classmethod
    def ok(cls, name: str, message: str) -> CheckResult:
        return cls(name, True, message)

    @classmethod
    def failed(cls, name: str, field: str, found: object, expected: object, fix: str) -> CheckResult:
        """The failure message every static check gives: the field, what was found and expected, the fix."""
        return cls(name, False, f"{field}: found {found}, expected {expected}. Fix: {fix}")

    @classmethod
    def skipped(cls, name: str, reason: str) -> CheckResult:
        return cls(name, None, reason)
