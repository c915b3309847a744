"""Release sign-off through the main job and the command: ``--release`` names a blessing, the
baselines keep their blessed history, and the rerun's reports show it beside the run."""

import json
from dataclasses import replace
from html import escape

import pytest

from harness.cli import main as cli
from harness.inputs.synthetic import Recipe, write_dataset
from harness.pipeline.job import run_job
from harness.pipeline.spec import JobConfig
from harness.verdict.golden import blessed_history
from harness.verdict.golden_reading import load_golden


@pytest.fixture(scope="module")
def signed_off(tmp_path_factory):
    """The demo model on a small synthetic set: blessed as v1.2, blessed again (the same model) as
    v1.3, then run again as a release manager's sign-off."""
    tmp = tmp_path_factory.mktemp("release")
    write_dataset(tmp / "d", Recipe(seed=11, train=0, val=16, calib=0))
    config = JobConfig(
        dataset=tmp / "d",
        golden_root=tmp / "golden",
        report_dir=tmp / "report",
        cache_dir=tmp / "cache",
        progress=False,
    )
    quiet = lambda line: None  # noqa: E731
    first = run_job(replace(config, update_golden=True, release="v1.2"), log=quiet)
    second = run_job(replace(config, update_golden=True, release="v1.3"), log=quiet)
    again = run_job(config, log=quiet)
    return config, first, second, again


def test_two_releases_blessed_by_the_job_stay_in_the_baselines_history_in_order(signed_off):
    config, first, second, again = signed_off
    assert [g.text for g in again.gates if not g.passed] == []  # the history changes no gate
    assert all(c.startswith("created baseline") for c in first.golden_changes)
    assert len(second.golden_changes) == 2
    assert all("release: v1.2 -> v1.3" in c and "history: 1 earlier blessing" in c for c in second.golden_changes)
    for path in ("onnx", "emulated-hailo"):
        golden = load_golden(config.golden_root / "fire_smoke_yolo11n_256" / f"d--{path}.json")
        history = blessed_history(golden)
        assert [b.release for b in history] == ["v1.2", "v1.3"]
        assert history[0].model_sha256 == history[1].model_sha256  # the same export, blessed twice
        assert history[0].values == history[1].values  # cached predictions: the same numbers


def test_the_sign_off_reports_show_both_releases_then_this_run_per_gate(signed_off):
    _, _, _, again = signed_off
    document = json.loads(again.reports["json"].read_text())
    assert [[b["release"] for b in baseline["history"]] for baseline in document["baselines"]] == [["v1.2", "v1.3"]] * 2
    markdown = again.reports["markdown"].read_text()
    gate = next(g for g in again.gates if g.id.kind == "map" and g.id.path == "emulated-hailo")
    table = markdown.split("## Blessed history")[1].split(f"### `{gate.name}`")[1].split("###")[0]
    firsts = [row.split(" | ")[0] for row in table.splitlines() if row.startswith("| ") and "release" not in row]
    assert firsts == ["| v1.2", "| v1.3", "| this run"]
    assert f"| {gate.observed:.4f} | signed off now: passed |" in table
    html = again.reports["html"].read_text()
    charted = [
        g.name for g in again.gates if f"<title>{escape(g.name)}: blessed values and this run&#x27;s</title>" in html
    ]
    assert charted == [g.name for g in again.gates]  # every gate of this job is held to a blessed value


def test_a_release_without_a_blessing_is_a_usage_error(capsys):
    assert cli.main(["run", "--release", "v1.3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        err[0]
        == "hailo-harness run: error: --release: belongs to --update-golden (it names the release a blessing signs off)"
    )


def test_a_blessing_records_what_it_was_made_from_and_the_report_says_what_changed(signed_off, tmp_path):
    """r1 calibrated on the evaluated images (16 of them), r2 on 8: the baselines record it, and the
    sign-off report says it in words beside the gates."""
    config = replace(signed_off[0], golden_root=tmp_path / "golden", report_dir=tmp_path / "report")
    quiet = lambda line: None  # noqa: E731
    run_job(replace(config, update_golden=True, release="r1"), log=quiet)
    fewer = replace(config, hailo=replace(config.hailo, calibration_count=8))
    run_job(replace(fewer, update_golden=True, release="r2"), log=quiet)
    again = run_job(fewer, log=quiet)
    hailo = load_golden(config.golden_root / "fire_smoke_yolo11n_256" / "d--emulated-hailo.json")
    made = [dict(b.made_from) for b in blessed_history(hailo)]
    assert [m["calibration"] for m in made] == ["the evaluated images (16)", "the evaluated images (8)"]
    assert made[0]["hef_sha256"] != made[1]["hef_sha256"] and made[0]["code_digest"] == made[1]["code_digest"]
    assert {"settings", "harness_version", "calibration_sha256"} <= set(made[0])
    onnx = dict(load_golden(config.golden_root / "fire_smoke_yolo11n_256" / "d--onnx.json").provenance.made_from)
    assert "calibration" not in onnx and "hef_sha256" not in onnx  # the float export: neither
    sha = hailo.provenance.model_sha256
    said = (
        f"emulated-hailo: r2: HEF changed from {made[0]['hef_sha256'][:12]} to {made[1]['hef_sha256'][:12]}; "
        "calibration changed from the evaluated images (16) to the evaluated images (8); model unchanged"
    )
    assert sha and f"What changed: {said}." in again.reports["markdown"].read_text()
    summary = again.reports["summary"].read_text()
    assert summary.startswith("**Accuracy report: PASSED") and f"- {said}" in summary
