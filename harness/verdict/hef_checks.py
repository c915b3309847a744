"""Static checks of a HEF against its ONNX, its dataset and the evaluation settings.

Each check is a pure function of a :class:`CheckContext` returning a :class:`CheckResult`; the
pytest plugin turns each into its own test item. A failure names the field, the value found, the
value expected and the fix.

An NMS op compiled ``bbox_decoding_only`` (HailoRT's bbox-only op) is checked as the NMS op it is
(classes, regression length or anchors, strides, pairing, sigmoid, box range): it decodes the same
heads the same way; only its thresholds go unused, the host running the NMS (``score_threshold`` says so).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from harness.core import defaults
from harness.core.checks import CheckResult
from harness.core.specs import FormatType
from harness.decode.layout import HeadLayout, layout_of_tensors
from harness.families import by_nms_op, descriptor
from harness.inputs.export_facts import ExportFacts
from harness.inputs.hef.inspect import sigmoid
from harness.inputs.hef.nms_op import NmsOpConfig
from harness.inputs.hef.reader import HefInfo, NetworkGroupInfo, StreamInfo
from harness.inputs.hef.ultralytics import METADATA, NMS_CONFIG, UltralyticsExport
from harness.verdict.hef_family_checks import family_checks


@dataclass(frozen=True)
class CheckContext:
    """What the checks read: the HEF, and what it is held against. ``model``: the facts of the ONNX
    export it was compiled from (its head maps found: a :class:`GraphError` saying why otherwise).
    ``min_score_cap``: the highest score the class outputs must be able to represent; ``score_cap_source``: where a
    floor other than the default came from (the float model's own highest score on the evaluated images: a model
    that never scores above 0.82 is not capped by outputs that reach 0.82), within one quantization step."""

    hef: HefInfo
    model: ExportFacts | None = None
    dataset_names: tuple[str, ...] | None = None
    eval_score_threshold: float | None = None
    min_score_cap: float = defaults.MIN_SCORE_CAP
    export: UltralyticsExport | None = None  # the HEF given as an Ultralytics export folder
    score_cap_source: str = ""

    def __post_init__(self) -> None:
        if self.model is not None:
            self.model.require_heads()

    @property
    def group(self) -> NetworkGroupInfo:
        return self.hef.network_groups[0]

    @functools.cached_property
    def layout(self) -> HeadLayout:
        """The export's head layout (``model`` given)."""
        assert self.model is not None
        return layout_of_tensors(self.model.heads, self.model.input_hw)


def _dfl_boxes(nms: NmsOpConfig) -> bool:
    """Whether the op's family has DFL box maps (a YOLOv8 op: its ``regression_length``)."""
    family = by_nms_op(nms.kind)
    return family is not None and family.dfl_boxes


def _streams(group: NetworkGroupInfo) -> dict[str, StreamInfo]:
    return {s.name: s for s in group.outputs}


def _class_streams(ctx: CheckContext) -> list[StreamInfo]:
    """Class-score outputs: named by the NMS op, else the outputs with the ONNX's class channel count."""
    group = ctx.group
    streams = _streams(group)
    if group.nms is not None:
        return [streams[d.class_stream] for d in group.nms.bbox_decoders if d.class_stream in streams]
    if ctx.model is not None:
        return [s for s in group.outputs if s.shape[2] == ctx.layout.classes]
    return []


def _objectness_streams(ctx: CheckContext) -> list[StreamInfo]:
    """The objectness outputs an NMS op names (a YOLOX op's); HailoRT's op reads them as probabilities too."""
    nms, streams = ctx.group.nms, _streams(ctx.group)
    named = [d.objectness_stream for d in nms.bbox_decoders] if nms is not None else []
    return [streams[name] for name in named if name in streams]


def check_input_shape(ctx: CheckContext) -> CheckResult:
    """The HEF's one input: the export's height, width and channels, and UINT8 (normalisation inside the
    HEF)."""
    name = "input_shape"
    if ctx.model is None:
        return CheckResult.skipped(name, "no --onnx given: nothing to compare the HEF input with")
    if len(ctx.group.inputs) != 1:
        return CheckResult.failed(
            name, "HEF inputs", len(ctx.group.inputs), 1, "compile the model with one image input"
        )
    stream = ctx.group.inputs[0]
    h, w, c = stream.shape
    m = ctx.model
    if (h, w, c) != (*m.input_hw, m.input_channels):
        return CheckResult.failed(
            name,
            f"input {stream.name} shape",
            f"{h}x{w}x{c}",
            f"{m.input_hw[0]}x{m.input_hw[1]}x{m.input_channels} as in {m.source}",
            "export the ONNX and compile the HEF at the same image size",
        )
    if stream.data_type is not FormatType.UINT8:
        return CheckResult.failed(
            name,
            f"input {stream.name} data type",
            stream.data_type.name,
            "UINT8 (0-255 RGB, normalisation inside the HEF)",
            "add normalization([0,0,0],[255,255,255]) to the .alls and feed uint8 images",
        )
    return CheckResult.ok(name, f"input {stream.name} UINT8 {h}x{w}x{c} matches {m.source}")


def check_nms_classes_vs_onnx(ctx: CheckContext) -> CheckResult:
    """The NMS op's class count against the export's class channels."""
    name = "nms_classes_vs_onnx"
    nms = ctx.group.nms
    if nms is None or ctx.model is None:
        return CheckResult.skipped(name, "needs an NMS HEF and --onnx")
    if nms.classes != ctx.layout.classes:
        return CheckResult.failed(
            name,
            "NMS op classes",
            nms.classes,
            f"{ctx.layout.classes} (class channels of {ctx.model.source})",
            f'set "classes": {ctx.layout.classes} in the nms_postprocess JSON and recompile',
        )
    return CheckResult.ok(name, f"NMS op classes {nms.classes} == ONNX class channels")


def check_nms_classes_vs_dataset(ctx: CheckContext) -> CheckResult:
    """The classes the NMS op detects (less a removed background class) against the dataset's names."""
    name = "nms_classes_vs_dataset"
    nms = ctx.group.nms
    if nms is None or ctx.dataset_names is None:
        return CheckResult.skipped(name, "needs an NMS HEF and --dataset")
    # the classes it detects: one fewer where it removes a background class (hailort:
    # hailort/libhailort/src/net_flow/ops/nms_post_process.cpp, NmsOpMetadata::get_output_vstream_info)
    detected = nms.nms_shape.number_of_classes
    removed = (
        f" ({nms.classes} less the background class {nms.background_removal_index})" if nms.background_removal else ""
    )
    if detected != len(ctx.dataset_names):
        return CheckResult.failed(
            name,
            "NMS op classes",
            f"{detected}{removed}",
            f"{len(ctx.dataset_names)} (dataset names {list(ctx.dataset_names)})",
            "compile with the dataset's class count, or evaluate on the dataset the model was trained for",
        )
    return CheckResult.ok(name, f"NMS op classes {detected}{removed} == {len(ctx.dataset_names)} dataset names")


def check_regression_length(ctx: CheckContext) -> CheckResult:
    """A DFL NMS op's regression_length against its box streams' channels and the export's reg_max."""
    name = "regression_length"
    nms = ctx.group.nms
    if nms is None:
        return CheckResult.skipped(name, "no NMS op in the HEF")
    if not _dfl_boxes(nms):
        return CheckResult.skipped(name, f"a {nms.kind} NMS op has no regression_length (no DFL box maps)")
    streams = _streams(ctx.group)
    for d in nms.bbox_decoders:
        box = streams.get(d.box_stream)
        if box is not None and box.shape[2] != 4 * nms.regression_length:
            return CheckResult.failed(
                name,
                "NMS op regression_length",
                f"{nms.regression_length} (4 x {nms.regression_length} = {4 * nms.regression_length})",
                f"{box.shape[2] // 4} ({d.box_stream} has {box.shape[2]} box channels = 4 x {box.shape[2] // 4})",
                f'set "regression_length": {box.shape[2] // 4} in the nms_postprocess JSON',
            )
    if ctx.model is not None and ctx.layout.reg_max != nms.regression_length:
        return CheckResult.failed(
            name,
            "NMS op regression_length",
            nms.regression_length,
            f"{ctx.layout.reg_max} ({ctx.model.source} box heads have {4 * ctx.layout.reg_max} channels)",
            f'set "regression_length": {ctx.layout.reg_max} in the nms_postprocess JSON',
        )
    return CheckResult.ok(name, f"regression_length {nms.regression_length}: 4 x {nms.regression_length} box channels")


def check_strides_vs_grids(ctx: CheckContext) -> CheckResult:
    """Each NMS decoder's stride against its streams' grid, and the HEF's box grids against the export's."""
    name = "strides_vs_grids"
    nms = ctx.group.nms
    if nms is None:
        return CheckResult.skipped(name, "no NMS op in the HEF")
    streams = _streams(ctx.group)
    # the decoders with a stride (an SSD op's layers have none: only the export's grids hold them)
    for d in family_checks(nms.kind).strided_decoders(nms):
        expected = (round(nms.image_height / d.stride), round(nms.image_width / d.stride))
        for stream_name in (d.box_stream, d.class_stream, *((d.objectness_stream,) if d.objectness_stream else ())):
            stream = streams.get(stream_name)
            if stream is not None and stream.shape[:2] != expected:
                return CheckResult.failed(
                    name,
                    f"NMS decoder stride {d.stride} stream {stream_name} grid",
                    f"{stream.shape[0]}x{stream.shape[1]}",
                    f"{expected[0]}x{expected[1]} (image {nms.image_height:g}x{nms.image_width:g} / stride {d.stride})",
                    "give each bbox_decoder in the nms_postprocess JSON the stride of its layers' grid",
                )
    if ctx.model is not None:
        grids = sorted({streams[d.box_stream].shape[:2] for d in nms.bbox_decoders if d.box_stream in streams})
        if grids != sorted(level.grid for level in ctx.layout.levels):
            return CheckResult.failed(
                name,
                "HEF box grids",
                grids,
                f"{sorted(level.grid for level in ctx.layout.levels)} from {ctx.model.source}",
                "compile the HEF from this ONNX at its input size",
            )
    return CheckResult.ok(name, "every decoder's stride matches its streams' grid")


def check_decoder_pairing(ctx: CheckContext) -> CheckResult:
    """Each NMS decoder reads streams of one grid and the right channels: its family's ``decoder_pairing``
    check."""
    name = "decoder_pairing"
    nms = ctx.group.nms
    if nms is None:
        return CheckResult.skipped(name, "no NMS op in the HEF")
    streams = _streams(ctx.group)
    return family_checks(nms.kind).decoder_pairing(name, nms, streams)


def check_anchors(ctx: CheckContext) -> CheckResult:
    """The NMS op of the export's family (anchored maps where the export has them), its anchors the export's
    (a YOLOv5 op's; an SSD op's and its box coding the SSD config's): its family's ``anchors`` check."""
    name = "anchors"
    nms = ctx.group.nms
    if nms is None or ctx.model is None:
        return CheckResult.skipped(name, "needs an NMS HEF and --onnx")
    checks = family_checks(nms.kind)
    anchor_op, anchor_export = checks.anchored_maps(), ctx.layout.anchored
    family = ctx.model.family
    expected_kind = (descriptor(family).nms_op or None) if family is not None else None
    if anchor_op != anchor_export or (expected_kind is not None and nms.kind != expected_kind):
        return CheckResult.failed(
            name,
            "NMS op",
            f"{nms.kind} ({'anchors' if anchor_op else 'anchor-free'})",
            f"{expected_kind or 'the op'} of the {family.value if family else 'unknown'} head of {ctx.model.source} "
            f"({'anchors' if anchor_export else 'anchor-free'})",
            "compile with the nms_postprocess meta_arch of the model's head (yolov5 for anchor-based heads, yolox "
            "for YOLOX's box, objectness and class maps, yolov8 for DFL box maps)",
        )
    return checks.anchors(name, nms, ctx.model, ctx.layout)


def check_sigmoid_present(ctx: CheckContext) -> CheckResult:
    """The class (and objectness) outputs an NMS op reads are post-sigmoid: their limvals inside [0, 1]."""
    name = "sigmoid_present"
    nms = ctx.group.nms
    if nms is None:
        return CheckResult.skipped(name, "no NMS op in the HEF: the host decoder applies the sigmoid itself")
    for stream in _class_streams(ctx) + _objectness_streams(ctx):
        q = stream.host_quant[0]
        if q.limvals_min < 0 or q.limvals_max > 1:
            # hailort: src/net_flow/ops/yolov8_post_process.cpp applies no sigmoid to class values.
            return CheckResult.failed(
                name,
                f"class output {stream.name} limvals",
                f"[{q.limvals_min:.4g}, {q.limvals_max:.4g}] (logits: NMS scores will fall outside [0, 1])",
                "inside [0, 1] (sigmoid compiled in)",
                f"add change_output_activation({stream.name.split('/')[-1].rsplit('_', 1)[0]}, sigmoid) to the .alls",
            )
    return CheckResult.ok(name, "class outputs are post-sigmoid (limvals inside [0, 1])")


def _score_range(stream: StreamInfo) -> tuple[float, float, bool]:
    q = stream.host_quant[0]
    post_sigmoid = q.limvals_min >= 0 and q.limvals_max <= 1
    if post_sigmoid:
        return q.limvals_min, q.limvals_max, True
    return sigmoid(q.limvals_min), sigmoid(q.limvals_max), False


def check_class_score_range(ctx: CheckContext) -> CheckResult:
    """The class outputs can represent a high score (a cap means a calibration set without positives), a
    logit range a uint8 step resolves near 1, and a lowest score under the evaluation's threshold."""
    name = "class_score_range"
    streams = _class_streams(ctx)
    if not streams:
        return CheckResult.skipped(name, "class outputs not identified (raw HEF: give --onnx)")
    # Capped: no class output can score high. One head that never fires on the calibration frames
    # (objects of other sizes only) is not a cap; all of them staying low is.
    top = max(streams, key=lambda s: _score_range(s)[1])
    _, highest, post = _score_range(top)
    q = top.host_quant[0]
    step = q.scale if post and ctx.score_cap_source else 0.0  # a floor from the model: within one output step
    if highest + step < ctx.min_score_cap:
        source = f" ({ctx.score_cap_source})" if ctx.score_cap_source else ""
        return CheckResult.failed(
            name,
            f"highest representable score of every class output (best: {top.name})",
            f"{highest:.4f} (limvals max {q.limvals_max:.4g}{'' if post else ' logit'})",
            f">= {ctx.min_score_cap:.4g}{source}",
            "calibrate on in-domain images that contain the classes (scores are capped: typical of a "
            "calibration set without positives)",
        )
    for stream in streams:
        lo, _, post = _score_range(stream)
        q = stream.host_quant[0]
        if not post and sigmoid(q.limvals_max - q.scale) >= 0.99:
            return CheckResult.failed(
                name,
                f"class output {stream.name} logit range",
                f"[{q.limvals_min:.4g}, {q.limvals_max:.4g}], step {q.scale:.4g} (top levels all score >= 0.99)",
                "a range a uint8 step can resolve near score 1",
                "compile the sigmoid into the HEF (change_output_activation) so scores quantize in [0, 1]",
            )
        if ctx.eval_score_threshold is not None and lo >= ctx.eval_score_threshold:
            return CheckResult.failed(
                name,
                f"class output {stream.name} lowest representable score",
                f"{lo:.4f}",
                f"< the score threshold {ctx.eval_score_threshold} (else every cell is a detection)",
                "recalibrate; check that the class outputs' activation is what the decoder assumes",
            )
    return CheckResult.ok(name, f"class outputs can represent scores up to {highest:.4f} ({top.name})")


def check_score_threshold(ctx: CheckContext) -> CheckResult:
    """The NMS op's compiled score threshold against the evaluation's (a bbox-only op applies none: the host
    runs the NMS)."""
    name = "score_threshold"
    nms = ctx.group.nms
    if nms is None:
        return CheckResult.skipped(name, "needs an NMS HEF")
    if nms.bbox_decoding_only:
        # hailort: libhailort/src/net_flow/ops/yolov8_bbox_only_post_process.cpp and
        # yolov5_bbox_only_post_process.cpp write every proposal: no threshold, no NMS
        at = f"{ctx.eval_score_threshold:g}" if ctx.eval_score_threshold is not None else "its score threshold"
        return CheckResult.ok(
            name,
            f"NMS op {nms.name!r} decodes boxes only (bbox_decoding_only): HailoRT applies no threshold and runs "
            f"no NMS (its compiled {nms.score_threshold:g} goes unused); the host must run the NMS, the "
            f"evaluation's at {at}",
        )
    if ctx.eval_score_threshold is None:
        return CheckResult.skipped(
            name, f"no --score-threshold given: an evaluation takes the HEF's compiled {nms.score_threshold:g}"
        )
    if not math.isfinite(nms.score_threshold) or abs(nms.score_threshold - ctx.eval_score_threshold) > 1e-6:
        return CheckResult.failed(
            name,
            "NMS op score threshold",
            f"{nms.score_threshold:g} (compiled into the HEF)",
            f"{ctx.eval_score_threshold:g} (the evaluation's)",
            f"evaluate at {nms.score_threshold:g}, or override at run time with "
            f"set_nms_score_threshold({ctx.eval_score_threshold:g})",
        )
    return CheckResult.ok(name, f"score threshold {nms.score_threshold:g} == evaluation's")


# ln(FLT_MAX): HailoRT's YOLOv8 NMS op takes the softmax of the DFL bins without subtracting their
# maximum (hailort: libhailort/src/net_flow/ops/softmax_post_process.cpp, SoftmaxPostProcessOp::softmax),
# so a bin past this overflows to inf and its box comes out NaN (held by tests/backends/test_hailort_oracle.py).
DFL_OVERFLOW = math.log(3.4028234663852886e38)  # FLT_MAX


def check_box_logit_range(ctx: CheckContext) -> CheckResult:
    """The DFL box outputs' range stays below ln(FLT_MAX), past which HailoRT's softmax overflows and the
    box is NaN."""
    name = "box_logit_range"
    nms = ctx.group.nms
    if nms is None or not _dfl_boxes(nms):
        return CheckResult.skipped(name, "needs a HEF with the YOLOv8 NMS op")
    streams = _streams(ctx.group)
    boxes = [streams[d.box_stream] for d in nms.bbox_decoders if d.box_stream in streams]
    over = [(s, max(q.limvals_max for q in s.host_quant)) for s in boxes]
    over = [(s, top) for s, top in over if top > DFL_OVERFLOW]
    if over:
        stream, top = over[0]
        return CheckResult.failed(
            name,
            f"box output {stream.name} quantization range (limvals_max)",
            f"{top:g}",
            f"at most {DFL_OVERFLOW:.1f}: HailoRT's NMS op exponentiates DFL logits without subtracting their "
            "maximum, and a logit past that overflows to a NaN box",
            "recalibrate (a box output range this wide also wastes its 8 bits), or decode the raw heads on the host",
        )
    highest = max((max(q.limvals_max for q in s.host_quant) for s in boxes), default=math.nan)
    return CheckResult.ok(name, f"box outputs reach at most {highest:g} (< {DFL_OVERFLOW:.1f}): no NaN boxes")


_NO_EXPORT = "the HEF was not given as an Ultralytics export folder (--hef FOLDER)"


def check_export_metadata(ctx: CheckContext) -> CheckResult:
    """The export's metadata.yaml against the HEF it holds and the ONNX."""
    name = "export_metadata"
    export = ctx.export
    if export is None:
        return CheckResult.skipped(name, _NO_EXPORT)
    file, group, hef = export.hef.parent / METADATA, ctx.group, ctx.hef
    fix = "export again (yolo export format=hailo) so that the folder's files describe its HEF"
    if group.inputs and export.imgsz != group.inputs[0].shape[:2]:
        h, w, _ = group.inputs[0].shape
        return CheckResult.failed(name, f"{file} imgsz", list(export.imgsz), f"[{h}, {w}] (the HEF's input)", fix)
    if export.hailo_arch.upper() not in (hef.hw_arch.name, *hef.devices):
        runs_on = ", ".join(d.lower() for d in hef.devices) or "no known device"
        expected = f"{hef.hw_arch.name.lower()} (the HEF's hw_arch; it runs on {runs_on})"
        return CheckResult.failed(name, f"{file} hailo_arch", export.hailo_arch, expected, fix)
    if export.nms != (group.nms is not None):
        held = "holds" if group.nms is not None else "does not hold"
        return CheckResult.failed(name, f"{file} nms", export.nms, f"{not export.nms} (the HEF {held} an NMS op)", fix)
    classes = group.nms.nms_shape.number_of_classes if group.nms is not None else None
    for count, what in ((classes, "the HEF's NMS op"), (ctx.layout.classes if ctx.model else None, "the ONNX")):
        if count is not None and len(export.names) != count:
            return CheckResult.failed(name, f"{file} names", list(export.names), f"{count} classes, as in {what}", fix)
    # ultralytics: ultralytics/engine/exporter.py (export_hailo: end2end is the model's; YOLO26 heads, reg_max 1,
    # compile without NMS, the one-to-one head being the end-to-end one)
    model = ctx.model
    family = model.require_heads()[0] if model is not None else None
    if model is not None and family is not None and export.end2end != descriptor(family).end_to_end:
        expected = f"{not export.end2end} ({model.source} carries the {family.value} head)"
        return CheckResult.failed(name, f"{file} end2end", export.end2end, expected, fix)
    return CheckResult.ok(name, f"{file}: imgsz, hailo_arch, nms and {len(export.names)} class names match the HEF")


def check_export_nms_config(ctx: CheckContext) -> CheckResult:
    """The export's nms_config.json against the NMS op compiled into the HEF."""
    name = "export_nms_config"
    config = ctx.export.nms_config if ctx.export is not None else None
    if config is None:
        return CheckResult.skipped(name, f"{_NO_EXPORT}, or it has no {NMS_CONFIG}")
    assert ctx.export is not None
    file, nms = ctx.export.hef.parent / NMS_CONFIG, ctx.group.nms
    fix = "compile from this nms_config.json again, or export again: the HEF's NMS op is what runs"
    if nms is None:
        return CheckResult.failed(name, f"{file}", "an NMS configuration", "none: the HEF holds no NMS op", fix)
    pairs: tuple[tuple[str, object, object], ...] = (
        ("nms_scores_th", config.score_threshold, nms.score_threshold),
        ("nms_iou_th", config.iou_threshold, nms.iou_threshold),
        ("max_proposals_per_class", config.max_proposals_per_class, nms.max_proposals_per_class),
        ("classes", config.classes, nms.classes),
        ("regression_length", config.regression_length, nms.regression_length),
        ("image_dims", list(config.image_dims), [int(nms.image_height), int(nms.image_width)]),
        ("strides", sorted(d.stride for d in config.bbox_decoders), sorted(d.stride for d in nms.bbox_decoders)),
    )
    for key, theirs, ours in pairs:
        if isinstance(theirs, float) and isinstance(ours, float):
            same = math.isclose(theirs, ours, abs_tol=1e-6)  # the HEF keeps its thresholds as float32
        else:
            same = theirs == ours
        if not same:
            return CheckResult.failed(name, f"{file} {key}", theirs, f"{ours} (the HEF's NMS op {nms.name!r})", fix)
    return CheckResult.ok(name, f"{file} is the NMS op compiled into the HEF")


STATIC_CHECKS: tuple[Callable[[CheckContext], CheckResult], ...] = (
    check_input_shape,
    check_nms_classes_vs_onnx,
    check_nms_classes_vs_dataset,
    check_regression_length,
    check_strides_vs_grids,
    check_decoder_pairing,
    check_anchors,
    check_sigmoid_present,
    check_class_score_range,
    check_box_logit_range,
    check_score_threshold,
    check_export_metadata,
    check_export_nms_config,
)


def run_checks(ctx: CheckContext) -> tuple[CheckResult, ...]:
    if not ctx.hef.network_groups:  # a tolerant read of a broken file: there is nothing the checks could read
        found = "none (the file was read tolerantly)"
        fix = "recompile the HEF; HailoRT configures a HEF's first network group"
        return (CheckResult.failed("network_group", f"{ctx.hef.path} network groups", found, "at least one", fix),)
    return tuple(check(ctx) for check in STATIC_CHECKS)
