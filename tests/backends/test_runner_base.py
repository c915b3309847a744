"""The runners' ``with`` lifecycle, owned by ``backends.base.RunnerBase``."""

import pytest

from harness.backends.base import RunnerBase


class _Counting(RunnerBase):
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_a_with_block_gives_the_runner_itself_and_closes_it_also_when_its_body_raises():
    runner = _Counting()
    with pytest.raises(RuntimeError, match="inside"), runner as entered:
        assert entered is runner
        raise RuntimeError("inside")
    assert runner.closed == 1
