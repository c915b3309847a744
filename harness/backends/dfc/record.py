"""What an optimized HAR was made from, kept beside it by the compile that wrote it: a HAR does not
record its calibration images, and the DFC's emulation stages of it are measured, blessed and
compared like any path (:mod:`harness.verdict.changes`).

``<stem>_made_from.json`` beside ``<stem>_optimized.har``: the HAR's and the HEF's sha256 (the two
written by one compile), the calibration images (where, how many, the sha256 of their bytes in
order: :func:`harness.inputs.calibration.images_digest`), the Dataflow Compiler's version and the
hardware architecture. Written whole (:func:`harness.core.files.write_atomic`); read strictly, and
refused where it names another HAR than the one beside it (the HAR replaced since).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.core.documents import Fields, read_json
from harness.core.errors import HarnessError
from harness.core.files import write_atomic
from harness.inputs.export_facts import file_sha256

FORMAT = 1
HAR_SUFFIX = "_optimized.har"  # compile_hef writes <stem>_optimized.har (harness.backends.dfc.compiler)
RECORD_SUFFIX = "_made_from.json"


def _is_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


@dataclass(frozen=True)
class CompileRecord:
    """One compile's HAR and HEF and what they were made from."""

    har_sha256: str
    hef_sha256: str
    calibration: str  # where the images were: the folder or list as given to compile
    calibration_count: int
    calibration_sha256: str
    dfc: str
    hw_arch: str

    @property
    def facts(self) -> tuple[tuple[str, str], ...]:
        """The facts of :data:`harness.verdict.changes.FACTS` a stage of the HAR was made from beyond
        the HAR itself (its path's model): the HEF compiled with it and its calibration images."""
        return (
            ("hef_sha256", self.hef_sha256),
            ("calibration", f"{self.calibration} ({self.calibration_count})"),
            ("calibration_sha256", self.calibration_sha256),
        )


def record_file(har: str | os.PathLike[str]) -> Path | None:
    """Where the record of ``har`` lies (``<stem>_made_from.json``); None for a HAR not named as
    compile names it."""
    har = Path(har)
    if not har.name.endswith(HAR_SUFFIX):
        return None
    return har.with_name(har.name[: -len(HAR_SUFFIX)] + RECORD_SUFFIX)


def write_record(har: Path, record: CompileRecord) -> Path:
    """Keep ``record`` beside ``har``, whole or not at all; the file written."""
    file = record_file(har)
    if file is None:
        raise HarnessError(f"HAR {os.fspath(har)}: expected a name ending {HAR_SUFFIX!r} to keep its record beside it")
    write_atomic(file, json.dumps({"format": FORMAT, **asdict(record)}, indent=1) + "\n")
    return file


def read_record(har: str | os.PathLike[str]) -> CompileRecord | None:
    """The record beside ``har``; None where there is none (a HAR compiled elsewhere or by an older
    harness). A record that is not one, or that names another HAR, is refused naming the field."""
    file = record_file(har)
    if file is None or not file.is_file():
        return None
    source = os.fspath(file)
    f = Fields(read_json(file, "record of what a HAR was made from"), source)
    f.value("format", lambda v: v == FORMAT, f"{FORMAT}")
    record = CompileRecord(
        har_sha256=f.value("har_sha256", _is_digest, "a sha256 (64 hex digits)"),
        hef_sha256=f.value("hef_sha256", _is_digest, "a sha256 (64 hex digits)"),
        calibration=f.string("calibration", nonempty=True),
        calibration_count=f.integer("calibration_count", lo=1),
        calibration_sha256=f.value("calibration_sha256", _is_digest, "a sha256 (64 hex digits)"),
        dfc=f.string("dfc", nonempty=True),
        hw_arch=f.string("hw_arch", nonempty=True),
    )
    f.done()
    found = file_sha256(har)
    if found != record.har_sha256:
        raise HarnessError(
            f"{source}: har_sha256 {record.har_sha256[:12]}..., but {os.fspath(har)} beside it is {found[:12]}...: "
            "expected the record of this HAR (compile it again, which writes both)"
        )
    return record


def har_facts(har: str | os.PathLike[str]) -> tuple[tuple[str, str], ...]:
    """What a stage of ``har`` was made from (:attr:`CompileRecord.facts`), or where no record lies
    beside it, its calibration said to be unknown (a HAR does not record its images)."""
    record = read_record(har)
    if record is None:
        return (("calibration", f"not recorded (no {RECORD_SUFFIX} beside the HAR)"),)
    return record.facts
