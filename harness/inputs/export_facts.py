"""What a run needs to know of an ONNX export before it infers anything: its sha256, its image input
(name and size), its class names, whether it is end to end and its head family.

Reading them takes the model itself (and importing onnx, half a second alone), so they are kept in a
small JSON sidecar per export content, ``<cache dir>/exports/<sha256>.json``: a rerun reads the
sidecar and loads the model only where a runner infers a frame. A sidecar is trusted only whole:
its format number, the export's sha256 and what read it (the digest of the code, the onnx version)
must be this run's, every field of its type; anything else is logged and the facts are read from the model again.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.environment import code_digest, environment
from harness.core.errors import GraphError, HarnessError
from harness.core.files import read_sidecar, write_sidecar
from harness.core.head_family import HeadFamily

if TYPE_CHECKING:
    import onnx

    from harness.inputs.hef.ultralytics import UltralyticsExport

FORMAT = 1
_KIND = "hailo-harness export facts"
WHAT = "export facts"
# The code the facts are read by: an edit to it reads them again.
_READER = ("inputs/onnx_graph.py", "inputs/export_facts.py")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExportFacts:
    """An export's facts (see the module). ``family`` is None where its heads are not found
    (:func:`~harness.inputs.onnx_graph.export_heads` says why); ``passed`` names the checks of
    the export that passed, each as its checker tags it."""

    sha256: str
    input_name: str
    input_hw: tuple[int, int]
    names: tuple[str, ...] | None
    end_to_end: bool
    family: HeadFamily | None
    passed: tuple[str, ...] = ()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes; an unreadable file raises a :class:`HarnessError` naming it."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        raise HarnessError(f"model {os.fspath(path)!r}: cannot be read ({error.strerror or error})") from error
    return digest.hexdigest()


def onnx_class_names(model: onnx.ModelProto, source: str = "ONNX model") -> tuple[str, ...] | None:
    """Class names from an Ultralytics export's metadata ``names`` (a Python dict literal
    ``{0: 'person', ...}``, ultralytics: ultralytics/engine/exporter.py, read back with
    ``ast.literal_eval`` in ultralytics/nn/backends/base.py); None when the model has no such entry."""
    raw = next((p.value for p in model.metadata_props if p.key == "names"), None)
    if raw is None:
        return None
    try:
        names = ast.literal_eval(raw)
    except (ValueError, SyntaxError) as error:
        raise GraphError(f"{source}: metadata 'names' {raw[:80]!r} is not a literal ({error})") from error
    if isinstance(names, dict) and sorted(names) == list(range(len(names))):
        names = [names[i] for i in range(len(names))]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise GraphError(f"{source}: metadata 'names' {raw[:80]!r}, expected {{0: 'name', 1: ...}} or a list")
    return tuple(names)


def facts_of(model: onnx.ModelProto, sha256: str, source: str) -> ExportFacts:
    """The facts of ``model`` (whose file has ``sha256``; ``source`` names it in errors)."""
    from harness.inputs.onnx_graph import end_to_end, export_heads, model_input

    input_name, input_hw = model_input(model)
    try:
        family: HeadFamily | None = export_heads(model).family
    except GraphError:
        family = None
    names = onnx_class_names(model, source)
    return ExportFacts(sha256, input_name, input_hw, names, end_to_end(model), family)


def ultralytics_facts(export: UltralyticsExport) -> ExportFacts:
    """The facts of the model an Ultralytics Hailo export was compiled from, read from its files alone:
    the HEF's input, metadata.yaml's names, imgsz and end2end. Ultralytics compiles the NMS op into a
    YOLOv8/YOLO11 detector and none into YOLO26's heads (reg_max 1), the one-to-one head being the end-to-end
    one (ultralytics: ultralytics/engine/exporter.py, ``export_hailo``: ``raw_detect``, ``nms``)."""
    from harness.inputs.hef.reader import read_hef

    groups = read_hef(export.hef).network_groups
    if not groups or not groups[0].inputs:
        raise HarnessError(f"{export.hef}: no network group with an input, expected a compiled detector")
    image = groups[0].inputs[0]
    if tuple(image.shape[:2]) != export.imgsz:
        raise HarnessError(
            f"{export.folder}: metadata.yaml imgsz {list(export.imgsz)}, but the HEF's input {image.name} is "
            f"{image.shape[0]}x{image.shape[1]}: export again so that its files describe its HEF"
        )
    if export.nms:
        family = HeadFamily.YOLOV8
    else:
        family = HeadFamily.YOLO26_ONE2ONE if export.end2end else HeadFamily.YOLO26_ONE2MANY
    return ExportFacts(file_sha256(export.hef), image.name, export.imgsz, export.names, export.end2end, family)


def sidecar_path(cache_dir: str | os.PathLike[str], sha256: str) -> Path:
    return Path(cache_dir) / "exports" / f"{sha256}.json"


def export_facts(onnx_path: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> ExportFacts:
    """The facts of the export at ``onnx_path``: from its sidecar in ``cache_dir`` where that holds
    (see the module), else read from the model and, where its heads are found, kept there. Without
    ``cache_dir`` they are read from the model."""
    sha256 = file_sha256(onnx_path)
    if cache_dir is not None:
        found = read_sidecar(sidecar_path(cache_dir, sha256), lambda data: _fields(data, sha256), _KEYS, WHAT, log)
        if found is not None:
            return found
    from harness.inputs.onnx_graph import load_model

    facts = facts_of(load_model(onnx_path), sha256, os.fspath(onnx_path))
    if cache_dir is not None and facts.family is not None:
        write_sidecar(sidecar_path(cache_dir, sha256), _json(facts), WHAT, log)
    return facts


def record_passed(facts: ExportFacts, check: str, cache_dir: str | os.PathLike[str]) -> ExportFacts:
    """``facts`` with ``check`` passed, kept in the sidecar (an export whose heads are not found has none)."""
    if check in facts.passed:
        return facts
    facts = replace(facts, passed=(*facts.passed, check))
    if facts.family is not None:
        write_sidecar(sidecar_path(cache_dir, facts.sha256), _json(facts), WHAT, log)
    return facts


def _reader() -> str:
    """What reads the facts: the digest of its code and the onnx it runs on (its shape inference)."""
    return f"{code_digest(*_READER)} onnx {dict(environment()).get('onnx', 'not installed')}"


_KEYS = ("kind", "format", "code", "sha256", "input_name", "input_hw", "names", "end_to_end", "family", "passed")


def _json(facts: ExportFacts) -> dict[str, Any]:
    return {
        "kind": _KIND,
        "format": FORMAT,
        "code": _reader(),
        "sha256": facts.sha256,
        "input_name": facts.input_name,
        "input_hw": list(facts.input_hw),
        "names": None if facts.names is None else list(facts.names),
        "end_to_end": facts.end_to_end,
        "family": None if facts.family is None else facts.family.value,
        "passed": list(facts.passed),
    }


def _fields(data: Mapping[str, Any], sha256: str) -> ExportFacts:
    """The facts ``data`` holds; a :class:`ValueError` naming the first field that is not this
    run's or not of its type."""
    expected = {"kind": _KIND, "format": FORMAT, "code": _reader(), "sha256": sha256}
    for field, value in expected.items():
        if data.get(field) != value:
            raise ValueError(f"field {field!r} is {str(data.get(field))[:80]!r}, expected {value!r}")
    hw, names, passed = data.get("input_hw"), data.get("names"), data.get("passed")
    if not isinstance(data.get("input_name"), str):
        raise ValueError("field 'input_name': expected a string")
    if not (isinstance(hw, list) and len(hw) == 2 and all(type(v) is int and v > 0 for v in hw)):
        raise ValueError(f"field 'input_hw' is {hw!r}, expected [height, width]")
    if names is not None and not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        raise ValueError(f"field 'names' is {str(names)[:80]!r}, expected null or a list of names")
    if not isinstance(data.get("end_to_end"), bool):
        raise ValueError("field 'end_to_end': expected true or false")
    if not (isinstance(passed, list) and all(isinstance(p, str) for p in passed)):
        raise ValueError("field 'passed': expected a list of check names")
    families = [f.value for f in HeadFamily]
    if data.get("family") not in families:  # a sidecar is kept only for an export whose heads are found
        raise ValueError(f"field 'family' is {str(data.get('family'))[:80]!r}, expected one of {families}")
    return ExportFacts(
        sha256,
        data["input_name"],
        (hw[0], hw[1]),
        None if names is None else tuple(names),
        data["end_to_end"],
        HeadFamily(data["family"]),
        tuple(passed),
    )
