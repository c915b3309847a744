"""Writes stay in the folders the user named: a link beneath them that leads out is refused, named,
and left as it is, unless the user asks for links to be followed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core import confine
from harness.core.errors import HarnessError
from harness.core.files import write_atomic
from harness.core.journal import Format, Writer


@pytest.fixture(autouse=True)
def _released() -> Iterator[None]:
    yield
    confine.release()


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("theirs")
    return project, outside


def test_a_file_linked_out_of_the_project_is_not_written_through_and_the_link_is_kept(tmp_path, monkeypatch):
    monkeypatch.delenv(confine.FOLLOW_LINKS_VARIABLE, raising=False)
    project, outside = _project(tmp_path)
    (project / "report.md").symlink_to(outside / "victim.txt")
    confine.confine(project, [], follow=False)
    with pytest.raises(confine.LinkEscape, match=r"report.md: write refused: .*report.md is a link to .*victim.txt"):
        write_atomic(project / "report.md", "mine")
    assert (outside / "victim.txt").read_text() == "theirs"
    assert (project / "report.md").is_symlink()


def test_a_folder_linked_out_of_the_project_refuses_every_write_and_folder_beneath_it(tmp_path, monkeypatch):
    monkeypatch.delenv(confine.FOLLOW_LINKS_VARIABLE, raising=False)
    project, outside = _project(tmp_path)
    (project / "golden" / "model").mkdir(parents=True)
    (project / "golden" / "model" / "history").symlink_to(outside)
    confine.confine(project, [], follow=False)
    with pytest.raises(confine.LinkEscape, match=r"history is a link to"):
        confine.make_folder(project / "golden" / "model" / "history" / "ds--hailo")
    fmt = Format("test journal", b"TESTJRNL", 1, (b"HEAD",), HarnessError, "delete it")
    with pytest.raises(confine.LinkEscape):
        Writer(project / "golden" / "model" / "history" / "x.bin", fmt)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]


def test_a_link_inside_the_project_to_inside_the_project_is_followed(tmp_path, monkeypatch):
    monkeypatch.delenv(confine.FOLLOW_LINKS_VARIABLE, raising=False)
    project, _ = _project(tmp_path)
    (project / "real").mkdir()
    (project / "reports").symlink_to(project / "real")
    confine.confine(project, [], follow=False)
    write_atomic(project / "reports" / "report.md", "mine")
    assert (project / "real" / "report.md").read_text() == "mine"


def test_a_folder_named_explicitly_is_written_even_where_a_link_leads_to_it(tmp_path, monkeypatch):
    monkeypatch.delenv(confine.FOLLOW_LINKS_VARIABLE, raising=False)
    project, outside = _project(tmp_path)
    (project / "out").symlink_to(outside)
    confine.confine(project, [project / "out"], follow=False)  # --report out, resolved at start
    write_atomic(project / "out" / "report.md", "mine")
    write_atomic(outside / "direct.md", "mine")  # beneath no root but a named one
    assert (outside / "report.md").read_text() == "mine"


@pytest.mark.parametrize("how", ["option", "variable"])
def test_follow_links_asked_for_writes_through_the_link(tmp_path, monkeypatch, how):
    monkeypatch.setenv(confine.FOLLOW_LINKS_VARIABLE, "1" if how == "variable" else "0")
    project, outside = _project(tmp_path)
    (project / "report.md").symlink_to(outside / "victim.txt")
    confine.confine(project, [], follow=how == "option")
    write_atomic(project / "report.md", "mine")
    assert (outside / "victim.txt").read_text() == "mine" and (project / "report.md").is_symlink()


def test_nothing_is_confined_until_a_surface_sets_it(tmp_path):
    project, outside = _project(tmp_path)
    (project / "report.md").symlink_to(outside / "victim.txt")
    write_atomic(project / "report.md", "library caller")
    assert (outside / "victim.txt").read_text() == "library caller"


@given(depth=st.integers(0, 3), inside=st.booleans())
def test_a_write_is_refused_exactly_when_a_link_on_its_way_leads_out_of_the_project(tmp_path_factory, depth, inside):
    base = tmp_path_factory.mktemp("p")
    project, outside = _project(base)
    (project / "real").mkdir()
    (project / "link").symlink_to(project / "real" if inside else outside)
    path = project / "link" / Path(*["d"] * depth) / "f.txt"
    policy = confine.Confinement((confine.Root.of(project),))
    assert (policy.escape(path) is None) == inside
