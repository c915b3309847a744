"""The tensors a compiled HEF never quantizes: those inside one layer, between a convolution and its activation.

The Dataflow Compiler folds an activation into the convolution before it: one layer, whose output alone is
quantized. A model script sets the activation as the conv layer's own (``change_output_activation(conv42,
sigmoid)``, mz: hailo_model_zoo/cfg/alls/generic/yolov8n.alls; every output layer's with
``change_output_activation(sigmoid)``, mz: hailo_model_zoo/cfg/alls/generic/yolov5s.alls), and a model
script names conv layers only, never a layer of their SiLU (``quantization_param(conv45, ...)``, mz:
hailo_model_zoo/cfg/alls/generic/yolov5m.alls). onnxruntime quantizes every tensor between the ops of the
ONNX graph, so a SiLU (``x * Sigmoid(x)``) after a conv would be quantized three times (the conv output,
the sigmoid, the product) where the HEF quantizes once: those extra pairs are taken out here.
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx

from harness.inputs.onnx_graph import consumers

# Activations a conv layer of the DFC holds (a HEF's output activation included), each one op in ONNX.
_ACTIVATIONS = frozenset({"Sigmoid", "Relu", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish"})


def fused_tensors(model: onnx.ModelProto) -> frozenset[str]:
    """The tensors of the float ``model`` inside a conv layer with its activation: a ``Conv`` output read by
    its activation alone (one op, or SiLU's ``Sigmoid`` and ``Mul`` of the same tensor), and SiLU's sigmoid."""
    readers_of = consumers(model)
    producers = {out: node for node in model.graph.node for out in node.output}
    outputs = {o.name for o in model.graph.output}
    inside: set[str] = set()
    for name, node in producers.items():
        if node.op_type != "Conv" or name in outputs:
            continue
        readers = readers_of.get(name, [])
        if len(readers) == 1 and readers[0].op_type in _ACTIVATIONS:
            inside.add(name)
            continue
        sigmoids = [r for r in readers if r.op_type == "Sigmoid"]
        if len(readers) != 2 or len(sigmoids) != 1:
            continue
        sigmoid = sigmoids[0].output[0]
        mul = next(r for r in readers if r is not sigmoids[0])
        if mul.op_type == "Mul" and set(mul.input) == {name, sigmoid} and len(readers_of.get(sigmoid, [])) == 1:
            if sigmoid not in outputs:
                inside |= {name, sigmoid}
    return frozenset(inside)


def unquantize(model: onnx.ModelProto, tensors: Iterable[str]) -> onnx.ModelProto:
    """The QDQ ``model`` with the ``QuantizeLinear -> DequantizeLinear`` pair of each of ``tensors`` taken out,
    their scales and zero points with them: its readers read the float tensor itself (changed in place, and
    returned)."""
    names = frozenset(tensors)
    nodes = list(model.graph.node)
    producers = {out: index for index, node in enumerate(nodes) for out in node.output}
    rewired: dict[str, str] = {}
    dropped: set[int] = set()
    constants: set[str] = set()
    for index, node in enumerate(nodes):
        at = producers.get(node.input[0]) if node.op_type == "DequantizeLinear" else None
        if at is not None and nodes[at].op_type == "QuantizeLinear" and nodes[at].input[0] in names:
            rewired[node.output[0]] = nodes[at].input[0]
            dropped |= {index, at}
            constants |= {*node.input[1:], *nodes[at].input[1:]}
    kept = []
    for index, node in enumerate(nodes):
        if index in dropped:
            continue
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.input[:] = [rewired.get(name, name) for name in copy.input]
        kept.append(copy)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    unread = constants - {name for node in kept for name in node.input}  # the pairs' scales and zero points
    initializers = []
    for initializer in model.graph.initializer:
        if initializer.name not in unread:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(initializer)
            initializers.append(tensor)
    del model.graph.initializer[:]
    model.graph.initializer.extend(initializers)
    return model
