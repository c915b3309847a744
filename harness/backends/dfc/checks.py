"""The checks every family's model script and NMS config share: the scripts under check
(:class:`ScriptsUnderCheck`), an NMS config's keys, types and fields as JSON writes them, the layers the files
name, the normalization, the ``nms_postprocess`` command and the activations the NMS op needs; and
:class:`NmsScriptChecks`, a family's checks run in order."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from harness.backends.dfc.alls import (
    NORMALIZATION,
    AllsScript,
    DfcScriptError,
    decodes_boxes_only,
    nms_command_said,
    parse_alls,
    unscoped,
)
from harness.backends.dfc.layers import PLACEHOLDER_PREFIX, LayerTable
from harness.backends.dfc.writing import ScriptRequest
from harness.core.checks import CheckResult
from harness.core.documents import DocumentError, parse_json
from harness.decode.layout import HeadLayout, Level, layout_of_export
from harness.families.descriptor import FamilyDescriptor

if TYPE_CHECKING:
    from harness.backends.dfc.nms_keys import NmsKey
from harness.inputs.export_facts import ExportFacts
from harness.inputs.layer_names import is_layer_name


@dataclass(frozen=True)
class ScriptsUnderCheck:
    """A model script and its NMS config under check, with the export and the layer table they are held to."""

    alls: AllsScript
    nms: Mapping[str, Any]
    facts: ExportFacts
    table: LayerTable

    @cached_property
    def layout(self) -> HeadLayout:
        return layout_of_export(self.facts)

    @property
    def decoders(self) -> list[Mapping[str, Any]]:
        return list(self.nms["bbox_decoders"])

    def level(self, stride: object) -> Level | None:
        """The export's level of ``stride``, where it has one."""
        return next((level for level in self.layout.levels if level.stride == stride), None)


def said(value: object) -> str:
    """A value as the JSON has it (``"80"`` and ``80`` told apart)."""
    return json.dumps(value)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_fraction(value: object) -> bool:
    return is_number(value) and 0 <= value <= 1  # type: ignore[operator]


def is_count(value: object) -> bool:
    return is_int(value) and value >= 1  # type: ignore[operator]


def check_field(nms: Mapping[str, Any], key: str, expected: object, why: str) -> CheckResult:
    """The NMS config's ``key`` is ``expected`` as JSON writes it: ``80.0``, ``true`` or ``"80"`` is not
    ``80`` (Python would take the first two as equal)."""
    found, wanted = said(nms[key]), said(expected)
    if found != wanted:
        return CheckResult.failed(key, f"NMS config {key}", found, f"{wanted} ({why})", f'set "{key}": {wanted}')
    return CheckResult.ok(key, f"{key} {wanted} ({why})")


def check_nms_keys(
    nms: Mapping[str, Any],
    keys: Sequence[NmsKey],
    decoder_keys: Sequence[str],
    per: str,
    decoder: Callable[[int, Mapping[str, Any]], CheckResult | None],
) -> CheckResult:
    """The NMS config's keys (exactly ``keys``; each of its bbox decoders, one ``per`` stride or layer,
    exactly ``decoder_keys``) and the types the other checks read: each typed key's, in order, then each
    decoder's own fields (``decoder``: the first failure of decoder ``i``, None where its fields hold)."""
    name = "nms_keys"
    names = [k.name for k in keys]
    missing, unknown = [k for k in names if k not in nms], [k for k in nms if k not in names]
    if missing or unknown:
        told = f"missing {missing}" if missing else f"unknown {unknown}"
        return CheckResult.failed(name, "NMS config keys", f"{list(nms)} ({told})", names, "give exactly these keys")
    for key in keys:
        if key.fits is not None and not key.fits(nms[key.name]):
            return CheckResult.failed(
                name, f"NMS config {key.name}", said(nms[key.name]), key.expected, f"set {key.name} to {key.expected}"
            )
    decoders = nms["bbox_decoders"]
    if not isinstance(decoders, list) or not all(isinstance(d, Mapping) for d in decoders):
        return CheckResult.failed(name, "NMS config bbox_decoders", said(decoders), "a list of objects", per)
    for i, d in enumerate(decoders):
        lacking, unknown = [k for k in decoder_keys if k not in d], [k for k in d if k not in decoder_keys]
        if lacking or unknown:
            told = f"missing {lacking}" if lacking else f"unknown {unknown}"
            return CheckResult.failed(
                name, f"bbox_decoders[{i}]", f"{dict(d)} ({told})", list(decoder_keys), "give exactly these keys"
            )
        if (failed := decoder(i, d)) is not None:
            return failed
    return CheckResult.ok(name, f"NMS config has the keys {names}, each decoder {list(decoder_keys)}")


def layer_name_failure(i: int, key: str, value: object, example: str, fix: str) -> CheckResult | None:
    """Decoder ``i``'s ``key`` where it is not a layer name (``example`` one, ``fix`` what to do), else None."""
    if is_layer_name(value):
        return None
    return CheckResult.failed(
        "nms_keys",
        f"bbox_decoders[{i}].{key}",
        repr(value),
        f"a layer name of letters, digits, '_', '-', '.' and '/' ({example})",
        fix,
    )


def stride_failure(i: int, d: Mapping[str, Any]) -> CheckResult | None:
    """Decoder ``i``'s ``stride`` where it is not a positive integer, else None."""
    if is_count(d["stride"]):
        return None
    return CheckResult.failed(
        "nms_keys", f"bbox_decoders[{i}].stride", said(d["stride"]), "a positive integer", "give the stride in pixels"
    )


def check_image_dims(s: ScriptsUnderCheck) -> CheckResult:
    """The NMS config's ``image_dims`` are the export's input size, as JSON writes them."""
    why = f"[H, W] of input {s.facts.input_name!r} of {s.facts.source}"
    return check_field(s.nms, "image_dims", list(s.facts.input_hw), why)


def check_decoder_strides(s: ScriptsUnderCheck) -> CheckResult:
    """One bbox decoder per stride of the export's head."""
    name = "decoder_strides"
    found, strides = [d["stride"] for d in s.decoders], [level.stride for level in s.layout.levels]
    expected = f"each stride of {s.facts.source}'s head once: {strides}"
    return one_decoder_each(name, "stride", found, strides, expected, f"one bbox decoder per stride {strides}")


def one_decoder_each(name: str, what: str, found: list[Any], heads: list[Any], expected: str, ok: str) -> CheckResult:
    """The check ``name`` that the decoders' ``what`` values (``found``: strides, grids) are the head's
    (``heads``), each once; ``expected`` and ``ok`` its words."""
    if sorted(found) != sorted(heads):
        return CheckResult.failed(name, f"bbox_decoders {what}s", found, expected, f"one bbox decoder per {what}")
    return CheckResult.ok(name, ok)


def check_meta_arch(alls: AllsScript, family: FamilyDescriptor, decoder_words: str) -> CheckResult:
    """The model script's ``nms_postprocess`` names its NMS config and the ``meta_arch`` of ``family``'s NMS op
    (``decoder_words`` say what that decoder reads); a family HailoRT has no bbox-only op for
    (``FamilyDescriptor.bbox_only_op`` empty) must not ask for one."""
    name, meta_arch = "nms_postprocess", family.nms_op
    if alls.nms_reference is None:
        return CheckResult.failed(
            name,
            "model script nms_postprocess",
            "no nms_postprocess command with a JSON path",
            f'nms_postprocess("<nms json>", meta_arch={meta_arch}, engine=cpu)',
            "add the command naming the NMS config",
        )
    if alls.nms_options.get("meta_arch") != meta_arch:
        return CheckResult.failed(
            name,
            "nms_postprocess meta_arch",
            alls.nms_options.get("meta_arch"),
            f"{meta_arch} ({decoder_words})",
            f"set meta_arch={meta_arch}",
        )
    if not family.bbox_only_op and decodes_boxes_only(alls):
        return CheckResult.failed(
            name,
            "nms_postprocess bbox_decoding_only",
            "True",
            f"absent: HailoRT has no bbox-only op of meta_arch {meta_arch}",
            "remove bbox_decoding_only=True",
        )
    return CheckResult.ok(name, nms_command_said(alls, meta_arch))


S = TypeVar("S", bound=ScriptsUnderCheck)


def require_nms_config(nms_json_text: str | None, request: ScriptRequest) -> str:
    """The NMS config's text; none is refused (a head with an NMS op has one)."""
    if nms_json_text is None:
        raise DfcScriptError(f"{request.facts.source}: a model script with an NMS op checked without its NMS config")
    return nms_json_text


def not_an_object(found: str) -> CheckResult:
    """The NMS config's text where it is not a JSON object (``found``: what it is instead)."""
    return CheckResult.failed("nms_keys", "NMS config", found, "a JSON object", "rewrite the file")


@dataclass(frozen=True)
class NmsScriptChecks(Generic[S]):
    """A family's checks of its model script and NMS config: ``keys`` (the config's keys and types), then the
    config's ``image_dims`` (every NMS config has them: :func:`check_image_dims`) and each of ``checks`` on the
    family's scripts ``under`` check, then the normalization and the ``nms_postprocess`` command of
    ``family``'s op (``decoder_words``: what its decoder reads)."""

    family: FamilyDescriptor
    decoder_words: str
    keys: Callable[[S], CheckResult]
    checks: tuple[Callable[[S], CheckResult], ...]
    under: Callable[[AllsScript, Mapping[str, Any], ExportFacts, LayerTable], S]

    def run(self, alls_text: str, nms_json_text: str | None, request: ScriptRequest) -> tuple[CheckResult, ...]:
        """Every check, in order; each after the keys' skipped, by the name its function gives, where the keys
        do not hold."""
        alls = parse_alls(alls_text)
        tail = (check_normalization(alls), check_meta_arch(alls, self.family, self.decoder_words))
        try:
            nms = parse_json(require_nms_config(nms_json_text, request), "NMS config")
        except DocumentError as error:
            return (not_an_object(str(error)), *tail)
        if not isinstance(nms, dict):
            return (not_an_object(type(nms).__name__), *tail)
        s = self.under(alls, nms, request.facts, request.table)
        checked, checks = self.keys(s), (check_image_dims, *self.checks)
        if checked.passed:
            return (checked, *(check(s) for check in checks), *tail)
        skipped = "the NMS config lacks keys or types (see nms_keys)"
        return (
            checked,
            *(CheckResult.skipped(check.__name__.lstrip("_").removeprefix("check_"), skipped) for check in checks),
            *tail,
        )


def check_named_layers(named: list[tuple[str, str]], table: LayerTable) -> CheckResult:
    """Every layer a script names, ``(where, layer)``, is a layer of ``table``; skipped while they are
    placeholders."""
    name = "layer_names"
    placeholders = sorted({layer for _, layer in named if unscoped(layer).startswith(PLACEHOLDER_PREFIX)})
    if placeholders:
        return CheckResult.skipped(
            name,
            f"layer names {placeholders} are placeholders: the DFC names its layers when it translates the ONNX. "
            "Give the parsed names (--layer-map, or --hn with the translated graph), or compile without --dry-run",
        )
    known = {layer.name for layer in table.layers}
    for where, layer in named:
        if unscoped(layer) not in known:
            origin = "the parsed graph" if table.source == "parsed" else "the layer map"
            return CheckResult.failed(
                name,
                where,
                repr(layer),
                f"a layer of {origin}: {table.output_names}",
                "name the parsed layers of the head convs (see layer_names.json)",
            )
    return CheckResult.ok(name, f"every named layer is in the {table.source} layer table")


def check_normalization(alls: AllsScript) -> CheckResult:
    """The model script divides by 255 inside the HEF, as an Ultralytics export expects its input."""
    name = "normalization"
    expected = NORMALIZATION
    if alls.normalization != expected:
        found = "no normalization command" if alls.normalization is None else list(map(list, alls.normalization))
        return CheckResult.failed(
            name,
            "model script normalization (mean, std)",
            found,
            f"{list(map(list, expected))} (Ultralytics divides by 255; the HEF takes raw 0-255 RGB)",
            "add normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0]) and feed uint8 images",
        )
    return CheckResult.ok(name, "normalization /255 inside the HEF")


def list_failure(
    i: int, d: Mapping[str, Any], keys: Sequence[str], fits: Callable[[list[Any]], bool], expected: str
) -> CheckResult | None:
    """Decoder ``i``'s first of ``keys`` that is not a list that ``fits`` (``expected`` in words), else None."""
    for key in keys:
        if not (isinstance(d[key], list) and fits(d[key])):
            return CheckResult.failed(
                "nms_keys", f"bbox_decoders[{i}].{key}", said(d[key]), expected, f"give {key} as a list"
            )
    return None


def check_decoder_layer_names(
    s: ScriptsUnderCheck, keys: Sequence[str], activation: str = "change_output_activation({}, ...)"
) -> CheckResult:
    """Every layer the decoders name under ``keys``, and every layer whose activation the model script
    changes (named in the words of ``activation``), is a layer of the table (:func:`check_named_layers`)."""
    named = [(f"bbox_decoders[{i}].{key}", d[key]) for i, d in enumerate(s.decoders) for key in keys]
    named += [(activation.format(layer), layer) for layer in s.alls.activations]
    return check_named_layers(named, s.table)


def not_output_failure(name: str, where: str, expected: str) -> CheckResult:
    """A decoder's layer that feeds no output layer of the network (``expected``: what it should be)."""
    return CheckResult.failed(
        name,
        where,
        "a layer that feeds no output layer",
        expected,
        "translate with the head convs as end nodes and name their layers",
    )


def _sigmoid_failure(s: ScriptsUnderCheck, i: int, key: str, words: SigmoidWords) -> CheckResult | None:
    """Decoder ``i``'s layer under ``key`` without the sigmoid the NMS op needs on it, else None."""
    layer = unscoped(s.decoders[i][key])
    if (activation := s.alls.activation_of(layer)) == "sigmoid":
        return None
    return CheckResult.failed(
        "sigmoid",
        f"activation of {key} {layer} (bbox_decoders[{i}])",
        activation or words.unchanged,
        words.expected,
        words.fix.format(layer),
    )


def _raw_failure(s: ScriptsUnderCheck, i: int, raw: RawLayer) -> CheckResult | None:
    """Decoder ``i``'s layer under ``raw.key`` with an activation, which the NMS op must read raw, else None."""
    layer = unscoped(s.decoders[i][raw.key])
    if (activation := s.alls.activation_of(layer)) is None:
        return None
    fix = (
        f"remove change_output_activation({layer}, ...) from the model script"
        if layer in s.alls.activations
        else raw.every.format(activation)
    )
    return CheckResult.failed(
        "sigmoid", f"activation of {raw.key} {layer} (bbox_decoders[{i}])", activation, raw.expected, fix
    )


@dataclass(frozen=True)
class SigmoidWords:
    """What a missing sigmoid is told with: ``unchanged``, what the op is given where no activation is changed;
    ``expected``; ``fix``, ``{}`` the layer."""

    unchanged: str = "none changed (logits reach the NMS op, which reads probabilities)"
    expected: str = "sigmoid"
    fix: str = "add change_output_activation({}, sigmoid) to the model script"


@dataclass(frozen=True)
class RawLayer:
    """A decoder's layer the NMS op reads raw: its ``key``, ``expected`` (why it is unchanged), and ``every``,
    the fix where the activation is the one for every output layer (``{}`` the activation)."""

    key: str
    expected: str
    every: str


def check_sigmoid(
    s: ScriptsUnderCheck,
    scored: Sequence[str],
    ok: str,
    raw: RawLayer | None = None,
    words: SigmoidWords = SigmoidWords(),
) -> CheckResult:
    """The activations the NMS op needs, decoder by decoder: a sigmoid on each layer under ``scored`` (told in
    ``words``), none on the ``raw`` layer; ``ok`` says so where they hold."""
    for i in range(len(s.decoders)):
        failed = next((f for key in scored if (f := _sigmoid_failure(s, i, key, words)) is not None), None)
        if failed is None and raw is not None:
            failed = _raw_failure(s, i, raw)
        if failed is not None:
            return failed
    return CheckResult.ok("sigmoid", ok)


def failures(results: Sequence[CheckResult]) -> list[CheckResult]:
    return [r for r in results if r.passed is False]
