"""Accuracy-regression harness for object detectors compiled for Hailo accelerators."""

__version__ = "0.1.0"
