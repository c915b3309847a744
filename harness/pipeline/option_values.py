"""Each option's value from its text (the ``parse`` of an :class:`~harness.pipeline.options.Option`):
a ValueError that says what was expected otherwise, which the option table names the option in."""

from __future__ import annotations

import math
from pathlib import Path

from harness.core.errors import HarnessError
from harness.core.settings import SsdConfig
from harness.pipeline.shard_share import Shard


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError("expected a number from 0 to 1")
    return value


def output_bits(text: str) -> int:
    if text not in ("8", "16"):
        raise ValueError("expected 8 or 16")
    return int(text)


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError("expected a whole number of at least 1")
    return value


def folder(text: str) -> Path:
    """A folder the run writes into: made when missing, refused when a file is in its place."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise ValueError("expected a folder (made when missing), found a file there")
    return path


def hef(text: str) -> Path:
    """A HEF, or an Ultralytics Hailo export folder (``yolo export format=hailo``): the HEF it holds."""
    from harness.inputs.hef.ultralytics import hef_of  # imported when --hef is given: the plugin stays light

    return hef_of(Path(text))


def ssd_config(text: str) -> SsdConfig:
    """An SSD config file (JSON, or YAML): its anchors and box coding in HailoRT's words (``SsdConfig.from_dict``);
    a file that cannot be read, or a key it cannot hold, refused naming the file and the key."""
    from harness.core.documents import read_json, read_yaml  # imported when --ssd-config is given

    read = read_json if Path(text).suffix.lower() == ".json" else read_yaml
    try:
        return SsdConfig.from_dict(read(text, "SSD config"), text)
    except HarnessError as error:  # the option, then the file and the key
        raise ValueError(str(error) if "expected" in str(error) else f"{error}; expected an SSD config file") from None


def class_pair(text: str) -> tuple[str, str]:
    """``DATASET=MODEL``, or ``DATASET=`` (its labels left out); a name with an ``=`` in it is split
    again against the class names (harness.inputs.dataset.class_map)."""
    dataset_name, sep, model_name = text.partition("=")
    if not sep or not dataset_name:
        raise ValueError("expected DATASET_NAME=MODEL_NAME, or DATASET_NAME= to leave that class's labels out")
    return dataset_name, model_name


def shard(text: str) -> Shard:
    """``K/N``: this runner's share of the images (harness.pipeline.shard)."""
    return Shard.parse(text)
