"""A machine-written document's seal, read strictly and checked on opening."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core import signing
from harness.core.documents import DocumentError, Fields
from harness.core.errors import HarnessError
from harness.core.sealed import checked, sealed, stored_seal

DOCUMENT = {"format": 2, "shard": "1/2", "settings": {"score_threshold": 0.25, "input_hw": [256, 256]}}


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(signing.KEY_VARIABLE, raising=False)
    monkeypatch.delenv(signing.REQUIRE_VARIABLE, raising=False)


def _split(document: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    seal = stored_seal(Fields(document, "doc.json"))
    return {k: v for k, v in document.items() if k != "seal"}, seal


def test_a_document_sealed_without_a_key_reads_as_sealed_and_with_one_as_signed(monkeypatch):
    assert checked("doc.json", *_split(sealed(DOCUMENT))).state is signing.SealState.SEALED
    monkeypatch.setenv(signing.KEY_VARIABLE, "s" * 32)
    assert checked("doc.json", *_split(sealed(DOCUMENT))).state is signing.SealState.SIGNED
    assert checked("doc.json", DOCUMENT, None).state is signing.SealState.UNSEALED


@given(st.sampled_from(["format", "shard"]), st.integers(min_value=3, max_value=10**6))
def test_any_change_to_a_sealed_document_is_refused_as_an_edit_naming_the_document(key, value):
    document, seal = _split(sealed(DOCUMENT))
    with pytest.raises(HarnessError, match=r"^doc.json: changed after it was written .*do not edit it\)$"):
        checked("doc.json", {**document, key: value}, seal)


def test_a_signature_that_does_not_hold_is_refused_and_unsigned_content_under_require_signed(monkeypatch):
    monkeypatch.setenv(signing.KEY_VARIABLE, "s" * 32)
    document, seal = _split(sealed(DOCUMENT))
    monkeypatch.setenv(signing.KEY_VARIABLE, "t" * 32)
    with pytest.raises(HarnessError, match=r"^doc.json: signed with another key"):
        checked("doc.json", document, seal)
    monkeypatch.delenv(signing.KEY_VARIABLE)
    monkeypatch.setenv(signing.REQUIRE_VARIABLE, "1")
    for stored in (seal, None):
        with pytest.raises(HarnessError, match=r"^doc.json: not signed with the release key .*--require-signed$"):
            checked("doc.json", document, stored)


@pytest.mark.parametrize(
    ("seal", "words"),
    [
        ({"sha256": "AB" * 32, "hmac": None, "key_id": None}, "seal.sha256"),
        ({"sha256": "ab" * 32, "hmac": "cd" * 32, "key_id": None}, "seal.key_id"),
        ({"sha256": "ab" * 32, "hmac": None, "key_id": "0" * 12}, "seal.key_id"),
        ({"sha256": "ab" * 32, "hmac": None, "key_id": None, "by": "me"}, "unknown keys"),
        ("ab" * 32, "seal"),
    ],
)
def test_a_malformed_seal_is_refused_naming_its_field(seal, words):
    with pytest.raises(DocumentError, match=words):
        stored_seal(Fields({**DOCUMENT, "seal": seal}, "doc.json"))
