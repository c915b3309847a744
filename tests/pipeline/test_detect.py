"""Detection paths: the full-ONNX reference, raw heads and NMS buffers from runners fed like a HEF."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
import pytest

from harness.backends.base import InputSpec
from harness.backends.onnx.runner import OnnxRunner
from harness.conformance.agreement import same_detections
from harness.conformance.misreadings import reproduce_path
from harness.core.detections import Detections
from harness.core.errors import GraphError, HarnessError, SpecError
from harness.core.head_family import HeadFamily
from harness.core.path_names import HAILO
from harness.core.settings import EvalSettings, Preprocess
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo
from harness.decode.dfl import decode_candidates
from harness.doctor.mistakes import fcr_read_channel_first
from harness.families.yolov8.decode import decode
from harness.families.yolov8.onnx import find_heads
from harness.formats.nms_buffer import encode_nms_by_class
from harness.formats.quant import quantize
from harness.inputs.export_facts import onnx_class_names
from harness.inputs.onnx_graph import cut_at_heads, dequantize_decode_tail, load_model
from harness.inputs.preprocess import load_image, to_nchw_float
from harness.pipeline.detect import (
    BboxOnlyPath,
    DecoderPath,
    NmsBufferPath,
    OnnxPath,
    RawHeadsPath,
    prepare,
    runner_path,
)
from harness.verdict.metrics import agreement, cells_above_threshold

from support.encoders import encode_nms_by_score

MODEL = "yolo11n_coco80_320_int8.onnx"
HW = (320, 320)
# Box side differences between decoding the cut heads and the model's float-DFL tail: 1.2e-4 input px
# measured (harness.conformance.verify_decode); at the fixture images' scale (>= 0.5) that is < 5e-3 original px.
BOX_TOLERANCE = 5e-3
SCORE_TOLERANCE = 1e-6


class HeadsAsHef:
    """The cut ONNX heads behind a HEF's input contract: uint8 NHWC 0-255 in; /255 and NCHW inside.

    ``quantized``: class heads get the sigmoid (as compiled in) and all heads arrive UINT8 with quant
    infos, box heads labelled FCR as a compiled HEF reports them."""

    label = "HeadsAsHef (a test runner)"

    BOX_QUANT = QuantInfo(128.0, 40 / 255, -128 * 40 / 255, 127 * 40 / 255)
    CLASS_QUANT = QuantInfo(0.0, 1 / 255, 0.0, 1.0)

    def __init__(self, cut: OnnxRunner, quantized: bool = False) -> None:
        ((self._name, spec),) = cut.input_specs.items()
        self._cut, self._quantized = cut, quantized
        self.input_specs = {self._name: InputSpec(self._name, (*spec.hw, 3), FormatOrder.NHWC, FormatType.UINT8)}
        self.output_specs = dict(cut.output_specs)
        if quantized:
            self.output_specs = {n: self._quantized_spec(s) for n, s in self.output_specs.items()}
        self.frames: list[np.ndarray] = []

    def _quantized_spec(self, spec: OutputSpec) -> OutputSpec:
        box = spec.channels == 64
        order, quant = (FormatOrder.FCR, self.BOX_QUANT) if box else (FormatOrder.NHWC, self.CLASS_QUANT)
        return OutputSpec(spec.name, spec.shape, order, FormatType.UINT8, (quant,))

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        frame = feed[self._name]
        assert frame.dtype == np.uint8 and frame.shape == (1, *self.input_specs[self._name].shape)
        self.frames.append(frame)
        outputs = self._cut.infer({self._name: to_nchw_float(frame[0])})
        if not self._quantized:
            return outputs
        result = {}
        for name, array in outputs.items():
            spec = self.output_specs[name]
            values = array if spec.format_order is FormatOrder.FCR else 1 / (1 + np.exp(-array))
            result[name] = quantize(values, spec.quant)
        return result

    def __enter__(self) -> HeadsAsHef:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class NmsOf:
    """A runner whose one output is the NMS buffer of the decoded heads of another runner."""

    label = "NmsOf (a test runner)"

    def __init__(self, heads: HeadsAsHef, order: FormatOrder, settings: EvalSettings) -> None:
        self._heads, self._config = heads, settings.decode_config()
        self.input_specs = heads.input_specs
        nms = NmsShape(80, settings.max_per_class)
        self.spec = OutputSpec(
            "yolov8_nms_postprocess", (80, 5, settings.max_per_class), order, FormatType.FLOAT32, nms=nms
        )
        self.output_specs = {self.spec.name: self.spec}

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, object]:
        dets = decode(self._heads.infer(feed), self._heads.output_specs, self._config)
        encode = encode_nms_by_class if self.spec.format_order is FormatOrder.NMS_BY_CLASS else encode_nms_by_score
        return {self.spec.name: encode(dets, self.spec, self._config.input_hw)}

    def __enter__(self) -> NmsOf:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class FixedNms:
    """Hands back the same NMS_BY_CLASS buffer for every frame (1 class, boxes given in input pixels)."""

    label = "FixedNms (a test runner)"

    def __init__(self, input_hw: tuple[int, int], boxes_xyxy: list[list[float]]) -> None:
        self.input_specs = {"in": InputSpec("in", (*input_hw, 3), FormatOrder.NHWC, FormatType.UINT8)}
        self.spec = OutputSpec("nms", (1, 5, 10), FormatOrder.NMS_BY_CLASS, FormatType.FLOAT32, nms=NmsShape(1, 10))
        self.output_specs = {"nms": self.spec}
        dets = Detections(np.array(boxes_xyxy), np.linspace(0.9, 0.5, len(boxes_xyxy)), np.zeros(len(boxes_xyxy)))
        self._buffer = encode_nms_by_class(dets, self.spec, input_hw)
        self.frames: list[np.ndarray] = []

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.frames.append(feed["in"])
        return {"nms": self._buffer}

    def __enter__(self) -> FixedNms:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.fixture(scope="module")
def model_path(shared_fixtures: Path) -> Path:
    return shared_fixtures / "onnx" / MODEL


@pytest.fixture(scope="module")
def images(shared_fixtures: Path) -> list[np.ndarray]:
    paths = sorted((shared_fixtures / "datasets/coco128_val16/images/val2017").glob("*.jpg"))
    return [load_image(p) for p in paths[:4]]


@pytest.fixture(scope="module")
def cut(model_path: Path):
    model = load_model(model_path)
    with OnnxRunner(cut_at_heads(model, find_heads(model)), threads=1) as runner:
        yield runner


@pytest.fixture(scope="module")
def float_tail_model(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same export with its int8 DFL conv in float, so its decoded output is the exact DFL."""
    path = tmp_path_factory.mktemp("onnx") / "float_tail.onnx"
    onnx.save(dequantize_decode_tail(load_model(model_path)), path)
    return path


SETTINGS = EvalSettings(input_hw=HW, score_threshold=0.05)


def test_raw_heads_path_agrees_with_the_full_onnx_path_on_real_images(float_tail_model, model_path, cut, images):
    runner = HeadsAsHef(cut)
    heads = RawHeadsPath(runner, SETTINGS, model_path)
    with OnnxPath(float_tail_model, SETTINGS, threads=1) as reference:
        pairs = [(reference.detect(image).detections, heads.detect(image).detections) for image in images]
    assert sum(len(r) for r, _ in pairs) > 10
    assert all(same_detections(r, h, BOX_TOLERANCE, SCORE_TOLERANCE) for r, h in pairs)
    for image, (r, _) in zip(images, pairs, strict=True):
        height, width = image.shape[:2]
        assert (r.boxes >= 0).all() and (r.boxes[:, [0, 2]] <= width).all() and (r.boxes[:, [1, 3]] <= height).all()
    assert all(frame.max() > 1 for frame in runner.frames)  # fed raw 0-255, the /255 is inside the "HEF"


def test_onnx_path_reads_identity_and_class_names_from_the_export(model_path):
    with OnnxPath(model_path, SETTINGS, threads=1) as path:
        assert (path.name, path.emulated, path.variant, path.input_hw) == ("onnx", False, "", HW)
        assert len(path.model_sha256) == 64
        assert path.model_names is not None and len(path.model_names) == 80
        assert path.model_names[:3] == ("person", "bicycle", "car")


def test_onnx_path_refuses_settings_of_another_input_size(model_path):
    with pytest.raises(HarnessError, match=r"input_hw \(640, 640\), expected the model input \(320, 320\)"):
        OnnxPath(model_path, EvalSettings(input_hw=(640, 640)))


def test_raw_heads_path_counts_cells_as_the_decoder_scores_them(model_path, cut, images):
    for quantized in (False, True):
        runner = HeadsAsHef(cut, quantized=quantized)
        path = RawHeadsPath(runner, SETTINGS, model_path)
        frame = path.detect(images[0])
        outputs = runner.infer({next(iter(runner.input_specs)): prepare(images[0], SETTINGS)[0][None]})
        _, scores = decode_candidates(outputs, runner.output_specs, SETTINGS.decode_config())
        assert frame.cells == cells_above_threshold([scores], SETTINGS.score_threshold)
        assert frame.cells is not None and frame.cells.cells == 2100 and 0 < frame.cells.cells_above < 2100


def test_uint8_heads_with_compiled_sigmoid_give_nearly_the_float_detections(model_path, cut, images):
    float_path = RawHeadsPath(HeadsAsHef(cut), SETTINGS, model_path)
    uint8_path = RawHeadsPath(HeadsAsHef(cut, quantized=True), SETTINGS, model_path)
    reference = [float_path.detect(i).detections for i in images]
    candidate = [uint8_path.detect(i).detections for i in images]
    found = agreement(reference, candidate)
    assert found.matched >= 0.8 * found.n_reference and found.n_reference > 10


@pytest.mark.parametrize("order", [FormatOrder.NMS_BY_CLASS, FormatOrder.NMS_BY_SCORE])
def test_nms_buffer_path_gives_the_detections_of_the_raw_heads_path(model_path, cut, images, order):
    heads = HeadsAsHef(cut)
    raw = RawHeadsPath(heads, SETTINGS, model_path, name=HAILO)
    buffered = NmsBufferPath(NmsOf(heads, order, SETTINGS), SETTINGS, model_path, name=HAILO)
    assert not buffered.emulated and buffered.name == "hailo"
    for image in images:
        a, b = raw.detect(image), buffered.detect(image)
        assert b.cells is None
        assert same_detections(a.detections, b.detections, BOX_TOLERANCE, SCORE_TOLERANCE)


@pytest.mark.parametrize(
    ("preprocess", "input_box"),
    [
        # 100x200 (h, w) image into 64x64: letterbox scale 0.32, image 32 rows high at row 16
        (Preprocess.LETTERBOX, [6.4, 9.6 + 16, 19.2, 28.8 + 16]),
        # plain resize: x scale 0.32, y scale 0.64
        (Preprocess.RESIZE, [6.4, 19.2, 19.2, 57.6]),
    ],
)
def test_nms_buffer_path_maps_boxes_back_to_original_pixels(tmp_path, preprocess, input_box):
    model = tmp_path / "m.hef"
    model.write_bytes(b"model")
    settings = EvalSettings(input_hw=(64, 64), preprocess=preprocess)
    runner = FixedNms((64, 64), [input_box, [-5, -5, 70, 70]])
    path = NmsBufferPath(runner, settings, model)
    frame = path.detect(np.full((100, 200, 3), 200, np.uint8))
    np.testing.assert_allclose(frame.detections.boxes, [[20, 30, 60, 90], [0, 0, 200, 100]], atol=1e-4)
    assert runner.frames[0].shape == (1, 64, 64, 3) and runner.frames[0].max() == 200
    assert path.model_sha256 == hashlib.sha256(b"model").hexdigest()
    assert (path.name, path.emulated, frame.cells) == ("emulated-hailo", True, None)


def test_paths_refuse_a_runner_not_fed_like_a_hef(model_path, cut):
    with pytest.raises(SpecError, match=r"input 'images': NCHW FLOAT32, expected NHWC UINT8"):
        RawHeadsPath(cut, SETTINGS, model_path)
    with pytest.raises(SpecError, match=r"shape \(320, 320, 3\), expected \(640, 640, 3\)"):
        RawHeadsPath(HeadsAsHef(cut), EvalSettings(input_hw=(640, 640)), model_path)


def test_nms_buffer_path_refuses_raw_head_outputs_and_raw_heads_path_refuses_nms(model_path, cut):
    heads = HeadsAsHef(cut)
    with pytest.raises(SpecError, match="expected exactly one, of order NMS_BY_CLASS or NMS_BY_SCORE"):
        NmsBufferPath(heads, SETTINGS, model_path)
    with pytest.raises(HarnessError, match="not a raw head map"):
        RawHeadsPath(NmsOf(heads, FormatOrder.NMS_BY_CLASS, SETTINGS), SETTINGS, model_path)
    with pytest.raises(
        HarnessError,
        match=r"path name 'onnx': expected one of \['emulated-hailo', 'hailo', 'dfc-fp-optimized', 'dfc-quantized'\]",
    ):
        RawHeadsPath(heads, SETTINGS, model_path, name="onnx")


def test_onnx_class_names_reads_ultralytics_metadata_and_rejects_malformed_names():
    model = onnx.ModelProto()
    assert onnx_class_names(model) is None
    model.metadata_props.add(key="names", value="{0: 'fire', 1: 'smoke'}")
    assert onnx_class_names(model) == ("fire", "smoke")
    model.metadata_props[0].value = "{0: 'fire', 2: 'smoke'}"
    with pytest.raises(GraphError, match="metadata 'names'"):
        onnx_class_names(model, "m.onnx")
    model.metadata_props[0].value = "__import__('os')"
    with pytest.raises(GraphError, match="is not a literal"):
        onnx_class_names(model, "m.onnx")


def test_runner_path_decodes_an_nms_output_as_a_buffer_and_six_heads_as_raw_heads(model_path, cut):
    heads = HeadsAsHef(cut)
    raw = runner_path(heads, SETTINGS, model_path, HAILO, variant="v")
    nms = runner_path(NmsOf(heads, FormatOrder.NMS_BY_SCORE, SETTINGS), SETTINGS, model_path, HAILO)
    assert isinstance(raw, RawHeadsPath) and raw.variant == "v" and not raw.emulated
    assert isinstance(nms, NmsBufferPath) and nms.name == HAILO


def test_a_yolo26_export_gives_the_same_detections_on_the_onnx_path_as_its_float_heads_decoded_one_to_one(
    shared_fixtures: Path,
):
    """The ONNX path keeps an end-to-end export's own rows above the threshold; the raw-head path over the
    same export cut at its heads (no sigmoid inside, as a YOLO26 HEF) decodes them with the one-to-one head."""
    from harness.backends.onnx.runner import FloatHeadsRunner
    from harness.core.head_family import HeadFamily
    from harness.inputs.demo import DEMO26_ONNX

    settings = EvalSettings(input_hw=(256, 256), score_threshold=0.02)
    frames = sorted((shared_fixtures / "datasets/fire_smoke_val/images/val").glob("*.jpg"))[:6]
    compared = 0
    with OnnxPath(DEMO26_ONNX, settings, threads=1) as reference, FloatHeadsRunner(DEMO26_ONNX, threads=1) as runner:
        heads = runner_path(runner, settings, DEMO26_ONNX, HAILO, family=HeadFamily.YOLO26_ONE2ONE)
        assert all(spec.channels in (2, 4) for spec in runner.output_specs.values())
        for path in frames:
            image = load_image(path)
            expected, ours = reference.detect(image).detections, heads.detect(image).detections
            assert same_detections(expected, ours, BOX_TOLERANCE, 1e-5), path.name
            compared += len(expected)
    assert compared >= 20
    assert reference.model_names == ("fire", "smoke")


def test_a_yolo26_raw_head_path_refuses_heads_of_another_family(model_path, cut):
    from harness.core.head_family import HeadFamily

    with pytest.raises(HarnessError, match="4 channels"):
        RawHeadsPath(HeadsAsHef(cut), SETTINGS, model_path, family=HeadFamily.YOLO26_ONE2ONE)


def test_a_batch_gives_each_image_the_detections_it_gets_alone_on_every_path(model_path, cut, images):
    heads = HeadsAsHef(cut)  # no infer_batch: the path feeds it frame by frame
    with OnnxPath(model_path, SETTINGS, threads=1) as reference:
        paths = [
            reference,
            RawHeadsPath(heads, SETTINGS, model_path),
            NmsBufferPath(NmsOf(heads, FormatOrder.NMS_BY_CLASS, SETTINGS), SETTINGS, model_path),
        ]
        for path in paths:
            batched = path.detect_batch(images)
            alone = [path.detect(image) for image in images]
            assert len(batched) == len(images) and sum(len(f.detections) for f in alone) > 10
            for got, expected in zip(batched, alone, strict=True):
                np.testing.assert_array_equal(got.detections.boxes, expected.detections.boxes)
                np.testing.assert_array_equal(got.detections.scores, expected.detections.scores)
                np.testing.assert_array_equal(got.detections.class_ids, expected.detections.class_ids)
                assert got.cells == expected.cells


def test_a_yolov5_export_gives_the_same_detections_on_the_onnx_path_as_its_float_heads_decoded_by_the_harness(
    tmp_path: Path, images
):
    """The ONNX path scores the export's own rows objectness x class; the raw-head path over the export cut
    at its anchored maps (the sigmoid inside, as a YOLOv5 HEF) decodes them with the anchors the export's
    tail multiplies."""
    from harness.backends.onnx.runner import FloatHeadsRunner
    from harness.core.head_family import HeadFamily
    from harness.inputs.export_facts import export_facts

    from support.yolov5_exports import yolov5_export

    export = tmp_path / "v5.onnx"
    onnx.save(yolov5_export(side=64, nc=3, seed=3), export)
    facts = export_facts(export)
    settings = EvalSettings(input_hw=(64, 64), score_threshold=0.3)
    compared = 0
    with OnnxPath(export, settings, threads=1) as reference, FloatHeadsRunner(export, threads=1) as runner:
        heads = runner_path(runner, settings, export, HAILO, family=HeadFamily.YOLOV5, anchors=facts.anchors)
        for image in images:
            expected, ours = reference.detect(image).detections, heads.detect(image).detections
            # in one order (the NMS's): random weights give many boxes alike, too alike to pair by closeness
            np.testing.assert_array_equal(ours.class_ids, expected.class_ids)
            np.testing.assert_allclose(ours.scores, expected.scores, atol=1e-5)
            np.testing.assert_allclose(ours.boxes, expected.boxes, atol=BOX_TOLERANCE)
            compared += len(expected)
    assert compared >= 10


def test_a_yolox_export_gives_the_same_detections_on_the_onnx_path_as_its_float_heads_decoded_by_the_harness(
    tmp_path: Path, images
):
    """The ONNX path scores the export's own rows objectness x class; the raw-head path over its box,
    objectness and class maps (the sigmoid inside on the last two) decodes them as HailoRT's YOLOX op."""
    from harness.backends.onnx.runner import FloatHeadsRunner
    from harness.core.head_family import HeadFamily

    from support.yolox_exports import yolox_export

    export = tmp_path / "yolox.onnx"
    model = yolox_export(side=64, nc=3, seed=3)
    onnx.helper.set_model_props(model, {"names": str({i: f"class{i}" for i in range(3)})})
    onnx.save(model, export)
    settings = EvalSettings(input_hw=(64, 64), score_threshold=0.3)
    compared = 0
    with OnnxPath(export, settings, threads=1) as reference, FloatHeadsRunner(export, threads=1) as runner:
        heads = runner_path(runner, settings, export, HAILO, family=HeadFamily.YOLOX)
        for image in images:
            expected, ours = reference.detect(image).detections, heads.detect(image).detections
            assert same_detections(expected, ours, BOX_TOLERANCE, 1e-5)
            compared += len(expected)
    assert compared >= 10


def test_an_ssd_export_gives_the_same_detections_on_the_onnx_path_as_its_float_heads_decoded_by_the_harness(
    tmp_path: Path, images
):
    """The ONNX path reads the export's own boxes and scores (its TF OD API box coder and sigmoid); the raw-head
    path over its regression and class maps (the sigmoid inside, as an SSD HEF holds it) decodes them as
    HailoRT's SSD op with the config; and, as verify-decode holds a decoder, the candidates equal the tail's
    rows before the NMS."""
    from harness.backends.onnx.runner import DecodeTailRunner, FloatHeadsRunner
    from harness.core.head_family import HeadFamily
    from harness.families.ssd import decode as ssd
    from harness.inputs.export_facts import export_facts
    from harness.inputs.onnx_graph import decode_tail, export_heads
    from harness.inputs.preprocess import letterbox

    from support.ssd_exports import ANCHORS, ssd_config, ssd_export

    export, config = tmp_path / "ssd.onnx", ssd_config()
    model = ssd_export(side=64, nc=3, seed=3)
    onnx.save(model, export)
    facts = export_facts(export, ssd=config)
    settings = EvalSettings(input_hw=(64, 64), score_threshold=0.3)
    compared = 0
    with OnnxPath(export, settings, threads=1, facts=facts) as reference, FloatHeadsRunner(export, 1, config) as runner:
        assert reference.variant == f"ssd config {config.digest[:16]}"
        heads = runner_path(runner, settings, export, HAILO, family=HeadFamily.SSD, ssd=config)
        assert heads.variant == reference.variant
        for image in images:
            expected, ours = reference.detect(image).detections, heads.detect(image).detections
            assert same_detections(expected, ours, BOX_TOLERANCE, 1e-6)
            compared += len(expected)
    assert compared >= 10
    found = export_heads(model, ssd=config).heads
    decode_config = settings.decode_config(ssd=config)
    box_error = score_error = 0.0
    with OnnxRunner(cut_at_heads(model, found), 1) as cut, DecodeTailRunner(decode_tail(model, found), 1) as tail:
        layout = ssd.layout(cut.output_specs, (64, 64), ANCHORS)
        for image in images:
            raw = cut.infer({"images": to_nchw_float(letterbox(image, (64, 64))[0])})
            classes = {level.classes.name for level in layout.levels}  # the sigmoid inside, as a HEF holds it
            outputs = {n: (1 / (1 + np.exp(-v)) if n in classes else v) for n, v in raw.items()}
            boxes, scores = ssd.candidates(outputs, layout, decode_config)
            own_boxes, own_scores = ssd.export_rows(tail.infer(raw), decode_config)
            box_error = max(box_error, float(np.abs(boxes - own_boxes).max()))
            score_error = max(score_error, float(np.abs(scores - own_scores).max()))
    assert box_error < 1e-4 and score_error < 1e-6, (box_error, score_error)


class BboxOnlyOf:
    """A runner whose one output is HailoRT's YOLOv8 bbox-only buffer of another runner's heads."""

    label = "BboxOnlyOf (a test runner)"

    def __init__(self, heads: HeadsAsHef, settings: EvalSettings) -> None:
        from harness.formats.bbox_only import bbox_only_spec

        self._heads, self._config = heads, settings.decode_config()
        self.input_specs = heads.input_specs
        cells = sum(s.shape[0] * s.shape[1] for s in heads.output_specs.values()) // 2
        self.spec = bbox_only_spec("yolov8_nms_postprocess", cells, 80, HeadFamily.YOLOV8)
        self.output_specs = {self.spec.name: self.spec}

    def infer(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        from harness.decode.bbox_only import bbox_only_op

        raw = self._heads.infer(feed)
        return {self.spec.name: bbox_only_op(raw, self._heads.output_specs, self._config, HeadFamily.YOLOV8)}

    def __enter__(self) -> BboxOnlyOf:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def test_the_bbox_only_path_runs_the_host_nms_to_the_detections_of_the_nms_buffer_path(model_path, cut, images):
    heads = HeadsAsHef(cut, quantized=True)  # post-sigmoid class maps, as the op reads them
    bbox_only = runner_path(BboxOnlyOf(heads, SETTINGS), SETTINGS, model_path, HAILO)
    buffered = NmsBufferPath(NmsOf(heads, FormatOrder.NMS_BY_CLASS, SETTINGS), SETTINGS, model_path, name=HAILO)
    assert isinstance(bbox_only, BboxOnlyPath) and not bbox_only.emulated
    found = 0
    for image in images:
        a, b = bbox_only.detect(image), buffered.detect(image)
        assert a.cells is None
        # both buffers hold boxes normalised to the input: the same detections within float rounding
        assert same_detections(a.detections, b.detections, BOX_TOLERANCE, SCORE_TOLERANCE)
        found += len(a.detections)
    assert found > 0


def test_the_bbox_only_path_refuses_outputs_that_are_not_one_bbox_only_buffer_of_its_family(model_path, cut):
    heads = HeadsAsHef(cut, quantized=True)
    with pytest.raises(SpecError, match=r"expected exactly one, HailoRT's bbox-only buffer"):
        BboxOnlyPath(heads, SETTINGS, model_path)
    runner = BboxOnlyOf(heads, SETTINGS)
    runner.output_specs = {"nms": dataclasses.replace(runner.spec, format_type=FormatType.UINT8)}
    with pytest.raises(SpecError, match=r"output 'yolov8_nms_postprocess': format type UINT8; expected FLOAT32"):
        BboxOnlyPath(runner, SETTINGS, model_path)
    runner.output_specs = {"nms": dataclasses.replace(runner.spec, shape=(2100, 84))}
    with pytest.raises(SpecError, match=r"shape \(2100, 84\); expected \(1, proposals, 4 \+ classes\)"):
        BboxOnlyPath(runner, SETTINGS, model_path)


def test_a_decoder_path_runs_frames_again_handing_back_the_outputs_its_decoder_was_given(model_path, cut, images):
    runner = HeadsAsHef(cut, quantized=True)  # box heads FCR, class heads NHWC
    path = DecoderPath(runner, EvalSettings(HW), model_path, fcr_read_channel_first, "emulated-hailo", None, "")
    frames = path.decoded_frames(images)
    fed, (name,) = list(runner.frames), runner.input_specs
    assert len(frames) == len(fed) == len(images)
    for frame, image in zip(frames, fed, strict=True):
        outputs = runner.infer({name: image})
        assert all(np.array_equal(frame.outputs[n], outputs[n]) for n in outputs)
        assert same_detections(
            frame.got, fcr_read_channel_first(outputs, runner.output_specs, path.decode_config), 0, 0
        )
    found = reproduce_path(frames, path.output_specs, path.decode_config, path.family)
    assert found is not None and found.differing >= 1 and found.reproduction is not None
    assert found.reproduction.name == "fcr_read_channel_first"
    assert found.reproduction.words.startswith("the FCR heads (")
    unchanged = DecoderPath(runner, EvalSettings(HW), model_path, decode, "emulated-hailo", None, "")
    agreeing = reproduce_path(unchanged.decoded_frames(images), path.output_specs, path.decode_config, path.family)
    assert agreeing is not None and (agreeing.differing, agreeing.reproduction) == (0, None)
