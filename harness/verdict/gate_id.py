"""Which gate a result is: its identity as data, known before any run (the plugin collects by it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GateId:
    """Which gate: its ``kind`` (``map``, ``map50_95``, ``score_saturation``, ``box_count``,
    ``path_agreement``, ``stages``), the dataset's name and the path's (None for a gate over every
    path of a run). ``str()`` is the name reports and pytest items show; nothing parses it back."""

    kind: str
    dataset: str
    path: str | None = None

    def __str__(self) -> str:
        where = self.dataset if self.path is None else f"{self.dataset}-{self.path}"
        return f"test_{self.kind}[{where}]"


BASELINE_KINDS = ("map", "map50_95", "score_saturation", "box_count")  # held against a golden baseline
LABEL_FREE_KINDS = ("score_saturation", "box_count")  # the baseline gates images without labels can hold


def baseline_kinds(labelled: bool) -> tuple[str, ...]:
    """The baseline gates a set of images can hold: all of them with labels, the label-free ones without."""
    return BASELINE_KINDS if labelled else LABEL_FREE_KINDS
