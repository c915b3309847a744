"""The YOLO26 one-to-one head (exported end to end) found in an export (:mod:`harness.families.yolo26.onnx`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.head_family import HeadFamily
from harness.families.yolo26.onnx import find_head

if TYPE_CHECKING:
    import onnx

    from harness.inputs.onnx_graph import ExportHeads, HeadSearch


def find(model: onnx.ModelProto, search: HeadSearch) -> ExportHeads:
    """The heads of a YOLO26 export carrying its one-to-one head (exported end to end)."""
    return find_head(model, HeadFamily.YOLO26_ONE2ONE)
