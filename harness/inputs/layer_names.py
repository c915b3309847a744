"""Layer names of the Dataflow Compiler's parsed graph, as the files the harness reads name them.

The DFC scopes a layer by its network, ``yolov8s/conv41``, and the Model Zoo's NMS configs name it
with or without the scope, ``conv41`` (hailo_model_zoo: hailo_model_zoo/cfg/postprocess_config/
yolov8n_nms_config.json). A name is one or more segments of letters, digits, ``_``, ``-`` and ``.``
joined by ``/``; a segment never starts with ``.`` or ``-`` (no ``..``, no option-like names).
"""

from __future__ import annotations

import re

MAX_LENGTH = 256  # longer than any scoped layer name a translated network gets
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.\-]*)*")


def is_layer_name(text: object) -> bool:
    """Whether ``text`` is a layer name (see the module)."""
    return isinstance(text, str) and len(text) <= MAX_LENGTH and _NAME.fullmatch(text) is not None
