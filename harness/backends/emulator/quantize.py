"""Static quantization of the HEF's float graph with onnxruntime: QDQ, activations uint8, weights int8.

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

import onnx
from onnx import TensorProto
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization import CalibrationMethod as OrtCalibrationMethod

from harness.backends.emulator.graph import HefGraph
from harness.backends.emulator.options import CalibrationMethod, EmulatorOptions
from harness.core.errors import GraphError
from harness.core.head_family import HeadTensor

# metadata_props keys of a quantized model: {head tensor: "box" | "class"}, in head order; its HeadFamily value
HEAD_ROLES_KEY = "hailo_harness.emulator.head_roles"
HEAD_FAMILY_KEY = "hailo_harness.emulator.head_family"

log = logging.getLogger(__name__)

_ORT_METHODS = {
    CalibrationMethod.MINMAX: OrtCalibrationMethod.MinMax,
    CalibrationMethod.ENTROPY: OrtCalibrationMethod.Entropy,
    CalibrationMethod.PERCENTILE: OrtCalibrationMethod.Percentile,
}


def expose_head_quantizers(model: onnx.ModelProto, heads: Sequence[HeadTensor]) -> onnx.ModelProto:
    """The QDQ model with each head output taken straight from its ``QuantizeLinear`` (uint8)."""
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
        kept.append(copy)
    del graph.node[:]
    graph.node.extend(kept)
    for output in graph.output:
        output.type.tensor_type.elem_type = TensorProto.UINT8
    roles = onnx.StringStringEntryProto(key=HEAD_ROLES_KEY, value=json.dumps({h.tensor: h.role for h in heads}))
    model.metadata_props.append(roles)
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
    """The HEF's quantized model, calibrated on ``frames``; head outputs uint8."""
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
        quantized = onnx.load(out)
    model = expose_head_quantizers(quantized, graph.heads)
    model.metadata_props.append(onnx.StringStringEntryProto(key=HEAD_FAMILY_KEY, value=graph.family.value))
    return model
