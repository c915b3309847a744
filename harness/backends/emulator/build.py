"""Build an emulated HEF from a float ONNX and calibration images; quantized models are cached by content.

The cache key is the sha256 of the ONNX bytes, the calibration images' bytes (in use order), the
settings that change quantization and the onnxruntime version; the quantized model is stored as
``<cache dir>/<key>.onnx`` and reused while all of those stay the same, what a run needs of it
beside it as ``<key>.json`` (:mod:`harness.backends.emulator.facts`): a rerun loads no model. That
file is the entry's sealed record too: a model that does not hash to it, or a record that does not
name what this run asks for, is kept aside and quantized anew (:mod:`harness.core.shared_entry`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.backends.base import InputSpec
from harness.backends.emulator.facts import BuiltFrom, HefFacts, hef_facts_of, read_entry, record_json, write_record
from harness.backends.emulator.options import EmulatorOptions
from harness.backends.emulator.outputs import bbox_only_output_spec, host_spec, nms_spec
from harness.core import defaults
from harness.core.confine import check, make_folder
from harness.core.environment import code_digest, environment
from harness.core.errors import GraphError, HarnessError
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.shared_entry import EntryState, EntryUse, entry_lock, refused, set_aside, signable, state_of
from harness.core.signing import policy
from harness.core.specs import OutputSpec, QuantInfo
from harness.decode.heads import Anchors, head_layout
from harness.decode.layout import HeadLayout
from harness.families import REGISTERED, descriptor
from harness.inputs.calibration import CalibrationSource, calibration_paths, images_digest

if TYPE_CHECKING:  # onnx and onnxruntime are imported where a model is read or quantized (onnx alone: 0.5 s)
    import onnx
    from onnxruntime.quantization import CalibrationDataReader

    from harness.backends.emulator.graph import HefGraph

DEFAULT_CACHE_DIR = defaults.CACHE_DIR / "emulator"
_CACHE_FORMAT = "hailo-harness emulated HEF 4"  # 4: each conv layer quantized at its output alone

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmulatedHef:
    """A quantized model standing in for a compiled HEF (emulation, not a Hailo device).

    ``heads``: the raw head outputs as UINT8 device values with their quant infos, in head order
    (stride ascending, box before class), of the export's head ``family``; ``anchors``: per stride,
    ascending, its anchors' ``(width, height)`` in input pixels (anchor-based families; an SSD head's per
    layer as fractions of the input, its ``options.ssd``'s; empty otherwise); ``output_specs`` what a
    runner hands back under ``options`` (with NMS, an SSD head's is HailoRT's SSD op with ``options.ssd``).
    ``content_hash`` identifies the emulated HEF: model, calibration images and every option; ``entry``
    the cache entry its quantized model is (what the report names; not part of its identity).
    """

    source: Path
    quantized_model: Path
    input: InputSpec
    heads: tuple[OutputSpec, ...]
    family: HeadFamily
    classes: int
    anchors: Anchors
    options: EmulatorOptions
    calibration_images: tuple[Path, ...]
    content_hash: str
    entry: EntryUse | None = field(default=None, compare=False)

    @property
    def input_hw(self) -> tuple[int, int]:
        return self.input.hw

    @property
    def layout(self) -> HeadLayout:
        """What each raw head is, by stride."""
        return head_layout(self.family, {h.name: h for h in self.heads}, self.input_hw, self.anchors)

    @property
    def score_ceiling(self) -> float:
        """The highest score any class output can represent: its range's top (through the sigmoid
        when that is not inside); in an anchored head, where a score is objectness x class read from
        one map, that top squared; with objectness maps of their own (YOLOX), times their top. Far below
        1, every score is capped there."""
        layout = self.layout
        role = HeadRole.ANCHOR_CLASSES if layout.levels[0].per_anchor else HeadRole.CLASS
        maps = layout.of_role(HeadRole.ANCHORED if layout.anchored else role)
        top = max(o.host_spec.quant[0].limvals_max for o in maps)
        if not self.options.sigmoid_inside:
            top = float(1 / (1 + np.exp(-top)))
        objectness = layout.of_role(HeadRole.OBJECTNESS)
        if layout.anchored:
            return top * top
        if objectness:  # YOLOX: class x objectness, each map's own top
            ceiling = max(o.host_spec.quant[0].limvals_max for o in objectness)
            if not self.options.sigmoid_inside:
                ceiling = float(1 / (1 + np.exp(-ceiling)))
            return top * ceiling
        return top

    @property
    def quant(self) -> dict[str, QuantInfo]:
        """Per raw head output its (per-tensor) quant info."""
        return {h.name: h.quant[0] for h in self.heads}

    @property
    def output_specs(self) -> dict[str, OutputSpec]:
        if self.options.nms:
            classes = self.classes
            if self.options.ssd is not None and self.options.ssd.background_class is not None:
                # hailort: libhailort/src/net_flow/ops/nms_post_process.cpp (``get_output_vstream_info``, ``nms_info``:
                # one class fewer where the background is removed)
                classes -= 1
            spec = nms_spec(classes, self.options.max_proposals_per_class, self.family)
            return {spec.name: spec}
        if self.options.bbox_only:
            spec = bbox_only_output_spec(self.layout, self.classes, self.family)
            return {spec.name: spec}
        return {h.name: host_spec(h, self.options.output_format) for h in self.heads}

    @property
    def label(self) -> str:
        o = self.options
        inside = "sigmoid inside" if o.sigmoid_inside else "class logits"
        nms = ", HailoRT NMS" if o.nms else ", HailoRT bbox-only op (NMS on the host)" if o.bbox_only else ""
        family = f", {self.family.value} heads" if self.family is not HeadFamily.YOLOV8 else ""
        if self.options.ssd is not None:
            family += f" (SSD config {self.options.ssd.digest[:12]})"
        return (
            f"emulated HEF of {self.source.name} [{self.content_hash[:12]}] (onnxruntime uint8/int8"
            f"{', 16-bit outputs' if o.output_bits == 16 else ''}, "
            f"{o.calibration_method.value} calibration on {len(self.calibration_images)} images, {inside}{nms}{family})"
        )


def _inputs(onnx_sha256: str, images: str, count: int, options: EmulatorOptions) -> dict[str, object]:
    """What an emulated HEF's cache key stands for, as its record names it."""
    return {
        "cache_format": _CACHE_FORMAT,
        "onnxruntime": dict(environment())["onnxruntime"],
        "onnx_sha256": onnx_sha256,
        "calibration": {"sha256": images, "count": count},
        "settings": options.quantization_settings(),
    }


def _cache_key(onnx_sha256: str, images: str, options: EmulatorOptions) -> str:
    digest = hashlib.sha256()
    for part in (
        _CACHE_FORMAT,
        dict(environment())["onnxruntime"],
        onnx_sha256,
        images,
        json.dumps(options.quantization_settings(), sort_keys=True),
    ):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


QUANTIZER = (
    "backends/emulator/build.py",
    "backends/emulator/fusion.py",
    "backends/emulator/graph.py",
    "backends/emulator/quantize.py",
)


def _content_hash(key: str, options: EmulatorOptions) -> str:
    everything = {k: v.value if hasattr(v, "value") else v for k, v in asdict(options).items()}
    return hashlib.sha256(f"{key}\0{json.dumps(everything, sort_keys=True)}".encode()).hexdigest()


def _load_cached(path: Path) -> HefFacts | None:
    """The facts of the quantized model cached as ``path`` (its sha256 held to its record already); None
    where there is none, or where it is unreadable or not described as this emulator describes one (a
    model an older emulator cached: its heads' recorded roles, family or anchors refused), logged."""
    if not path.is_file():
        return None
    import google.protobuf.message
    import onnx

    try:
        return hef_facts_of(onnx.load(os.fspath(path)))
    except (OSError, google.protobuf.message.DecodeError, ValueError, RuntimeError, HarnessError) as error:
        log.warning("emulated HEF cache entry %s unreadable (%s): quantizing again", path, error)
        return None


def _store(model: onnx.ModelProto, path: Path) -> None:
    """Write ``path`` whole or not at all (a concurrent reader never sees half a model)."""
    import onnx

    check(path)
    make_folder(path.parent)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    try:
        onnx.save(model, os.fspath(tmp))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _check_nms(family: HeadFamily, options: EmulatorOptions, source: str | os.PathLike[str]) -> None:
    """Refuse NMS for a head whose HEF has no NMS op (YOLO26); YOLOv8's and YOLOv5's have HailoRT's. Refuse
    the bbox-only op for a head HailoRT has none for (YOLOX, YOLO26)."""
    if options.bbox_only and not descriptor(family).bbox_only_op:
        # the families HailoRT has a bbox-only op for (``FamilyDescriptor.bbox_only_op``): YOLOv8's and YOLOv5's
        # NMS ops compiled bbox_decoding_only (hailort: libhailort/src/hef/hef.cpp, create_ops_metadata; YOLOX's
        # op refuses it: yolox_post_process.cpp)
        having = " and ".join(d.family.value for d in REGISTERED if d.bbox_only_op)
        raise GraphError(
            f"ONNX model {os.fspath(source)!r}: a {family.value} head with HailoRT's bbox-only op, which HailoRT has "
            f"for {having} heads alone; expected bbox_only off"
        )
    if options.nms and not descriptor(family).nms_output:
        # ultralytics: ultralytics/engine/exporter.py (export_hailo: no nms_postprocess for reg_max 1 heads)
        raise GraphError(
            f"ONNX model {os.fspath(source)!r}: a {family.value} head with HailoRT's YOLOv8 NMS op, which decodes "
            "DFL box maps (regression_length 16); expected nms off: this head's boxes are selected on the host"
        )


def export_check(options: EmulatorOptions) -> str:
    """What :func:`check_export` checks of an export under ``options``, named for a record that an
    export passed it: the code that checks and the options it reads."""
    from harness.inputs.onnx_graph import finder_code

    code = code_digest("backends/emulator/build.py", "backends/emulator/graph.py", *finder_code())
    read = f"end_nodes={list(options.end_nodes or ())} sigmoid_inside={options.sigmoid_inside} nms={options.nms}"
    if options.ssd is not None:
        read += f" ssd_config={options.ssd.digest[:16]}"
    read += f" bbox_only={options.bbox_only}"
    return f"emulator export check {code[:16]}: {read}"


def float_graph(source: str | os.PathLike[str], options: EmulatorOptions) -> HefGraph:
    """The float model an emulated HEF of the export ``source`` is quantized from, cut as ``options`` say (its end
    nodes, the sigmoid inside, an SSD config)."""
    from harness.backends.emulator.graph import hef_graph
    from harness.inputs.onnx_graph import load_model

    return hef_graph(load_model(source), os.fspath(source), options.end_nodes, options.sigmoid_inside, options.ssd)


def check_export(onnx_path: str | os.PathLike[str], options: EmulatorOptions | None = None) -> None:
    """Refuse, before any work, an export the emulator cannot build a HEF from (quantized ops, heads
    not found, an input that is not RGB): the checks :func:`build_emulated_hef` starts with."""
    options = options or EmulatorOptions()
    _check_nms(float_graph(onnx_path, options).family, options, onnx_path)


def build_emulated_hef(
    onnx_path: str | os.PathLike[str],
    calibration_images: CalibrationSource,
    options: EmulatorOptions | None = None,
    cache_dir: str | os.PathLike[str] = DEFAULT_CACHE_DIR,
    progress: Callable[[str], None] | None = None,
    onnx_sha256: str | None = None,
) -> EmulatedHef:
    """Cut a float Ultralytics ONNX at its heads, give it a HEF's uint8 NHWC input, quantize it on the
    first ``options.calibration_count`` calibration images (a folder or a list of paths), or reuse
    the cached result; ``progress`` is told before the quantization starts. ``onnx_sha256``: the
    export's, where the caller has it (else read here)."""
    options = options or EmulatorOptions()
    source = Path(onnx_path)
    if onnx_sha256 is None:
        try:
            onnx_sha256 = hashlib.sha256(source.read_bytes()).hexdigest()
        except OSError as error:
            raise GraphError(f"ONNX model {os.fspath(source)!r}: cannot be read ({error})") from error
    paths = calibration_paths(calibration_images, options.calibration_count)
    images = images_digest(paths)
    key = _cache_key(onnx_sha256, images, options)
    built = BuiltFrom(
        _inputs(onnx_sha256, images, len(paths), options),
        os.fspath(paths[0].parent) if paths else "",
        code_digest(*QUANTIZER),
    )
    facts, entry = _entry(source, paths, options, Path(cache_dir), key, built, progress)
    _check_nms(facts.family, options, source)
    return EmulatedHef(
        source=source,
        quantized_model=Path(cache_dir) / f"{key}.onnx",
        input=facts.input,
        heads=facts.heads,
        family=facts.family,
        classes=facts.classes,
        anchors=facts.anchors,
        options=options,
        calibration_images=paths,
        content_hash=_content_hash(key, options),
        entry=entry,
    )


def _entry(
    source: Path,
    paths: tuple[Path, ...],
    options: EmulatorOptions,
    folder: Path,
    key: str,
    built: BuiltFrom,
    progress: Callable[[str], None] | None,
) -> tuple[HefFacts, EntryUse]:
    """The facts of the cache entry ``key`` in ``folder`` and how it stands: the one found where it
    holds (:func:`~harness.backends.emulator.facts.read_entry`), else quantized now, under the entry's
    lock (a worker that waited on it finds the one made meanwhile), the one found kept aside as
    ``.damaged-<time>``; refused in one line where the folder cannot take the new one."""
    rules = policy()
    cached, kept = folder / f"{key}.onnx", folder / f"{key}.json"
    signable(cached, rules)
    found = read_entry(kept, cached, key, built, rules, _load_cached)
    if found.facts is not None and found.check is not None:
        log.info("emulated HEF of %s: quantized model reused from the cache, %s", source.name, cached)
        return found.facts, EntryUse(os.fspath(folder), cached.name, found.model_sha256, state_of(found.check))
    with ExitStack() as stack:
        try:
            stack.enter_context(entry_lock(folder, cached.name))
        except OSError as error:
            raise refused(cached, found.problem, error) from None
        found = read_entry(kept, cached, key, built, rules, _load_cached)  # made meanwhile by another worker?
        if found.facts is not None and found.check is not None:
            return found.facts, EntryUse(os.fspath(folder), cached.name, found.model_sha256, state_of(found.check))
        if found.problem is not None:
            log.warning("emulated HEF cache entry %s not used (%s): quantizing again", cached, found.problem)
        model = _quantized(source, paths, options, progress)
        facts = hef_facts_of(model)
        # the entry found moved aside only once its replacement is made (a reader opening it meanwhile
        # reads the one found, which it has checked)
        aside: list[str] = []
        if found.problem is not None:
            try:
                aside = [moved.name for p in (cached, kept) if (moved := set_aside(p)) is not None]
            except OSError as error:
                raise refused(cached, found.problem, error) from None
        try:
            _store(model, cached)
            sha256 = hashlib.sha256(cached.read_bytes()).hexdigest()
            write_record(kept, record_json(facts, key, sha256, built, rules.key))
        except OSError as error:
            raise refused(cached, found.problem, error) from None
    if found.problem is None:
        return facts, EntryUse(os.fspath(folder), cached.name, sha256, EntryState.BUILT)
    detail = f"{found.problem}; the one found kept as {', '.join(aside) or 'nothing (gone meanwhile)'}"
    return facts, EntryUse(os.fspath(folder), cached.name, sha256, EntryState.REBUILT, detail)


def quantize(graph: HefGraph, frames: CalibrationDataReader, options: EmulatorOptions) -> onnx.ModelProto:
    """:func:`harness.backends.emulator.quantize.quantize`, imported with onnxruntime's quantization
    tools when a model is quantized, not when a cached one is described."""
    from harness.backends.emulator import quantize as quantization

    return quantization.quantize(graph, frames, options)


def _quantized(
    source: Path,
    paths: tuple[Path, ...],
    options: EmulatorOptions,
    progress: Callable[[str], None] | None,
) -> onnx.ModelProto:
    """The export quantized now on ``paths``."""
    from harness.backends.emulator.calibration import CalibrationFrames
    from harness.backends.emulator.graph import batched

    if progress is not None:
        progress(f"emulated HEF of {source.name}: quantizing on {len(paths)} calibration images (once: cached after)")
    graph = float_graph(source, options)
    _check_nms(graph.family, options, source)
    graph = batched(graph)  # the emulated HEF takes a batch of frames in one run where its graph can
    start = time.perf_counter()
    model = quantize(graph, CalibrationFrames(paths, graph.input_name, graph.input_hw), options)
    log.info(
        "emulated HEF of %s: quantized in %.1f s (%s calibration on %d images)",
        source.name,
        time.perf_counter() - start,
        options.calibration_method.value,
        len(paths),
    )
    return model
