"""SSD's part of the emulator: the roles of the head maps its emulated HEF outputs, in the order of one
stride's maps (:class:`~harness.backends.emulator.outputs.FamilyEmulator`)."""

from harness.core.head_family import HeadRole


def head_roles() -> tuple[HeadRole, ...]:
    """Per layer a regression map and a class map of every anchor."""
    return (HeadRole.ANCHOR_BOXES, HeadRole.ANCHOR_CLASSES)
