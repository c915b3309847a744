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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.documents import DocumentError, Fields, read_json, read_yaml
from harness.core.errors import HarnessError
from harness.inputs.layer_names import is_layer_name

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


def _hw(fields: Fields, key: str) -> tuple[int, int]:
    """An image size: one positive integer for both sides, or ``[height, width]``."""
    value = fields.raw(key, None)
    sides = [value, value] if _is_int(value) else value
    if not isinstance(sides, list) or len(sides) != 2 or not all(_is_int(v) and v > 0 for v in sides):
        fields.fail(key, value, "an image size [height, width]")
    return sides[0], sides[1]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _names(fields: Fields) -> tuple[str, ...]:
    """``names``: ``{0: "fire", 1: "smoke"}`` (class index -> name), every index from 0 once."""
    value = fields.raw("names", None)
    if not isinstance(value, dict) or not value:
        fields.fail("names", value, "a mapping of class index to name")
    indices = sorted(value, key=lambda k: (isinstance(k, str), str(k) if isinstance(k, str) else k))
    if not all(_is_int(k) for k in indices) or indices != list(range(len(value))):
        raise DocumentError(
            f"{fields.source}: field names has indices {indices}, expected 0..{len(value) - 1} (integers, each once)"
        )
    for index, name in value.items():
        if not isinstance(name, str) or not name:
            raise DocumentError(f"{fields.source}: field names.{index} is {name!r:.60}, expected a class name")
    return tuple(value[i] for i in range(len(value)))


def _layer(fields: Fields, key: str) -> Any:
    """A layer name of the DFC's parsed graph, ``conv41`` or ``yolov8s/conv41``."""
    value = fields.string(key)
    if not is_layer_name(value):
        fields.fail(key, value, "a layer name of letters, digits, '_', '-', '.' and '/' (model/conv41)")
    return value


def _nms_config(file: Path) -> NmsConfigFile:
    """``nms_config.json``: the keys read are typed; others the export may write are left alone."""
    config = Fields(read_json(file, "NMS configuration"), str(file))
    entries = [
        BboxDecoderEntry(
            decoder.string("name"),
            decoder.integer("stride", lo=1),
            _layer(decoder, "reg_layer"),
            _layer(decoder, "cls_layer"),
        )
        for decoder in config.objects("bbox_decoders")
    ]
    return NmsConfigFile(
        score_threshold=config.number("nms_scores_th", lo=0, hi=1),
        iou_threshold=config.number("nms_iou_th", lo=0, hi=1),
        image_dims=_hw(config, "image_dims"),
        max_proposals_per_class=config.integer("max_proposals_per_class", lo=1),
        classes=config.integer("classes", lo=1),
        regression_length=config.integer("regression_length", lo=1),
        background_removal=config.boolean("background_removal", False),
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
    """The export in ``folder``, its files checked field by field (a file refused names itself and the field)."""
    try:
        return _read_export(folder)
    except DocumentError as error:
        raise ExportError(str(error)) from None


def _read_export(folder: Path) -> UltralyticsExport:
    hef = hef_in(folder)
    metadata_file = hef.parent / METADATA
    if not metadata_file.is_file():
        raise ExportError(f"{folder}: no {METADATA} beside {hef.name}, expected the export's metadata")
    metadata = Fields(read_yaml(metadata_file, "export metadata"), str(metadata_file))
    nms = metadata.boolean("nms", False)
    config_file = hef.parent / NMS_CONFIG
    if nms and not config_file.is_file():
        raise ExportError(f"{folder}: {METADATA} says nms: true, but there is no {NMS_CONFIG} beside {hef.name}")
    return UltralyticsExport(
        folder=folder,
        hef=hef,
        names=_names(metadata),
        imgsz=_hw(metadata, "imgsz"),
        hailo_arch=metadata.string("hailo_arch", nonempty=True),
        nms=nms,
        end2end=metadata.boolean("end2end", False),
        task=metadata.string("task", "detect", nonempty=True),
        nms_config=_nms_config(config_file) if config_file.is_file() else None,
        calibration=_calibration(metadata),
    )


def _calibration(metadata: Fields) -> str | None:
    """``data=... fraction=...`` from the export's ``args`` (ultralytics: ultralytics/engine/exporter.py, the hailo
    row of ``export_formats`` lists data and fraction; ``get_int8_calibration_dataloader`` reads them)."""
    args = metadata.object("args", None)
    if args is None:
        return None
    data = args.raw("data", None)
    if data is not None and not isinstance(data, str):
        args.fail("data", data, "the calibration dataset (a string) or null")
    fraction = args.number("fraction", None, lo=0, hi=1, nullable=True)
    if not data:
        return None
    return f"data={data}" + (f" fraction={fraction:g}" if fraction not in (None, 1.0) else "")


def hef_of(path: Path) -> Path:
    """A HEF given as itself, or as the Ultralytics export folder that holds it (:func:`hef_in`)."""
    return hef_in(path) if path.is_dir() else path


def export_of(hef: Path) -> UltralyticsExport | None:
    """The Ultralytics export a HEF belongs to, where a metadata.yaml lies beside it (as HailoBackend
    looks for it), else None."""
    return read_export(Path(hef).parent) if (Path(hef).parent / METADATA).is_file() else None
