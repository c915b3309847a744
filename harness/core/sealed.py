"""A machine-written document's seal (:mod:`harness.core.signing`) read strictly and checked on
opening: a signature that does not hold, or content changed after it was written, is refused (no
one edits a shard manifest or a recording's header by hand); under ``--require-signed`` so is
anything not signed with the key in hand. What holds is returned, for the run to name."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.core import signing
from harness.core.documents import Fields
from harness.core.errors import HarnessError

_SHA256 = re.compile(r"[0-9a-f]{64}")
_KEY_ID = re.compile(r"[0-9a-f]{12}")


def stored_seal(fields: Fields, key: str = "seal") -> dict[str, str | None]:
    """The seal under ``key``: ``sha256`` (64 hex digits), ``hmac`` (64 hex digits or null) and
    ``key_id`` (12 hex digits or null, null exactly where ``hmac`` is)."""
    seal = fields.object(key)
    digest = seal.value("sha256", lambda v: isinstance(v, str) and _SHA256.fullmatch(v), "64 lowercase hex digits")
    mac = seal.value(
        "hmac", lambda v: v is None or (isinstance(v, str) and _SHA256.fullmatch(v)), "null or 64 lowercase hex digits"
    )
    key_id = seal.value(
        "key_id",
        lambda v: (v is None) == (mac is None) and (v is None or (isinstance(v, str) and _KEY_ID.fullmatch(v))),
        "12 lowercase hex digits beside an hmac, null without one",
    )
    seal.done()
    return {"sha256": digest, "hmac": mac, "key_id": key_id}


def sealed(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with its seal under ``seal``, signed where ``HARNESS_SIGNING_KEY`` is set."""
    return signing.with_seal(document, signing.policy().key)


def checked(what: str, document: Mapping[str, Any], stored: Mapping[str, Any] | None) -> signing.SealCheck:
    """How ``document`` (its seal taken out) stands against ``stored``; refused, naming ``what``,
    where it was changed after it was written or its signature does not hold, and under
    ``--require-signed`` where it is not signed with the key in hand."""
    rules = signing.policy()
    result = signing.check_document(dict(document), stored, rules.key)
    if result.state is signing.SealState.UNSIGNED_EDIT:
        raise HarnessError(f"{what}: {result.detail}; refused (the harness writes it: make it again, do not edit it)")
    signing.enforce(what, result, rules)
    return result
