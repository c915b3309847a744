"""What a measurement was made from, and what changed between two of them, in words.

A blessing (and every run) records what it was made from beside its model's sha256 and dataset
manifest (:class:`~harness.verdict.result.Provenance` ``made_from``): the HEF's sha256, the
calibration images (which, how many, the sha256 of their bytes), the settings, the harness version
and its code digest, the HailoRT and Dataflow Compiler versions where used, the device and its
firmware where one ran it.
Each is a named fact (:data:`FACTS`), a string; a fact not recorded (an older blessing) is absent.

:func:`changes` compares two such sets of facts and says what changed, one phrase per fact, e.g.
"calibration changed from the demo's in-domain frames (64) to the demo's off-domain frames (64)";
:func:`change_sentence` joins them, ending with what stayed ("model unchanged"). Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.documents import Fields

# (key, what a reviewer calls it, shown as a digest): in the order a sentence names them.
FACTS: tuple[tuple[str, str, bool], ...] = (
    ("model_sha256", "model", True),
    ("hef_sha256", "HEF", True),
    ("calibration", "calibration", False),
    ("calibration_sha256", "calibration images", True),
    ("settings", "settings", False),
    ("dataset_manifest", "dataset", True),
    ("metric", "mAP protocol", False),
    ("harness_version", "harness", False),
    ("code_digest", "harness code", True),
    ("hailort", "HailoRT", False),
    ("dfc", "Dataflow Compiler", False),
    ("device", "device", False),
    ("firmware", "device firmware", False),
)
KNOWN = frozenset(key for key, _, _ in FACTS)
_WORDS = {key: (words, digest) for key, words, digest in FACTS}
_SHOWN_DIGEST = 12  # hex digits of a digest in a sentence
# The facts whose change a sentence names even when all else stayed: a model unchanged is the news
# beside a calibration changed (the field's usual cause).
_UNCHANGED_NAMED = ("model_sha256",)
# The calibration images' digest says nothing a reader can act on where the calibration's words
# changed too: it is named alone only where the words stayed (the same folder, other images).
_COVERED = {"calibration_sha256": "calibration"}


def facts(made_from: Mapping[str, str], **more: str | None) -> dict[str, str]:
    """``made_from`` with ``more`` (facts a record keeps elsewhere: the model's sha256, the dataset's
    manifest, the mAP protocol) where given."""
    return {**made_from, **{k: v for k, v in more.items() if v}}


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, ...]:
    """What changed from ``before`` to ``after``, one phrase per fact in :data:`FACTS` order; a fact
    recorded on one side only is "not recorded before" (an older blessing) or left unsaid (no longer
    recorded: a path that does not have it)."""
    found = []
    for key, words, digest in FACTS:
        old, new = before.get(key), after.get(key)
        if new is None or old == new:
            continue
        covered = _COVERED.get(key)
        if covered is not None and before.get(covered) != after.get(covered):
            continue
        if old is None:
            found.append(f"{words} {_shown(new, digest)} (not recorded before)")
        elif key == "settings":
            found.append(f"settings changed: {settings_change(old, new)}")
        else:
            found.append(f"{words} changed from {_shown(old, digest)} to {_shown(new, digest)}")
    return tuple(found)


def unchanged(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, ...]:
    """The facts always named when they stayed (the model), where both sides record them."""
    return tuple(
        _WORDS[key][0] for key in _UNCHANGED_NAMED if key in before and key in after and before[key] == after[key]
    )


def change_words(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """``<what changed>; model unchanged`` ("nothing recorded changed" where nothing did)."""
    said = list(changes(before, after))
    stayed = unchanged(before, after)
    if not said:
        return "nothing recorded changed" + (f" ({', '.join(stayed)} unchanged)" if stayed else "")
    return "; ".join(said) + "".join(f"; {words} unchanged" for words in stayed)


def change_sentence(label: str, before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """``label: <what changed>; model unchanged`` (:func:`change_words`)."""
    return f"{label}: {change_words(before, after)}"


_ITEM = re.compile(r",\s+(?=[a-z_0-9]+ )")


def settings_words(settings: Mapping[str, Any]) -> str:
    """Settings as the reports write them: ``key value`` pairs, comma-separated."""
    return ", ".join(f"{k} {v}" for k, v in settings.items())


def settings_change(old: str, new: str) -> str:
    """The items of :func:`settings_words` that differ: ``key old -> new``."""
    before, after = _items(old), _items(new)
    moved = [
        f"{key} {before.get(key, '(none)')} -> {after.get(key, '(none)')}"
        for key in dict.fromkeys([*before, *after])
        if before.get(key) != after.get(key)
    ]
    return ", ".join(moved) or "reworded"


def _items(text: str) -> dict[str, str]:
    pairs = (item.partition(" ") for item in _ITEM.split(text) if item)
    return {key: value for key, _, value in pairs}


def _shown(value: str, digest: bool) -> str:
    return value[:_SHOWN_DIGEST] if digest else value


def read_made_from(top: Fields, key: str = "made_from") -> tuple[tuple[str, str], ...]:
    """A record's ``made_from`` (absent: none, as written before it was kept), read strictly: an
    object of known facts, each a non-empty string."""
    if not top.has(key):
        return ()
    facts = top.object(key)
    found = []
    for name, _, _ in FACTS:
        if facts.has(name):
            found.append((name, facts.string(name, nonempty=True)))
    facts.done()
    return tuple(found)


def made_from_document(made_from: Sequence[tuple[str, str]]) -> dict[str, str]:
    """``made_from`` as a record keeps it (an object, in :data:`FACTS` order)."""
    return dict(made_from)
