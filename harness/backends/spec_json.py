"""The one JSON form of an input's and an output's spec, as an output store's header and the emulated
HEF's facts keep them: ``{name, shape, order, type}`` for an input, and ``quant`` (one
``{zero_point, scale, limvals_min, limvals_max}`` per channel group) and ``nms`` (the NMS buffer's
shape, or null) besides for an output. Read strictly through :class:`~harness.core.documents.Fields`:
each error names the file, the key path and what was expected."""

from __future__ import annotations

import enum
from dataclasses import asdict
from typing import Any, TypeVar

from harness.backends.base import InputSpec
from harness.core.documents import Fields
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo

E = TypeVar("E", bound=enum.Enum)


def _tensor_json(spec: InputSpec | OutputSpec) -> dict[str, Any]:
    """What an input and an output spec both hold: name, shape, format order and type."""
    return {
        "name": spec.name,
        "shape": list(spec.shape),
        "order": spec.format_order.name,
        "type": spec.format_type.name,
    }


def input_json(spec: InputSpec) -> dict[str, Any]:
    return _tensor_json(spec)


def input_spec(fields: Fields) -> InputSpec:
    spec = InputSpec(
        fields.string("name", nonempty=True),
        shape_of(fields, "shape"),
        enum_of(fields, "order", FormatOrder),
        enum_of(fields, "type", FormatType),
    )
    fields.done()
    return spec


def output_json(spec: OutputSpec) -> dict[str, Any]:
    return {
        **_tensor_json(spec),
        "quant": [asdict(q) for q in spec.quant],
        "nms": asdict(spec.nms) if spec.nms is not None else None,
    }


def output_spec(fields: Fields) -> OutputSpec:
    nms = None if fields.raw("nms", expected="an object or null") is None else fields.object("nms")
    spec = OutputSpec(
        name=fields.string("name", nonempty=True),
        shape=shape_of(fields, "shape"),
        format_order=enum_of(fields, "order", FormatOrder),
        format_type=enum_of(fields, "type", FormatType),
        quant=tuple(_quant(q) for q in fields.objects("quant")),
        nms=None if nms is None else _nms(nms),
    )
    fields.done()
    return spec


def shape_of(fields: Fields, key: str) -> tuple[int, ...]:
    shape = fields.value(
        key,
        lambda v: isinstance(v, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in v),
        "a list of non-negative integers",
    )
    return tuple(shape)


def enum_of(fields: Fields, key: str, kind: type[E]) -> E:
    names = list(kind.__members__)
    return kind[fields.value(key, lambda v: v in names, f"one of {names}")]


def _quant(fields: Fields) -> QuantInfo:
    quant = QuantInfo(*(fields.number(k) for k in ("zero_point", "scale", "limvals_min", "limvals_max")))
    fields.done()
    return quant


def _nms(fields: Fields) -> NmsShape:
    nms = NmsShape(
        *(fields.integer(k, lo=0) for k in ("number_of_classes", "max_bboxes_per_class", "max_bboxes_total"))
    )
    fields.done()
    return nms
