"""YOLO26's one-to-one head's model script (:mod:`harness.families.yolo26.dfc`): top-k on the host, no NMS."""

from __future__ import annotations

from pathlib import Path

from harness.backends.dfc.writing import ScriptFiles, ScriptRequest
from harness.families.yolo26.dfc import *  # noqa: F403  (what either head's model script shares)
from harness.families.yolo26.dfc import write_head_scripts

HEAD_WORDS = "YOLO26's one-to-one head (one2one_cv2/one2one_cv3; sigmoid and top-k on the host, no NMS)"
HEAD_OPTION = "one2one"
HEAD_DEFAULT = True
HEAD_FIX = (
    "export the model with end2end=True for the one-to-one head, or give --head one2many to compile this one (NMS "
    "on the host)"
)


def write_scripts(folder: Path, stem: str, request: ScriptRequest) -> ScriptFiles:
    """Write the model script and ``layer_names.json`` (:func:`~harness.families.yolo26.dfc.write_head_scripts`)."""
    return write_head_scripts(folder, stem, request, HEAD_WORDS)
