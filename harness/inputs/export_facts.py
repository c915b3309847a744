"""What an export holds, the one description of it every stage reads (:class:`ExportFacts`): its
sha256, its image input (name, size, channels), its class names, whether it is end to end, its head
family and its raw head maps (what each is, by stride: :func:`harness.decode.layout.layout_of_facts`).

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
import operator
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.documents import Fields
from harness.core.environment import code_digest, environment
from harness.core.errors import GraphError, HarnessError
from harness.core.files import read_sidecar, write_sidecar
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.families import REGISTERED, descriptor

if TYPE_CHECKING:
    import onnx

    from harness.core.settings import SsdConfig
    from harness.inputs.hef.ultralytics import UltralyticsExport
    from harness.inputs.onnx_graph import ExportHeads

FORMAT = 4  # 2: the head maps and the input's channels; 3: an anchored head's anchors; 4: the SSD config's digest
_KIND = "hailo-harness export facts"
WHAT = "export facts"
# The code the facts are read by, with the graph reading and every family's head finder (``finder_code``): an edit
# to it reads them again.
_READER = "inputs/export_facts.py"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExportFacts:
    """An export's facts (see the module). ``source`` names its file in messages (two copies of one
    export have equal facts). ``heads`` are its raw head maps and ``family`` their head; where they
    are not found both are empty and ``refusal`` says why (the error of
    :func:`~harness.inputs.onnx_graph.export_heads`). ``passed`` names the checks of the export that
    passed, each as its checker tags it. An Ultralytics Hailo export folder has a family but no
    ONNX, so no head maps. An SSD export's heads are found only with its SSD config (no graph holds its
    anchors): ``ssd`` is that config, kept by its digest, and facts kept with another config are read again."""

    sha256: str
    input_name: str
    input_hw: tuple[int, int]
    names: tuple[str, ...] | None
    end_to_end: bool
    family: HeadFamily | None
    heads: tuple[HeadTensor, ...] = ()
    input_channels: int = 3
    passed: tuple[str, ...] = ()
    # An SSD head's: the SSD config its heads were found with (its anchors and box coding); None otherwise.
    ssd: SsdConfig | None = None
    source: str = field(default="", compare=False)
    refusal: str | None = field(default=None, compare=False)

    def require_heads(self) -> tuple[HeadFamily, tuple[HeadTensor, ...]]:
        """The head family and maps; a :class:`GraphError` saying why where they were not found."""
        if self.family is None or not self.heads:
            raise GraphError(
                self.refusal or f"{self.source}: no raw head maps known (an export folder without its ONNX)"
            )
        return self.family, self.heads

    @property
    def anchors(self) -> tuple[tuple[tuple[float, float], ...], ...]:
        """Per stride, ascending, the anchors' ``(width, height)`` of an anchor-based head (empty otherwise)."""
        return tuple(h.anchors for h in self.heads if h.role is HeadRole.ANCHORED)


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


def export_facts_of(
    model: onnx.ModelProto,
    sha256: str,
    source: str,
    heads: ExportHeads | None = None,
    ssd: SsdConfig | None = None,
) -> ExportFacts:
    """The facts of ``model`` (whose file has ``sha256``; ``source`` names it in errors); ``heads``:
    its head maps where the caller found them (at end nodes of its own), else found by structure (an SSD
    head with ``ssd``, its config)."""
    from harness.inputs.onnx_graph import end_to_end, export_heads, model_input

    input_name, input_hw = model_input(model)
    refusal = None
    if heads is None:
        try:
            heads = export_heads(model, ssd=ssd)
        except GraphError as error:
            refusal = str(error)
    channels = model.graph.input[0].type.tensor_type.shape.dim[1].dim_value or 3
    names = onnx_class_names(model, source)
    return ExportFacts(
        sha256,
        input_name,
        input_hw,
        names,
        end_to_end(model),
        None if heads is None else heads.family,
        () if heads is None else heads.heads,
        channels,
        ssd=ssd if heads is not None and descriptor(heads.family).config_option else None,
        source=source,
        refusal=refusal,
    )


# The NMS op an Ultralytics Hailo export compiles in (ultralytics: ultralytics/engine/exporter.py, ``export_hailo``).
_ULTRALYTICS_NMS_OP = "yolov8"


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
    # With the NMS op: the family HailoRT's op of that kind decodes; without: the head decoded on the host whose
    # output is end to end as the export's and whose box maps are DFL bins as the HEF's are: 4 x reg_max 16 = 64
    # channels (YOLOv10's one-to-one head), else distances (4 channels: YOLO26's; ultralytics:
    # ultralytics/nn/modules/head.py, ``Detect.reg_max``, ``v10Detect``).
    dfl = any(len(s.shape) == 3 and s.shape[2] == 64 != len(export.names) for s in groups[0].outputs)
    family = next(
        d.family
        for d in REGISTERED
        if (
            d.nms_op == _ULTRALYTICS_NMS_OP
            if export.nms
            else d.host_postprocess and d.end_to_end == export.end2end and d.dfl_boxes == dfl
        )
    )
    return ExportFacts(
        file_sha256(export.hef),
        image.name,
        export.imgsz,
        export.names,
        export.end2end,
        family,
        input_channels=image.shape[2],
        source=str(export.folder),
    )


def sidecar_path(cache_dir: str | os.PathLike[str], sha256: str) -> Path:
    return Path(cache_dir) / "exports" / f"{sha256}.json"


def export_facts(
    onnx_path: str | os.PathLike[str],
    cache_dir: str | os.PathLike[str] | None = None,
    keep: bool = True,
    ssd: SsdConfig | None = None,
) -> ExportFacts:
    """The facts of the export at ``onnx_path``: from its sidecar in ``cache_dir`` where that holds
    (see the module; kept with this ``ssd`` config, or none), else read from the model and, where its heads
    are found and ``keep`` is true, kept there. Without ``cache_dir`` they are read from the model. ``ssd``:
    an SSD export's config, with which alone its heads are found."""
    sha256 = file_sha256(onnx_path)
    if cache_dir is not None:
        found = read_sidecar(sidecar_path(cache_dir, sha256), lambda data: _fields(data, sha256, ssd), _KEYS, WHAT, log)
        if found is not None:
            return replace(found, source=os.fspath(onnx_path))
    from harness.inputs.onnx_graph import load_model

    facts = export_facts_of(load_model(onnx_path), sha256, os.fspath(onnx_path), ssd=ssd)
    if cache_dir is not None and keep and facts.family is not None:
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
    from harness.inputs.onnx_graph import finder_code

    return f"{code_digest(_READER, *finder_code())} onnx {dict(environment()).get('onnx', 'not installed')}"


_KEYS = (
    "kind",
    "format",
    "code",
    "sha256",
    "input_name",
    "input_hw",
    "input_channels",
    "names",
    "end_to_end",
    "family",
    "heads",
    "passed",
    "ssd_config",
)


def _json(facts: ExportFacts) -> dict[str, Any]:
    return {
        "kind": _KIND,
        "format": FORMAT,
        "code": _reader(),
        "sha256": facts.sha256,
        "input_name": facts.input_name,
        "input_hw": list(facts.input_hw),
        "input_channels": facts.input_channels,
        "names": None if facts.names is None else list(facts.names),
        "end_to_end": facts.end_to_end,
        "family": None if facts.family is None else facts.family.value,
        "heads": [
            {
                "tensor": h.tensor,
                "node": h.node,
                "role": h.role.value,
                "channels": h.channels,
                "grid": list(h.grid),
                "anchors": [list(a) for a in h.anchors],
            }
            for h in facts.heads
        ],
        "passed": list(facts.passed),
        "ssd_config": None if facts.ssd is None else facts.ssd.digest,
    }


def _positive_int(value: object) -> bool:
    return type(value) is int and value > 0


def _positive_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _pair(value: object, item: Callable[[object], bool] = _positive_int) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(map(item, value))


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _names(value: object) -> bool:
    return value is None or (_strings(value) and bool(value))


def _fields(data: Mapping[str, Any], sha256: str, ssd: SsdConfig | None) -> ExportFacts:
    """The facts ``data`` holds; a :class:`DocumentError` naming the first field that is not this
    run's (``ssd_config``: the digest of this run's SSD config ``ssd``, or None) or not of its type."""
    fields = Fields(data, WHAT)
    digest = None if ssd is None else ssd.digest
    expected = {"kind": _KIND, "format": FORMAT, "code": _reader(), "sha256": sha256, "ssd_config": digest}
    for key, value in expected.items():
        fields.value(key, partial(operator.eq, value), repr(value))
    families = [f.value for f in HeadFamily]  # a sidecar is kept only for an export whose heads are found
    family = HeadFamily(fields.value("family", lambda v: v in families, f"one of {families}"))
    hw = fields.value("input_hw", _pair, "[height, width]")
    names = fields.value("names", _names, "null or a list of names")
    heads = fields.objects("heads")
    if not heads:
        fields.fail("heads", [], "a list of head maps")
    facts = ExportFacts(
        sha256,
        fields.string("input_name"),
        (hw[0], hw[1]),
        None if names is None else tuple(names),
        fields.boolean("end_to_end"),
        family,
        tuple(map(_head, heads)),
        fields.integer("input_channels", lo=1),
        tuple(fields.value("passed", _strings, "a list of check names")),
        ssd if descriptor(family).config_option else None,  # found with the config of its family's option
    )
    fields.done()
    return facts


def _head(fields: Fields) -> HeadTensor:
    """One head map of field ``heads``; a :class:`DocumentError` naming the first of its fields not of its type."""
    roles = [r.value for r in HeadRole]
    grid = fields.value("grid", _pair, "[height, width]")
    head = HeadTensor(
        fields.string("tensor"),
        fields.string("node"),
        HeadRole(fields.value("role", lambda v: v in roles, f"one of {roles}")),
        fields.integer("channels", lo=1),
        (grid[0], grid[1]),
        tuple(
            (float(w), float(h))
            for w, h in fields.value(
                "anchors",
                lambda v: isinstance(v, list) and all(_pair(a, _positive_number) for a in v),
                "a list of [width, height]",
            )
        ),
    )
    fields.done()
    return head
