"""What a run needs of a cached emulated HEF before it infers anything (its input, its raw heads with
their quant infos, its head family, class count and, for an anchor-based family or an SSD head, its anchors
and, for an SSD head, the digest of its SSD config), kept
beside the quantized model as ``<key>.json``: a rerun reads them without loading the model (nor importing onnx).

The same file is the entry's record in the shared cache (:mod:`harness.core.shared_entry`): what the
model was built from (``built_from``: the cache format, onnxruntime's version, the export's sha256, the
calibration images' digest and count, the quantization settings; the calibration folder and the
quantizer's code digest beside them, said, not compared), the sha256 of the model, and a seal over all
of it. An entry is used only where its record's seal holds, the model hashes to what the record says
and the record's inputs are the ones the run asks for (:func:`read_entry`); where only the facts are
stale (another reader's code) they are read from the verified model again.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.backends import spec_json
from harness.backends.base import InputSpec
from harness.backends.emulator.outputs import (
    family_part,
    head_family,
    head_layout,
    head_ssd_config,
    input_spec,
    is_anchors,
)
from harness.core.documents import DocumentError, Fields, parse_json, read_bytes
from harness.core.environment import code_digest
from harness.core.errors import HeadPairingError
from harness.core.files import write_atomic
from harness.core.head_family import HeadFamily
from harness.core.shared_entry import SEAL, record_seal, seal_record, untrusted
from harness.core.signing import SealCheck, SealState, SigningPolicy
from harness.core.specs import OutputSpec
from harness.decode.heads import Anchors
from harness.decode.heads import head_layout as family_layout
from harness.families import descriptor

if TYPE_CHECKING:
    import onnx

FORMAT = 5  # 2: specs in the one spec JSON form (backends/spec_json.py); 3: an anchor-based family's anchors;
# 4: an SSD head's anchors and SSD config digest (``ssd_config``); 5: the entry's record: ``built_from``,
# ``calibration_source``, ``quantizer`` and its ``seal`` (an older record is unsealed: its entry made anew)
_KIND = "hailo-harness emulated HEF facts"
WHAT = "emulated HEF facts"
# The code the facts are read by: an edit to it reads them again.
_READER = ("backends/emulator/outputs.py", "backends/emulator/facts.py", "families")  # families: their facts and roles

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


_FACT_KEYS = ("input", "heads", "family", "classes", "anchors", "ssd_config")
_KEYS = (
    "kind",
    "format",
    "code",
    "key",
    "model_sha256",
    *_FACT_KEYS,
    "built_from",
    "calibration_source",
    "quantizer",
    SEAL,
)


@dataclass(frozen=True)
class BuiltFrom:
    """What an emulated HEF is built from: ``inputs``, what its cache key stands for (held to what a run
    asks for), and, said beside them, the calibration folder and the quantizer's code digest."""

    inputs: Mapping[str, Any]
    calibration_source: str
    quantizer: str


def _facts_json(facts: HefFacts) -> dict[str, Any]:
    return {
        "code": code_digest(*_READER),
        "input": spec_json.input_json(facts.input),
        "heads": [spec_json.output_json(h) for h in facts.heads],
        "family": facts.family.value,
        "classes": facts.classes,
        "anchors": [[list(pair) for pair in group] for group in facts.anchors],
        "ssd_config": facts.ssd_config,
    }


def record_json(facts: HefFacts, key: str, model_sha256: str, built: BuiltFrom, signing_key: bytes | None) -> dict:
    """The entry's record: its facts, what it was built from and the model's sha256, sealed."""
    body = {
        "kind": _KIND,
        "format": FORMAT,
        "key": key,
        "model_sha256": model_sha256,
        **_facts_json(facts),
        "built_from": dict(built.inputs),
        "calibration_source": built.calibration_source,
        "quantizer": built.quantizer,
    }
    return seal_record(body, signing_key)


def write_record(path: Path, record: Mapping[str, Any]) -> None:
    """Keep the entry's ``record`` in ``path``, whole or not at all (an :class:`OSError` where it cannot be)."""
    write_atomic(path, json.dumps(record, sort_keys=True))


@dataclass(frozen=True)
class EntryRead:
    """A cached entry as read: its ``facts`` where it may be used (else None), its record's seal
    (``check``), why the entry found may not be used (``problem``; None with no facts: there is none)
    and the sha256 of its model."""

    facts: HefFacts | None
    check: SealCheck | None = None
    problem: str | None = None
    model_sha256: str = ""


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True)[:160]


def read_entry(
    path: Path,
    model: Path,
    key: str,
    built: BuiltFrom,
    rules: SigningPolicy,
    describe: Callable[[Path], HefFacts | None],
) -> EntryRead:
    """The entry of cache ``key``: the quantized ``model`` and its record ``path``, held to each other
    and to what the run asks for (``built.inputs``) under the signing ``rules``. Facts stale only in
    form (another reader's code) are read from the verified model again by ``describe`` (None: it
    cannot be read) and its record written again, sealed as it was (signed only where it was signed)."""
    if not model.is_file():
        return EntryRead(None)
    try:
        model_sha256 = _sha256(model)
    except OSError as error:
        return EntryRead(None, problem=f"its model cannot be read ({error.strerror or error})")
    if not path.is_file():
        why = "no record of what it was built from beside it (put there by hand, or by an older harness)"
        return EntryRead(None, problem=why, model_sha256=model_sha256)
    try:
        data = parse_json(read_bytes(path, WHAT), str(path))
    except (OSError, DocumentError) as error:
        return EntryRead(None, problem=f"its record {path.name} cannot be read ({error})", model_sha256=model_sha256)
    if not isinstance(data, dict):
        return EntryRead(None, problem=f"its record {path.name} is not a JSON object", model_sha256=model_sha256)
    check = record_seal(data, rules.key)
    distrust = untrusted(check, rules)
    if distrust is not None:
        return EntryRead(None, check, distrust, model_sha256)
    if data.get("model_sha256") != model_sha256:
        why = f"its model's sha256 is {model_sha256[:16]}, its record says {_shown(data.get('model_sha256'))}"
        return EntryRead(None, check, why, model_sha256)
    for name, value in (("kind", _KIND), ("format", FORMAT), ("key", key), ("built_from", dict(built.inputs))):
        if data.get(name) != value:
            why = f"its record's {name} is {_shown(data.get(name))}, this run asks for {_shown(value)}"
            return EntryRead(None, check, why, model_sha256)
    try:
        if set(data) != set(_KEYS):
            raise ValueError(f"keys {sorted(data)}, expected {sorted(_KEYS)}")
        return EntryRead(_fields(data), check, None, model_sha256)
    except (ValueError, DocumentError) as error:
        log.warning("%s %s not used (%s): reading them from the model again", WHAT, path, error)
    facts = describe(model)
    if facts is None:
        return EntryRead(None, check, "its model cannot be read as an emulated HEF", model_sha256)
    again = record_json(facts, key, model_sha256, built, rules.key if check.state is SealState.SIGNED else None)
    try:
        write_record(path, again)
    except OSError as error:
        log.warning("%s %s not kept (%s): the next run reads them from the model again", WHAT, path, error)
    return EntryRead(facts, check, None, model_sha256)


def _fields(data: Mapping[str, Any]) -> HefFacts:
    """The facts a record holds (its identity held by :func:`read_entry`); a :class:`ValueError` or
    :class:`DocumentError` naming the first field that is not of its type, or read by other code."""
    code = code_digest(*_READER)
    if data.get("code") != code:
        raise ValueError(f"field 'code' is {str(data.get('code'))[:80]!r}, expected {code!r}")
    fields = Fields(data, WHAT)
    for name in set(_KEYS) - set(_FACT_KEYS):
        fields.raw(name)
    given = spec_json.input_spec(fields.object("input"))
    heads = tuple(spec_json.output_spec(h) for h in fields.objects("heads"))
    if not heads:
        fields.fail("heads", [], "at least one head")
    families = [f.value for f in HeadFamily]
    family = HeadFamily(fields.value("family", lambda v: v in families, f"one of {families}"))
    classes = fields.integer("classes", lo=1)
    anchors = _anchors(fields, family, len(heads))
    ssd = bool(descriptor(family).config_option)  # its config's digest: what the heads were found with
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
    """The ``anchors`` field: per stride a non-empty list of ``[width, height]`` for an anchored ``family``
    (one group per stride's maps: one head of YOLOv5's, two of an SSD layer's), an empty list otherwise."""
    if descriptor(family).anchored:
        strides //= len(family_part(family).head_roles())
        expected = f"{strides} lists (one per stride) of [width, height] (positive)"
        groups = fields.value(
            "anchors", lambda v: isinstance(v, list) and len(v) == strides and all(map(is_anchors, v)), expected
        )
    else:
        groups = fields.value("anchors", lambda v: v == [], f"[] (a {family.value} head has no anchors)")
    return tuple(tuple((float(w), float(h)) for w, h in group) for group in groups)
