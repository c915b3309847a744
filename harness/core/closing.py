"""The ``with`` lifecycle of whatever holds a resource (a runner's session or device, a cache file's
lock, a path's model): ``__enter__`` gives the object, ``__exit__`` calls its :meth:`Closing.close`."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """Owns the ``with`` lifecycle; a subclass says what :meth:`close` releases (by default nothing)."""

    def close(self) -> None:
        """Release what the object holds."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
