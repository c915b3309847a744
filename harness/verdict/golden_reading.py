"""A baseline read strictly (:mod:`harness.core.documents`): every error names the file, the field
and what was expected; its seal held to the signing policy, its history to its chain, and its
weaknesses refused unless blessed knowingly."""

from __future__ import annotations

import os
import re
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from harness.core import signing
from harness.core.documents import DocumentError, Fields, parse_json
from harness.core.errors import HarnessError
from harness.core.settings import EvalSettings
from harness.verdict import history_chain
from harness.verdict.changes import read_made_from
from harness.verdict.golden import (
    BIN_KEYS,
    HISTORY,
    SCHEMA_VERSION,
    BlessedAgreement,
    Golden,
    GoldenError,
    Tolerances,
    is_finite,
    is_share,
    own_blessing,
    parse_created,
)
from harness.verdict.golden_journal import committed_pairs, recover
from harness.verdict.golden_weakness import WEAKNESSES, refusal, weaknesses
from harness.verdict.history import HISTORY_KINDS, Blessing, read_blessing, read_release, read_seal
from harness.verdict.metrics.coco import ClassMetrics, CocoMetrics
from harness.verdict.metrics.distribution import BoxCounts, ScoreDistribution
from harness.verdict.result import Provenance

# 1: before the agreement was blessed (no ``agreement``, no its tolerances); 2: before ``release`` and ``history``;
# 3: before ``seal``, ``history_tip`` and the history entries' ``previous`` and ``seal``; 4: before
# ``provenance.made_from`` and the history entries' ``made_from`` (harness.verdict.changes; optional when read);
# 5: before ``agreement.score_scale`` (a blessed agreement then holds the reference's own scale)
_READ_VERSIONS = (1, 2, 3, 4, 5, SCHEMA_VERSION)
_AGREEMENT_TOLERANCES = ("agreement_drop", "score_drift_rise")  # new in schema 2


def load_golden(file: str | os.PathLike[str]) -> Golden:
    file = Path(file)
    try:
        recover(file.parent)  # a blessing interrupted after its commit is finished first
    except OSError:
        # A folder this reader cannot write (read-only, full): the committed set is read through
        # its journal, as the recovery would have left it.
        pending = dict(committed_pairs(file.parent)).get(Path(os.path.abspath(file)))
        if pending is not None and pending.exists():
            return read_baseline(pending)
    return read_baseline(file)


def read_baseline(file: Path, enforce: bool = True) -> Golden:
    """``file`` read; ``enforce``: its seal held to the signing policy (a blessing reading the baseline
    it replaces does not: it keeps it as it is)."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise GoldenError(f"{file}: no such baseline file") from error
    except (OSError, UnicodeDecodeError) as error:
        raise GoldenError(f"{file}: cannot be read ({error})") from error
    try:
        data = parse_json(text, str(file))
    except DocumentError as error:
        raise GoldenError(str(error)) from None
    return BaselineReader(file, enforce).golden(data)


class BaselineReader:
    """Reads a baseline document strictly (:mod:`harness.core.documents`): every error names the
    file, the field and what was expected; no key is read twice or left unread."""

    def __init__(self, file: Path, enforce: bool = True) -> None:
        """``enforce``: the seal held to the signing policy, an unsealed or edited file's
        ``accepted_weak`` void and its history compared with the baselines it replaced (what any
        reader but a blessing, reading what it replaces, does)."""
        self.file, self.enforce = file, enforce

    def golden(self, data: Any) -> Golden:
        rules = signing.policy()
        try:
            golden = self._golden(Fields(data, str(self.file)), data, rules)
        except DocumentError as error:
            raise GoldenError(str(error)) from None
        if self.enforce and rules.require_signed and golden.history_problems:
            raise GoldenError(f"{self.file}: {golden.history_note}; refused under --require-signed")
        return golden

    def _golden(self, top: Fields, data: Any, rules: signing.SigningPolicy) -> Golden:
        version = top.value("schema_version", _is_count, "an integer >= 0")
        if version not in _READ_VERSIONS:
            top.fail("schema_version", version, f"one of {list(_READ_VERSIONS)} (the schemas this harness reads)")
        sealed = version >= 4
        stored = read_seal(top) if sealed else None
        content = {key: value for key, value in data.items() if key != "seal"}
        seal = signing.check_document(content, stored, rules.key)
        if self.enforce:
            try:
                signing.enforce(f"baseline {self.file}", seal, rules)
            except HarnessError as error:
                raise GoldenError(str(error)) from None
        # Baselines written before label-free runs are labelled.
        labelled = top.boolean("labelled", True)
        metrics = top.object("metrics")
        counts = metrics.object("box_counts")
        total = counts.value("total", _is_count, "an integer >= 0")
        box_counts = BoxCounts(
            mean=float(counts.value("mean", _is_non_negative, "a finite number >= 0")),
            p95=float(counts.value("p95", _is_non_negative, "a finite number >= 0")),
            max=counts.value("max", _is_count, "an integer >= 0"),
            total=total,
        )
        counts.done()
        tolerances = top.object("tolerances")
        # Each tolerance bounds a share or a relative change: above 1 it holds nothing (see weaknesses).
        # A schema 1 baseline has no agreement tolerances (it blessed no agreement): the defaults stand.
        names = [f.name for f in fields(Tolerances) if version > 1 or f.name not in _AGREEMENT_TOLERANCES]
        limits = Tolerances(**{n: float(tolerances.value(n, is_share, "a number from 0 to 1")) for n in names})
        tolerances.done()
        blessed = self.agreement(top.object("agreement"), version) if version > 1 and top.has("agreement") else None
        accepted = tuple(top.value("accepted_weak", _is_codes, f"a list of {sorted(WEAKNESSES)}", []))
        golden = Golden(
            model=top.string("model"),
            path=top.string("path"),
            dataset=top.string("dataset"),
            emulated=top.boolean("emulated"),
            metrics=self.coco(metrics, labelled),
            box_counts=box_counts,
            scores=self.scores(metrics, total),
            tolerances=limits,
            settings=EvalSettings.from_dict(top.raw("settings"), str(self.file)),
            provenance=self.provenance(top.object("provenance")),
            labelled=labelled,
            accepted_weak=accepted,
            agreement=blessed,
        )
        if version >= 3:
            history = tuple(
                read_blessing(e, golden.model, golden.dataset, golden.path, sealed) for e in top.objects("history")
            )
            golden = replace(golden, release=read_release(top), history=history)
        history_tip = (
            top.value("history_tip", _is_digest_or_null, "a sha256 (64 hex digits) or null") if sealed else None
        )
        metrics.done()
        top.done()
        golden = replace(golden, seal=seal)
        if self.enforce:
            kept = self._kept if golden.history else None
            found = history_chain.problems(
                golden.history, history_tip, sealed, golden.provenance.created, rules.key, kept=kept
            )
            golden = replace(golden, history_problems=found)
            # With the release key in hand only a signature vouches that a weakness was blessed knowingly:
            # a digest without one anybody can compute.
            unsigned = rules.key is not None and seal.state is signing.SealState.SEALED
            if (not seal.trusted or unsigned) and accepted:
                said = "sealed without the release key, which is set here" if unsigned else f"an {seal.state.value}"
                void = f"its accepted_weak {list(accepted)} is void: the file is {said} ({seal.detail})"
                golden = replace(golden, accepted_weak=())
                unaccepted = list(weaknesses(golden))
                if unaccepted:
                    raise GoldenError(f"{self.file}: {void}; {refusal(unaccepted)}")
        unaccepted = [w for w in weaknesses(golden) if w.code not in golden.accepted_weak]
        if unaccepted:
            raise GoldenError(f"{self.file}: {refusal(unaccepted)}")
        return golden

    def _kept(self, blessing: Blessing) -> str | None:
        """Why ``blessing``'s values differ from the baseline it stands for, where a blessing kept that
        file (``history/<name>/<created>-<sha>.json``); None where they agree or none is kept."""
        stamp = parse_created(blessing.created).strftime("%Y%m%dT%H%M%SZ")
        folder = self.file.parent / HISTORY / self.file.stem
        copies = sorted(folder.glob(f"{stamp}-{blessing.model_sha256[:12]}*.json"))
        said = []
        for copy in copies:
            try:
                kept = own_blessing(BaselineReader(copy, False).golden(parse_json(copy.read_bytes(), str(copy))))
            except (GoldenError, DocumentError, OSError):
                continue  # not the copy of this blessing (or not one that can be read): nothing to compare
            if kept == blessing:
                return None
            ours, theirs = dict(blessing.values), dict(kept.values)
            moved = [f"{k} {ours.get(k)} (kept {theirs.get(k)})" for k in HISTORY_KINDS if ours.get(k) != theirs.get(k)]
            other = [f for f in _ENTRY_FIELDS if getattr(blessing, f) != getattr(kept, f)]
            said.append(f"{', '.join([*moved, *other])} differ from the replaced baseline kept as {copy.name}")
        return "; ".join(said) or None

    def coco(self, metrics: Fields, labelled: bool = True) -> CocoMetrics:
        per_class = []
        for entry in metrics.objects("per_class"):
            per_class.append(
                ClassMetrics(
                    name=entry.string("name"),
                    n_ground_truth=entry.value("n_ground_truth", _is_count, "an integer >= 0"),
                    n_predictions=entry.value("n_predictions", _is_count, "an integer >= 0"),
                    **{k: _nan(entry.value(k, _is_share_or_null, "a share in [0, 1] or null")) for k in _CLASS_NUMBERS},
                )
            )
            entry.done()
        # A labelled baseline without a measured mAP holds nothing: refused, never a pass. A
        # label-free one has none to hold (its runs have no mAP gates).
        check, kind = (is_share, "a share in [0, 1]") if labelled else (_is_share_or_null, "a share in [0, 1] or null")
        return CocoMetrics(
            map50=_nan(metrics.value("map50", check, kind)),
            map50_95=_nan(metrics.value("map50_95", check, kind)),
            score_threshold=float(metrics.value("score_threshold", is_share, "a share in [0, 1]")),
            n_images=metrics.value("n_images", _is_count, "an integer >= 0"),
            per_class=tuple(per_class),
        )

    def agreement(self, data: Fields, version: int) -> BlessedAgreement:
        blessed = BlessedAgreement(
            matched_share=float(data.value("matched_share", is_share, "a share in [0, 1]")),
            score_drift=float(data.value("score_drift", is_share, "a number from 0 to 1")),
            score_scale=data.number("score_scale", lo=0, nullable=True) if version >= 6 else None,
        )
        data.done()
        return blessed

    def scores(self, metrics: Fields, total: int) -> ScoreDistribution:
        histogram = metrics.object("score_histogram")
        counts = tuple(histogram.value(key, _is_count, "an integer >= 0") for key in BIN_KEYS)
        below = histogram.value("below_zero", _is_count, "an integer >= 0")
        above = histogram.value("above_one", _is_count, "an integer >= 0")
        histogram.done()
        saturation = float(metrics.value("saturation", is_share, "a share in [0, 1]"))
        return ScoreDistribution(total, saturation, counts, below, above)

    def provenance(self, data: Fields) -> Provenance:
        environment = data.object("environment")
        versions = tuple(sorted((str(k), v) for k, v in environment.items()))
        for key, value in versions:
            if not isinstance(value, str):
                environment.fail(key, value, "a version string")
        created = data.string("created")
        try:
            parse_created(created)
        except ValueError:
            data.fail("created", created, "an ISO 8601 time, e.g. 2025-01-02T03:04:05Z")
        provenance = Provenance(
            model_path=data.string("model_path"),
            model_sha256=data.string("model_sha256"),
            dataset=data.string("dataset"),
            dataset_manifest=data.string("dataset_manifest"),
            harness_version=data.string("harness_version"),
            created=created,
            environment=versions,
            made_from=read_made_from(data),
        )
        data.done()
        return provenance


def _nan(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_non_negative(value: Any) -> bool:
    return is_finite(value) and value >= 0


def _is_share_or_null(value: Any) -> bool:
    return value is None or is_share(value)


_ENTRY_FIELDS = ("release", "dataset_manifest", "metric")  # an entry's fields its kept file's name does not fix


def _is_digest_or_null(value: Any) -> bool:
    return value is None or (isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None)


def _is_codes(value: Any) -> bool:
    return isinstance(value, list) and all(v in WEAKNESSES for v in value) and len(set(value)) == len(value)


_CLASS_NUMBERS = ("ap50", "ap50_95", "precision", "recall")
