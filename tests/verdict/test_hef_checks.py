"""Static HEF checks on the real YOLOv8s NMS HEF (tolerant read of the truncated fixture), with
each failure injected by editing the description it was read into."""

from dataclasses import replace

import pytest

from harness.core.specs import FormatType, QuantInfo
from harness.families import REGISTERED, part
from harness.inputs.hef.reader import HefInfo, read_hef
from harness.verdict.hef_checks import CheckContext, run_checks
from harness.verdict.hef_family_checks import FamilyChecks

from support.export_facts import yolo_facts, yolov5_facts, yolox_facts

MODEL = yolo_facts(source="yolov8s.onnx")  # a 3-class YOLOv8s export at 640 (reg_max 16)


@pytest.fixture(scope="module")
def hef(shared_fixtures) -> HefInfo:
    return read_hef(shared_fixtures / "hef_bad" / "hailo8l_yolov8s_nms_truncated.hef", tolerant=True)


def _results(ctx: CheckContext) -> dict:
    return {r.name: r for r in run_checks(ctx)}


def _with_group(hef: HefInfo, **changes) -> HefInfo:
    return replace(hef, network_groups=(replace(hef.network_groups[0], **changes),))


def _with_nms(hef: HefInfo, **changes) -> HefInfo:
    return _with_group(hef, nms=replace(hef.network_groups[0].nms, **changes))


def _with_class_limvals(hef: HefInfo, lo: float, hi: float, scale: float) -> HefInfo:
    group = hef.network_groups[0]
    classes = {d.class_stream for d in group.nms.bbox_decoders}
    q = QuantInfo(0, scale, lo, hi) if lo >= 0 else QuantInfo(round(-lo / scale), scale, lo, hi)
    outputs = tuple(replace(s, quant=q, quant_infos=(q,)) if s.name in classes else s for s in group.outputs)
    return _with_group(hef, outputs=outputs)


def test_a_consistent_setup_passes_all_but_the_capped_scores_of_the_real_hef(hef):
    results = _results(CheckContext(hef, MODEL, ("a", "b", "c"), 0.2))
    failed = {name for name, r in results.items() if r.passed is False}
    assert failed == {"class_score_range"}
    assert "0.8902" in results["class_score_range"].message
    assert "calibrat" in results["class_score_range"].message


def test_checks_without_onnx_dataset_or_threshold_skip_with_a_reason(hef):
    results = _results(CheckContext(hef))
    for name in ("input_shape", "nms_classes_vs_onnx", "nms_classes_vs_dataset", "score_threshold"):
        assert results[name].passed is None
        assert any(w in results[name].message for w in ("needs", "no --onnx", "no --score-threshold"))


def test_input_size_mismatch_names_both_sizes(hef):
    r = _results(CheckContext(hef, yolo_facts(input_hw=(320, 320), source="yolov8s.onnx")))["input_shape"]
    assert r.passed is False and "640x640x3" in r.message and "320x320x3" in r.message


def test_nms_classes_are_checked_against_onnx_and_dataset(hef):
    results = _results(CheckContext(hef, yolo_facts(classes=2, source="yolov8s.onnx"), ("fire", "smoke")))
    assert results["nms_classes_vs_onnx"].passed is False
    assert '"classes": 2' in results["nms_classes_vs_onnx"].message
    assert results["nms_classes_vs_dataset"].passed is False
    assert "['fire', 'smoke']" in results["nms_classes_vs_dataset"].message


def test_regression_length_must_match_the_box_channels(hef):
    r = _results(CheckContext(_with_nms(hef, regression_length=8)))["regression_length"]
    assert r.passed is False and '"regression_length": 16' in r.message


def test_a_stride_that_does_not_give_the_grid_fails(hef):
    decoders = hef.network_groups[0].nms.bbox_decoders
    swapped = (replace(decoders[0], stride=16), replace(decoders[1], stride=8), decoders[2])
    r = _results(CheckContext(_with_nms(hef, bbox_decoders=swapped)))["strides_vs_grids"]
    assert r.passed is False and "stride 16" in r.message and "40x40" in r.message


def test_box_and_class_streams_of_different_grids_fail_pairing(hef):
    d = hef.network_groups[0].nms.bbox_decoders
    crossed = (replace(d[0], class_stream=d[1].class_stream), d[1], d[2])
    r = _results(CheckContext(_with_nms(hef, bbox_decoders=crossed)))["decoder_pairing"]
    assert r.passed is False and "80x80" in r.message and "40x40" in r.message


def test_nms_hef_without_sigmoid_fails_and_names_the_alls_line(hef):
    logits = _with_class_limvals(hef, -12.0, 4.0, 16 / 255)
    r = _results(CheckContext(logits))["sigmoid_present"]
    assert r.passed is False and "change_output_activation(conv42, sigmoid)" in r.message


def test_a_well_calibrated_class_output_passes_the_score_range(hef):
    r = _results(CheckContext(_with_class_limvals(hef, 0.0, 0.99, 0.99 / 255)))["class_score_range"]
    assert r.passed is True


def test_class_outputs_that_reach_the_float_models_own_highest_score_are_not_capped(hef):
    """A model that never scores above 0.818 on its images is not capped by outputs that reach 0.818 (the field's
    real fire/smoke YOLO11n); outputs stopping a step short of the default 0.9 still fail where no model says so."""
    reach = _with_class_limvals(hef, 0.0, 0.8182, 0.8182 / 255)
    assert _results(CheckContext(reach))["class_score_range"].passed is False
    own = CheckContext(reach, min_score_cap=0.8185, score_cap_source="the float model's own highest score")
    assert _results(own)["class_score_range"].passed is True  # within one output step (0.0032) of the floor
    capped = _results(
        CheckContext(
            _with_class_limvals(hef, 0.0, 0.355, 0.355 / 255),
            min_score_cap=0.8185,
            score_cap_source="the float model's own highest score",
        )
    )["class_score_range"]
    assert capped.passed is False and ">= 0.8185 (the float model's own highest score)" in capped.message


def test_saturating_logit_range_fails(hef):
    r = _results(CheckContext(_with_class_limvals(hef, -237.0, 43.9, 281 / 255)))["class_score_range"]
    assert r.passed is False and "score >= 0.99" in r.message


def test_lowest_score_above_the_threshold_fails(hef):
    r = _results(CheckContext(_with_class_limvals(hef, 0.3, 0.99, 0.69 / 255), eval_score_threshold=0.2))
    assert r["class_score_range"].passed is False and "every cell" in r["class_score_range"].message


def test_threshold_compiled_into_the_hef_must_equal_the_evaluations(hef):
    r = _results(CheckContext(hef, eval_score_threshold=0.001))["score_threshold"]
    assert r.passed is False and "0.2" in r.message and "0.001" in r.message
    assert _results(CheckContext(hef, eval_score_threshold=0.2))["score_threshold"].passed is True


def test_raw_hef_without_nms_skips_nms_checks(shared_fixtures):
    info = read_hef(shared_fixtures / "hef" / "hailo8_mnist_cnn.hef")
    results = _results(CheckContext(info))
    assert all(results[n].passed is None for n in ("regression_length", "decoder_pairing", "sigmoid_present"))
    assert info.network_groups[0].outputs[0].data_type is FormatType.UINT8


def test_one_class_head_that_never_fires_is_not_a_cap_when_another_reaches_high_scores(hef):
    group = hef.network_groups[0]
    first = group.nms.bbox_decoders[0].class_stream
    high = QuantInfo(0, 0.99 / 255, 0.0, 0.99)
    outputs = tuple(replace(s, quant=high, quant_infos=(high,)) if s.name == first else s for s in group.outputs)
    r = _results(CheckContext(_with_group(hef, outputs=outputs)))["class_score_range"]
    assert r.passed is True and "0.9900" in r.message


def test_a_nan_threshold_compiled_into_the_hef_fails_and_never_equals_the_evaluations(hef):
    r = _results(CheckContext(_with_nms(hef, score_threshold=float("nan")), eval_score_threshold=0.2))
    assert r["score_threshold"].passed is False and "nan (compiled into the HEF)" in r["score_threshold"].message


def test_a_hef_without_a_network_group_fails_one_check_that_says_so(hef):
    (only,) = run_checks(CheckContext(replace(hef, network_groups=())))
    assert (only.name, only.passed) == ("network_group", False)
    assert "network groups: found none (the file was read tolerantly), expected at least one" in only.message


def test_a_box_output_whose_range_passes_88_7_fails_for_the_nan_boxes_hailorts_nms_op_would_give(hef):
    group = hef.network_groups[0]
    assert _results(CheckContext(hef))["box_logit_range"].passed is True  # the real HEF: box logits up to 12.4
    box = group.nms.bbox_decoders[0].box_stream
    q = QuantInfo(0, 0.5, 0.0, 127.5)
    outputs = tuple(replace(s, quant=q, quant_infos=(q,)) if s.name == box else s for s in group.outputs)
    r = _results(CheckContext(_with_group(hef, outputs=outputs)))["box_logit_range"]
    assert r.passed is False and box in r.message and "127.5" in r.message and "NaN box" in r.message


# --- a YOLOv5 NMS HEF: the real HEF's streams as one anchored map per stride ---------------------


def _as_yolov5(hef: HefInfo, anchors=((10, 13), (16, 30), (33, 23)), classes: int = 3) -> HefInfo:
    """The fixture's HEF as a YOLOv5 NMS HEF: its class streams become anchored maps of 3 x (5 + 3)
    channels, post-sigmoid, and its NMS op YOLOv5's, the decoders' anchors ``anchors`` at every stride
    unless a tuple per stride is given."""
    group = hef.network_groups[0]
    per_stride = anchors if isinstance(anchors[0][0], tuple) else (anchors, anchors, anchors)
    decoders = group.nms.bbox_decoders
    q = QuantInfo(0, 1 / 255, 0.0, 1.0)
    kept = {d.class_stream for d in decoders}
    outputs = tuple(
        replace(s, shape=(*s.shape[:2], 3 * (5 + classes)), quant=q, quant_infos=(q,))
        for s in group.outputs
        if s.name in kept
    )
    anchored = tuple(
        replace(d, box_stream=d.class_stream, anchors=tuple(a)) for d, a in zip(decoders, per_stride, strict=True)
    )
    nms = replace(group.nms, kind="yolov5", regression_length=0, bbox_decoders=anchored)
    return _with_group(hef, outputs=outputs, nms=nms)


V5_ANCHORS = (((10, 13), (16, 30), (33, 23)), ((30, 61), (62, 45), (59, 119)), ((116, 90), (156, 198), (373, 326)))


def test_a_consistent_yolov5_setup_passes_its_checks_and_skips_the_dfl_ones(hef):
    results = _results(CheckContext(_as_yolov5(hef, V5_ANCHORS), yolov5_facts(), ("a", "b", "c"), 0.2))
    failed = {name: r.message for name, r in results.items() if r.passed is False}
    assert failed == {}
    assert results["anchors"].passed and results["decoder_pairing"].passed
    skipped = results["regression_length"]
    assert skipped.passed is None and "no regression_length" in skipped.message
    assert results["box_logit_range"].passed is None


def test_a_yolov5_hef_compiled_with_the_default_anchors_for_an_autoanchored_export_names_the_stride(hef):
    evolved = (((12.4, 16.2), (19, 36), (40, 28)), *V5_ANCHORS[1:])
    r = _results(CheckContext(_as_yolov5(hef, V5_ANCHORS), yolov5_facts(anchors=evolved)))["anchors"]
    assert r.passed is False
    assert "stride 8 anchors" in r.message and "[(10, 13), (16, 30), (33, 23)]" in r.message
    assert "[(12, 16), (19, 36), (40, 28)]" in r.message and "autoanchor" in r.message


def test_a_yolov5_hef_with_anchors_of_the_wrong_stride_fails(hef):
    r = _results(CheckContext(_as_yolov5(hef, V5_ANCHORS[::-1]), yolov5_facts()))["anchors"]
    assert r.passed is False and "stride 8 anchors" in r.message


def test_a_yolov5_decoder_whose_anchors_do_not_fit_its_streams_channels_fails(hef):
    two = tuple(group[:2] for group in V5_ANCHORS)
    r = _results(CheckContext(_as_yolov5(hef, two)))["decoder_pairing"]
    assert r.passed is False and "channels" in r.message and "24" in r.message and "16 (2 anchors x (5 + 3" in r.message


@pytest.mark.parametrize("v5_hef", [True, False])
def test_an_nms_op_of_another_head_than_the_exports_fails_naming_both(hef, v5_hef):
    ctx = CheckContext(_as_yolov5(hef, V5_ANCHORS), MODEL) if v5_hef else CheckContext(hef, yolov5_facts())
    r = _results(ctx)["anchors"]
    assert r.passed is False and "meta_arch" in r.message
    assert ("yolov5 (anchors)" in r.message) is v5_hef and ("yolov8 (anchor-free)" in r.message) is not v5_hef


def test_an_nms_op_of_a_kind_no_family_compiles_is_checked_as_box_and_class_streams_without_anchors(hef):
    results = _results(CheckContext(_with_nms(hef, kind="yolov5_seg"), MODEL))
    assert results["decoder_pairing"].passed and results["strides_vs_grids"].passed
    assert "a yolov5_seg NMS op has no regression_length" in results["regression_length"].message
    assert results["box_logit_range"].passed is None
    r = results["anchors"]  # the export's head is YOLOv8's: its op is yolov8
    assert r.passed is False and "yolov5_seg (anchor-free)" in r.message and "yolov8 of the yolov8 head" in r.message


def test_every_family_has_the_static_checks_of_its_nms_op():
    for family in REGISTERED:
        checks = part(family.family, "checks")
        assert all(callable(getattr(checks, name, None)) for name in _PROTOCOL), family.display


_PROTOCOL = [n for n in vars(FamilyChecks) if not n.startswith("_")]


# --- a YOLOX NMS HEF: per stride the real HEF's box and class streams and an objectness stream -------


def _as_yolox(hef: HefInfo, objectness_limvals: tuple[float, float] = (0.0, 1.0)) -> HefInfo:
    """The fixture's HEF as a YOLOX NMS HEF: box streams of 4 channels, its class streams (post-sigmoid), and
    per stride an objectness stream of 1 channel; its NMS op YOLOX's, naming the three."""
    group = hef.network_groups[0]
    probability = QuantInfo(0, 1 / 255, 0.0, 1.0)
    lo, hi = objectness_limvals
    objectness_quant = QuantInfo(round(-lo / ((hi - lo) / 255)), (hi - lo) / 255, lo, hi)
    boxes = {d.box_stream for d in group.nms.bbox_decoders}
    classes = {d.class_stream for d in group.nms.bbox_decoders}
    outputs = [
        replace(s, shape=(*s.shape[:2], 4))
        if s.name in boxes
        else replace(s, quant=probability, quant_infos=(probability,))
        for s in group.outputs
        if s.name in boxes | classes
    ]
    decoders = []
    for i, d in enumerate(group.nms.bbox_decoders):
        cls = next(s for s in outputs if s.name == d.class_stream)
        objectness = replace(cls, name=f"{cls.name}_obj", shape=(*cls.shape[:2], 1), pad_index=100 + i)
        objectness = replace(objectness, quant=objectness_quant, quant_infos=(objectness_quant,))
        outputs.append(objectness)
        decoders.append(replace(d, objectness_stream=objectness.name))
    nms = replace(group.nms, kind="yolox", regression_length=0, bbox_decoders=tuple(decoders))
    return _with_group(hef, outputs=tuple(outputs), nms=nms)


def test_a_consistent_yolox_setup_passes_its_checks_and_skips_the_dfl_and_anchor_ones(hef):
    results = _results(CheckContext(_as_yolox(hef), yolox_facts(), ("a", "b", "c"), 0.2))
    assert {name: r.message for name, r in results.items() if r.passed is False} == {}
    assert (
        results["decoder_pairing"].passed
        and "box, objectness and class of one grid" in results["decoder_pairing"].message
    )
    assert results["regression_length"].passed is None and results["anchors"].passed is None


def test_a_yolox_op_naming_a_box_layer_as_objectness_fails_the_pairing_naming_the_stream(hef):
    op = _as_yolox(hef)
    d = op.network_groups[0].nms.bbox_decoders
    swapped = (replace(d[0], objectness_stream=d[0].box_stream, box_stream=d[0].objectness_stream), *d[1:])
    r = _results(CheckContext(_with_nms(op, bbox_decoders=swapped), yolox_facts()))["decoder_pairing"]
    assert r.passed is False and "stride 8 box stream" in r.message and "found 1, expected 4" in r.message


def test_a_yolox_op_with_logit_objectness_fails_the_sigmoid_check(hef):
    r = _results(CheckContext(_as_yolox(hef, (-9.0, 4.0)), yolox_facts()))["sigmoid_present"]
    assert r.passed is False and "_obj limvals" in r.message and "[-9, 4]" in r.message


@pytest.mark.parametrize(("kind", "words"), [("yolov8", "yolov8 (anchor-free)"), ("yolov5", "yolov5 (anchors)")])
def test_a_yolox_export_compiled_with_another_nms_op_fails_naming_the_yolox_op(hef, kind, words):
    r = _results(CheckContext(_with_nms(_as_yolox(hef), kind=kind), yolox_facts()))["anchors"]
    assert r.passed is False and f"found {words}" in r.message and "expected yolox of the yolox head" in r.message
    r = _results(CheckContext(_as_yolox(hef), MODEL))["anchors"]
    assert r.passed is False and "found yolox (anchor-free), expected yolov8 of the yolov8 head" in r.message


def test_a_bbox_only_op_is_held_to_the_export_as_the_nms_op_and_says_the_host_must_run_the_nms(hef):
    bbox_only = _with_nms(hef, bbox_decoding_only=True)
    results = _results(CheckContext(bbox_only, MODEL, ("a", "b", "c"), 0.25))
    failed = {name for name, r in results.items() if r.passed is False}
    assert failed == {"class_score_range"}  # as the NMS op's, and no threshold mismatch: none is compiled in
    r = results["score_threshold"]
    assert r.passed and "decodes boxes only" in r.message and "the host must run the NMS" in r.message
    assert "0.25" in r.message and "compiled 0.2 goes unused" in r.message
    nms_op = _with_nms(hef, score_threshold=0.5)  # the NMS op's threshold is applied: it must be the evaluation's
    assert _results(CheckContext(nms_op, MODEL, None, 0.25))["score_threshold"].passed is False
    wrong = _with_nms(bbox_only, regression_length=8, classes=80)
    results = _results(CheckContext(wrong, MODEL))
    assert results["regression_length"].passed is False and results["nms_classes_vs_onnx"].passed is False
    swapped = bbox_only.network_groups[0].nms.bbox_decoders
    swapped = (replace(swapped[0], stride=16), replace(swapped[1], stride=8), swapped[2])
    assert _results(CheckContext(_with_nms(bbox_only, bbox_decoders=swapped)))["strides_vs_grids"].passed is False


def test_a_yolov5_bbox_only_op_is_held_to_the_exports_anchors(hef):
    op = _as_yolov5(hef, V5_ANCHORS)
    bbox_only = _with_nms(op, bbox_decoding_only=True)
    assert _results(CheckContext(bbox_only, yolov5_facts()))["anchors"].passed
    evolved = (((12.4, 16.2), (19, 36), (40, 28)), *V5_ANCHORS[1:])
    assert _results(CheckContext(bbox_only, yolov5_facts(anchors=evolved)))["anchors"].passed is False


# --- an SSD NMS HEF (written field by field) against the small SSD export and its config ------------


@pytest.fixture(scope="module")
def ssd_facts(tmp_path_factory):
    import onnx

    from harness.inputs.export_facts import export_facts

    from support.ssd_exports import ssd_config, ssd_export

    path = tmp_path_factory.mktemp("ssd") / "ssd.onnx"
    onnx.save(ssd_export(side=64, nc=3, seed=3), path)
    return export_facts(path, ssd=ssd_config())


def _ssd_hef(anchors=None, coding=(10, 5, 0, 0, 0, 0), classes=3, class_channels=(9, 6)) -> HefInfo:
    """An SSD NMS HEF of the small export's two layers (16x16 and 8x8, 3 and 2 anchors, 3 classes with the
    background first, removed)."""
    from harness.inputs.hef.reader import parse_hef

    from support.hef_writer import Decoder, Stream, nms_hef
    from support.ssd_exports import ANCHORS

    anchors = anchors or ANCHORS
    streams = (
        Stream("net/reg16", (16, 16, 12), 0, 128, 0.1),
        Stream("net/cls16", (16, 16, class_channels[0]), 1, 0, 1 / 255),
        Stream("net/reg8", (8, 8, 8), 2, 128, 0.1),
        Stream("net/cls8", (8, 8, class_channels[1]), 3, 0, 1 / 255),
    )
    decoders = (Decoder(0, 2, 3, anchors[1]), Decoder(0, 0, 1, anchors[0]))  # listed smallest grid first
    data = nms_hef(streams, "ssd", decoders, classes, False, (64, 64), ssd_coding=coding, background_index=0)
    return parse_hef(data, "ssd.hef")


SSD_CHECKS = ("nms_classes_vs_onnx", "nms_classes_vs_dataset", "strides_vs_grids", "decoder_pairing", "anchors")


def test_an_ssd_hef_compiled_from_its_config_passes_the_checks_an_ssd_op_has(ssd_facts):
    results = _results(CheckContext(_ssd_hef(), ssd_facts, ("fire", "smoke")))
    assert {name: results[name].passed for name in SSD_CHECKS} == dict.fromkeys(SSD_CHECKS, True)
    assert "2 (3 less the background class 0) == 2 dataset names" in results["nms_classes_vs_dataset"].message
    assert results["regression_length"].passed is None


@pytest.mark.parametrize(
    ("hef", "check", "words"),
    [
        (lambda: _ssd_hef(coding=(5, 5, 0, 0, 0, 0)), "anchors", "SSD op centers_scale_factor: found 5, expected 10"),
        (lambda: _ssd_hef(coding=(10, 5, 1, 0, 3, 2)), "anchors", "SSD op box_indices: found (1, 0, 3, 2)"),
        (
            lambda: _ssd_hef(anchors=(((0.2, 0.2), (0.14, 0.28), (0.28, 0.14)), ((0.45, 0.45), (0.6, 0.32)))),
            "anchors",
            "SSD op layer 0 (largest grid first) anchors (w, h): found [(0.2, 0.2), (0.14, 0.28)",
        ),
        (lambda: _ssd_hef(classes=4), "nms_classes_vs_onnx", "NMS op classes: found 4, expected 3"),
        (
            lambda: _ssd_hef(class_channels=(12, 6)),
            "decoder_pairing",
            "NMS decoder 1 stream net/cls16 channels: found 12, expected 9 (3 classes x the decoder's 3 anchors)",
        ),
    ],
)
def test_an_ssd_hef_of_another_box_coding_or_layout_than_its_config_fails_naming_the_field(
    ssd_facts, hef, check, words
):
    r = _results(CheckContext(hef(), ssd_facts))[check]
    assert r.passed is False and words in r.message, r.message
