"""The Dataflow Compiler's emulator as a runner, against the fake hailo_sdk_client
(tests/support/fake_hailo_sdk_client.py), whose emulation runs the real demo model: what a stage path
detects can be held against the ONNX path."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from harness.backends.dfc import CompileRequest, DfcError, HarRunner, compile_hef, compiled_nms_thresholds
from harness.backends.dfc.runner import output_specs
from harness.core.errors import HarnessError, SpecError
from harness.core.path_names import DFC_FP_OPTIMIZED, DFC_QUANTIZED, EmulationStage
from harness.core.settings import EvalSettings
from harness.core.specs import FormatOrder, FormatType
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.preprocess import load_image
from harness.inputs.synthetic import Recipe, write_dataset
from harness.pipeline.detect import NmsBufferPath, OnnxPath, RawHeadsPath
from harness.verdict.diagnosis_evidence import matched_share
from harness.verdict.metrics.agreement import agreement

SETTINGS = EvalSettings((256, 256), score_threshold=0.2)


@pytest.fixture(scope="module")
def frames(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few demo-like frames: labelled val images and calibration images of the classes."""
    out = tmp_path_factory.mktemp("frames")
    write_dataset(out, Recipe(seed=3, train=0, val=6, calib=8))
    return out


@pytest.fixture
def har(sdk: ModuleType, frames: Path, tmp_path: Path) -> Path:
    request = CompileRequest(DEMO, frames / "images" / "calib", calibration_count=8)
    return compile_hef(request, tmp_path / "out", cache_root=tmp_path / "cache").har


def _without_nms(har: Path, out: Path) -> Path:
    """The same HAR as if its model script had no nms_postprocess (the fake keeps the script beside the HN)."""
    saved = json.loads(har.read_text())
    saved["emulation"]["nms"] = None
    out.write_text(json.dumps(saved))
    return out


def _calls(fake: ModuleType, name: str) -> list[dict]:
    return [kwargs for call, kwargs in fake.CALLS if call == name]


def test_a_stage_enters_its_inference_context_once_and_feeds_float_nhwc(sdk: ModuleType, har: Path) -> None:
    sdk.CALLS.clear()
    with HarRunner(har, "quantized", (256, 256)) as runner:
        for _ in range(3):
            runner.infer({"input": np.zeros((1, 256, 256, 3), dtype=np.uint8)})
    assert _calls(sdk, "ClientRunner") == [{"hw_arch": None, "har": str(har)}]
    assert [c["target"] for c in _calls(sdk, "infer_context")] == [sdk.InferenceContext.SDK_QUANTIZED]
    # the probe frame when it opens, then the three frames
    assert [(c["context"], c["shape"], c["dtype"]) for c in _calls(sdk, "infer")] == [
        (sdk.InferenceContext.SDK_QUANTIZED, (1, 256, 256, 3), np.float32)
    ] * 4


def test_an_nms_har_has_one_nms_by_class_output_and_a_raw_har_six_float_heads(
    sdk: ModuleType, har: Path, tmp_path: Path
) -> None:
    with HarRunner(har, EmulationStage.FP_OPTIMIZED, (256, 256)) as runner:
        (spec,) = runner.output_specs.values()
        assert (spec.format_order, spec.format_type, spec.shape) == (
            FormatOrder.NMS_BY_CLASS,
            FormatType.FLOAT32,
            (2, 5, 100),
        )
        assert spec.nms is not None and (spec.nms.number_of_classes, spec.nms.max_bboxes_per_class) == (2, 100)
        assert runner.infer({"input": np.zeros((1, 256, 256, 3), np.uint8)})[spec.name].shape == (2, 5, 100)
    with HarRunner(_without_nms(har, tmp_path / "raw.har"), "fp_optimized", (256, 256)) as runner:
        specs = runner.output_specs
        assert len(specs) == 6 and {s.format_order for s in specs.values()} == {FormatOrder.NHWC}
        assert sorted(s.shape for s in specs.values()) == sorted([(g, g, c) for g in (32, 16, 8) for c in (64, 2)])


@pytest.mark.parametrize("with_nms", [True, False])
def test_the_fp_optimized_stage_detects_what_the_onnx_detects(
    sdk: ModuleType, har: Path, frames: Path, tmp_path: Path, with_nms: bool
) -> None:
    source = har if with_nms else _without_nms(har, tmp_path / "raw.har")
    dataset = load_yolo(frames)
    kind = NmsBufferPath if with_nms else RawHeadsPath
    found = 0
    with OnnxPath(DEMO, SETTINGS) as onnx, HarRunner(source, "fp_optimized", (256, 256)) as runner:
        path = kind(runner, SETTINGS, source, DFC_FP_OPTIMIZED, onnx.model_names)
        assert path.emulated and path.fps is None
        for sample in dataset.samples:
            image = load_image(sample.path)
            want, got = onnx.detect(image).detections, path.detect(image).detections
            assert len(got) == len(want)
            order_w, order_g = np.lexsort(want.boxes.T), np.lexsort(got.boxes.T)
            np.testing.assert_allclose(got.boxes[order_g], want.boxes[order_w], atol=1e-3)
            np.testing.assert_allclose(got.scores[order_g], want.scores[order_w], atol=1e-5)
            found += len(got)
    assert found > len(dataset.samples)  # the frames show fire and smoke: there was something to compare


def test_the_quantized_stage_scores_stay_inside_the_calibrated_range(sdk: ModuleType, har: Path, frames: Path) -> None:
    dataset = load_yolo(frames)
    with HarRunner(har, "quantized", (256, 256)) as runner:
        path = NmsBufferPath(runner, SETTINGS, har, DFC_QUANTIZED, ("fire", "smoke"))
        scores = np.concatenate([path.detect(load_image(s.path)).detections.scores for s in dataset.samples])
    assert scores.size and scores.max() <= 1 and scores.min() >= SETTINGS.score_threshold


def test_output_specs_name_the_shapes_they_cannot_read() -> None:
    heads = tuple(np.zeros((1, g, g, c), np.float32) for g in (32, 16, 8) for c in (64, 2))
    assert [s.shape for s in output_specs(heads, "HAR x").values()] == [a.shape[1:] for a in heads]
    with pytest.raises(SpecError, match=r"HAR x: the emulator returned outputs of shapes \[\(1, 8400, 6\)\]"):
        output_specs((np.zeros((1, 8400, 6)),), "HAR x")
    assert len(output_specs(heads[:4], "HAR x")) == 4  # two strides: the head layout decides if they pair up
    with pytest.raises(SpecError, match=r"expected raw head maps \(N, H, W, C\) or one NMS output"):
        output_specs((*heads[:5], np.zeros((1, 8400, 6))), "HAR x")


def test_a_missing_har_and_a_failing_emulator_are_named(
    sdk: ModuleType, har: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(HarnessError, match=r"missing.har' \(quantized emulation\): no such file"):
        HarRunner(tmp_path / "missing.har", "quantized", (256, 256))
    with pytest.raises(SpecError, match=r"images of shape \(1, 320, 320, 3\), expected \(N, 256, 256, 3\)"):
        with HarRunner(har, "quantized", (256, 256)) as runner:
            runner.infer({"input": np.zeros((1, 320, 320, 3), np.uint8)})

    def broken(self: object, context: object, dataset: object, batch_size: int | None = None) -> object:
        raise RuntimeError("emulation graph could not be built")

    monkeypatch.setattr(sdk.ClientRunner, "infer", broken)
    with pytest.raises(DfcError, match=r"\(fp_optimized emulation\): infer failed: RuntimeError: emulation graph"):
        HarRunner(har, "fp_optimized", (256, 256))
    with pytest.raises(ValueError):
        HarRunner(har, "hardware", (256, 256))


@pytest.mark.dfc
def test_real_dfc_stages_of_the_demo_model_find_the_boxes_the_onnx_finds(frames: Path, tmp_path: Path) -> None:
    """With the real Dataflow Compiler: nearly every box of the ONNX path comes back from fp_optimized
    (same class, IoU >= 0.5), and most from the quantized stage."""
    request = CompileRequest(DEMO, frames / "images" / "calib", calibration_count=8)
    har = compile_hef(request, tmp_path / "out", cache_root=tmp_path / "cache").har
    dataset = load_yolo(frames)
    with OnnxPath(DEMO, SETTINGS) as onnx:
        want = [onnx.detect(load_image(s.path)).detections for s in dataset.samples]
    floors = {EmulationStage.FP_OPTIMIZED: 0.95, EmulationStage.QUANTIZED: 0.8}
    for stage, name in ((EmulationStage.FP_OPTIMIZED, DFC_FP_OPTIMIZED), (EmulationStage.QUANTIZED, DFC_QUANTIZED)):
        with HarRunner(har, stage, (256, 256)) as runner:
            path = NmsBufferPath(runner, SETTINGS, har, name, ("fire", "smoke"))
            got = [path.detect(load_image(s.path)).detections for s in dataset.samples]
        assert matched_share(agreement(want, got)) >= floors[stage], stage


def test_compiled_nms_thresholds_are_read_from_the_config_beside_the_har(har: Path, tmp_path: Path) -> None:
    assert compiled_nms_thresholds(har) == (0.2, 0.7)
    renamed = tmp_path / "model.har"
    renamed.write_bytes(har.read_bytes())
    assert compiled_nms_thresholds(renamed) is None  # not named as compile writes it: nothing to read
    broken = tmp_path / "x_optimized.har"
    broken.write_bytes(b"")
    for text, words in (
        ('{"nms_iou_th": 0.7}', r"x_nms_config\.json: field nms_scores_th is missing"),
        ('{"nms_scores_th": "0.2", "nms_iou_th": 0.7}', r"field nms_scores_th is '0\.2', expected a number"),
        ('{"nms_scores_th": 0.2, "nms_scores_th": 0.3}', r"key 'nms_scores_th' given twice"),
    ):
        (tmp_path / "x_nms_config.json").write_text(text)
        with pytest.raises(HarnessError, match=words):
            compiled_nms_thresholds(broken)
