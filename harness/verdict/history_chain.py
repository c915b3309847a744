"""The hash chain of a baseline's blessed history (schema 4): each entry names the sha256 of the entry
before it (``previous``) and is sealed (:mod:`harness.core.signing`: its sha256, and an HMAC with the
release key where one is set); the baseline names the sha256 of its last entry (``history_tip``).

A blessing appends one entry, chained to the last and sealed, and keeps every earlier entry as it
was read (a seal is never made again over what a blessing did not write). Entries written before
the chain have neither link nor seal; an entry appended over a baseline whose own seal did not hold
(edited by hand, or written before seals) is linked but left unsealed: the harness does not vouch
for values it read from a file nobody vouched for.

Reading names every entry that is not as the blessings wrote it: changed after it was sealed, a
duplicate, out of its chain's order (moved, or an entry before it deleted), dated before the entry
before it or after the baseline's own blessing (or now), and the last entries deleted. The history
is shown, never gated on; under ``--require-signed`` a history so named is refused.

Pure functions over :class:`~harness.verdict.history.Blessing` values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from harness.core import signing
from harness.verdict.history import Blessing, blessing_document

# How far apart two machines' clocks may be before a date is out of order or "in the future" (a fleet
# of CI runners blessing in turn; NTP keeps them well within it).
CLOCK_SKEW = timedelta(minutes=5)
EDITED = "history edited by hand"


def entry_document(blessing: Blessing) -> dict[str, Any]:
    """What an entry's seal is computed over: the entry as the file keeps it, less its seal."""
    return {**blessing_document(blessing), "previous": blessing.previous}


def digest(blessing: Blessing) -> str:
    """The sha256 the next entry (or the baseline's ``history_tip``) names this entry by."""
    return hashlib.sha256(signing.canonical(entry_document(blessing))).hexdigest()


def tip(history: Sequence[Blessing]) -> str | None:
    """The sha256 of the last entry: what the baseline names as its history's end (None: none)."""
    return digest(history[-1]) if history else None


def appended(history: Sequence[Blessing], new: Blessing, key: bytes | None, sealed: bool) -> tuple[Blessing, ...]:
    """``history`` (kept as read) with ``new`` chained to its last entry, sealed with ``key`` where
    ``sealed`` (the baseline it was read from held its seal), else linked but unsealed."""
    linked = replace(new, previous=tip(history), seal=None)
    if sealed:
        linked = replace(linked, seal=signing.seal_document(entry_document(linked), key))
    return (*history, linked)


def _moment(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def problems(
    history: Sequence[Blessing],
    history_tip: str | None,
    chained: bool,
    newest: str,
    key: bytes | None,
    now: datetime | None = None,
    kept: Callable[[Blessing], str | None] | None = None,
) -> tuple[str, ...]:
    """Each way ``history`` is not as its blessings wrote it, one sentence each naming the entry (1 the
    oldest); none for a history as written. ``history_tip`` and ``chained``: the baseline's tip and
    whether its schema has one; ``newest``: the baseline's own blessing time, which no entry is after;
    ``kept``: where the replaced baseline an entry stands for is kept, why its values differ from the
    entry's (None where they agree or no copy is kept)."""
    now = now or datetime.now(timezone.utc)
    found = []
    digests = [digest(b) for b in history]
    newest_at = _moment(newest)
    for i, blessing in enumerate(history):
        name = f"entry {i + 1} ({blessing.release or 'no release'}, blessed {blessing.created})"
        if blessing.seal is not None:
            result = signing.check_document(entry_document(blessing), blessing.seal, key)
            if result.state in (signing.SealState.UNSIGNED_EDIT, signing.SealState.TAMPERED):
                found.append(f"{name}: {result.detail}")
        twin = next((j for j in range(i) if history[j] == blessing), None)
        if twin is not None:
            found.append(f"{name}: a duplicate of entry {twin + 1}")
        elif blessing.seal is not None or blessing.previous is not None:
            found.extend(f"{name}: {why}" for why in _link(i, blessing.previous, digests))
        created = _moment(blessing.created)
        if i and created < _moment(history[i - 1].created) - CLOCK_SKEW:
            found.append(f"{name}: dated before entry {i} ({history[i - 1].created}): reordered or re-dated")
        if created > min(newest_at, now) + CLOCK_SKEW:
            found.append(f"{name}: dated after the baseline's own blessing ({newest}): future-dated")
        differs = kept(blessing) if kept is not None else None
        if differs is not None:
            found.append(f"{name}: {differs}")
    if newest_at > now + CLOCK_SKEW:
        found.append(f"the baseline's own blessing is dated {newest}, in the future")
    if chained and history_tip != (digests[-1] if digests else None):
        if history_tip in digests:
            last = digests.index(history_tip) + 1
            found.append(f"entries after entry {last} were added after the blessing (it ended the history)")
        elif history_tip is not None:
            found.append("its last entry was deleted or changed (the baseline names an end entry that is not there)")
        else:
            found.append("entries were added after the blessing (the baseline was blessed with no history)")
    return tuple(found)


def _link(i: int, previous: str | None, digests: Sequence[str]) -> tuple[str, ...]:
    """Why entry ``i`` (from 0) is not chained to the one before it; none where it is."""
    expected = digests[i - 1] if i else None
    if previous == expected:
        return ()
    if previous is None:
        return ("chained as the first entry, yet entries precede it (added before it by hand)",)
    if previous in digests[i + 1 :]:
        return (f"chained after entry {digests.index(previous) + 1}, which now follows it: reordered",)
    if previous in digests[: i - 1]:
        after = digests.index(previous) + 1
        return (f"chained after entry {after}, not entry {i}: the entries between were deleted or moved",)
    return ("the entry it was chained after is not there (deleted or changed)",)
