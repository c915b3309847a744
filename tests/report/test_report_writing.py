"""``report.write_reports``: every report file is written whole or not at all, whatever the names."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from harness.report import write_reports

from support import synthetic_results as sr


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> sr.ReportCase:
    return sr.report_case(tmp_path_factory.mktemp("dataset"))


def _write(case: sr.ReportCase, out: Path) -> dict[str, Path]:
    return write_reports(out, [case.onnx, case.hailo], case.gates, case.dataset)


def test_a_full_disk_while_writing_reports_keeps_the_old_report(
    case: sr.ReportCase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _write(case, tmp_path)
    old = {kind: file.read_bytes() for kind, file in files.items()}

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as raised:
        _write(case, tmp_path)
    monkeypatch.undo()
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(files["markdown"])
    assert {kind: file.read_bytes() for kind, file in files.items()} == old, "no report torn or emptied"
    written = ["report-summary.md", "report.html", "report.json", "report.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == written


def test_a_report_that_is_a_symlink_stays_one(case: sr.ReportCase, tmp_path: Path) -> None:
    kept = tmp_path / "kept.md"
    kept.write_text("old")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.md").symlink_to(kept)
    files = _write(case, tmp_path / "out")
    assert files["markdown"].is_symlink() and kept.read_text().startswith("# Accuracy report")


def test_a_dataset_folder_whose_name_is_not_utf8_is_reported_in_every_format(tmp_path: Path) -> None:
    folder = tmp_path / os.fsdecode(b"caf\xe9")  # the bytes of a Latin-1 name, as os.fsdecode gives them
    case = sr.report_case(folder)
    files = _write(case, tmp_path / "report")
    assert "caf\\udce9" in files["markdown"].read_text(encoding="utf-8")
    assert "caf\\udce9" in files["html"].read_text(encoding="utf-8")
    assert "caf\\udce9" in files["json"].read_text(encoding="ascii")


def test_writing_the_reports_is_one_stage_of_the_runs_clock(case: sr.ReportCase, tmp_path: Path) -> None:
    from harness.core.stage_clock import Stage, listening

    with listening() as clock:
        _write(case, tmp_path)
    assert clock.calls == {Stage.REPORTS.value: 1} and clock.seconds[Stage.REPORTS.value] > 0
