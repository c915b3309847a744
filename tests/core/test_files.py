"""``core.files``: a file is written whole or not at all, keeps its link and its mode, and a refusal
names the file."""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path

import pytest

from harness.core.files import write_atomic, write_sidecar


def _fail(number: int):
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(number, os.strerror(number))

    return refuse


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_file_is_replaced_whole_and_no_temporary_is_left(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    target.write_text("old")
    write_atomic(target, "new ✓")
    write_atomic(tmp_path / "report.bin", b"\x00\xff")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert (tmp_path / "report.bin").read_bytes() == b"\x00\xff"
    assert _names(tmp_path) == ["report.bin", "report.md"]


@pytest.mark.parametrize("call", ["write", "fsync"])
def test_a_full_disk_while_writing_keeps_the_old_file_and_leaves_no_temporary(
    call: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.md"
    target.write_text("old report")
    monkeypatch.setattr(os, call, _fail(errno.ENOSPC))
    with pytest.raises(OSError) as raised:
        write_atomic(target, "new report " * 1000)
    assert raised.value.errno == errno.ENOSPC
    assert raised.value.filename == str(target), "the error names the file the caller gave"
    monkeypatch.undo()
    assert target.read_text() == "old report"
    assert _names(tmp_path) == ["report.md"]


def test_a_new_file_that_cannot_be_written_is_not_made_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "write", _fail(errno.ENOSPC))
    with pytest.raises(OSError, match="No space left on device"):
        write_atomic(tmp_path / "report.json", "{}")
    assert _names(tmp_path) == []


def test_ctrl_c_while_writing_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")

    def interrupt(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and _names(tmp_path) == ["report.html"]


def test_a_read_only_folder_refuses_the_write_naming_the_file_and_keeps_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    target = folder / "report.md"
    target.write_text("old")
    if os.geteuid() == 0:  # chmod does not stop root: the file system refuses as a read-only one would
        real_open = os.open
        monkeypatch.setattr(
            os, "open", lambda p, *a, **k: _fail(errno.EROFS)() if ".tmp" in str(p) else real_open(p, *a, **k)
        )
    else:
        folder.chmod(0o555)
    try:
        with pytest.raises(OSError) as raised:
            write_atomic(target, "new")
    finally:
        folder.chmod(0o755)
    assert raised.value.errno in (errno.EROFS, errno.EACCES)
    assert raised.value.filename == str(target)
    assert target.read_text() == "old" and _names(folder) == ["report.md"]


def test_a_symlink_stays_a_link_and_its_target_gets_the_data(tmp_path: Path) -> None:
    real = tmp_path / "kept" / "report.md"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "report.md"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and link.resolve() == real
    assert real.read_text() == "new"
    assert _names(real.parent) == ["report.md"]


def test_an_existing_file_keeps_its_mode_and_a_new_one_gets_what_the_umask_allows(tmp_path: Path) -> None:
    kept = tmp_path / "kept.md"
    kept.write_text("old")
    kept.chmod(0o640)
    write_atomic(kept, "new")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    umask = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.md", "new")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640  # 0o666 & ~0o027, not mkstemp's 0o600


def test_a_name_of_255_bytes_still_has_room_for_its_temporary(tmp_path: Path) -> None:
    target = tmp_path / ("r" * 252 + ".md")
    write_atomic(target, "whole")
    assert target.read_text() == "whole"


def test_text_with_a_non_utf8_names_bytes_is_written_with_backslash_escapes(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9")
    write_atomic(tmp_path / "report.md", f"Dataset `{name}`")
    assert (tmp_path / "report.md").read_bytes() == b"Dataset `caf\\udce9`"


def test_a_sidecar_that_cannot_be_written_is_logged_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sidecar = tmp_path / "exports" / "abc.json"
    write_sidecar(sidecar, {"old": 1}, "export facts", logging.getLogger("test"))
    monkeypatch.setattr(os, "fsync", _fail(errno.ENOSPC))
    with caplog.at_level(logging.WARNING):
        write_sidecar(sidecar, {"new": 2}, "export facts", logging.getLogger("test"))
    monkeypatch.undo()
    assert "export facts" in caplog.text and "not kept" in caplog.text and "No space left" in caplog.text
    assert sidecar.read_text() == '{"old": 1}'
    assert _names(sidecar.parent) == ["abc.json"]
