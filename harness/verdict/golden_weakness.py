"""A baseline's weaknesses: gates that can never fail, or measure too little, refused unless
blessed knowingly (:data:`ACCEPT_WEAK_FLAG`), each named by its code and said in words."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.verdict.golden import ROUNDING, UPDATE_FLAG, Golden

# Labelled objects below which a mAP measures too little to hold a model to (one object more or less
# found moves it by 10 % or more).
MIN_OBJECTS = 10
ACCEPT_WEAK_FLAG = "--accept-weak-baseline"


@dataclass(frozen=True)
class Weakness:
    """Why a baseline's gates ``kinds`` hold a run to nothing, or to too little: ``code`` is kept in a
    baseline blessed with :data:`ACCEPT_WEAK_FLAG`, ``text`` says it."""

    code: str
    kinds: tuple[str, ...]
    text: str


WEAKNESSES = (
    "map50_cannot_fail",
    "map50_95_cannot_fail",
    "saturation_cannot_fail",
    "box_count_cannot_fail",
    "no_detections",
    "few_objects",
    "agreement_cannot_fail",
    "score_drift_cannot_fail",
    "few_boxes",
)


def weaknesses(golden: Golden) -> tuple[Weakness, ...]:
    """The gates of ``golden`` that can never fail or measure too little: a mAP drop as large as the
    mAP itself (a mAP of 0 included), a saturation tolerance that covers every share from 0 to 1, a
    box count tolerance that lets a run without a box pass, a baseline run without a detection, a
    box count tolerance narrower than one box of the baseline's (too few boxes to measure a change),
    or fewer than :data:`MIN_OBJECTS` labelled objects.

    Each test is the gate's own comparison, its rounding allowance (:data:`ROUNDING`) included, made
    with the worst result there is (a mAP of 0, no box, every score saturated or none): a baseline
    none of them flags has a result that fails each of its gates."""
    found = []
    t = golden.tolerances
    if golden.labelled:
        for metric, kind, label in (("map50", "map", "mAP@0.5"), ("map50_95", "map50_95", "mAP@0.5:0.95")):
            base, drop = getattr(golden.metrics, metric), getattr(t, f"{metric}_drop")
            if not base - drop - ROUNDING > 0:  # a mAP of 0 passes (a NaN baseline holds nothing either)
                text = (
                    f"{metric}_drop {drop:g} {_at_least(drop, base)} baseline {metric} {base:g}: "
                    f"the {label} gate can never fail"
                )
                found.append(Weakness(f"{metric}_cannot_fail", (kind,), text))
        objects = sum(c.n_ground_truth for c in golden.metrics.per_class)
        if objects < MIN_OBJECTS:
            text = f"{objects} labelled objects, fewer than {MIN_OBJECTS}: too few to measure a mAP"
            found.append(Weakness("few_objects", ("map", "map50_95"), text))
    saturation = golden.scores.saturation
    if t.saturation_abs + ROUNDING >= max(saturation, 1 - saturation):  # a share of 0 and one of 1 both pass
        text = (
            f"saturation_abs {t.saturation_abs:g} around baseline saturation {saturation:g} covers every share "
            "from 0 to 1: the score saturation gate can never fail"
        )
        found.append(Weakness("saturation_cannot_fail", ("score_saturation",), text))
    counts, rel = golden.box_counts, t.box_count_rel
    if rel >= 1 or (counts.total > 0 and counts.mean * (1 - rel) <= ROUNDING):  # a run without a box passes
        text = f"box_count_rel {rel:g} >= 1: a run without a single box passes the box count gate"
        if rel < 1:
            text = (
                f"box_count_rel {rel:g} of baseline mean {counts.mean:g} boxes per image lies within the "
                "baseline's rounding of it: a run without a single box passes the box count gate"
            )
        found.append(Weakness("box_count_cannot_fail", ("box_count",), text))
    elif 0 < rel * counts.total < 1:
        # The gate counts in steps of one box: a tolerance of less than one of the baseline's boxes
        # fails a run that finds one box more or less. A tolerance of 0 asks for the very count, knowingly.
        text = (
            f"{counts.total} boxes in the baseline run: box_count_rel {rel:g} of them is less than one box, so the "
            "box count gate cannot tell a regression from one box more or less; too few boxes to measure a change"
        )
        found.append(Weakness("few_boxes", ("box_count",), text))
    if golden.agreement is not None:
        share, drift = golden.agreement.matched_share, golden.agreement.score_drift
        if t.agreement_drop + ROUNDING >= share:  # a run that matches no box passes
            text = (
                f"agreement_drop {t.agreement_drop:g} {_at_least(t.agreement_drop, share)} blessed matched share "
                f"{share:g}: the path agreement gate passes a run that matches no box"
            )
            found.append(Weakness("agreement_cannot_fail", ("path_agreement",), text))
        if drift + t.score_drift_rise + ROUNDING >= 1:  # a drift of every score by 1 passes
            text = (
                f"blessed score drift {drift:g} + score_drift_rise {t.score_drift_rise:g} >= 1: the path agreement "
                "gate passes any score drift"
            )
            found.append(Weakness("score_drift_cannot_fail", ("path_agreement",), text))
    if golden.box_counts.total == 0:
        text = "the baseline run made no detection: its box count and score gates hold a run to nothing found"
        found.append(Weakness("no_detections", ("box_count", "score_saturation"), text))
    return tuple(found)


def _at_least(tolerance: float, base: float) -> str:
    """How a tolerance that leaves nothing of its baseline compares to it, in words."""
    return ">=" if tolerance >= base else "within the baseline's rounding of"


def refusal(found: Sequence[Weakness]) -> str:
    return (
        "; ".join(w.text for w in found)
        + f"; a baseline that cannot fail is kept only when blessed knowingly with {UPDATE_FLAG} {ACCEPT_WEAK_FLAG}"
        " (the report then says so)"
    )
