"""The doctor modes a user of SSD heads meets beyond every family's (:mod:`harness.doctor.modes`): a host decoder
that reads the box coding x first, one that puts the class values through a softmax (a softmax SSD's decoder
over a model that scores each class by its own sigmoid), and one that keeps the background class. Each runs
over the raw-output HEF (the ONNX cut at its heads where the emulator refuses the model) and is named by
reproducing its mistake on its own frames (:func:`harness.conformance.misreadings.reproduce_path`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from harness.conformance.words import SSD_BACKGROUND_AS_FIRST_CLASS, SSD_CODING_X_FIRST, SSD_SCORES_SOFTMAXED
from harness.core.detections import Detections
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatType, OutputSpec
from harness.decode.maps import host_array, to_float
from harness.doctor.mode import Mode, host_decoder
from harness.families.ssd.decode import BOX_CHANNELS, decode, layout, ssd_config


def shared_gaps() -> Mapping[str, str]:
    # hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp (``extract_bbox_classes``: each anchor's class
    # values, the background's among them, read from one class map, one quant info per map)
    return {
        "calibration_off_domain": "an SSD class map holds each anchor's background value beside its classes, near 1 "
        "on every anchor of any image, so calibrating on frames without the classes still spans the scores: "
        "nothing is capped and the detections barely move",
    }


def box_coding_x_first(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder that reads each anchor's four codes as ``tx, ty, tw, th`` in the places the SSD config gives
    ``ty, tx, th, tw`` (TensorFlow's box coder writes y first: tensorflow/models: research/object_detection/
    box_coders/faster_rcnn_box_coder.py, ``_decode``; hailort: libhailort/src/net_flow/ops_metadata/
    ssd_op_metadata.hpp, ``ty_index``, ``tx_index``, ``th_index``, ``tw_index``): the family's decoder given each
    regression map with the y and x codes of every anchor exchanged."""
    ssd = ssd_config(config)
    ty, tx, th, tw = ssd.box_indices
    order = np.arange(BOX_CHANNELS)
    order[[ty, tx, th, tw]] = [tx, ty, tw, th]
    seen = dict(outputs)
    for level in layout(specs, config.input_hw, ssd.anchors).levels:
        spec = level.box.host_spec
        codes = np.asarray(outputs[spec.name]).reshape(*spec.shape[:2], len(level.anchors), BOX_CHANNELS)
        seen[spec.name] = np.ascontiguousarray(codes[..., order].reshape(np.shape(outputs[spec.name])))
    return decode(seen, specs, config)


def sigmoid_scores_read_as_softmax(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder written for a softmax SSD (torchvision/models/detection/ssd.py, ``postprocess_detections``:
    ``F.softmax(head_outputs["cls_logits"], dim=-1)`` over the classes and the background) over a model that
    scores each class by its own sigmoid, compiled into the HEF (HailoRT's SSD op applies none: hailort:
    libhailort/src/net_flow/ops/ssd_post_process.hpp, ``extract_bbox_classes``): each anchor's class values put
    through a softmax, then the family's decoder."""
    ssd = ssd_config(config)
    seen, seen_specs = dict(outputs), dict(specs)
    heads = layout(specs, config.input_hw, ssd.anchors)
    for level in heads.levels:
        spec = level.classes.host_spec
        values = to_float(host_array(outputs, spec), spec).astype(np.float64).reshape(-1, heads.classes)
        weights = np.exp(values - values.max(axis=1, keepdims=True))
        softmax = weights / weights.sum(axis=1, keepdims=True)
        seen[spec.name] = softmax.reshape(spec.shape).astype(np.float32)
        seen_specs[spec.name] = replace(spec, format_type=FormatType.FLOAT32, quant=())
    return decode(seen, seen_specs, config)


def background_kept(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder that keeps the background class: it takes each anchor's first ``nc`` class values for the
    model's ``nc`` classes, the SSD config's background (the first, as TensorFlow's label maps count from 1)
    among them (hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp, ``background_removal_index``
    skipped): the family's decoder over class maps cut to those values, with no background to leave out. The
    background comes back as the model's first class, every class one id higher, the last lost."""
    ssd = ssd_config(config)
    heads = layout(specs, config.input_hw, ssd.anchors)
    kept = heads.classes - (ssd.background_class is not None)  # the model's classes, as the host counts them
    seen, seen_specs = dict(outputs), dict(specs)
    for level in heads.levels:
        spec = level.classes.host_spec
        values = np.asarray(outputs[spec.name]).reshape(*spec.shape[:2], len(level.anchors), heads.classes)
        first = np.ascontiguousarray(values[..., :kept].reshape(*spec.shape[:2], -1))
        seen[spec.name], seen_specs[spec.name] = first, replace(spec, shape=first.shape)
    return decode(seen, seen_specs, replace(config, ssd=replace(ssd, background_class=None)))


SSD_MODES: tuple[Mode, ...] = (
    Mode(
        "ssd_box_coding_x_first",
        "an SSD head's box codes read x first (tx, ty, tw, th) where the SSD config gives ty, tx, th, tw",
        "host decoder over the raw-output HEF reading each anchor's y and x codes in each other's place",
        SSD_CODING_X_FIRST,
        host_decoder(box_coding_x_first),
    ),
    Mode(
        "ssd_sigmoid_scores_read_as_softmax",
        "a softmax SSD's decoder over a model whose class scores are sigmoids (compiled into the HEF)",
        "host decoder over the raw-output HEF putting each anchor's class values, the background's included, "
        "through a softmax",
        SSD_SCORES_SOFTMAXED,
        host_decoder(sigmoid_scores_read_as_softmax),
    ),
    Mode(
        "ssd_background_kept",
        "the SSD config's background class kept: read as the model's first class",
        "host decoder over the raw-output HEF taking each anchor's first nc class values, the background's "
        "included, for the model's nc classes",
        SSD_BACKGROUND_AS_FIRST_CLASS,
        host_decoder(background_kept),
    ),
)


def own_modes() -> tuple[Mode, ...]:
    return SSD_MODES
