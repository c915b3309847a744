"""What a run needs of a cached emulated HEF before it infers anything (its input, its raw heads with
their quant infos, its head family and class count), kept beside the quantized model as
``<key>.json``: a rerun reads them without loading the model (nor importing onnx).

They are trusted only whole: the format number, the emulated HEF's cache key, the sha256 of the
quantized model beside them and the digest of the code that read them must match, every field of
its type; anything else is logged and they
are read from the model again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.backends.base import InputSpec
from harness.backends.emulator.outputs import head_family, head_roles, head_specs, input_spec
from harness.core.environment import code_digest
from harness.core.files import read_sidecar, write_sidecar
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo

if TYPE_CHECKING:
    import onnx

FORMAT = 1
_KIND = "hailo-harness emulated HEF facts"
WHAT = "emulated HEF facts"
# The code the facts are read by: an edit to it reads them again.
_READER = ("backends/emulator/outputs.py", "backends/emulator/facts.py")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HefFacts:
    """The emulated HEF's input, raw heads (UINT8 device values with their quant infos, in head
    order), head family and number of classes."""

    input: InputSpec
    heads: tuple[OutputSpec, ...]
    family: HeadFamily
    classes: int


def hef_facts_of(model: onnx.ModelProto) -> HefFacts:
    """The facts of a quantized model the emulator built (a :class:`GraphError` where it did not)."""
    heads = head_specs(model)
    roles = head_roles(model)
    classes = next(h.channels for h in heads if roles[h.name] == HeadRole.CLASS)
    return HefFacts(input_spec(model), heads, head_family(model), classes)


def _sha256(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


_KEYS = ("kind", "format", "code", "key", "model_sha256", "input", "heads", "family", "classes")


def _json(facts: HefFacts, key: str, model_sha256: str) -> dict[str, Any]:
    i = facts.input
    return {
        "kind": _KIND,
        "format": FORMAT,
        "code": code_digest(*_READER),
        "key": key,
        "model_sha256": model_sha256,
        "input": {"name": i.name, "shape": list(i.shape), "order": i.format_order.name, "type": i.format_type.name},
        "heads": [
            {
                "name": h.name,
                "shape": list(h.shape),
                "order": h.format_order.name,
                "type": h.format_type.name,
                "quant": [[q.zero_point, q.scale, q.limvals_min, q.limvals_max] for q in h.quant],
            }
            for h in facts.heads
        ],
        "family": facts.family.value,
        "classes": facts.classes,
    }


def write_hef_facts(path: Path, facts: HefFacts, key: str, model: Path) -> None:
    """Keep ``facts`` of the quantized ``model`` (cache ``key``) in ``path``, whole or not at all; where
    it cannot be written the run goes on (logged): the next one reads the model again."""
    write_sidecar(path, _json(facts, key, _sha256(model)), WHAT, log)


def _shape(value: Any, field: str) -> tuple[int, ...]:
    if not (isinstance(value, list) and value and all(type(v) is int and v >= 0 for v in value)):
        raise ValueError(f"field {field!r} is {str(value)[:80]!r}, expected a list of sizes")
    return tuple(value)


def _quant(value: Any, field: str) -> tuple[QuantInfo, ...]:
    def number(v: Any) -> bool:
        return type(v) in (int, float)

    if not (
        isinstance(value, list) and all(isinstance(q, list) and len(q) == 4 and all(map(number, q)) for q in value)
    ):
        raise ValueError(f"field {field!r} is {str(value)[:80]!r}, expected [[zero point, scale, min, max], ...]")
    return tuple(QuantInfo(*(float(v) for v in q)) for q in value)


def _fields(data: Mapping[str, Any], key: str, model: Path) -> HefFacts:
    """The facts ``data`` holds; a :class:`ValueError` naming the first field that is not this
    HEF's or not of its type."""
    expected = {
        "kind": _KIND,
        "format": FORMAT,
        "code": code_digest(*_READER),
        "key": key,
        "model_sha256": _sha256(model),
    }
    for field, value in expected.items():
        if data.get(field) != value:
            raise ValueError(f"field {field!r} is {str(data.get(field))[:80]!r}, expected {value!r}")
    given, heads, classes = data.get("input"), data.get("heads"), data.get("classes")
    if not isinstance(given, dict) or not isinstance(given.get("name"), str):
        raise ValueError("field 'input': expected {name, shape, order, type}")
    if not (
        isinstance(heads, list) and heads and all(isinstance(h, dict) and isinstance(h.get("name"), str) for h in heads)
    ):
        raise ValueError("field 'heads': expected a list of {name, shape, order, type, quant}")
    if type(classes) is not int or classes < 1:
        raise ValueError(f"field 'classes' is {classes!r}, expected a positive count")
    try:  # an order, type or family that is none of its names: KeyError / ValueError naming it
        spec = InputSpec(
            given["name"],
            _shape(given.get("shape"), "input.shape"),
            FormatOrder[given["order"]],
            FormatType[given["type"]],
        )
        outputs = tuple(
            OutputSpec(
                h["name"],
                _shape(h.get("shape"), f"heads.{h['name']}.shape"),
                FormatOrder[h["order"]],
                FormatType[h["type"]],
                _quant(h.get("quant"), f"heads.{h['name']}.quant"),
            )
            for h in heads
        )
        return HefFacts(spec, outputs, HeadFamily(data.get("family")), classes)
    except KeyError as error:
        raise ValueError(f"a missing or unknown name {error}") from None


def read_hef_facts(path: Path, key: str, model: Path) -> HefFacts | None:
    """The facts kept in ``path`` for the quantized ``model`` of cache ``key``; None where there are
    none, or where they or the model are unreadable or not this HEF's (logged: read from the model again)."""
    return read_sidecar(path, lambda data: _fields(data, key, model), _KEYS, WHAT, log)
