"""Seals on the files a release is decided on (baselines and their history, recordings, shared-cache
entries): a sha256 of the file's canonical content, and an HMAC-SHA256 over it with the key the
release CI holds (``HARNESS_SIGNING_KEY``), where one is set.

A seal tells three things apart: content the harness wrote and nobody changed since (``signed`` with
the key, or ``sealed`` by digest alone where no key was set), content changed by hand after it was
written (``unsigned edit``: the digest no longer matches, and a signature would have needed the key),
and content whose signature does not hold (``tampered``: signed, then changed, or signed with another
key). The digest alone stops an honest mistake and a careless edit; only the key stops someone who
recomputes the digest. ``--require-signed`` (``HARNESS_REQUIRE_SIGNED=1``) refuses anything that is
not signed with the key in hand.

Pure functions over bytes and plain data; the only I/O is reading the two environment variables.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.errors import HarnessError

KEY_VARIABLE = "HARNESS_SIGNING_KEY"
REQUIRE_VARIABLE = "HARNESS_REQUIRE_SIGNED"
MIN_KEY_BYTES = 16
SEAL_KEYS = frozenset({"sha256", "hmac", "key_id"})


class SealState(enum.Enum):
    SIGNED = "signed"  # the HMAC holds under the key in hand
    SEALED = "sealed"  # no HMAC (written without a key); the digest holds
    UNSIGNED_EDIT = "unsigned edit"  # the digest does not hold and no HMAC vouches for the content
    TAMPERED = "tampered"  # an HMAC that does not hold under the key in hand
    UNVERIFIED = "unverified"  # signed, but no key in hand to check it; the digest holds
    UNSEALED = "unsealed"  # no seal at all (written before seals, or the seal removed)

    @property
    def trusted(self) -> bool:
        """Whether the content is as the harness wrote it (by digest or signature)."""
        return self in (SealState.SIGNED, SealState.SEALED, SealState.UNVERIFIED)


@dataclass(frozen=True)
class SigningPolicy:
    key: bytes | None
    require_signed: bool

    @property
    def key_id(self) -> str | None:
        """Which key signed: the first 12 hex digits of its sha256 (the key itself is never written)."""
        return hashlib.sha256(self.key).hexdigest()[:12] if self.key else None


@dataclass(frozen=True)
class SealCheck:
    state: SealState
    detail: str  # the words a report or a refusal quotes

    @property
    def trusted(self) -> bool:
        return self.state.trusted


_required_by_option = False


def require_signed(on: bool = True) -> None:
    """``--require-signed`` given on a surface (CLI or plugin): refuse anything unsigned from now on in
    this process; it is passed on to worker processes through ``HARNESS_REQUIRE_SIGNED``."""
    global _required_by_option
    _required_by_option = on
    if on:
        os.environ[REQUIRE_VARIABLE] = "1"


def policy() -> SigningPolicy:
    """The key in ``HARNESS_SIGNING_KEY`` (at least 16 bytes as UTF-8; refused, naming the variable,
    where shorter) and whether unsigned content is refused."""
    raw = os.environ.get(KEY_VARIABLE, "")
    key = raw.encode("utf-8") if raw else None
    if key is not None and len(key) < MIN_KEY_BYTES:
        raise HarnessError(
            f"{KEY_VARIABLE}: a key of {len(key)} bytes, expected at least {MIN_KEY_BYTES} "
            "(e.g. the output of `openssl rand -hex 32`, kept as a CI secret)"
        )
    required = _required_by_option or os.environ.get(REQUIRE_VARIABLE, "") not in ("", "0")
    return SigningPolicy(key=key, require_signed=required)


def canonical(document: Any) -> bytes:
    """The one byte form of a JSON-able document a seal is computed over: sorted keys, no spaces,
    UTF-8, no NaN (a document that holds one is refused by the strict readers anyway)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def seal(content: bytes, key: bytes | None) -> dict[str, str | None]:
    """The seal to store beside ``content``: its sha256, and its HMAC-SHA256 and key id where a key is
    given."""
    digest = hashlib.sha256(content).hexdigest()
    if key is None:
        return {"sha256": digest, "hmac": None, "key_id": None}
    mac = hmac.new(key, content, hashlib.sha256).hexdigest()
    return {"sha256": digest, "hmac": mac, "key_id": hashlib.sha256(key).hexdigest()[:12]}


def seal_document(document: Any, key: bytes | None) -> dict[str, str | None]:
    return seal(canonical(document), key)


def with_seal(document: Mapping[str, Any], key: bytes | None, field: str = "seal") -> dict[str, Any]:
    """``document`` (any seal it held taken out) with its seal under ``field``: what a sealed file holds."""
    body = {k: v for k, v in document.items() if k != field}
    return {**body, field: seal_document(body, key)}


def check(content: bytes, stored: Mapping[str, Any] | None, key: bytes | None) -> SealCheck:
    """How ``content`` stands against the seal stored with it (None: it has none)."""
    if stored is None:
        return SealCheck(SealState.UNSEALED, "no seal (written by hand or before seals)")
    digest_holds = hmac.compare_digest(str(stored.get("sha256", "")), hashlib.sha256(content).hexdigest())
    mac = stored.get("hmac")
    if mac is None:
        if not digest_holds:
            return SealCheck(SealState.UNSIGNED_EDIT, "changed after it was written (its sha256 no longer holds)")
        return SealCheck(SealState.SEALED, "as written, unsigned (no signing key was set)")
    if key is None:
        if not digest_holds:
            return SealCheck(SealState.UNSIGNED_EDIT, "changed after it was signed (its sha256 no longer holds)")
        return SealCheck(SealState.UNVERIFIED, f"signed with key {stored.get('key_id')}; no key here to verify it")
    good = hmac.compare_digest(str(mac), hmac.new(key, content, hashlib.sha256).hexdigest())
    if good and digest_holds:
        return SealCheck(SealState.SIGNED, f"signed with key {stored.get('key_id')}")
    ours = hashlib.sha256(key).hexdigest()[:12]
    if stored.get("key_id") != ours and digest_holds:
        return SealCheck(SealState.TAMPERED, f"signed with another key ({stored.get('key_id')}, not {ours})")
    return SealCheck(SealState.TAMPERED, "its signature does not hold: changed after it was signed")


def check_document(document: Any, stored: Mapping[str, Any] | None, key: bytes | None) -> SealCheck:
    return check(canonical(document), stored, key)


def enforce(what: str, result: SealCheck, rules: SigningPolicy) -> None:
    """Refuse, naming ``what``, what a seal says cannot be used: a signature that does not hold always;
    anything not signed with the key in hand under ``--require-signed``."""
    if result.state is SealState.TAMPERED:
        raise HarnessError(f"{what}: {result.detail}; refused (bless or record it again with the release key)")
    if rules.require_signed and result.state is not SealState.SIGNED:
        why = result.detail if rules.key else f"{result.detail}; and {KEY_VARIABLE} is not set"
        raise HarnessError(f"{what}: not signed with the release key ({why}); refused under --require-signed")
