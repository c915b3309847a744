"""A blessing: the baselines a run would write (:func:`golden_from_result`), written all or nothing
with the history of those they replace (:func:`bless`)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.core import signing
from harness.core.confine import check, make_folder
from harness.core.files import fsync_folder
from harness.verdict import history_chain
from harness.verdict.diagnosis_evidence import matched_share
from harness.verdict.golden import (
    DEFAULT_TOLERANCES,
    HISTORY,
    BlessedAgreement,
    Golden,
    GoldenError,
    Tolerances,
    dataset_name,
    own_blessing,
    parse_created,
)
from harness.verdict.golden_journal import JOURNAL, locked, recover_locked, remove, write_target
from harness.verdict.golden_reading import BaselineReader, read_baseline
from harness.verdict.golden_weakness import weaknesses
from harness.verdict.golden_writing import baseline_document, changed_summary, created_summary, dump, sealed_document
from harness.verdict.history import Blessing
from harness.verdict.metrics.agreement import agreement
from harness.verdict.result import PathResult


def golden_from_result(
    result: PathResult,
    tolerances: Tolerances = DEFAULT_TOLERANCES,
    accept_weak: bool = False,
    reference: PathResult | None = None,
    release: str | None = None,
) -> Golden:
    """The baseline that ``result`` would write: its metrics, settings and provenance, and its
    agreement with ``reference`` where it is held to one (on the same images, under the same
    settings); ``accept_weak`` (:data:`ACCEPT_WEAK_FLAG`): its weaknesses are blessed knowingly,
    else refused when written; ``release``: the release it signs off (``--release``). Its history is
    the one of the baseline it replaces, added when written (:func:`bless`)."""
    golden = Golden(
        model=Path(result.provenance.model_path).stem,
        path=result.path,
        dataset=dataset_name(result),
        emulated=result.emulated,
        metrics=result.metrics,
        box_counts=result.box_counts,
        scores=result.scores,
        tolerances=tolerances,
        settings=result.settings,
        provenance=result.provenance,
        labelled=result.labelled,
        agreement=blessed_agreement(reference, result),
        release=release,
    )
    return replace(golden, accepted_weak=tuple(w.code for w in weaknesses(golden))) if accept_weak else golden


def blessed_agreement(reference: PathResult | None, result: PathResult) -> BlessedAgreement | None:
    """``result``'s agreement with ``reference`` as a baseline keeps it; None without a reference or
    where the two cannot be compared (other images or settings: the agreement gate fails on that)."""
    if reference is None or reference.image_ids != result.image_ids or reference.settings.differences(result.settings):
        return None
    counts = agreement(reference.predictions, result.predictions)
    scale = counts.score_scale.ratio if counts.score_scale is not None else None
    return BlessedAgreement(matched_share(counts), counts.mean_abs_score_drift, scale)


def _carried(previous: Golden | GoldenError | None, golden: Golden, key: bytes | None) -> tuple[Blessing, ...]:
    """The history ``golden`` is written with over ``previous``: the previous baseline's history as
    read, and itself chained to it (sealed with ``key`` where ``previous`` held its seal,
    :func:`harness.verdict.history_chain.appended`); ``golden``'s own where there is none of the same
    baseline to carry (none yet, unreadable, another model's, dataset's or path's) or where it is
    ``golden`` again (a baseline written back)."""
    if not isinstance(previous, Golden) or (previous.model, previous.dataset, previous.path) != (
        golden.model,
        golden.dataset,
        golden.path,
    ):
        return golden.history
    if own_blessing(previous) == own_blessing(golden):
        return previous.history
    vouched = previous.seal is not None and previous.seal.trusted
    return history_chain.appended(previous.history, own_blessing(previous), key, vouched)


def write_golden(file: str | os.PathLike[str], golden: Golden) -> str:
    """Write one baseline (see :func:`bless`) and say what changed."""
    (summary,) = bless([(Path(file), golden)])
    return summary


def bless(entries: Sequence[tuple[Path, Golden]], token: str | None = None) -> tuple[str, ...]:
    """Write a run's baselines (one model folder) all or nothing, and say what changed in each.

    Every document is checked against the schema first (e.g. a mAP that is NaN, no ground truth, is
    refused naming the file and field). Under the folder's lock, each baseline and each history copy
    of the one it replaces is written to a temporary file beside it and synced; a journal listing
    them is committed (one atomic rename); then each is renamed into place and the journal removed.
    A kill before the journal leaves the old set, a kill after it the new one, completed by the next
    reader or writer (:func:`recover`), and no temporary file survives that. ``token`` (one per
    test run, shared by its pytest-xdist workers): a set already blessed under it is not written
    again."""
    rules = signing.policy()
    if rules.require_signed and rules.key is None:
        raise GoldenError(
            f"--update-golden under --require-signed: {signing.KEY_VARIABLE} is not set, so the baselines would "
            "be unsigned; bless where the release key is"
        )
    documents = [(Path(file), baseline_document(golden)) for file, golden in entries]
    for file, document in documents:
        # what could not be read back is not written
        BaselineReader(file, False).golden(json.loads(json.dumps(document)))
    folders = {file.parent for file, _ in documents}
    if len(folders) != 1:
        raise GoldenError(f"baselines {[str(f) for f, _ in documents]}: one set lies in one model folder")
    (folder,) = folders
    committed = False
    try:
        make_folder(folder)
        with locked(folder):
            recover_locked(folder)
            # Outside the baselines' folder, so that it never shows in their review diff; one per folder.
            marker = (
                Path(tempfile.gettempdir())
                / f"hailo-harness-blessed-{hashlib.sha256(bytes(folder.resolve())).hexdigest()[:16]}"
            )
            if token is not None and marker.is_file() and marker.read_text(encoding="utf-8") == token:
                return tuple(f"{file}: blessed by another worker of this test run" for file, _ in documents)
            steps: list[tuple[Path, Path]] = []
            summaries = []
            try:
                for (file, _), (_, golden) in zip(documents, entries, strict=True):
                    previous_bytes, previous, history = _previous(file)
                    document = sealed_document(
                        replace(golden, history=_carried(previous, golden, rules.key)), rules.key
                    )
                    BaselineReader(file, False).golden(json.loads(json.dumps(document)))  # its history read back too
                    if previous_bytes is not None:
                        assert history is not None
                        make_folder(history.parent)
                        write = functools.partial(_write_bytes, previous_bytes)
                        steps.append((_write_temporary(history, write, True), history))
                        summaries.append(changed_summary(file, previous, document, history))
                    else:
                        summaries.append(created_summary(file, document))
                    steps.append((_write_temporary(file, functools.partial(dump, document)), file))
                journal = [[os.path.abspath(tmp), os.path.abspath(target)] for tmp, target in steps]
                written = _write_temporary(folder / JOURNAL, lambda fh: json.dump(journal, fh))
                os.replace(written, folder / JOURNAL)
                committed = True
                fsync_folder(folder)
            except BaseException:
                if not committed:
                    for tmp, _ in steps:
                        remove(tmp)
                raise
            recover_locked(folder)
            if token is not None:
                os.replace(_write_temporary(marker, lambda fh: fh.write(token)), marker)
    except OSError as error:
        where = error.filename or folder
        if committed:
            raise GoldenError(
                f"baselines in {folder}: the new set is committed, but {where} could not be put in place "
                f"({error.strerror or error}); the next run that reads or blesses them finishes it"
            ) from None
        raise GoldenError(
            f"baselines in {folder} not written: {where}: {error.strerror or error}; the previous baselines are "
            "kept unchanged"
        ) from None
    return tuple(summaries)


def _write_bytes(data: bytes, fh: Any) -> None:
    fh.write(data)


def _write_temporary(target: Path, write: Callable[[Any], object], binary: bool = False) -> Path:
    """A fully written and flushed temporary file beside where ``target`` is written (a symlink's
    target), with ``target``'s mode (a new file's: 0o666 less the umask); removed again if writing
    fails."""
    check(target, "blessing")
    real = write_target(target)
    fd, name = tempfile.mkstemp(dir=real.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        os.fchmod(fd, _mode(real))
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        remove(tmp)
        raise
    return tmp


def _mode(file: Path) -> int:
    """The permission bits a rewrite of ``file`` keeps: its own, or a new file's (0o666 less the umask)."""
    try:
        return file.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _previous(file: Path) -> tuple[bytes | None, Golden | GoldenError | None, Path | None]:
    """The current baseline's bytes, its parsed form (or why it cannot be parsed) and where it goes."""
    if not file.exists():
        return None, None, None
    text = file.read_bytes()
    folder = file.parent / HISTORY / file.stem
    try:
        old: Golden | GoldenError = read_baseline(file, False)  # under the blessing's lock: no recovery here
    except GoldenError as error:
        stamp = datetime.fromtimestamp(file.stat().st_mtime, timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        return text, error, _free(folder, f"{stamp}-unreadable")
    assert isinstance(old, Golden)
    stamp = parse_created(old.provenance.created).strftime("%Y%m%dT%H%M%SZ")
    return text, old, _free(folder, f"{stamp}-{old.provenance.model_sha256[:12]}")


def _free(folder: Path, stem: str) -> Path:
    """``folder/<stem>.json``, or ``<stem>-2.json``, ... when a kept baseline has that name already."""
    candidate, n = folder / f"{stem}.json", 1
    while candidate.exists():
        n += 1
        candidate = folder / f"{stem}-{n}.json"
    return candidate
