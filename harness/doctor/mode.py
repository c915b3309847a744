"""What a failure mode is: its record, what its injection changed, and a refusal the harness makes instead of
measuring. The shared modes live in :mod:`harness.doctor.modes`; a head family's own in its ``modes`` part
(``harness/families/<family>/modes.py``), built from these records."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

from harness.core.errors import HarnessError
from harness.doctor.bench import Bench
from harness.inputs.dataset import Dataset
from harness.inputs.hef.reader import HefInfo
from harness.pipeline.detect import DetectionPath


@dataclass(frozen=True)
class Injected:
    """What a mode changed: the path to evaluate (and the dataset it sees), or a HEF description
    for the static checks."""

    path: DetectionPath | None = None
    dataset: Dataset | None = None
    description: HefInfo | None = None


Inject = Callable[[Bench, ExitStack], Injected]


@dataclass(frozen=True)
class Mode:
    """One failure mode. ``expected``: the diagnosis that must name it, a rule of
    :data:`harness.verdict.diagnosis.RULES`, a static check of :mod:`harness.verdict.hef_checks` or a refusal of
    :data:`harness.doctor.modes.REFUSALS`; ``detail`` a word the top finding's text must contain as well. ``gap``,
    when set, says why no gate can catch the mode (it is still injected and diagnosed). ``every_family``: the users
    of every head family make it; else the families whose ``modes`` part offers it (a shared mode it names, or
    one of its own)."""

    name: str
    mistake: str
    injection: str
    expected: str
    inject: Inject
    needs_emulator: bool = False
    needs_labels: bool = False  # the mistake lives in the dataset's class names
    detail: str = ""
    gap: str = ""
    every_family: bool = False


@dataclass(frozen=True)
class Refusal:
    """An error the harness raises for a mistake it refuses to measure, recognised by its type and a
    phrase of its message."""

    name: str
    error: type[HarnessError]
    phrase: str
