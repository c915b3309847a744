"""The ``with`` lifecycle of runners, cache files and paths, owned by ``core.closing.Closing``."""

import pytest

from harness.backends.base import RunnerBase
from harness.core.closing import Closing
from harness.pipeline.cache import CacheFile
from harness.pipeline.detect import OnnxPath


def test_runners_cache_files_and_paths_share_the_one_lifecycle():
    for cls in (RunnerBase, CacheFile, OnnxPath):
        assert issubclass(cls, Closing)
        assert "__exit__" not in vars(cls) and "__enter__" not in vars(cls)


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
