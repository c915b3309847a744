"""Per-tensor SQNR between the emulated HEF's float and quantized graphs: every tensor measured,
worst first, and an off-domain calibration shows up on the class head it caps."""

import math
from dataclasses import replace

import pytest

from harness.backends.emulator.localisation import LOSSLESS_DB, layer_sqnr, worst_layers
from harness.core.errors import HarnessError
from harness.doctor.bench import open_bench
from harness.inputs.demo import OFF_DOMAIN
from harness.pipeline.factory import emulated_hef

FRAMES = 2
STRIDE_8_CLASS_HEAD = "/model.23/cv3.0/cv3.0.2/Conv_output_0"


@pytest.fixture(scope="session")
def doctor_cache(tmp_path_factory):
    """The cache test_modes.py uses too (same session path), so nothing is made twice."""
    return tmp_path_factory.getbasetemp() / "doctor-cache"


@pytest.fixture(scope="module")
def bench(doctor_cache):
    return open_bench(first=FRAMES, cache_dir=doctor_cache)


@pytest.fixture(scope="module")
def frames(bench):
    return [s.path for s in bench.dataset.samples]


@pytest.fixture(scope="module")
def in_domain(bench, frames):
    return layer_sqnr(bench.hef, frames)


def test_every_head_and_over_a_hundred_tensors_are_measured_worst_first(bench, in_domain):
    names = {layer.tensor for layer in in_domain}
    # every layer's output (a conv's output before its activation is inside its layer: not quantized, not measured)
    assert {h.name for h in bench.hef.heads} <= names and len(in_domain) > 100
    assert [layer.accumulated_db for layer in in_domain] == sorted(layer.accumulated_db for layer in in_domain)
    assert all(math.isfinite(layer.local_db) and math.isfinite(layer.accumulated_db) for layer in in_domain)
    head = next(layer for layer in in_domain if layer.tensor == STRIDE_8_CLASS_HEAD)
    assert head.op == "Sigmoid" and head.accumulated_db < head.local_db  # the error upstream adds to its own


def test_off_domain_calibration_costs_the_stride_8_class_head_most_of_its_sqnr(bench, frames, in_domain):
    off = layer_sqnr(emulated_hef(replace(bench.subject_spec, calibration=OFF_DOMAIN), bench.run), frames)

    def head(layers):
        return next(layer for layer in layers if layer.tensor == STRIDE_8_CLASS_HEAD)

    assert head(off).local_db < head(in_domain).local_db - 6  # its own clip, at least 6 dB worse
    assert head(off).accumulated_db < head(in_domain).accumulated_db


def test_worst_layers_are_rows_a_report_can_show(in_domain):
    rows = worst_layers(in_domain, 5)
    assert 5 <= len(rows) <= 6
    assert set(rows[0]) == {"tensor", "op", "node", "local_sqnr_db", "accumulated_sqnr_db"}
    noisy = [layer for layer in in_domain if layer.local_db <= LOSSLESS_DB]
    assert len(noisy) < len(in_domain), "the demo has lossless ops (its attention's Transpose)"
    assert rows[0]["accumulated_sqnr_db"] == round(noisy[0].accumulated_db, 2)
    assert all(r["local_sqnr_db"] <= LOSSLESS_DB for r in rows), "a lossless op carries noise, it does not add it"
    assert min(r["local_sqnr_db"] for r in rows) == round(min(layer.local_db for layer in in_domain), 2)


def test_no_frames_is_an_error(bench):
    with pytest.raises(HarnessError, match="no images given"):
        layer_sqnr(bench.hef, [])
