"""Adapter to the Hailo Dataflow Compiler's Python API (``hailo_sdk_client``, closed source).

ONNX -> translate (end nodes at the head convs) -> the parsed layer names -> model script (with the
NMS config of a head HailoRT's NMS op decodes; a YOLO26 head's script has no NMS op) written and checked ->
load_model_script -> optimize (letterboxed calibration images) -> compile -> HEF bytes. HEFs are cached
by content under ``.harness-cache/dfc/``; the DFC's log is kept beside the HEF and scanned for known
bad signs. The optimized HAR is kept beside the HEF for the DFC's emulator
(:mod:`harness.backends.dfc.runner`).

``hailo_sdk_client`` is imported here only, and only when a compile or an emulation is asked for.
Its API as Hailo's own code calls it (written against DFC 3.33, the Model Zoo v2.x line for Hailo-8):
``ClientRunner(hw_arch=...)`` / ``ClientRunner(har=...)``, ``InferenceContext``
(hailo_model_zoo: hailo_model_zoo/main_driver.py); ``load_model_script``, ``optimize(calib)``,
``compile()`` -> HEF bytes, ``save_har`` (hailo_model_zoo: hailo_model_zoo/core/main_utils.py);
``translate_onnx_model(path, net_name, start_node_names=..., end_node_names=..., net_input_shapes=...)``
as in the DFC's parsing tutorial;
``get_hn()`` for the parsed graph (hailo_model_zoo: hailo_model_zoo/core/hn_editor/layer_splitter.py).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from harness.backends.dfc.alls import DfcScriptError
from harness.backends.dfc.checks import failures
from harness.backends.dfc.heads import end_nodes_of, onnx_facts
from harness.backends.dfc.layers import LayerTable, ParsedLayer, names_from_parsed, parsed_layers
from harness.backends.dfc.record import CompileRecord, write_record
from harness.backends.dfc.scripts import dfc_alls, write_checked_scripts
from harness.backends.dfc.writing import NmsSettings, ScriptFiles
from harness.core import defaults
from harness.core.checks import CheckResult
from harness.core.confine import check, make_folder
from harness.core.documents import DocumentError, Fields, read_json
from harness.core.environment import distribution_version
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily
from harness.core.settings import SsdConfig
from harness.inputs.calibration import calibration_paths, images_digest
from harness.inputs.export_facts import ExportFacts, file_sha256
from harness.inputs.layer_names import is_layer_name
from harness.inputs.onnx_graph import load_model, reject_quantized
from harness.inputs.preprocess import letterbox, load_image

HW_ARCHS = ("hailo8", "hailo8l", "hailo10h")
DEFAULT_CACHE_ROOT = defaults.CACHE_DIR / "dfc"
_CACHE_FORMAT = "hailo-harness dfc 2"  # 2: a parsed layer names the output layers it feeds

T = TypeVar("T")
_logger = logging.getLogger(__name__)


class DfcNotInstalled(HarnessError):
    """The Dataflow Compiler's Python package is not importable."""


class DfcError(HarnessError):
    """A Dataflow Compiler call failed; the message names the stage, the error and the log."""


def load_sdk() -> ModuleType:
    """``hailo_sdk_client``, or :class:`DfcNotInstalled` saying what to install."""
    try:
        return importlib.import_module("hailo_sdk_client")
    except ImportError as error:
        raise DfcNotInstalled(
            f"the Hailo Dataflow Compiler is not installed (import hailo_sdk_client: {error}): install the DFC "
            "wheel hailo_dataflow_compiler-<version>-py3-none-linux_x86_64.whl from the Hailo Developer Zone into "
            "this environment (it provides hailo_sdk_client), or use --dry-run to write and check the scripts "
            "without it"
        ) from error


def sdk_version(sdk: ModuleType) -> str:
    version = getattr(sdk, "__version__", None)
    if version:
        return str(version)
    return distribution_version("hailo-dataflow-compiler") or "unknown"


@dataclass(frozen=True)
class LogSign:
    pattern: str  # regular expression, case-insensitive, searched in each log line
    meaning: str
    fix: str


# Lines as the DFC logs them: "[warning] Reducing optimization level to 0 (the accuracy won't be optimized
# and compression won't be used) because there's no available GPU" / "... less data than the recommended
# amount (1024)" (community.hailo.ai threads on the optimization level), "[error] BackendAllocatorException:
# Compilation failed: ..." (allocation failures; map::at as in the field report). First match per line.
KNOWN_SIGNS = (
    LogSign(
        r"Reducing optimization level",
        "the DFC lowered the optimization level (the line says why): the quantization is not optimized",
        "run the DFC where it sees a GPU and calibrate with at least 1024 images (--calibration-count)",
    ),
    LogSign(
        r"no available GPU|No GPU|Skipping registering GPU devices",
        "the DFC found no usable GPU",
        "make the GPU visible to the DFC's TensorFlow (CUDA libraries, CUDA_VISIBLE_DEVICES)",
    ),
    LogSign(
        r"map::at",
        "the allocator failed with map::at (seen with nms_postprocess in a larger model)",
        "compile without nms_postprocess and decode the raw heads on the host, or send this log to Hailo",
    ),
    LogSign(
        r"BackendAllocatorException|Agent infeasible|Mapping Failed|Failed to produce compiled graph",
        "the allocator could not map the model onto the device",
        "read the allocator's reason on this line; try performance_param(compiler_optimization_level=...) "
        "or a smaller input",
    ),
    LogSign(
        r"NMSConfigPostprocessException",
        "the DFC rejected the NMS config",
        "run hailo-harness compile --dry-run and fix what its checks report",
    ),
)


@dataclass(frozen=True)
class LogWarning:
    line_number: int
    line: str
    meaning: str
    fix: str

    def __str__(self) -> str:
        return f"line {self.line_number}: {self.line.strip()} -- {self.meaning}. Fix: {self.fix}"


def scan_log(text: str, signs: Sequence[LogSign] = KNOWN_SIGNS) -> tuple[LogWarning, ...]:
    """Each log line showing a known bad sign, with what it means and the fix (the first sign per line)."""
    compiled = [(re.compile(sign.pattern, re.IGNORECASE), sign) for sign in signs]
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        sign = next((s for pattern, s in compiled if pattern.search(line)), None)
        if sign is not None:
            found.append(LogWarning(number, line, sign.meaning, sign.fix))
    return tuple(found)


@contextmanager
def capture_log(path: Path) -> Iterator[None]:
    """Append what is logged meanwhile to ``path``: the root logger's records and those of every logger
    that does not propagate to it (the DFC's loggers keep to themselves)."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s [%(levelname)s] %(name)s: %(message)s"))
    loggers = [logging.getLogger()] + [
        lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger) and not lg.propagate
    ]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        yield
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
        handler.close()


def _stage(stage: str, log: Path, call: Callable[[], T]) -> T:
    """One DFC call with its log captured; a failure is logged, scanned and raised as :class:`DfcError`."""
    with log.open("a", encoding="utf-8") as f:
        f.write(f"== {stage} ==\n")
    try:
        with capture_log(log):
            return call()
    except Exception as error:
        with log.open("a", encoding="utf-8") as f:
            f.write(f"[error] {type(error).__name__}: {error}\n")
        signs = scan_log(log.read_text(encoding="utf-8"))
        known = "; known signs: " + " | ".join(map(str, signs)) if signs else ""
        raise DfcError(
            f"Dataflow Compiler {stage} failed: {type(error).__name__}: {error} (log {log}){known}"
        ) from error


def calibration_array(paths: Sequence[Path], input_hw: tuple[int, int]) -> np.ndarray:
    """float32 ``(N, H, W, 3)`` RGB in 0-255, letterboxed (grey 114) as evaluation prepares frames; the
    model script's normalization divides by 255 inside the HEF."""
    batch = np.empty((len(paths), *input_hw, 3), dtype=np.float32)
    for i, path in enumerate(paths):
        batch[i] = letterbox(load_image(path), input_hw)[0]
    return batch


@dataclass(frozen=True)
class CompileRequest:
    onnx: Path
    calibration: Path  # folder of images; the first calibration_count by name are used
    calibration_count: int = defaults.CALIBRATION_COUNT
    hw_arch: str = "hailo8"
    end_nodes: tuple[str, ...] | None = None
    nms: NmsSettings = field(default_factory=NmsSettings)
    head: HeadFamily | None = None  # the head to compile; None: a YOLOv8 export's, a YOLO26 export's one-to-one
    ssd: SsdConfig | None = None  # an SSD export's anchors and box coding (--ssd-config)

    def __post_init__(self) -> None:
        if self.hw_arch not in HW_ARCHS:
            raise HarnessError(f"compile: hw_arch {self.hw_arch!r}, expected one of {list(HW_ARCHS)}")
        if self.calibration_count < 1:
            raise HarnessError(f"compile: calibration_count {self.calibration_count}, expected >= 1")


@dataclass(frozen=True)
class CompileResult:
    hef: Path
    log: Path  # the DFC's log of the compile that made this HEF
    har: Path  # the optimized (quantized) HAR, for emulation
    scripts: ScriptFiles
    checks: tuple[CheckResult, ...]
    warnings: tuple[LogWarning, ...]
    cached: bool
    key: str
    facts: ExportFacts  # the heads compiled, and which head they are


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _net_name(onnx_path: Path) -> str:
    return re.sub(r"\W", "_", onnx_path.stem)


def _translate(sdk: ModuleType, request: CompileRequest, facts: ExportFacts, log: Path) -> Any:
    def call() -> Any:
        runner = sdk.ClientRunner(hw_arch=request.hw_arch)
        h, w = facts.input_hw
        runner.translate_onnx_model(
            os.fspath(request.onnx),
            _net_name(request.onnx),
            start_node_names=[facts.input_name],
            end_node_names=[head.node for head in end_nodes_of(facts)],
            net_input_shapes={facts.input_name: [1, 3, h, w]},
        )
        return runner

    return _stage("translate", log, call)


def _load_table(file: Path) -> LayerTable | None:
    """The parsed layers an earlier translation stored in ``file``; None where there are none, or where
    the file is refused (logged: the ONNX is translated again and the file rewritten)."""
    if not file.is_file():
        return None
    try:
        stored = Fields(read_json(file, "parsed layer table"), str(file))
        table = LayerTable(tuple(_stored_layer(layer) for layer in stored.objects("layers")), "parsed")
        stored.done()
        return table
    except DocumentError as error:
        _logger.warning("%s: translating the ONNX again", error)
        return None


def _stored_layer(layer: Fields) -> ParsedLayer:
    def names(key: str) -> tuple[str, ...]:
        value = layer.list(key)
        if not all(is_layer_name(v) for v in value):
            layer.fail(key, value, "a list of layer names")
        return tuple(value)

    name, grid, channels = layer.string("name"), layer.list("grid"), layer.integer("channels", lo=1)
    if not is_layer_name(name):
        layer.fail("name", name, "a layer name")
    if len(grid) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in grid):
        layer.fail("grid", grid, "[height, width], positive integers")
    original = layer.list("original_names")
    if not all(isinstance(v, str) for v in original):
        layer.fail("original_names", original, "a list of ONNX node names")
    parsed = ParsedLayer(name, (grid[0], grid[1]), channels, tuple(original), names("output_layers"))
    layer.done()
    return parsed


def _write_atomic(file: Path, data: bytes) -> None:
    check(file)
    make_folder(file.parent)
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, file)


def _parsed_table(
    sdk: ModuleType, request: CompileRequest, facts: ExportFacts, log: Path, file: Path
) -> tuple[LayerTable, Any]:
    """The parsed graph's layers, from ``file`` if an earlier translation stored them (runner None), else
    translated now (the runner returned for the next stages) and stored."""
    table = _load_table(file)
    if table is not None:
        return table, None
    runner = _translate(sdk, request, facts, log)
    table = parsed_layers(runner.get_hn())
    _write_atomic(file, json.dumps({"layers": [asdict(layer) for layer in table.layers]}).encode())
    return table, runner


def _build(runner: Any, alls: str, calibration: np.ndarray, log: Path, entry: Path) -> None:
    """load_model_script -> optimize -> save_har -> compile, stored as ``entry/`` (model.hef,
    optimized.har, compile.log) once all of them succeeded."""
    _stage("load_model_script", log, lambda: runner.load_model_script(alls))
    _stage("optimize", log, lambda: runner.optimize(calibration))
    check(entry)
    make_folder(entry.parent)
    work = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".building-"))
    try:
        _stage("save_har", log, lambda: runner.save_har(os.fspath(work / "optimized.har")))
        (work / "model.hef").write_bytes(_stage("compile", log, runner.compile))
        shutil.copyfile(log, work / "compile.log")
        os.replace(work, entry)
    except OSError:
        if not (entry / "model.hef").is_file():
            raise
    finally:  # left over only if it failed, or another process stored the same HEF meanwhile
        shutil.rmtree(work, ignore_errors=True)


def compile_hef(request: CompileRequest, out_dir: Path, cache_root: Path = DEFAULT_CACHE_ROOT) -> CompileResult:
    """Compile ``request.onnx`` into ``out_dir/<stem>.hef`` with the scripts, the log and the optimized HAR
    beside it; a HEF already compiled from the same ONNX, scripts, calibration images, hw_arch and DFC
    version is taken from the cache without calling the DFC."""
    reject_quantized(load_model(request.onnx), os.fspath(request.onnx))  # the DFC's parser takes a float export
    sdk = load_sdk()
    facts = onnx_facts(request.onnx, request.end_nodes, request.head, request.ssd)
    paths = calibration_paths(request.calibration, request.calibration_count)
    make_folder(out_dir)
    log = out_dir / "compile.log"
    check(log)
    log.write_text("", encoding="utf-8")
    base = {
        "format": _CACHE_FORMAT,
        "dfc": sdk_version(sdk),
        "hw_arch": request.hw_arch,
        "onnx_sha256": facts.sha256,
    }
    # The parsed names follow from the ONNX, the end nodes, hw_arch and the DFC: kept so that a cached
    # HEF is found without translating again.
    table_key = _digest({**base, "end_nodes": [h.node for h in end_nodes_of(facts)]})
    table, runner = _parsed_table(sdk, request, facts, log, cache_root / "parsed" / f"{table_key}.json")
    names = names_from_parsed(facts, table)
    stem = request.onnx.stem
    scripts, checks = write_checked_scripts(out_dir, stem, facts, names, table, request.nms, len(paths))
    if failures(checks):
        raise DfcScriptError(
            f"compile: the scripts in {out_dir} do not match {request.onnx}: "
            + "; ".join(r.message for r in failures(checks))
        )
    calibration_sha256 = images_digest(paths)
    key = _digest(
        {
            **base,
            "alls": scripts.alls.read_text(encoding="utf-8"),
            "nms_json": scripts.nms_json.read_text(encoding="utf-8") if scripts.nms_json else None,
            "calibration_sha256": calibration_sha256,
        }
    )
    entry = cache_root / "hef" / key
    cached = (entry / "model.hef").is_file()
    if not cached:
        if runner is None:
            runner = _translate(sdk, request, facts, log)
        alls = dfc_alls(facts, names, table, scripts, request.nms)
        _build(runner, alls, calibration_array(paths, facts.input_hw), log, entry)
    hef, har = out_dir / f"{stem}.hef", out_dir / f"{stem}_optimized.har"
    for written in (hef, har, log):
        check(written)
    shutil.copyfile(entry / "model.hef", hef)
    shutil.copyfile(entry / "optimized.har", har)
    shutil.copyfile(entry / "compile.log", log)
    made_from = CompileRecord(
        har_sha256=file_sha256(har),
        hef_sha256=file_sha256(hef),
        calibration=os.fspath(request.calibration),
        calibration_count=len(paths),
        calibration_sha256=calibration_sha256,
        dfc=base["dfc"],
        hw_arch=request.hw_arch,
    )
    write_record(har, made_from)  # what the HAR's emulation stages record they were made from
    return CompileResult(hef, log, har, scripts, checks, scan_log(log.read_text(encoding="utf-8")), cached, key, facts)
