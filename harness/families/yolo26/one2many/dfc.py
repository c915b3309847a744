"""YOLO26's one-to-many head's model script (:mod:`harness.families.yolo26.dfc`): NMS on the host."""

from __future__ import annotations

from pathlib import Path

from harness.backends.dfc.writing import ScriptFiles, ScriptRequest
from harness.families.yolo26.dfc import *  # noqa: F403  (what either head's model script shares)
from harness.families.yolo26.dfc import write_head_scripts

HEAD_WORDS = "YOLO26's one-to-many head (cv2/cv3; sigmoid and NMS on the host)"
HEAD_OPTION = "one2many"
HEAD_DEFAULT = False
HEAD_FIX = "export the model with end2end=False: an end-to-end export holds the one-to-one head only"


def write_scripts(folder: Path, stem: str, request: ScriptRequest) -> ScriptFiles:
    """Write the model script and ``layer_names.json`` (:func:`~harness.families.yolo26.dfc.write_head_scripts`)."""
    return write_head_scripts(folder, stem, request, HEAD_WORDS)
