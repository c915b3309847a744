"""The batches a HailoRT runner has handed to the device and not yet collected: each one's outputs waited
for once, in the order submitted; where HailoRT cannot launch a batch without waiting, one device thread
runs them in turn; on close every batch still in flight is waited for and the thread ended, so that no
thread outlives the runner and no device buffer is freed under a running job."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger(__name__)

Outputs = dict[str, Any]


class InFlight:
    """A submitted batch: :meth:`wait` gives its outputs by output name, waited for once; later calls give
    the same outputs or raise the same error."""

    def __init__(self, wait: Callable[[], Outputs]) -> None:
        self._wait = wait
        self._lock = threading.Lock()
        self._done = False
        self._outputs: Outputs = {}
        self._error: BaseException | None = None

    def wait(self) -> Outputs:
        with self._lock:
            if not self._done:
                try:
                    self._outputs = self._wait()
                except BaseException as error:
                    self._error = error
                self._done = True
        if self._error is not None:
            raise self._error
        return self._outputs


class Busy:
    """Seconds with at least one batch on the device: from the first submission of each stretch of
    overlapping batches to its last completion (told on HailoRT's thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._since = 0.0
        self.seconds = 0.0

    def begin(self) -> None:
        with self._lock:
            if self._count == 0:
                self._since = time.perf_counter()
            self._count += 1

    def end(self) -> None:
        with self._lock:
            self._count -= 1
            if self._count == 0:
                self.seconds += time.perf_counter() - self._since


class DeviceQueue:
    """A runner's batches in flight, and its device thread where it needs one."""

    def __init__(self) -> None:
        self.busy = Busy()
        self._flights: list[InFlight] = []
        self._thread: ThreadPoolExecutor | None = None

    def add(self, wait: Callable[[], Outputs]) -> InFlight:
        """A batch launched on the device; ``wait`` waits for it and reads its outputs."""
        flight = InFlight(wait)
        self._flights.append(flight)
        return flight

    def on_thread(self, run: Callable[..., Outputs], *args: Any) -> InFlight:
        """``run(*args)`` on the device thread, after the batches submitted before it."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hailo-harness-device")
        return self.add(self._thread.submit(run, *args).result)

    def collect(self, flight: InFlight) -> Outputs:
        """``flight``'s outputs (its failure raised), no longer in flight."""
        try:
            return flight.wait()
        finally:
            if flight in self._flights:
                self._flights.remove(flight)

    def settle(self) -> None:
        """Wait for every batch still in flight, their outputs and failures dropped (the run that submitted
        them has failed or was interrupted: its first failure was raised where it was collected), then end the
        device thread."""
        flights, self._flights = self._flights, []
        for flight in flights:
            try:
                flight.wait()
            except Exception as error:
                log.debug("a batch in flight at close: %s", error)
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.shutdown(wait=True, cancel_futures=True)
