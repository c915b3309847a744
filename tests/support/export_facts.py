"""Export facts written by hand: the model a static check holds a HEF to, without an ONNX file."""

from __future__ import annotations

from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.inputs.export_facts import ExportFacts


def yolo_facts(
    classes: int = 3,
    reg_max: int = 16,
    input_hw: tuple[int, int] = (640, 640),
    family: HeadFamily = HeadFamily.YOLOV8,
    source: str = "m.onnx",
) -> ExportFacts:
    """The facts of a detect export with one box and one class map per stride 8, 16 and 32."""
    grids = [(input_hw[0] // s, input_hw[1] // s) for s in (8, 16, 32)]
    heads = tuple(
        HeadTensor(f"{role.value}{i}", f"conv_{role.value}{i}", role, channels, grid)
        for i, grid in enumerate(grids)
        for role, channels in ((HeadRole.BOX, 4 * reg_max), (HeadRole.CLASS, classes))
    )
    names = tuple(f"class{i}" for i in range(classes))
    return ExportFacts("0" * 64, "images", input_hw, names, False, family, heads, source=source)


def yolov5_facts(
    classes: int = 3,
    anchors: tuple[tuple[tuple[float, float], ...], ...] = (
        ((10, 13), (16, 30), (33, 23)),
        ((30, 61), (62, 45), (59, 119)),
        ((116, 90), (156, 198), (373, 326)),
    ),
    input_hw: tuple[int, int] = (640, 640),
    source: str = "v5.onnx",
) -> ExportFacts:
    """The facts of a YOLOv5 export: one anchored map per stride 8, 16 and 32, ``anchors`` per stride."""
    heads = tuple(
        HeadTensor(
            f"anchored{i}",
            f"/model.24/m.{i}/Conv",
            HeadRole.ANCHORED,
            len(group) * (5 + classes),
            (input_hw[0] // s, input_hw[1] // s),
            tuple((float(w), float(h)) for w, h in group),
        )
        for i, (s, group) in enumerate(zip((8, 16, 32), anchors, strict=True))
    )
    names = tuple(f"class{i}" for i in range(classes))
    return ExportFacts("0" * 64, "images", input_hw, names, False, HeadFamily.YOLOV5, heads, source=source)


def yolox_facts(classes: int = 3, input_hw: tuple[int, int] = (640, 640), source: str = "x.onnx") -> ExportFacts:
    """The facts of a YOLOX export: per stride 8, 16 and 32 a box map of 4, a class map of ``classes`` and
    an objectness map of 1."""
    roles = ((HeadRole.BOX, 4), (HeadRole.CLASS, classes), (HeadRole.OBJECTNESS, 1))
    heads = tuple(
        HeadTensor(f"{role.value}{i}", f"conv_{role.value}{i}", role, channels, (input_hw[0] // s, input_hw[1] // s))
        for i, s in enumerate((8, 16, 32))
        for role, channels in roles
    )
    names = tuple(f"class{i}" for i in range(classes))
    return ExportFacts("0" * 64, "images", input_hw, names, False, HeadFamily.YOLOX, heads, source=source)
