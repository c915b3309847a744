"""Deprecated: ``harness.detections`` moved to :mod:`harness.core.detections`; its decoder vocabulary is public in
``harness`` itself. Importing from here still works, with a DeprecationWarning, until 0.2."""

from harness._moved import moved

__getattr__ = moved(__name__, "harness.core.detections")
