"""YOLOv5/YOLOv7's part of the emulator: the roles of the head maps its emulated HEF outputs, in the order of one
stride's maps (:class:`~harness.backends.emulator.outputs.FamilyEmulator`)."""

from harness.core.head_family import HeadRole


def head_roles() -> tuple[HeadRole, ...]:
    """Per stride one anchored map: every anchor's box, objectness and class channels."""
    return (HeadRole.ANCHORED,)
