"""Whether stores are the shards of one job: every shard's manifest (model, HEF, dataset, settings,
notes, kept options, harness version, each path's model and origin) and each path's prediction key
(the harness's code digest and version, the package versions, the settings) held to the first
shard's and to the merging harness's own, each difference named in one refusal."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import __version__
from harness.core.documents import Fields, parse_json
from harness.core.errors import HarnessError
from harness.core.journal import read
from harness.pipeline.cache import JOURNAL, KEY_RECORD, detection_code, key_digest

if TYPE_CHECKING:
    from harness.pipeline.shard import ShardManifest, StoredPath


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    """A document's leaves by their dotted key path (lists kept whole)."""
    if not isinstance(value, Mapping):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, inner in value.items():
        flat.update(_flat(inner, f"{prefix}.{key}"))
    return flat


def _key_of(manifest: ShardManifest, path: StoredPath) -> dict[str, Any]:
    """The key its prediction file states (its first record), held to the file's name and to the
    manifest: the path, its model and variant and the settings."""
    file = manifest.predictions(path)
    if not file.is_file():
        raise HarnessError(f"{manifest.file}: paths[{path.name}].file: {file} not found (run that shard again)")
    scan = read(file, JOURNAL)
    first = scan.records[0] if scan.records else None
    if first is None or first.number != 1 or first.kind != KEY_RECORD:
        said = scan.losses[0] if scan.losses else "no key record"
        raise HarnessError(f"{file}: {said}: its key is lost (damaged; run shard {manifest.shard} again)")
    key = Fields(parse_json(bytes(first.payload), f"{file}: key"), f"{file}: key")
    document = {k: v for k, v in key.items()}
    settings = {k: v for k, v in manifest.settings.to_dict().items() if k not in ("class_map", "metric")}
    stated = {
        "path": path.name,
        "model_sha256": path.model_sha256,
        "variant": path.variant,
        "settings": json.loads(json.dumps(settings)),
    }
    for name, value in stated.items():
        if document.get(name) != value:
            raise HarnessError(
                f"{file}: key {name} {_short(document.get(name))}, but {manifest.file} states {_short(value)}; "
                f"expected the predictions its manifest names (run shard {manifest.shard} again)"
            )
    if path.file != f"{path.name}-{key_digest(document)[:24]}.bin":
        raise HarnessError(
            f"{file}: its key does not match its name (the key was changed after it was written); "
            f"expected the key the shard wrote (run shard {manifest.shard} again)"
        )
    return document


def _short(value: Any) -> str:
    """A value as a refusal quotes it: a sha256 by its first 16 hex digits, anything long cut at 80."""
    if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value):
        return repr(value[:16] + "...")
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# A key's fields left out of the identity: the runtime label names the runner's files and device,
# which differ between the runners of one job (the package versions under ``environment`` do not).
_KEY_ASIDE = ("runtime",)


# A file's place, in an option's text or a note: the runners of one job may keep their files in other
# folders (a runner's own --cache, a CI job's workspace); what the files hold is held by their sha256s.
_PLACE = re.compile(r"[^\s'\"(),;]*[\\/][^\s'\"(),;]*")


def _placeless(value: Any) -> Any:
    """``value`` with every file's place reduced to its name (texts, and lists of texts)."""
    if isinstance(value, str):
        return _PLACE.sub(lambda m: m.group(0).rstrip("/\\").replace("\\", "/").rpartition("/")[2], value)
    if isinstance(value, list):
        return [_placeless(v) for v in value]
    return value


def _identity(manifest: ShardManifest) -> dict[str, tuple[Path, Any]]:
    """What makes a shard one of a job's, by field: where it is stated and its value. The manifest's
    (model, HEF, dataset, settings, notes, options, harness version, each path's model and origin),
    and each path's prediction key (the harness's code digest and version, the package versions,
    the settings the predictions were made under)."""
    m, file = manifest, manifest.file
    fields: dict[str, Any] = {
        "shard": f"of {m.shard.count}",
        "harness_version": m.harness_version,
        "model_sha256": m.model_sha256,
        "hef_sha256": m.hef_sha256,
        "dataset.manifest": m.dataset_manifest,
        "dataset.images": m.dataset_images,
        **_flat(m.settings.to_dict(), "settings"),
        "thresholds": m.thresholds,
        "calibration": m.calibration,
        **_flat(m.options, "options"),
        "paths": [p.name for p in m.paths],
    }
    identity = {name: (file, value) for name, value in fields.items()}
    for name in ("thresholds", "calibration", *(f for f in fields if f.startswith("options."))):
        identity[name] = (file, _placeless(fields[name]))
    for path in m.paths:
        where = f"paths[{path.name}]"
        for name in ("model_sha256", "variant", "kind", "recorded"):
            identity[f"{where}.{name}"] = (file, getattr(path, name))
        key = _key_of(m, path)
        predictions = m.predictions(path)
        for name, value in _flat({k: v for k, v in key.items() if k not in _KEY_ASIDE}, "").items():
            identity[f"{where}.key{name}"] = (predictions, value)
    return identity


def _differences(manifests: Sequence[ShardManifest]) -> list[str]:
    """Each field in which a store differs from the first, or in which the predictions were made by
    other harness code or another harness version than this merge's: which store, which field, both
    values."""
    first, *others = [_identity(m) for m in manifests]
    said = []
    for m, identity in zip(manifests[1:], others, strict=True):
        for name in dict.fromkeys([*first, *identity]):
            mine, theirs = identity.get(name, (m.file, None)), first.get(name, (manifests[0].file, None))
            if mine[1] != theirs[1]:
                said.append(f"{mine[0]}: {name} {_short(mine[1])} vs {theirs[0]}: {_short(theirs[1])}")
    here = {"code": detection_code(), "harness": __version__}
    for identity in (first, *others):
        for name, (source, value) in identity.items():
            field_name = name.rpartition(".key.")[2] if ".key." in name else None
            if field_name in here and value != here[field_name]:
                said.append(f"{source}: {name} {_short(value)} vs this merge's harness: {_short(here[field_name])}")
    return said


def agree(manifests: Sequence[ShardManifest]) -> None:
    """Refuse stores that are not the shards of one job, in one line naming each difference (see
    :func:`_differences`), and a shard missing or given twice."""
    first = manifests[0]
    if any(m.shard.count != first.shard.count for m in manifests):
        counts = ", ".join(f"{m.file}: {m.shard}" for m in manifests)
        raise HarnessError(f"shards of other splits of the images ({counts}); expected every shard of one job")
    said = _differences(manifests)
    if said:
        raise HarnessError(
            f"not the shards of one job: {'; '.join(said)}; expected every shard made by the same harness "
            "(code and version), runtime and settings, of one model, HEF and dataset (run the odd shards again)"
        )
    seen: dict[int, Path] = {}
    for m in manifests:
        if m.shard.index in seen:
            raise HarnessError(
                f"{m.file}: shard {m.shard} given twice (also {seen[m.shard.index]}); expected each shard once"
            )
        seen[m.shard.index] = m.file
    missing = [f"{k}/{first.shard.count}" for k in range(1, first.shard.count + 1) if k not in seen]
    if missing:
        raise HarnessError(
            f"{first.file}: shard {first.shard} of {first.shard.count}; shards {missing} missing, expected all "
            f"{first.shard.count} stores"
        )
