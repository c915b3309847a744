"""What a run needs of a cached emulated HEF before it infers anything (its input, its raw heads with
their quant infos, its head family, class count and, for an anchor-based family or an SSD head, its anchors
and, for an SSD head, the digest of its SSD config), kept
beside the quantized model as ``<key>.json``: a rerun reads them without loading the model (nor importing onnx).

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

from harness.backends import spec_json
from harness.backends.base import InputSpec
from harness.backends.emulator.outputs import head_family, head_layout, head_ssd_config, input_spec, is_anchors
from harness.core.documents import Fields
from harness.core.environment import code_digest
from harness.core.errors import HeadPairingError
from harness.core.files import read_sidecar, write_sidecar
from harness.core.head_family import HeadFamily
from harness.core.specs import OutputSpec
from harness.decode.heads import Anchors
from harness.decode.heads import head_layout as family_layout

if TYPE_CHECKING:
    import onnx

FORMAT = 4  # 2: specs in the one spec JSON form (backends/spec_json.py); 3: an anchor-based family's anchors;
# 4: an SSD head's anchors and SSD config digest (``ssd_config``)
_KIND = "hailo-harness emulated HEF facts"
WHAT = "emulated HEF facts"
# The code the facts are read by: an edit to it reads them again.
_READER = ("backends/emulator/outputs.py", "backends/emulator/facts.py")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HefFacts:
    """The emulated HEF's input, raw heads (UINT8 device values with their quant infos, in head
    order), head family, number of classes (its layout's) and, per stride ascending, its anchors'
    ``(width, height)`` in input pixels (an SSD head: per layer, largest grid first, as fractions of the input;
    empty for an anchor-free family); ``ssd_config``: an SSD head's config digest (``SsdConfig.digest``)."""

    input: InputSpec
    heads: tuple[OutputSpec, ...]
    family: HeadFamily
    classes: int
    anchors: Anchors
    ssd_config: str | None = None


def hef_facts_of(model: onnx.ModelProto) -> HefFacts:
    """The facts of a quantized model the emulator built (a :class:`GraphError` where it did not)."""
    layout = head_layout(model)
    heads = tuple(output.host_spec for output in layout.outputs)
    anchors = layout.anchors if layout.anchored or layout.levels[0].per_anchor else ()
    return HefFacts(input_spec(model), heads, head_family(model), layout.classes, anchors, head_ssd_config(model))


def _sha256(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


_KEYS = (
    "kind",
    "format",
    "code",
    "key",
    "model_sha256",
    "input",
    "heads",
    "family",
    "classes",
    "anchors",
    "ssd_config",
)


def _json(facts: HefFacts, key: str, model_sha256: str) -> dict[str, Any]:
    return {
        "kind": _KIND,
        "format": FORMAT,
        "code": code_digest(*_READER),
        "key": key,
        "model_sha256": model_sha256,
        "input": spec_json.input_json(facts.input),
        "heads": [spec_json.output_json(h) for h in facts.heads],
        "family": facts.family.value,
        "classes": facts.classes,
        "anchors": [[list(pair) for pair in group] for group in facts.anchors],
        "ssd_config": facts.ssd_config,
    }


def write_hef_facts(path: Path, facts: HefFacts, key: str, model: Path) -> None:
    """Keep ``facts`` of the quantized ``model`` (cache ``key``) in ``path``, whole or not at all; where
    it cannot be written the run goes on (logged): the next one reads the model again."""
    write_sidecar(path, _json(facts, key, _sha256(model)), WHAT, log)


def _fields(data: Mapping[str, Any], key: str, model: Path) -> HefFacts:
    """The facts ``data`` holds; a :class:`ValueError` or :class:`DocumentError` naming the first
    field that is not this HEF's or not of its type."""
    expected = {
        "kind": _KIND,
        "format": FORMAT,
        "code": code_digest(*_READER),
        "key": key,
        "model_sha256": _sha256(model),
    }
    for name, value in expected.items():
        if data.get(name) != value:
            raise ValueError(f"field {name!r} is {str(data.get(name))[:80]!r}, expected {value!r}")
    fields = Fields(data, WHAT)
    for name in expected:
        fields.raw(name)
    given = spec_json.input_spec(fields.object("input"))
    heads = tuple(spec_json.output_spec(h) for h in fields.objects("heads"))
    if not heads:
        fields.fail("heads", [], "at least one head")
    families = [f.value for f in HeadFamily]
    family = HeadFamily(fields.value("family", lambda v: v in families, f"one of {families}"))
    classes = fields.integer("classes", lo=1)
    anchors = _anchors(fields, family, len(heads))
    ssd = family is HeadFamily.SSD
    digest = fields.value(
        "ssd_config",
        lambda v: isinstance(v, str) and len(v) == 64 if ssd else v is None,
        "the SSD config's sha256 digest" if ssd else f"null (a {family.value} head has no SSD config)",
    )
    fields.done()
    try:
        layout = family_layout(family, {h.name: h for h in heads}, given.hw, anchors)
    except HeadPairingError as error:
        raise ValueError(f"fields 'heads' and 'anchors' are not the heads of a {family.value} HEF ({error})") from None
    if layout.classes != classes:
        fields.fail("classes", classes, f"{layout.classes}, the class count of the heads")
    return HefFacts(given, heads, family, classes, anchors, digest)


def _anchors(fields: Fields, family: HeadFamily, strides: int) -> Anchors:
    """The ``anchors`` field: per stride a non-empty list of ``[width, height]`` for an anchor-based
    ``family`` (one group per head; an SSD head's: one per layer, two heads each), an empty list otherwise."""
    if family is HeadFamily.SSD:
        strides //= 2
    if family.anchor_based or family is HeadFamily.SSD:
        expected = f"{strides} lists (one per stride) of [width, height] (positive)"
        groups = fields.value(
            "anchors", lambda v: isinstance(v, list) and len(v) == strides and all(map(is_anchors, v)), expected
        )
    else:
        groups = fields.value("anchors", lambda v: v == [], f"[] (a {family.value} head has no anchors)")
    return tuple(tuple((float(w), float(h)) for w, h in group) for group in groups)


def read_hef_facts(path: Path, key: str, model: Path) -> HefFacts | None:
    """The facts kept in ``path`` for the quantized ``model`` of cache ``key``; None where there are
    none, or where they or the model are unreadable or not this HEF's (logged: read from the model again)."""
    return read_sidecar(path, lambda data: _fields(data, key, model), _KEYS, WHAT, log)
