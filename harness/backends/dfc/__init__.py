"""Dataflow Compiler backend: the model script and NMS config written and checked from the ONNX
(:mod:`~harness.backends.dfc.scripts`, which asks each head family's part, ``harness/families/<family>/dfc.py``;
no DFC needed), the adapter to the DFC's Python API (:mod:`~harness.backends.dfc.compiler`, which alone
imports ``hailo_sdk_client``, lazily) and its emulator as a runner (:mod:`~harness.backends.dfc.runner`)."""

from harness.backends.dfc.alls import DfcScriptError
from harness.backends.dfc.compiler import (
    DEFAULT_CACHE_ROOT,
    HW_ARCHS,
    CompileRequest,
    CompileResult,
    DfcError,
    DfcNotInstalled,
    LogWarning,
    compile_hef,
    load_sdk,
    scan_log,
)
from harness.backends.dfc.heads import end_nodes_of, onnx_facts, table_from_names
from harness.backends.dfc.layers import (
    LayerTable,
    ParsedLayer,
    names_from_map,
    names_from_parsed,
    parsed_layers,
    placeholder_names,
)
from harness.backends.dfc.runner import HarRunner, check_compiled_thresholds, compiled_nms_thresholds
from harness.backends.dfc.scripts import validate_files, write_checked_scripts
from harness.backends.dfc.writing import NmsSettings, ScriptFiles, ScriptRequest

__all__ = [
    "DEFAULT_CACHE_ROOT",
    "HW_ARCHS",
    "CompileRequest",
    "CompileResult",
    "DfcError",
    "DfcNotInstalled",
    "DfcScriptError",
    "HarRunner",
    "LayerTable",
    "LogWarning",
    "NmsSettings",
    "ParsedLayer",
    "ScriptFiles",
    "ScriptRequest",
    "check_compiled_thresholds",
    "compile_hef",
    "compiled_nms_thresholds",
    "end_nodes_of",
    "load_sdk",
    "names_from_map",
    "names_from_parsed",
    "onnx_facts",
    "parsed_layers",
    "placeholder_names",
    "scan_log",
    "table_from_names",
    "validate_files",
    "write_checked_scripts",
]
