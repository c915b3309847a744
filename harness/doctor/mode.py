"""What a failure mode is: its record, what its injection changed, and a refusal the harness makes instead of
measuring. The shared modes live in :mod:`harness.doctor.modes`; a head family's own in its ``modes`` part
(``harness/families/<family>/modes.py``), built from these records."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

from harness.backends.emulator import EmulatedHef
from harness.conformance.suite import Decoder
from harness.core.errors import HarnessError
from harness.doctor.bench import Bench
from harness.families.descriptor import FamilyDescriptor
from harness.inputs.dataset import Dataset
from harness.inputs.hef.reader import HefInfo
from harness.pipeline.detect import DetectionPath


@dataclass(frozen=True)
class Injected:
    """What a mode changed: the path to evaluate (and the dataset it sees), or a HEF description
    for the static checks. ``hef``: the emulated HEF the path runs where the mode built another than the
    bench's (calibrated otherwise, compiled otherwise), whose static checks run beside the path's gates. ``gap``:
    why no gate can catch the mode on the bench's images, where the injection found it so (a mode's own ``gap``
    says it of every image)."""

    path: DetectionPath | None = None
    dataset: Dataset | None = None
    description: HefInfo | None = None
    hef: EmulatedHef | None = None
    gap: str = ""


Inject = Callable[[Bench, ExitStack], Injected]


@dataclass(frozen=True)
class Subject:
    """What a mode is offered to: the head family's facts, and whether its Hailo path is a bbox-only HEF
    (HailoRT's NMS op compiled ``bbox_decoding_only``: one buffer of every proposal, the NMS left to the host)."""

    family: FamilyDescriptor
    bbox_only: bool = False

    @property
    def nms_buffer(self) -> bool:
        """The HEF's one output is its NMS op's buffer (by class), not raw heads or a bbox-only buffer."""
        return bool(self.family.nms_op) and not self.bbox_only


Offered = Callable[[Subject], bool]


@dataclass(frozen=True)
class Mode:
    """One failure mode. ``expected``: the diagnosis that must name it, a rule of
    :data:`harness.verdict.diagnosis.RULES`, a static check of :mod:`harness.verdict.hef_checks` or a refusal of
    :data:`harness.doctor.modes.REFUSALS`; ``detail`` a word the top finding's text must contain as well. ``gap``,
    when set, says why no gate can catch the mode (it is still injected and diagnosed). ``every_family``: the users
    of every head family make it; else ``offered``, where given, says to which :class:`Subject` (from its family's
    facts: the HEF has the output the mistake misreads), and a family's ``modes`` part may name it too (a shared
    mode) or hold it (one of its own)."""

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
    offered: Offered | None = None


@dataclass(frozen=True)
class Refusal:
    """An error the harness raises for a mistake it refuses to measure, recognised by its type and a
    phrase of its message."""

    name: str
    error: type[HarnessError]
    phrase: str


def host_decoder(decoder: Decoder) -> Inject:
    """The injection of a host decoder's mistake: ``decoder`` over the bench's raw head outputs (the raw-output
    HEF, or the ONNX cut at its heads where the emulator refuses the model)."""

    def inject(bench: Bench, stack: ExitStack) -> Injected:
        return Injected(bench.raw_path(stack, decoder))

    return inject
