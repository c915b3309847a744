"""YOLOv10's part of the emulator: the roles of the head maps its emulated HEF outputs, in the order of one
stride's maps (:class:`~harness.backends.emulator.outputs.FamilyEmulator`)."""

from harness.core.head_family import HeadRole


def head_roles() -> tuple[HeadRole, ...]:
    """Per stride a box map (4 x reg_max DFL bins) and a class map."""
    return (HeadRole.BOX, HeadRole.CLASS)
