"""What a blessing was made from, and what changed between two, in words (``verdict.changes``); kept
in the baseline and its history entries, older files read without it."""

import json
from dataclasses import replace

import pytest

from harness.core.documents import Fields
from harness.core.errors import HarnessError
from harness.verdict import history_chain
from harness.verdict.changes import change_sentence, changes, read_made_from, settings_change
from harness.verdict.golden import blessed_history, golden_path
from harness.verdict.golden_blessing import golden_from_result, write_golden
from harness.verdict.golden_reading import load_golden
from harness.verdict.history import Blessing, blessing_document

from support import synthetic_results as sr

R1 = {
    "model_sha256": "a" * 64,
    "hef_sha256": "b" * 64,
    "calibration": "the demo's in-domain frames (64)",
    "calibration_sha256": "c" * 64,
    "settings": "score_threshold 0.25, iou_threshold 0.7, class_map [], metric coco",
    "harness_version": "0.1.0",
}


def test_a_calibration_change_is_said_in_words_with_the_model_unchanged():
    r2 = {
        **R1,
        "calibration": "the demo's off-domain frames (64)",
        "calibration_sha256": "d" * 64,
        "hef_sha256": "e" * 64,
    }
    assert change_sentence("r2", R1, r2) == (
        "r2: HEF changed from bbbbbbbbbbbb to eeeeeeeeeeee; calibration changed from the demo's in-domain "
        "frames (64) to the demo's off-domain frames (64); model unchanged"
    )  # the images' digest is left unsaid where the calibration's words changed


def test_other_images_under_the_same_words_a_new_model_and_settings_are_each_named():
    r2 = {
        **R1,
        "model_sha256": "f" * 64,
        "calibration_sha256": "9" * 64,
        "settings": R1["settings"].replace("0.25", "0.3"),
    }
    said = changes(R1, r2)
    assert said == (
        "model changed from aaaaaaaaaaaa to ffffffffffff",
        "calibration images changed from cccccccccccc to 999999999999",
        "settings changed: score_threshold 0.25 -> 0.3",
    )
    assert "unchanged" not in change_sentence("r2", R1, r2)


def test_nothing_changed_and_facts_an_older_blessing_did_not_record():
    assert change_sentence("r2", R1, dict(R1)) == "r2: nothing recorded changed (model unchanged)"
    older = {"model_sha256": R1["model_sha256"]}
    assert changes(older, R1)[0] == "HEF bbbbbbbbbbbb (not recorded before)"
    assert changes(R1, older) == ()  # a fact no longer recorded is not a change


def test_settings_changes_name_each_item_that_moved():
    old = "score_threshold 0.25, iou_threshold 0.7, input_hw [256, 256], class_map [0, 1]"
    new = "score_threshold 0.25, iou_threshold 0.6, input_hw [320, 320], class_map [0, 1]"
    assert settings_change(old, new) == "iou_threshold 0.7 -> 0.6, input_hw [256, 256] -> [320, 320]"


def test_made_from_is_read_strictly():
    assert read_made_from(Fields({}, "f")) == ()
    read = read_made_from(Fields({"made_from": {"calibration": "x (1)", "hef_sha256": "b"}}, "f"))
    assert read == (("hef_sha256", "b"), ("calibration", "x (1)"))  # in the facts' order
    with pytest.raises(HarnessError, match=r"unknown keys \['colour'\]"):
        read_made_from(Fields({"made_from": {"colour": "red"}}, "f"))
    with pytest.raises(HarnessError, match="a non-empty string"):
        read_made_from(Fields({"made_from": {"calibration": 3}}, "f"))


def test_a_baseline_keeps_what_it_was_made_from_and_its_history_entries_carry_it(tmp_path):
    case = sr.report_case(tmp_path / "dataset")
    made = (("hef_sha256", "b" * 64), ("calibration", "the demo's in-domain frames (64)"))
    first = replace(
        case.hailo, provenance=replace(case.hailo.provenance, made_from=made, created="2025-01-01T00:00:00Z")
    )
    second_made = (("hef_sha256", "e" * 64), ("calibration", "the demo's off-domain frames (64)"))
    second = replace(case.hailo, provenance=replace(case.hailo.provenance, made_from=second_made))
    file = golden_path(tmp_path / "golden", case.hailo.provenance.model_path, "hailo", case.hailo.provenance.dataset)
    write_golden(file, golden_from_result(first, release="r1"))
    write_golden(file, golden_from_result(second, release="r2"))
    data = json.loads(file.read_text())
    assert data["schema_version"] == 6 and data["provenance"]["made_from"] == dict(second_made)
    assert data["history"][0]["made_from"] == dict(made)
    golden = load_golden(file)
    assert golden.history_problems == () and golden.provenance.made_from == second_made
    assert [b.made_from for b in blessed_history(golden)] == [made, second_made]


def test_an_entry_without_made_from_keeps_its_chain_digest():
    """An entry written before made_from was kept is sealed over a document without it: its digest
    (and so the chain after it) stays as it was."""
    plain = Blessing("r1", "2025-01-01T00:00:00Z", "m", "d", "p", "a" * 64, "c" * 64, "coco", (("map", 0.5),))
    assert "made_from" not in blessing_document(plain) and "made_from" not in history_chain.entry_document(plain)
    made = replace(plain, made_from=(("calibration", "x (1)"),))
    assert blessing_document(made)["made_from"] == {"calibration": "x (1)"}
    assert history_chain.digest(made) != history_chain.digest(plain)
