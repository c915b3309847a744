"""The doctor on the project's YOLOX and SSD fire/smoke exports (their first 30 images): each family's own modes,
host decoders over the raw-output HEF, caught by a gate and named by reproducing their mistake on their own
frames, at the default operating threshold and at a deployment one; the clean controls raise no alarm."""

from dataclasses import replace
from pathlib import Path

import pytest

from harness.conformance.suite import run_conformance
from harness.conformance.words import REPRODUCED_NAMES
from harness.core.head_family import HeadFamily
from harness.doctor.adapters import HostPath
from harness.doctor.bench import open_bench
from harness.doctor.evidence import REPRODUCTION_FRAMES
from harness.doctor.mistakes import scores_shifted
from harness.doctor.mode import Injected, Mode
from harness.doctor.modes import family_modes, modes_for
from harness.doctor.table import DoctorTable, controls, run_mode
from harness.families.ssd import modes as ssd_modes
from harness.families.ssd import scenes as ssd_scenes
from harness.families.yolox import modes as yolox_modes
from harness.families.yolox import scenes as yolox_scenes
from harness.pipeline.option_values import ssd_config
from harness.pipeline.spec import SettingsSpec

IMAGES = 30
DATA = Path(__file__).resolve().parents[1] / "support" / "data"
EXPORTS = {
    HeadFamily.YOLOX: (DATA / "fire_smoke_yolox_256.onnx", None),
    HeadFamily.SSD: (DATA / "fire_smoke_ssd_256.onnx", DATA / "fire_smoke_ssd_256.ssd.json"),
}


@pytest.fixture(scope="session")
def doctor_cache(tmp_path_factory):
    """The cache the other doctor tests use too (same session path), so nothing is made twice."""
    return tmp_path_factory.getbasetemp() / "doctor-cache"


@pytest.fixture(
    scope="module",
    params=[(f, t) for f in EXPORTS for t in (0.2, 0.5)],
    ids=lambda p: f"{p[0].value}-threshold_{p[1]}",
)
def bench(doctor_cache, request):
    """A family's fire/smoke export at the default operating threshold and at a deployment one."""
    family, threshold = request.param
    onnx, config = EXPORTS[family]
    settings = SettingsSpec(score_threshold=threshold, ssd=ssd_config(str(config)) if config else None)
    return open_bench(onnx, first=IMAGES, cache_dir=doctor_cache, settings=settings)


def test_yolox_and_ssd_offer_their_own_modes_each_expected_to_be_named_by_a_reproduced_misreading():
    yolox = [m.name for m in family_modes(HeadFamily.YOLOX).own_modes()]
    ssd = [m.name for m in family_modes(HeadFamily.SSD).own_modes()]
    assert yolox == ["yolox_sizes_without_the_exp", "yolox_objectness_left_out"]
    assert ssd == ["ssd_box_coding_x_first", "ssd_sigmoid_scores_read_as_softmax", "ssd_background_kept"]
    for family in EXPORTS:
        for mode in family_modes(family).own_modes():
            assert mode.expected in REPRODUCED_NAMES and not mode.gap and not mode.needs_emulator, mode.name


def test_each_own_mode_fails_a_gate_and_is_named_by_reproducing_it_on_its_own_frames(bench):
    assert bench.hef is not None  # the emulator takes both exports: the modes run over its raw-output HEF
    for mode in family_modes(bench.run.family).own_modes():
        row = run_mode(bench, mode)
        assert row.injected and row.gate_failed, (mode.name, row.gate)
        assert (row.diagnosis, row.correct) == (mode.expected, True), (mode.name, row.cause)
        assert f"on each of the {REPRODUCTION_FRAMES} frames run again" in row.cause, row.cause


def test_the_clean_controls_of_yolox_and_ssd_pass_every_gate_and_no_rule_fires(bench):
    for row in controls(bench):
        assert (row.gate_failed, row.diagnosis) == (False, "none"), (row.mode, row.gate, row.cause)


def _offered(bench, name: str) -> Mode:
    """The mode ``name`` as the bench's family is offered it (with the gap its family states)."""
    return {m.name: m for m in modes_for(bench.run.family)}[name]


def test_an_off_domain_calibration_is_caught_by_the_static_checks_of_its_own_hef_where_they_describe_it(bench):
    row = run_mode(bench, _offered(bench, "calibration_off_domain"))
    if bench.run.family is HeadFamily.YOLOX:
        # the off-domain HEF's class outputs cannot represent the float model's own highest score on these images;
        # the clean HEF's can (its static checks pass: the clean control)
        assert row.gate_failed and row.gate.startswith("test_hef_static[class_score_range]: "), row.gate
        assert "(the float model's own highest score on these images)" in row.gate, row.gate
        assert (row.diagnosis, row.correct) == ("score_cap", True), row.cause
    else:  # an SSD op's description is its config's: no static checks here, and the mode a stated gap
        assert row.gap and not row.gate_failed and (row.diagnosis, row.correct) == ("none", True), row


def _table(row) -> DoctorTable:
    return DoctorTable("model", "data", IMAGES, "hailo", {}, (), (row,))


def test_a_mode_with_a_stated_gap_is_named_by_a_clean_run_and_misnamed_by_any_other_finding(bench):
    def clean(bench, stack):
        return Injected(bench.subject_path(stack))

    def shifted(bench, stack):
        return Injected(HostPath(bench.subject_path(stack), "scores shifted", after=scores_shifted(bench.settings)))

    gap = Mode("a_gap", "a mistake no gate can catch", "the clean path", "score_cap", clean, gap="no gate can")
    row = run_mode(bench, gap)
    assert (row.gate_failed, row.diagnosis, row.correct) == (False, "none", True), row
    assert _table(row).problems == []
    row = run_mode(bench, replace(gap, gap=""))  # without its gap, a clean run names nothing of it
    assert (row.diagnosis, row.correct) == ("none", False)
    assert _table(row).problems == ["a_gap: no gate failed", "a_gap: diagnosed none, expected score_cap"]
    row = run_mode(bench, replace(gap, inject=shifted))  # a gap mode whose run something names is still misnamed
    assert row.diagnosis not in ("none", "score_cap") and not row.correct, row
    assert _table(row).problems == [f"a_gap: diagnosed {row.diagnosis}, expected score_cap"]


def test_yolox_heads_paired_across_grids_is_named_by_reproducing_it_on_its_own_frames(bench):
    if bench.run.family is not HeadFamily.YOLOX:
        pytest.skip("an SSD layer's maps are per anchor: no box and class maps of their own to pair")
    row = run_mode(bench, _offered(bench, "heads_paired_across_grids"))
    assert row.gate_failed, row
    assert (row.diagnosis, row.correct) == ("heads_paired_by_output_order", True), row.cause
    assert f"on each of the {REPRODUCTION_FRAMES} frames run again" in row.cause, row.cause


@pytest.mark.parametrize(
    ("family", "decoder", "words"),
    [
        (HeadFamily.YOLOX, yolox_modes.sizes_without_the_exp, yolox_scenes.SIZES_LINEAR),
        (HeadFamily.YOLOX, yolox_modes.objectness_left_out, "read without its objectness"),
        (HeadFamily.SSD, ssd_modes.box_coding_x_first, "the box coding read x first"),
        (HeadFamily.SSD, ssd_modes.sigmoid_scores_read_as_softmax, ssd_scenes.SCORES_SOFTMAXED),
        (HeadFamily.SSD, ssd_modes.background_kept, ssd_scenes.BACKGROUND_FIRST_READ),
    ],
    ids=lambda value: getattr(value, "__name__", None) if callable(value) else None,
)
def test_each_host_decoder_the_doctor_injects_is_named_by_the_conformance_suite_too(family, decoder, words):
    failures = [failure for failure in run_conformance(decoder, family=family).values() if failure]
    assert failures and words in failures[0], failures[:1]
