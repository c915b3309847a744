"""Static quantization of the HEF's float graph with onnxruntime: QDQ, activations uint8, weights int8.

Each conv layer is quantized at its output alone, its activation inside it, as the Dataflow Compiler
compiles it (:mod:`harness.backends.emulator.fusion`).

onnxruntime ends every quantized graph output ``t`` in ``QuantizeLinear -> DequantizeLinear -> t``.
The emulated HEF hands out what the device would: the ``QuantizeLinear`` output, uint8, with that
node's scale and zero point as the output's quant info. So each head's ``DequantizeLinear`` is
dropped and its ``QuantizeLinear`` writes the head tensor itself.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization import CalibrationMethod as OrtCalibrationMethod

from harness.backends.emulator.fusion import fused_tensors, unquantize
from harness.backends.emulator.graph import HefGraph
from harness.backends.emulator.options import CalibrationMethod, EmulatorOptions
from harness.core.errors import GraphError
from harness.core.head_family import HeadRole, HeadTensor

# metadata_props keys of a quantized model: {head tensor: "box" | "class" | "anchored" | ...}, in head order; its
# HeadFamily value; where its heads are anchored maps, {head tensor: [[width, height], ...]} (per map its
# anchors in input pixels), present only then; an SSD head's: per regression map its layer's anchors (fractions
# of the input), and the digest of the SSD config its heads were found with (SsdConfig.digest)
HEAD_ROLES_KEY = "hailo_harness.emulator.head_roles"
HEAD_FAMILY_KEY = "hailo_harness.emulator.head_family"
HEAD_ANCHORS_KEY = "hailo_harness.emulator.head_anchors"
HEAD_SSD_KEY = "hailo_harness.emulator.ssd_config"

log = logging.getLogger(__name__)

_ORT_METHODS = {
    CalibrationMethod.MINMAX: OrtCalibrationMethod.MinMax,
    CalibrationMethod.ENTROPY: OrtCalibrationMethod.Entropy,
    CalibrationMethod.PERCENTILE: OrtCalibrationMethod.Percentile,
}


def _widen(model: onnx.ModelProto, quantizer: onnx.NodeProto) -> None:
    """``quantizer`` (a uint8 ``QuantizeLinear``) made 16-bit over the same calibrated range: scale
    ``(max - min) / 65535`` and a uint16 zero point, run by onnxruntime's com.microsoft QuantizeLinear
    (the ONNX one takes 16 bits only from opset 21). As the DFC's a16 output layers, whose range the
    calibration sets and whose steps are 256 times finer (hailo_model_zoo: a16_w16 precision_mode)."""
    from onnx import numpy_helper

    initializers = {i.name: i for i in model.graph.initializer}
    scale, zero_point = (numpy_helper.to_array(initializers[n]) for n in quantizer.input[1:3])
    s, zp = float(scale.item()), float(zero_point.item())
    low, high = (0 - zp) * s, (255 - zp) * s
    scale16 = np.float32((high - low) / 65535)
    zero16 = np.uint16(min(max(round(-low / float(scale16)), 0), 65535))
    names = (f"{quantizer.input[1]}_a16", f"{quantizer.input[2]}_a16")
    model.graph.initializer.extend(
        [numpy_helper.from_array(np.array(scale16), names[0]), numpy_helper.from_array(np.array(zero16), names[1])]
    )
    quantizer.input[1:3] = names
    quantizer.domain = "com.microsoft"


def expose_head_quantizers(model: onnx.ModelProto, heads: Sequence[HeadTensor], bits: int = 8) -> onnx.ModelProto:
    """The QDQ model with each head output taken straight from its ``QuantizeLinear`` (uint8, or
    uint16 with ``bits`` 16)."""
    graph = model.graph
    producers = {out: node for node in graph.node for out in node.output}
    for head in heads:
        dq = producers.get(head.tensor)
        q = producers.get(dq.input[0]) if dq is not None and dq.op_type == "DequantizeLinear" else None
        if dq is None or q is None or q.op_type != "QuantizeLinear":
            found = dq.op_type if dq is not None else "no node"
            raise GraphError(
                f"quantized model: head output {head.tensor!r} is made by {found}, "
                "expected QuantizeLinear -> DequantizeLinear (onnxruntime QDQ)"
            )
    heads_out = {h.tensor for h in heads}
    quantizers = {producers[h.tensor].input[0]: h.tensor for h in heads}
    kept = []
    for node in graph.node:
        if node.op_type == "DequantizeLinear" and node.output[0] in heads_out:
            continue
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.output[:] = [quantizers.get(o, o) for o in copy.output]
        if bits == 16 and copy.op_type == "QuantizeLinear" and copy.output[0] in heads_out:
            _widen(model, copy)
        kept.append(copy)
    del graph.node[:]
    graph.node.extend(kept)
    if bits == 16 and not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    for output in graph.output:
        output.type.tensor_type.elem_type = TensorProto.UINT16 if bits == 16 else TensorProto.UINT8
    roles = onnx.StringStringEntryProto(key=HEAD_ROLES_KEY, value=json.dumps({h.tensor: h.role for h in heads}))
    model.metadata_props.append(roles)
    anchored = (HeadRole.ANCHORED, HeadRole.ANCHOR_BOXES)
    anchors = {h.tensor: [list(a) for a in h.anchors] for h in heads if h.role in anchored}
    if anchors:
        model.metadata_props.append(onnx.StringStringEntryProto(key=HEAD_ANCHORS_KEY, value=json.dumps(anchors)))
    onnx.checker.check_model(model)
    return model


class _Relay(logging.Filter):
    """Takes onnxruntime's records off the root logger and logs them as the emulator's debug lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "onnxruntime" not in record.pathname:
            return True
        log.debug("emulated HEF: onnxruntime: %s", record.getMessage())
        return False


@contextlib.contextmanager
def _onnxruntime_messages_relayed() -> Iterator[None]:
    """onnxruntime's quantizer warns on the root logger and its calibrators print; while quantizing,
    both become debug lines of this logger, labelled as the emulated HEF's."""
    relay, printed = _Relay(), io.StringIO()
    root = logging.getLogger()
    root.addFilter(relay)
    try:
        with contextlib.redirect_stdout(printed):
            yield
    finally:
        root.removeFilter(relay)
        for line in printed.getvalue().splitlines():
            log.debug("emulated HEF: onnxruntime: %s", line)


def quantize(graph: HefGraph, frames: CalibrationDataReader, options: EmulatorOptions) -> onnx.ModelProto:
    """The HEF's quantized model, calibrated on ``frames``; head outputs uint8, or uint16 with
    ``options.output_bits`` 16; no tensor inside a conv layer quantized (between the conv and its activation)."""
    source = onnx.ModelProto()
    source.CopyFrom(graph.model)  # quantize_static may change the model it is given
    with tempfile.TemporaryDirectory(prefix="hailo-harness-emulator-") as tmp:
        out = Path(tmp) / "quantized.onnx"
        with _onnxruntime_messages_relayed():
            quantize_static(
                source,
                out,
                frames,
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                per_channel=options.per_channel,
                calibrate_method=_ORT_METHODS[options.calibration_method],
            )
        quantized = unquantize(onnx.load(out), fused_tensors(graph.model))
    model = expose_head_quantizers(quantized, graph.heads, options.output_bits)
    model.metadata_props.append(onnx.StringStringEntryProto(key=HEAD_FAMILY_KEY, value=graph.family.value))
    if options.ssd is not None:
        model.metadata_props.append(onnx.StringStringEntryProto(key=HEAD_SSD_KEY, value=options.ssd.digest))
    return model
