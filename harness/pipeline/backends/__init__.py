"""The registry: one :class:`~harness.pipeline.backends.descriptor.BackendDescriptor` per
:class:`~harness.pipeline.backends.descriptor.Backend`, each in its own module. A new backend is a
module here, a member of ``Backend`` and a line in :data:`BACKENDS`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from harness.core.errors import HarnessError
from harness.core.path_names import PathKind
from harness.pipeline.backends import dfc, emulator, hailort, onnx, replay
from harness.pipeline.backends.descriptor import SPEC_OPTIONS, Backend, BackendDescriptor

if TYPE_CHECKING:
    from harness.pipeline.spec import PathSpec

BACKENDS: Mapping[Backend, BackendDescriptor] = {
    d.backend: d for d in (onnx.DESCRIPTOR, emulator.DESCRIPTOR, hailort.DESCRIPTOR, dfc.DESCRIPTOR, replay.DESCRIPTOR)
}


def describe(backend: Backend) -> BackendDescriptor:
    return BACKENDS[backend]


def listed(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def kind_named(path_name: str) -> PathKind:
    """The kind of the backend whose paths carry ``path_name`` (a path built outside the factory)."""
    for descriptor in BACKENDS.values():
        if path_name in descriptor.names:
            return descriptor.kind
    known = [name for d in BACKENDS.values() for name in d.names]
    raise HarnessError(f"path name {path_name!r}: expected one of {known}")


def refusal(spec: PathSpec) -> str | None:
    """What ``spec``'s backend does not take of the options given, or needs and lacks, in words;
    None where it can run."""
    descriptor, name = describe(spec.backend), spec.backend.value
    needs = dict(descriptor.needs)
    for option in SPEC_OPTIONS:
        given = getattr(spec, option.field) not in (None, (), False)  # False: a flag left off
        if given and option.field not in descriptor.takes:
            owners = [d.backend.value for d in BACKENDS.values() if option.field in d.takes]
            first = owners[0] + (f" (or {listed(owners[1:])})" if len(owners) > 1 else "")
            return option.refusal.format(owners=first, listed=listed(owners), name=name)
        if not given and option.field in needs:
            return needs[option.field]
    return None
