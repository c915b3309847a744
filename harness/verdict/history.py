"""A baseline's blessed history: one :class:`Blessing` per baseline it replaced, kept in the baseline
file itself (``history``, schema 3), oldest first, so that a release manager sees each gate's metric
across the releases signed off (the reports' "Blessed history").

Each entry holds what that blessing was (its release name, when, the model's sha256, the dataset's
manifest, the mAP protocol) and the value each of its gates was blessed at, keyed by gate kind. The
history is shown, never gated on: the gates read the baseline's own values only. An entry names the
model, dataset and path it was blessed for; one of another model, dataset or path than its baseline
is refused when read, naming the field (a copy or a merge from another baseline's file). Entries of
another export of the model (its sha256), of other images of the dataset (its manifest) or of
another mAP protocol are the normal history of a baseline and are shown as such.

Since schema 5 an entry also names what it was made from (``made_from``,
:mod:`harness.verdict.changes`): the HEF, the calibration images, the settings, the harness's code, the
HailoRT and Dataflow Compiler versions, the device; an older entry has none and is shown as such.

Since schema 4 the entries form a hash chain (:mod:`harness.verdict.history_chain`): each names the
sha256 of the entry before it (``previous``) and carries a seal of its own (``seal``,
:mod:`harness.core.signing`), so that an entry deleted, duplicated, moved or changed by hand is named.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.core.documents import Fields
from harness.core.settings import MetricProtocol
from harness.verdict.changes import made_from_document, read_made_from
from harness.verdict.gate_id import BASELINE_KINDS

HISTORY_KINDS = (*BASELINE_KINDS, "path_agreement")  # the gates whose blessed value a blessing keeps
_METRICS = frozenset(str(m.value) for m in MetricProtocol)
_SHARES = frozenset(k for k in HISTORY_KINDS if k != "box_count")  # box_count: mean boxes per image, >= 0
_RELEASE = re.compile(r"[\w+-][\w.+-]{0,63}")  # letters and digits of any script, _ . + -
RELEASE_RULE = "a release name of at most 64 letters, digits and _ . + - (not leading '.'), e.g. v1.3"


@dataclass(frozen=True)
class Blessing:
    """One blessing of a baseline: its ``release`` (None: blessed without ``--release``), when
    (``created``, ISO 8601 UTC), of which model, dataset and path, from which export
    (``model_sha256``) and images (``dataset_manifest``) under which mAP protocol (``metric``), and
    ``values``: (gate kind, blessed value) for each gate it held, in :data:`HISTORY_KINDS` order."""

    release: str | None
    created: str
    model: str
    dataset: str
    path: str
    model_sha256: str
    dataset_manifest: str
    metric: str
    values: tuple[tuple[str, float], ...]
    # what it was made from beyond its model and images (harness.verdict.changes.FACTS; schema 5:
    # absent from older entries, and then not written, so that their chain digests stay as they were)
    made_from: tuple[tuple[str, str], ...] = ()
    # the chain (schema 4): the sha256 of the entry before it (None: the first, or written before the
    # chain) and its seal (None: unsealed); kept as read, never part of what the blessing was
    previous: str | None = field(default=None, compare=False)
    seal: Mapping[str, Any] | None = field(default=None, compare=False)

    def value(self, kind: str) -> float | None:
        """The value the gate ``kind`` was blessed at; None where the blessing held no such gate."""
        return dict(self.values).get(kind)


def release_name(text: str) -> str:
    """``--release``'s value: ``text`` where it is a release name (:data:`RELEASE_RULE`)."""
    if not _RELEASE.fullmatch(text):
        raise ValueError(f"expected {RELEASE_RULE}")
    return text


def blessing_document(blessing: Blessing) -> dict[str, Any]:
    """One history entry as the reports show it and as the baseline file keeps it, less its chain
    (the caller rounds the values)."""
    return {
        "release": blessing.release,
        "created": blessing.created,
        "model": blessing.model,
        "dataset": blessing.dataset,
        "path": blessing.path,
        "model_sha256": blessing.model_sha256,
        "dataset_manifest": blessing.dataset_manifest,
        "metric": blessing.metric,
        "values": dict(blessing.values),
        **({"made_from": made_from_document(blessing.made_from)} if blessing.made_from else {}),
    }


def read_release(top: Fields) -> str | None:
    """A baseline's ``release``, read strictly (null: blessed without ``--release``)."""
    return top.value("release", _is_release_or_null, f"{RELEASE_RULE}, or null")


def read_blessing(entry: Fields, model: str, dataset: str, path: str, chained: bool = False) -> Blessing:
    """A history entry of the baseline of ``model``, ``dataset`` and ``path``, read strictly: each
    field of its type, values of known gates in their ranges, no key unknown, none of another
    baseline; ``chained`` (schema 4): with its ``previous`` and ``seal``."""
    release = read_release(entry)
    previous: str | None = None
    seal: Mapping[str, Any] | None = None
    if chained:
        previous = entry.value("previous", _is_digest_or_null, "a sha256 (64 hex digits) or null", None)
        seal = read_seal(entry)
    for key, own in (("model", model), ("dataset", dataset), ("path", path)):
        name = entry.string(key, nonempty=True)
        if name != own:
            entry.fail(key, name, f"{own!r}: this baseline's {key} (an entry of another baseline is not kept)")
    values = entry.object("values")
    known = [kind for kind in HISTORY_KINDS if values.has(kind)]
    found = tuple((kind, float(values.value(kind, _checks(kind), _expected(kind)))) for kind in known)
    values.done()
    if not found:
        entry.fail("values", {}, f"the blessed value of at least one of {list(HISTORY_KINDS)}")
    blessing = Blessing(
        release=release,
        created=entry.value("created", _is_time, "an ISO 8601 time, e.g. 2025-01-02T03:04:05Z"),
        model=model,
        dataset=dataset,
        path=path,
        model_sha256=entry.string("model_sha256", nonempty=True),
        dataset_manifest=entry.string("dataset_manifest", nonempty=True),
        metric=entry.value("metric", lambda v: isinstance(v, str) and v in _METRICS, f"one of {sorted(_METRICS)}"),
        values=found,
        made_from=read_made_from(entry),
        previous=previous,
        seal=seal,
    )
    entry.done()
    return blessing


_DIGEST = re.compile(r"[0-9a-f]{64}")


def _is_digest_or_null(value: Any) -> bool:
    return value is None or (isinstance(value, str) and _DIGEST.fullmatch(value) is not None)


def read_seal(top: Fields) -> dict[str, str | None] | None:
    """A ``seal`` as :func:`harness.core.signing.seal` writes it, read field by field (absent or null:
    none): its sha256, and its HMAC and key id (hex, or null where no key sealed it)."""
    if not top.has("seal") or top.raw("seal") is None:
        top.raw("seal", None)
        return None
    seal = top.object("seal")
    read = {
        "sha256": seal.value("sha256", lambda v: _is_digest_or_null(v) and v is not None, "a sha256 (64 hex digits)"),
        "hmac": seal.value("hmac", _is_digest_or_null, "an HMAC-SHA256 (64 hex digits) or null"),
        "key_id": seal.value("key_id", _is_key_id_or_null, "a key id (12 hex digits) or null"),
    }
    seal.done()
    return read


def _is_key_id_or_null(value: Any) -> bool:
    return value is None or (isinstance(value, str) and re.fullmatch(r"[0-9a-f]{12}", value) is not None)


def _is_release_or_null(value: Any) -> bool:
    return value is None or (isinstance(value, str) and _RELEASE.fullmatch(value) is not None)


def _is_time(value: Any) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return False
    return True


def _checks(kind: str) -> Any:
    if kind in _SHARES:
        return lambda v: _is_finite(v) and 0 <= v <= 1
    return lambda v: _is_finite(v) and v >= 0


def _expected(kind: str) -> str:
    return "a share in [0, 1]" if kind in _SHARES else "a finite number >= 0"


def _is_finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
