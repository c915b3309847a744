"""Head families as units: every family registered once with a part in every room, and no room outside the
family folders that asks which family it has."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import harness.families as families
from harness.core.head_family import HeadFamily
from harness.families.descriptor import ROOMS

HARNESS = Path(families.__file__).resolve().parents[1]
MEMBERS = {m.name for m in HeadFamily}
VALUES = {m.value for m in HeadFamily}
# Where families may be named: the enum and the family folders (the registry among them).
FAMILY_HOMES = (HARNESS / "core" / "head_family.py", HARNESS / "families")


def _outside_family_homes() -> list[Path]:
    return [
        p for p in sorted(HARNESS.rglob("*.py")) if not any(p == home or home in p.parents for home in FAMILY_HOMES)
    ]


def _members_named(tree: ast.AST) -> set[str]:
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in MEMBERS
        and isinstance(node.value, ast.Name)
        and node.value.id == "HeadFamily"
    }


def _family_value_compares(tree: ast.AST) -> list[int]:
    """Lines comparing something with a family's string value (``kind == "ssd"``, ``x in ("yolov5", ...)``)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            strings = [side] if isinstance(side, ast.Constant) else getattr(side, "elts", [])
            if any(isinstance(s, ast.Constant) and s.value in VALUES for s in strings):
                lines.append(node.lineno)
    return lines


def test_every_head_family_is_registered_once():
    registered = [d.family for d in families.REGISTERED]
    assert sorted(registered) == sorted(HeadFamily)
    assert len(set(registered)) == len(registered)


@pytest.mark.parametrize("room", ROOMS)
@pytest.mark.parametrize("family", list(HeadFamily), ids=lambda f: f.value)
def test_every_family_has_a_part_in_every_room(family: HeadFamily, room: str):
    module = families.part(family, room)
    assert module.__name__ == f"{families.descriptor(family).parts}.{room}"


def test_a_room_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="room 'decoder'; expected one of onnx, decode"):
        families.part(HeadFamily.YOLOV8, "decoder")


def test_no_module_outside_the_family_folders_names_two_families():
    naming = {}
    for path in _outside_family_homes():
        named = _members_named(ast.parse(path.read_text(), str(path)))
        if len(named) >= 2:
            naming[str(path.relative_to(HARNESS))] = sorted(named)
    assert naming == {}


def test_no_module_compares_a_family_by_its_string_value():
    compares = {}
    for path in _outside_family_homes():
        lines = _family_value_compares(ast.parse(path.read_text(), str(path)))
        if lines:
            compares[str(path.relative_to(HARNESS))] = lines
    assert compares == {}
