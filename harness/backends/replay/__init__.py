"""Replay backend: a Hailo path's outputs recorded once (on a device, the emulator or a DFC stage)
and served again for the same inputs, e.g. in hosted CI without a device; labelled as replayed."""

from harness.backends.replay.runner import RecordingRunner, ReplayRunner
from harness.backends.replay.store import Recording, StoreDamaged, StoreError, feed_key, read_recording

__all__ = ["Recording", "RecordingRunner", "ReplayRunner", "StoreDamaged", "StoreError", "feed_key", "read_recording"]
