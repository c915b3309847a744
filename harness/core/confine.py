"""Where the harness may write: inside the folders the user named, never out of them through a link
found beneath them.

A project's files can be changed by whoever can change the project (in CI, a pull request): a
``report.md`` committed as a link to a file outside, a ``golden/<model>/history`` link, a
``reports/latest`` link. Each surface (the command line, the pytest plugin) sets the
:class:`Confinement` once (:func:`confine`): its roots are the project (the working directory, or
pytest's rootdir) and each folder named explicitly (``--report``, ``--golden``, ``--cache``, the
folder of ``--record``, the shared cache), each resolved when the run starts. Every writer asks
:func:`check` before it writes, makes a folder or replaces a file: a path beneath a root whose
resolved location lies in no root is refused with one line naming the link, unless the user asked
for links to be followed (``--follow-links``, or ``HARNESS_FOLLOW_LINKS=1``; CI should leave both
off). A link inside a root that points inside a root is followed as ever; a path beneath no root (a
folder named outside the project) is the user's to name. The link itself is never changed.

Nothing is confined until a surface sets a confinement (the library used from Python writes where
it is told).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import HarnessError

FOLLOW_LINKS_VARIABLE = "HARNESS_FOLLOW_LINKS"


class LinkEscape(HarnessError):
    """A write that a link beneath a folder the user named would lead out of every such folder."""


@dataclass(frozen=True)
class Root:
    """A folder the user named: as written (made absolute) and resolved when the run started."""

    named: Path
    real: Path

    @classmethod
    def of(cls, folder: str | os.PathLike[str]) -> Root:
        named = Path(os.path.abspath(folder))
        return cls(named, Path(os.path.realpath(named)))


@dataclass(frozen=True)
class Confinement:
    """The roots writes stay in, and whether links out of them are followed (the user asked)."""

    roots: tuple[Root, ...]
    follow_links: bool = False

    def escape(self, path: str | os.PathLike[str]) -> str | None:
        """Why a write to ``path`` would leave the roots through a link beneath one; None where it
        would not (or where links are followed)."""
        if self.follow_links:
            return None
        named = Path(os.path.abspath(path))
        real = Path(os.path.realpath(named))
        if any(_within(real, root.real) for root in self.roots):
            return None
        beneath = [root for root in self.roots if _within(named, root.named) or _within(named, root.real)]
        if not beneath:
            return None
        root = beneath[0]
        link = _leading_link(named, root.named if _within(named, root.named) else root.real, self.roots)
        if link is None:
            return f"it resolves to {real}, outside {root.named}"
        return f"{link} is a link to {os.readlink(link)}, which leads the write out of {root.named} to {real}"


_policy: Confinement | None = None


def follow_links_asked(flag: bool) -> bool:
    """Whether links out of the project are followed: the option, else ``HARNESS_FOLLOW_LINKS=1``."""
    return bool(flag) or os.environ.get(FOLLOW_LINKS_VARIABLE, "").strip().lower() in ("1", "true", "yes")


def confine(project: str | os.PathLike[str], named: Iterable[str | os.PathLike[str] | None], follow: bool) -> None:
    """Set the run's confinement: the ``project`` folder, each folder in ``named`` (None: not given)
    and the shared cache where ``HARNESS_SHARED_CACHE`` names one, resolved now."""
    folders = [project, *(f for f in named if f is not None)]
    shared = os.environ.get("HARNESS_SHARED_CACHE")
    if shared:
        folders.append(shared)
    global _policy
    _policy = Confinement(tuple(Root.of(f) for f in folders), follow_links_asked(follow))


def release() -> None:
    """No confinement (what a library caller gets)."""
    global _policy
    _policy = None


def current() -> Confinement | None:
    return _policy


def check(path: str | os.PathLike[str], what: str = "write") -> None:
    """Refuse (:class:`LinkEscape`) a write to ``path`` that a link beneath a root would lead out of
    every root (see the module)."""
    if _policy is None:
        return
    why = _policy.escape(path)
    if why is not None:
        raise LinkEscape(
            f"{os.fspath(path)}: {what} refused: {why}; the link is left as it is (give --follow-links, or set "
            f"{FOLLOW_LINKS_VARIABLE}=1, to write through it; CI should not)"
        )


def make_folder(folder: str | os.PathLike[str]) -> None:
    """``mkdir -p folder``, checked first (see :func:`check`)."""
    check(folder, "making the folder")
    Path(folder).mkdir(parents=True, exist_ok=True)


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _leading_link(path: Path, root: Path, roots: tuple[Root, ...]) -> Path | None:
    """The first component of ``path`` below ``root`` that is a symbolic link leading out of every
    root, else the last link on the way (None: there is none)."""
    current, last = root, None
    for part in path.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            last = current
            real = Path(os.path.realpath(current))
            if not any(_within(real, r.real) for r in roots):
                return current
    return last
