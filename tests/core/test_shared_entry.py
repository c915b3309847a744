"""Shared-cache entries: records sealed and checked, bad entries kept aside under a name of their own."""

from datetime import datetime, timezone
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harness.core import signing
from harness.core.shared_entry import EntryState, record_seal, seal_record, set_aside, state_of, untrusted

KEY = b"k" * 32
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
OPEN = signing.SigningPolicy(key=None, require_signed=False)
KEYED = signing.SigningPolicy(key=KEY, require_signed=False)
REQUIRED = signing.SigningPolicy(key=KEY, require_signed=True)

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
bodies = st.dictionaries(st.text(min_size=1, max_size=6).filter(lambda k: k != "seal"), values, min_size=1, max_size=5)


@given(bodies, st.sampled_from([None, KEY]))
def test_a_record_as_sealed_is_trusted_and_any_change_to_one_of_its_fields_is_not(
    body: dict, key: bytes | None
) -> None:
    record = seal_record(body, key)
    check = record_seal(record, key)
    assert check.state is (signing.SealState.SIGNED if key else signing.SealState.SEALED)
    assert untrusted(check, KEYED if key else OPEN) is None
    name = sorted(body)[0]
    changed = {**record, name: ["changed", record[name]]}
    assert untrusted(record_seal(changed, key), KEYED if key else OPEN) is not None


def test_an_unsigned_record_is_used_as_sealed_but_not_where_signatures_are_required() -> None:
    record = seal_record({"a": 1}, None)
    check = record_seal(record, KEY)
    assert check.state is signing.SealState.SEALED and state_of(check) is EntryState.SEALED
    assert untrusted(check, KEYED) is None
    assert "signatures are required" in (untrusted(check, REQUIRED) or "")
    assert "signatures are required" in (untrusted(record_seal(seal_record({"a": 1}, KEY), None), REQUIRED) or "x")


def test_a_record_without_a_seal_or_with_a_malformed_one_is_not_trusted() -> None:
    assert "unsealed" in (untrusted(record_seal({"a": 1}, None), OPEN) or "")
    assert "unsealed" in (untrusted(record_seal({"a": 1, "seal": "x"}, None), OPEN) or "")
    assert "tampered" in (untrusted(record_seal(seal_record({"a": 1}, b"o" * 32), KEY), KEYED) or "")


def test_a_bad_entry_is_kept_aside_under_a_name_of_its_own_never_over_another(tmp_path: Path) -> None:
    entry = tmp_path / "m.onnx"
    entry.write_bytes(b"one")
    first = set_aside(entry, NOW)
    assert first == tmp_path / "m.onnx.damaged-20260102T030405Z" and first.read_bytes() == b"one"
    entry.write_bytes(b"two")
    second = set_aside(entry, NOW)
    assert second is not None and second != first and second.read_bytes() == b"two"
    assert first.read_bytes() == b"one" and not entry.exists()
    assert set_aside(entry, NOW) is None  # gone already: another worker set it aside


def test_where_signatures_are_required_and_no_key_is_in_hand_no_entry_is_made_or_used(tmp_path: Path) -> None:
    import pytest

    from harness.core.errors import HarnessError
    from harness.core.shared_entry import signable

    signable(tmp_path / "e", REQUIRED)  # with the key: entries are signed
    signable(tmp_path / "e", OPEN)
    with pytest.raises(HarnessError, match=rf"shared cache entry {tmp_path / 'e'}: .*HARNESS_SIGNING_KEY is not set"):
        signable(tmp_path / "e", signing.SigningPolicy(key=None, require_signed=True))
