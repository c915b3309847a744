import io
import logging
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from harness.core.detections import Detections
from harness.core.settings import EvalSettings
from harness.inputs.dataset import GroundTruth
from harness.report import plots
from harness.report.plots import (
    ReportError,
    _label,
    ground_truths,
    panel_title,
    pictures,
    precision_recall,
    worst_images,
)
from harness.verdict.metrics.coco import per_image_matches

from support import synthetic_results as sr

BOX = [10.0, 10.0, 50.0, 60.0]


def test_writing_the_reports_imports_no_matplotlib(tmp_path):
    code = f"""
import sys
from harness.report import write_reports
from support import synthetic_results as sr
case = sr.report_case(__import__("pathlib").Path({str(tmp_path)!r}))
write_reports({str(tmp_path / "report")!r}, [case.onnx, case.hailo], case.gates, case.dataset)
print(sorted({{"matplotlib", "onnx", "onnxruntime"}} & set(sys.modules)))
"""
    tests = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tests, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "report" / "report.html").stat().st_size > 0


def test_precision_recall_follows_detections_in_score_order():
    truth = [GroundTruth(np.array([BOX, [100, 100, 140, 160]]), np.array([0, 0]))]
    # a false positive ranked between the two true positives
    det = [
        Detections(np.array([BOX, [300, 300, 340, 360], [100, 100, 140, 160]]), np.array([0.9, 0.8, 0.7]), [0, 0, 0])
    ]
    recall, precision = precision_recall(per_image_matches(truth, det, 1).classes[0])
    assert recall.tolist() == [0.5, 0.5, 1.0]
    assert precision == pytest.approx([1.0, 0.5, 2 / 3])


def test_worst_images_are_those_the_paths_disagree_on_worst_first(tmp_path):
    case = sr.report_case(tmp_path)
    truths = ground_truths(case.onnx, case.dataset)
    drawn = worst_images([case.onnx, case.hailo], case.dataset, truths)
    assert {p.title for p in drawn} == case.worst
    assert all("3 boxes differ between paths" in p.caption for p in drawn)
    image = Image.open(io.BytesIO(drawn[0].data))
    assert image.format == "JPEG" and all(p.media_type == "image/jpeg" for p in drawn)
    assert image.width > 2 * image.height  # one panel per path, side by side
    charts, images = pictures([case.onnx, case.hailo], case.dataset)
    assert [p.title for p in images] == [p.title for p in drawn]
    assert [c.title for c in charts] == ["Precision-recall per class", "Score histogram", "Boxes per image"]
    for c in charts:  # SVG, a line per path in each panel, and the legend naming each path
        assert c.media_type == "image/svg+xml"
        root = ET.fromstring(c.data)
        lines = root.findall(".//{http://www.w3.org/2000/svg}polyline")
        assert len(lines) % 2 == 0 and lines
        legend = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
        assert any(t.startswith("onnx") for t in legend) and any(t.startswith(case.hailo.label) for t in legend)


def test_ground_truth_is_taken_into_model_class_ids(tmp_path):
    case = sr.report_case(tmp_path)
    swapped = sr.replaced(case.onnx, settings=EvalSettings((640, 640), class_map=(1, 0)))
    original = ground_truths(case.onnx, case.dataset)
    mapped = ground_truths(swapped, case.dataset)
    assert all((m.class_ids == 1 - o.class_ids).all() for m, o in zip(mapped, original, strict=True))


def test_results_on_other_images_are_refused(tmp_path):
    case = sr.report_case(tmp_path)
    stranger = sr.replaced(case.hailo, image_ids=("elsewhere.png", *case.hailo.image_ids[1:]))
    with pytest.raises(ReportError, match="hailo \\(emulated\\) ran on other images than onnx"):
        pictures([case.onnx, stranger], case.dataset)
    with pytest.raises(ReportError, match=r"images \['elsewhere.png'\] are not samples of the dataset"):
        ground_truths(stranger, case.dataset)


def test_box_labels_stay_inside_the_panel_and_never_cover_each_other():
    panel = Image.new("RGB", (120, 90), "white")
    draw, font = ImageDraw.Draw(panel), ImageFont.load_default(size=12)
    placed: list[tuple[float, float, float, float]] = []
    boxes = [np.array([100, 5, 119, 30], np.float32)] * 8 + [np.array([0, 60, 40, 89], np.float32)]
    for box in boxes:  # eight boxes in the same corner, at the right edge, and one at the bottom
        _label(draw, box, "smoke 0.99", "#d62728", font, placed)
    assert 2 <= len(placed) < len(boxes), "some labels fit, not all eight on one spot"
    for i, (x0, y0, x1, y1) in enumerate(placed):
        assert 0 <= x0 and x1 <= 120 and 0 <= y0 and y1 <= 90, "a label leaves the panel"
        for a0, b0, a1, b1 in placed[i + 1 :]:
            assert not (x0 < a1 and a0 < x1 and y0 < b1 and b0 < y1), "two labels overlap"


@pytest.mark.parametrize(
    ("boxes", "labelled", "title"),
    [
        (12, 12, "onnx: 12 boxes"),
        (1, 1, "onnx: 1 box"),
        (12, 11, "onnx: 12 boxes, 11 labelled (no clear place for the other 1)"),
        (5, 2, "onnx: 5 boxes, 2 labelled (no clear place for the other 3)"),
    ],
)
def test_a_panel_title_says_how_many_boxes_carry_no_label_and_why(boxes, labelled, title):
    assert panel_title("onnx", boxes, labelled) == title


# --- the drawn worst images, kept for a rerun ---------------------------------------------------------


def _no_drawing(monkeypatch):
    def drawn(*args, **kwargs):
        raise AssertionError("drawn, though the same drawing was kept")

    monkeypatch.setattr(plots, "_draw", drawn)


def test_kept_drawings_are_read_back_as_drawn_without_drawing(tmp_path, monkeypatch):
    case = sr.report_case(tmp_path / "case")
    truths = ground_truths(case.onnx, case.dataset)
    fresh = worst_images([case.onnx, case.hailo], case.dataset, truths)
    first = worst_images([case.onnx, case.hailo], case.dataset, truths, kept=tmp_path / "kept")
    assert first == fresh
    assert len(list((tmp_path / "kept").glob("*.jpg"))) == len(fresh) == 2
    _no_drawing(monkeypatch)
    assert worst_images([case.onnx, case.hailo], case.dataset, truths, kept=tmp_path / "kept") == fresh


def test_a_changed_score_on_a_worst_image_draws_it_again(tmp_path):
    case = sr.report_case(tmp_path / "case")
    truths = ground_truths(case.onnx, case.dataset)
    kept = tmp_path / "kept"
    worst_images([case.onnx, case.hailo], case.dataset, truths, kept=kept)
    shown = next(i for i, image_id in enumerate(case.onnx.image_ids) if image_id in case.worst)
    predictions = list(case.onnx.predictions)
    d = predictions[shown]
    predictions[shown] = Detections(d.boxes, d.scores * np.float32(0.5), d.class_ids)  # other label chips
    onnx = sr.replaced(case.onnx, predictions=tuple(predictions))
    again = worst_images([onnx, case.hailo], case.dataset, truths, kept=kept)
    assert again == worst_images([onnx, case.hailo], case.dataset, truths)
    assert len(list(kept.glob("*.jpg"))) == 3  # the changed image is a new drawing, the other one kept


def test_every_input_of_a_drawing_is_in_its_key(tmp_path, monkeypatch):
    case = sr.report_case(tmp_path / "case")
    sample, truth = case.dataset.samples[0], case.dataset.ground_truths[0]
    predictions = [case.onnx.predictions[0], case.hailo.predictions[0]]
    labels, names = ["onnx", "hailo (emulated)"], ["fire", "smoke"]
    key = plots.drawing_key(sample, truth, predictions, labels, names)
    d = predictions[1]
    moved = GroundTruth(truth.boxes + 1, truth.class_ids)
    changes = [
        (sr.replaced(sample, sha256="0" * 64), truth, predictions, labels, names),
        (sample, moved, predictions, labels, names),
        (sample, truth, [predictions[0], Detections(d.boxes, d.scores, 1 - d.class_ids)], labels, names),
        (sample, truth, predictions[::-1], labels, names),
        (sample, truth, predictions, ["onnx", "hailo"], names),
        (sample, truth, predictions, labels, ["smoke", "fire"]),
    ]
    keys = {plots.drawing_key(*change) for change in changes}
    assert len(keys) == len(changes) and key not in keys
    monkeypatch.setattr(plots.PIL, "__version__", "0.0")
    assert plots.drawing_key(sample, truth, predictions, labels, names) != key
    monkeypatch.undo()
    monkeypatch.setattr(plots, "code_digest", lambda *parts: "0" * 64)
    assert plots.drawing_key(sample, truth, predictions, labels, names) != key


def test_a_cut_drawing_is_drawn_again_and_replaced(tmp_path, caplog):
    case = sr.report_case(tmp_path / "case")
    truths = ground_truths(case.onnx, case.dataset)
    kept = tmp_path / "kept"
    fresh = worst_images([case.onnx, case.hailo], case.dataset, truths, kept=kept)
    cut = sorted(kept.glob("*.jpg"))[0]
    cut.write_bytes(cut.read_bytes()[:100])
    with caplog.at_level(logging.WARNING, logger=plots.__name__):
        assert worst_images([case.onnx, case.hailo], case.dataset, truths, kept=kept) == fresh
    assert f"kept drawing {cut} not used (not a whole JPEG)" in caplog.text
    assert cut.read_bytes().endswith(b"\xff\xd9")


def test_a_folder_that_cannot_be_written_keeps_nothing_and_draws_every_time(tmp_path, caplog):
    case = sr.report_case(tmp_path / "case")
    truths = ground_truths(case.onnx, case.dataset)
    (tmp_path / "file").write_text("a file where the folder would be")
    with caplog.at_level(logging.WARNING, logger=plots.__name__):
        drawn = worst_images([case.onnx, case.hailo], case.dataset, truths, kept=tmp_path / "file" / "kept")
    assert drawn == worst_images([case.onnx, case.hailo], case.dataset, truths)
    assert "not kept" in caplog.text
