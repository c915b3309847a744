"""YOLO26 exports made from the shipped YOLO26n demo (its one-to-one head exported end to end), for tests.

- :func:`one_to_many_export`: the same six head convolutions, renamed as Ultralytics names the one-to-many
  head's (``/model.23/cv2.0/cv2.0.2/Conv``, ...), feeding the one-to-many export's output
  ``[1, 4 + nc, anchors]`` (box maps joined, class maps joined through a sigmoid, the two joined) in place of
  the top-k; the box maps are joined without ``dist2bbox``, which no test of these reads;
- :func:`both_heads_export`: the end-to-end export with a second output ``[1, 4 + nc, anchors]`` from a copy of
  the six head convolutions: both heads in one file.

ultralytics: ultralytics/nn/modules/head.py (``Detect.forward``: the one-to-many head's ``cv2``/``cv3``, its
``_inference`` output ``[B, 4 + nc, anchors]``).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from harness.core.head_family import HeadTensor
from harness.families.yolo26.onnx import find_yolo26_heads
from harness.inputs.onnx_graph import cut_at_heads


def _one_to_many_name(head: HeadTensor, index: int) -> str:
    branch = 2 if head.role == "box" else 3
    return f"/model.23/cv{branch}.{index}/cv{branch}.{index}.2/Conv"


def _tail(heads: list[tuple[HeadTensor, str]], output: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes joining the head maps ``(head, tensor)`` into ``output`` ``[1, 4 + nc, anchors]``."""
    nodes, constants = [], []
    flat: dict[str, list[str]] = {"box": [], "class": []}
    for i, (head, tensor) in enumerate(heads):
        shape = numpy_helper.from_array(np.array([1, head.channels, -1], dtype=np.int64), f"{output}_shape{i}")
        constants.append(shape)
        nodes.append(helper.make_node("Reshape", [tensor, shape.name], [f"{output}_flat{i}"]))
        flat[head.role].append(f"{output}_flat{i}")
    nodes += [
        helper.make_node("Concat", flat["box"], [f"{output}_boxes"], axis=2),
        helper.make_node("Concat", flat["class"], [f"{output}_logits"], axis=2),
        helper.make_node("Sigmoid", [f"{output}_logits"], [f"{output}_scores"]),
        helper.make_node("Concat", [f"{output}_boxes", f"{output}_scores"], [output], axis=1),
    ]
    return nodes, constants


def _output(name: str, heads: tuple[HeadTensor, ...]) -> onnx.ValueInfoProto:
    nc = next(h.channels for h in heads if h.role == "class")
    anchors = sum(h.grid[0] * h.grid[1] for h in heads if h.role == "box")
    return helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, [1, 4 + nc, anchors])


def _by_stride(heads: tuple[HeadTensor, ...]) -> list[tuple[int, HeadTensor]]:
    """(scale index, head): the heads come stride ascending, box before class."""
    return [(i // 2, h) for i, h in enumerate(heads)]


def one_to_many_export(end_to_end: onnx.ModelProto) -> onnx.ModelProto:
    heads = find_yolo26_heads(end_to_end)
    model = cut_at_heads(end_to_end, heads)
    names = {h.node: _one_to_many_name(h, i) for i, h in _by_stride(heads)}
    for node in model.graph.node:
        node.name = names.get(node.name, node.name)
    nodes, constants = _tail([(h, h.tensor) for h in heads], "output0")
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(constants)
    del model.graph.output[:]
    model.graph.output.append(_output("output0", heads))
    return model


def both_heads_export(end_to_end: onnx.ModelProto) -> onnx.ModelProto:
    heads = find_yolo26_heads(end_to_end)
    model = onnx.ModelProto()
    model.CopyFrom(end_to_end)
    producers = {node.name: node for node in model.graph.node}
    copies = []
    for i, head in _by_stride(heads):
        copy = onnx.NodeProto()
        copy.CopyFrom(producers[head.node])
        copy.name = _one_to_many_name(head, i)
        copy.output[0] = f"{copy.name}_output_0"
        copies.append((head, copy))
    nodes, constants = _tail([(h, c.output[0]) for h, c in copies], "output1")
    model.graph.node.extend([c for _, c in copies] + nodes)
    model.graph.initializer.extend(constants)
    model.graph.output.append(_output("output1", heads))
    return model
