"""An Ultralytics Hailo export (``yolo export format=hailo``): a folder ``<stem>_hailo_model/`` with
``<stem>.hef``, ``metadata.yaml`` and, for a YOLOv8/YOLO11 detector with the NMS compiled in,
``nms_config.json``.

ultralytics: ultralytics/engine/exporter.py (``export_hailo``: metadata.yaml is the export's metadata
plus ``hailo_arch`` and ``nms``; nms_config.json holds ``nms_scores_th``, ``nms_iou_th``, ``image_dims``,
``max_proposals_per_class``, ``classes``, ``regression_length``, ``background_removal``,
``bbox_decoders`` of ``name``, ``stride``, ``reg_layer``, ``cls_layer``); ultralytics/nn/backends/hailo.py
(``HailoBackend``: the first ``*.hef`` under the folder, ``metadata.yaml`` beside it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.core.errors import HarnessError

METADATA = "metadata.yaml"
NMS_CONFIG = "nms_config.json"


class ExportError(HarnessError):
    """An Ultralytics Hailo export folder whose files are missing or do not say what they should."""


@dataclass(frozen=True)
class BboxDecoderEntry:
    name: str
    stride: int
    reg_layer: str
    cls_layer: str


@dataclass(frozen=True)
class NmsConfigFile:
    """``nms_config.json``: the NMS the Dataflow Compiler compiled into the HEF."""

    score_threshold: float
    iou_threshold: float
    image_dims: tuple[int, int]
    max_proposals_per_class: int
    classes: int
    regression_length: int
    background_removal: bool
    bbox_decoders: tuple[BboxDecoderEntry, ...]


@dataclass(frozen=True)
class UltralyticsExport:
    """What the export's files say of its HEF."""

    folder: Path
    hef: Path
    names: tuple[str, ...]
    imgsz: tuple[int, int]
    hailo_arch: str
    nms: bool
    end2end: bool
    task: str
    nms_config: NmsConfigFile | None
    calibration: str | None = None  # the export's data= and fraction=, the images its calibration came from


def _field(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], file: Path, expected: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ExportError(f"{file}: field {key} is {value!r}, expected {expected}")
    return value


def _hw(value: Any, file: Path, key: str) -> tuple[int, int]:
    sides = [value, value] if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(sides, list) or len(sides) != 2 or not all(isinstance(v, int) and v > 0 for v in sides):
        raise ExportError(f"{file}: field {key} is {value!r}, expected an image size [height, width]")
    return sides[0], sides[1]


def _load(file: Path, parse: Any) -> Mapping[str, Any]:
    try:
        data = parse(file.read_text())
    except OSError as error:
        raise ExportError(f"{file}: cannot read it ({error.strerror})") from None
    except (ValueError, yaml.YAMLError) as error:
        raise ExportError(f"{file}: not valid {file.suffix[1:].upper()} ({error})") from None
    if not isinstance(data, dict):
        raise ExportError(f"{file}: expected a mapping of fields, found {type(data).__name__}")
    return data


def _names(value: Any, file: Path) -> tuple[str, ...]:
    """``names``: ``{0: "fire", 1: "smoke"}`` (class index -> name), every index from 0 once."""
    if not isinstance(value, dict) or not value:
        raise ExportError(f"{file}: field names is {value!r}, expected a mapping of class index to name")
    if sorted(value) != list(range(len(value))) or not all(isinstance(n, str) and n for n in value.values()):
        raise ExportError(f"{file}: field names has indices {sorted(value)}, expected 0..{len(value) - 1} with names")
    return tuple(value[i] for i in range(len(value)))


def _nms_config(file: Path) -> NmsConfigFile:
    data = _load(file, json.loads)
    decoders = _field(data, "bbox_decoders", list, file, "a list of decoders")
    entries = []
    for i, d in enumerate(decoders):
        where = f"bbox_decoders[{i}]"
        if not isinstance(d, dict):
            raise ExportError(f"{file}: field {where} is {d!r}, expected a decoder object")
        entries.append(
            BboxDecoderEntry(
                _field(d, "name", str, file, f"{where}.name, a string"),
                _field(d, "stride", int, file, f"{where}.stride, an integer"),
                _field(d, "reg_layer", str, file, f"{where}.reg_layer, a layer name"),
                _field(d, "cls_layer", str, file, f"{where}.cls_layer, a layer name"),
            )
        )
    score = float(_field(data, "nms_scores_th", (int, float), file, "a score threshold in [0, 1]"))
    iou = float(_field(data, "nms_iou_th", (int, float), file, "an IoU threshold in [0, 1]"))
    for key, value in (("nms_scores_th", score), ("nms_iou_th", iou)):
        if not (math.isfinite(value) and 0 <= value <= 1):
            raise ExportError(f"{file}: field {key} is {value!r}, expected a number in [0, 1]")
    return NmsConfigFile(
        score_threshold=score,
        iou_threshold=iou,
        image_dims=_hw(data.get("image_dims"), file, "image_dims"),
        max_proposals_per_class=_field(data, "max_proposals_per_class", int, file, "a positive integer"),
        classes=_field(data, "classes", int, file, "the number of classes"),
        regression_length=_field(data, "regression_length", int, file, "the DFL bins per side (16)"),
        background_removal=bool(data.get("background_removal", False)),
        bbox_decoders=tuple(entries),
    )


def hef_in(folder: Path) -> Path:
    """The one HEF of an export folder (Ultralytics takes the first ``*.hef`` found; two are refused here)."""
    found = sorted(folder.rglob("*.hef"))
    if len(found) != 1:
        listed = ", ".join(str(p.relative_to(folder)) for p in found) or "none"
        raise ExportError(f"{folder}: expected one .hef in an Ultralytics Hailo export folder, found {listed}")
    return found[0]


def read_export(folder: Path) -> UltralyticsExport:
    """The export in ``folder``, its files checked field by field."""
    hef = hef_in(folder)
    metadata_file = hef.parent / METADATA
    if not metadata_file.is_file():
        raise ExportError(f"{folder}: no {METADATA} beside {hef.name}, expected the export's metadata")
    metadata = _load(metadata_file, yaml.safe_load)
    nms = metadata.get("nms", False)
    if not isinstance(nms, bool):
        raise ExportError(f"{metadata_file}: field nms is {nms!r}, expected true or false")
    config_file = hef.parent / NMS_CONFIG
    if nms and not config_file.is_file():
        raise ExportError(f"{folder}: {METADATA} says nms: true, but there is no {NMS_CONFIG} beside {hef.name}")
    return UltralyticsExport(
        folder=folder,
        hef=hef,
        names=_names(metadata.get("names"), metadata_file),
        imgsz=_hw(metadata.get("imgsz"), metadata_file, "imgsz"),
        hailo_arch=_field(metadata, "hailo_arch", str, metadata_file, "the architecture compiled for (hailo8l)"),
        nms=nms,
        end2end=bool(metadata.get("end2end", False)),
        task=str(metadata.get("task", "detect")),
        nms_config=_nms_config(config_file) if config_file.is_file() else None,
        calibration=_calibration(metadata.get("args")),
    )


def _calibration(args: object) -> str | None:
    """``data=... fraction=...`` from the export's ``args`` (ultralytics: ultralytics/engine/exporter.py, the hailo
    row of ``export_formats`` lists data and fraction; ``get_int8_calibration_dataloader`` reads them)."""
    if not isinstance(args, dict) or not args.get("data"):
        return None
    fraction = args.get("fraction")
    return f"data={args['data']}" + (f" fraction={fraction}" if fraction not in (None, 1, 1.0) else "")


def hef_of(path: Path) -> Path:
    """A HEF given as itself, or as the Ultralytics export folder that holds it (:func:`hef_in`)."""
    return hef_in(path) if path.is_dir() else path


def export_of(hef: Path) -> UltralyticsExport | None:
    """The Ultralytics export a HEF belongs to, where a metadata.yaml lies beside it (as HailoBackend
    looks for it), else None."""
    return read_export(Path(hef).parent) if (Path(hef).parent / METADATA).is_file() else None
