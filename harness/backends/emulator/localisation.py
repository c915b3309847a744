"""Where an emulated HEF loses accuracy: per tensor, the signal-to-quantization-noise ratio (SQNR)
between the float graph the HEF is compiled from and its quantized graph, on the same frames.

onnxruntime's ``qdq_loss_debug`` does the work: both graphs get every float tensor added as an
output (``modify_model_output_intermediate_tensors``), run on the frames (``collect_activations``),
and are matched by name (``create_activation_matching``). Two numbers per tensor, in dB
(``20 log10(|x| / |x - y|)``, onnxruntime's ``compute_signal_to_quantization_noice_ratio``):

- ``local_db``: the tensor before and after its own quantize-dequantize pair in the quantized graph,
  the error this tensor's uint8 range adds by itself;
- ``accumulated_db``: the float graph's tensor against the quantized graph's dequantized one, all
  the error up to and including this tensor.

The emulated HEF's head outputs are its ``QuantizeLinear`` outputs (uint8), which onnxruntime
neither collects nor matches; they are taken from the emulated HEF's runner, dequantized with
their quant infos (HailoRT's rule), and compared like the other tensors.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnxruntime.quantization.qdq_loss_debug import (
    QUANT_INPUT_SUFFIX,
    collect_activations,
    compute_signal_to_quantization_noice_ratio,
    create_activation_matching,
    modify_model_output_intermediate_tensors,
)

from harness.backends.emulator import EmulatedHef, EmulatorRunner
from harness.backends.emulator.build import float_graph
from harness.backends.emulator.calibration import CalibrationFrames
from harness.core.errors import HarnessError
from harness.formats.quant import dequantize
from harness.inputs.preprocess import letterbox, load_image

WORST = 10
# Own SQNR above this: the tensor's quantization adds no noise that matters (uint8 steps give ~50 dB).
LOSSLESS_DB = 100.0


@dataclass(frozen=True)
class LayerSqnr:
    """One tensor of the quantized graph: ``op`` and ``node`` that produce it in the float graph."""

    tensor: str
    op: str
    node: str
    local_db: float
    accumulated_db: float


def _producers(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    return {out: node for node in model.graph.node for out in node.output}


def _head_outputs(hef: EmulatedHef, images: Sequence[Path]) -> dict[str, list[np.ndarray]]:
    """Each head output dequantized, ``[1, C, H, W]`` like the float graph's, per frame."""
    specs = {h.name: h for h in hef.heads}
    heads: dict[str, list[np.ndarray]] = {name: [] for name in specs}
    with EmulatorRunner(hef) as runner:
        for path in images:
            frame, _ = letterbox(load_image(path), hef.input_hw)
            for name, raw in runner.raw_heads({hef.input.name: frame[None]}).items():
                heads[name].append(dequantize(raw, specs[name].quant).transpose(2, 0, 1)[None])
    return heads


def layer_sqnr(hef: EmulatedHef, images: Sequence[str | os.PathLike[str]]) -> tuple[LayerSqnr, ...]:
    """Per tensor of ``hef``'s quantized graph on ``images`` (letterboxed as evaluation prepares
    them), worst ``accumulated_db`` first."""
    paths = tuple(Path(p) for p in images)
    if not paths:
        raise HarnessError(f"localisation of {hef.label}: no images given, expected at least one frame")
    graph = float_graph(hef.source, hef.options)
    with tempfile.TemporaryDirectory(prefix="hailo-harness-localisation-") as tmp:
        float_file, float_seen, quant_seen = (Path(tmp) / n for n in ("float.onnx", "float+.onnx", "quant+.onnx"))
        onnx.save(graph.model, os.fspath(float_file))
        modify_model_output_intermediate_tensors(os.fspath(float_file), os.fspath(float_seen))
        modify_model_output_intermediate_tensors(os.fspath(hef.quantized_model), os.fspath(quant_seen))
        frames = (graph.input_name, graph.input_hw)
        float_values = collect_activations(os.fspath(float_seen), CalibrationFrames(paths, *frames))
        quant_values = collect_activations(os.fspath(quant_seen), CalibrationFrames(paths, *frames))
    matching = create_activation_matching(quant_values, float_values)
    for name, values in _head_outputs(hef, paths).items():  # uint8 outputs: not collected, not matched
        matching[name] = {"pre_qdq": quant_values.get(name + QUANT_INPUT_SUFFIX), "post_qdq": values}
        matching[name]["float"] = float_values.get(name)
    producers = _producers(graph.model)
    layers = []
    for tensor, match in matching.items():
        pre, post, reference = match.get("pre_qdq"), match.get("post_qdq"), match.get("float")
        if pre is None or post is None or reference is None:
            continue  # a tensor of the quantized graph only (e.g. the input cast) has no float twin
        node = producers.get(tensor)
        layers.append(
            LayerSqnr(
                tensor,
                node.op_type if node is not None else "input",
                node.name if node is not None else "",
                compute_signal_to_quantization_noice_ratio(pre, post),
                compute_signal_to_quantization_noice_ratio(reference, post),
            )
        )
    return tuple(sorted(layers, key=lambda layer: (layer.accumulated_db, layer.tensor)))


def worst_layers(layers: Sequence[LayerSqnr], count: int = WORST) -> list[dict[str, object]]:
    """Rows for a report: the ``count`` tensors with the lowest accumulated SQNR among those that add
    noise of their own (a tensor above :data:`LOSSLESS_DB` of its own, a Transpose or a Reshape,
    only carries the noise made before it), then the one whose own quantization adds the most noise
    if it is not among them."""
    rows = [layer for layer in layers if layer.local_db <= LOSSLESS_DB][:count]
    local = min(layers, key=lambda layer: layer.local_db, default=None)
    if local is not None and local not in rows:
        rows.append(local)
    return [
        {
            "tensor": layer.tensor,
            "op": layer.op,
            "node": layer.node,
            "local_sqnr_db": round(layer.local_db, 2),
            "accumulated_sqnr_db": round(layer.accumulated_db, 2),
        }
        for layer in rows
    ]
