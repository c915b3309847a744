"""Seals: a sha256 of the canonical content and an HMAC with the release key."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core import signing
from harness.core.errors import HarnessError
from harness.core.signing import SealState

KEY = b"k" * 32
documents = st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8) | st.booleans(), max_size=6)


@given(documents)
def test_a_document_sealed_with_the_key_checks_as_signed(document: dict) -> None:
    stored = signing.seal_document(document, KEY)
    assert signing.check_document(document, stored, KEY).state is SealState.SIGNED


@given(documents, st.text(min_size=1, max_size=8))
def test_any_change_to_a_signed_document_is_tampering(document: dict, key: str) -> None:
    stored = signing.seal_document(document, KEY)
    changed = {**document, key: "changed" if document.get(key) != "changed" else "other"}
    assert signing.check_document(changed, stored, KEY).state is SealState.TAMPERED


@given(documents, st.text(min_size=1, max_size=8))
def test_any_change_to_an_unsigned_document_is_an_unsigned_edit(document: dict, key: str) -> None:
    stored = signing.seal_document(document, None)
    assert signing.check_document(document, stored, None).state is SealState.SEALED
    changed = {**document, key: "changed" if document.get(key) != "changed" else "other"}
    assert signing.check_document(changed, stored, None).state is SealState.UNSIGNED_EDIT


def test_a_digest_recomputed_by_hand_does_not_make_a_signature() -> None:
    stored = signing.seal_document({"a": 1}, KEY)
    forged = {**signing.seal_document({"a": 2}, None), "hmac": stored["hmac"], "key_id": stored["key_id"]}
    assert signing.check_document({"a": 2}, forged, KEY).state is SealState.TAMPERED


def test_a_document_signed_with_another_key_is_refused() -> None:
    stored = signing.seal_document({"a": 1}, b"o" * 32)
    result = signing.check_document({"a": 1}, stored, KEY)
    assert result.state is SealState.TAMPERED and "another key" in result.detail
    with pytest.raises(HarnessError, match=r"baseline x\.json: signed with another key"):
        signing.enforce("baseline x.json", result, signing.SigningPolicy(KEY, False))


def test_require_signed_refuses_a_sealed_but_unsigned_document() -> None:
    result = signing.check_document({"a": 1}, signing.seal_document({"a": 1}, None), None)
    signing.enforce("f", result, signing.SigningPolicy(None, False))  # accepted without the option
    with pytest.raises(HarnessError, match=r"f: not signed with the release key .*HARNESS_SIGNING_KEY is not set"):
        signing.enforce("f", result, signing.SigningPolicy(None, True))


def test_a_short_key_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(signing.KEY_VARIABLE, "short")
    with pytest.raises(HarnessError, match="HARNESS_SIGNING_KEY: a key of 5 bytes, expected at least 16"):
        signing.policy()
