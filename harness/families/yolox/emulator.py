"""YOLOX's part of the emulator: the roles of the head maps its emulated HEF outputs, in the order of one
stride's maps (:class:`~harness.backends.emulator.outputs.FamilyEmulator`)."""

from harness.core.head_family import HeadRole


def head_roles() -> tuple[HeadRole, ...]:
    """Per stride a box map, a class map and an objectness map of its own."""
    return (HeadRole.BOX, HeadRole.CLASS, HeadRole.OBJECTNESS)
