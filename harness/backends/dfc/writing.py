"""What a family's model script and NMS config are written from (:class:`ScriptRequest`) and written as
(:class:`ScriptFiles`): the NMS op's settings, the files beside each other, a bbox decoder's name as the
Model Zoo gives it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.backends.dfc.alls import DfcScriptError
from harness.backends.dfc.layers import LayerTable
from harness.core import defaults
from harness.core.confine import make_folder
from harness.core.files import write_atomic
from harness.inputs.export_facts import ExportFacts


@dataclass(frozen=True)
class DfcHead:
    """What a family's part says of its head (``HEAD``):

    - ``words``: what the head is compiled as, in the words of the messages;
    - ``export``: the export's name in the messages about its end nodes;
    - ``option``: ``--head``'s value for this head, ``""`` where its export carries no other head to choose;
      ``default``: the head chosen where none is asked for; ``fix``: what to do where this head is asked for
      and the export carries another.
    """

    words: str
    export: str
    option: str = ""
    default: bool = False
    fix: str = ""


@dataclass(frozen=True)
class NmsSettings:
    """The NMS op's settings; defaults as the Model Zoo's yolov8n NMS config (0.2, 0.7, 100).
    ``bbox_decoding_only``: the op compiled to decode the boxes alone, the NMS left to the host (HailoRT's
    bbox-only op); the thresholds then go unused."""

    score_threshold: float = defaults.SCORE_THRESHOLD
    iou_threshold: float = defaults.IOU_THRESHOLD
    max_proposals_per_class: int = defaults.MAX_PER_CLASS
    bbox_decoding_only: bool = False

    def __post_init__(self) -> None:
        for option, value in (("score_threshold", self.score_threshold), ("iou_threshold", self.iou_threshold)):
            if not 0.0 <= value <= 1.0:
                raise DfcScriptError(f"NMS settings: {option} is {value}, expected a value in [0, 1]")
        if self.max_proposals_per_class < 1:
            raise DfcScriptError(
                f"NMS settings: max_proposals_per_class is {self.max_proposals_per_class}, expected >= 1"
            )


@dataclass(frozen=True)
class ScriptRequest:
    """What a family's scripts are written from and checked against: the export, its end nodes' layer names
    (ONNX end node -> layer) and the layer table they are held to, the NMS op's settings and the number of
    calibration images (a script that fine-tunes names it). A check of an NMS config reads the layers the
    config names, not ``names``."""

    facts: ExportFacts
    names: Mapping[str, str]
    table: LayerTable
    settings: NmsSettings = NmsSettings()
    calibration_count: int = 0


def decoder_name(layer: str, stride: int) -> str:
    """A bbox decoder's name as the Model Zoo gives it: after the number of the layer it reads first
    (``conv41`` -> ``bbox_decoder41``), else after its stride."""
    number = re.fullmatch(r"conv(\d+)", layer)
    return f"bbox_decoder{number.group(1)}" if number else f"bbox_decoder_stride{stride}"


def render_nms_json(config: Mapping[str, Any]) -> str:
    return json.dumps(config, indent=4) + "\n"


@dataclass(frozen=True)
class ScriptFiles:
    alls: Path
    nms_json: Path | None  # None: the model script has no NMS op (a YOLO26 head)
    layer_names: Path  # ONNX end node -> layer name, the format --layer-map reads


def write_script_files(
    folder: Path,
    stem: str,
    names: Mapping[str, str],
    alls: Callable[[str], str],
    config: Mapping[str, Any] | None = None,
) -> ScriptFiles:
    """Write ``<stem>.alls`` (``alls`` of the NMS config's file name: it is named beside the model script),
    ``<stem>_nms_config.json`` where there is a ``config``, and ``layer_names.json``."""
    make_folder(folder)
    nms_json = folder / f"{stem}_nms_config.json" if config is not None else None
    if nms_json is not None:
        write_atomic(nms_json, render_nms_json(config or {}))
    files = ScriptFiles(folder / f"{stem}.alls", nms_json, folder / "layer_names.json")
    write_atomic(files.alls, alls(nms_json.name if nms_json is not None else ""))
    write_atomic(files.layer_names, json.dumps(dict(names), indent=4) + "\n")
    return files


def write_nms_scripts(
    folder: Path,
    stem: str,
    request: ScriptRequest,
    config: Callable[[ExportFacts, Mapping[str, str], NmsSettings], Mapping[str, Any]],
    render: Callable[[ScriptRequest, str], str],
) -> ScriptFiles:
    """Write a head's model script (``render``, naming the JSON by file name, beside it), its NMS ``config``
    as ``<stem>_nms_config.json``, and ``layer_names.json``."""
    nms = config(request.facts, request.names, request.settings)
    return write_script_files(folder, stem, request.names, lambda json_name: render(request, json_name), nms)


def nms_scripts(
    config: Callable[[ExportFacts, Mapping[str, str], NmsSettings], Mapping[str, Any]],
    render: Callable[[ScriptRequest, str], str],
) -> Callable[[Path, str, ScriptRequest], ScriptFiles]:
    """A head's ``write_scripts`` where its model script has an NMS op: ``<stem>.alls`` (``render``, naming the
    JSON by file name, beside it), ``<stem>_nms_config.json`` (its NMS ``config``) and ``layer_names.json``
    (:func:`write_nms_scripts`)."""

    def write_scripts(folder: Path, stem: str, request: ScriptRequest) -> ScriptFiles:
        return write_nms_scripts(folder, stem, request, config, render)

    return write_scripts
