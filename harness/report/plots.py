"""The report's pictures: per-class precision-recall curves of every path, score and boxes-per-image
histograms (SVG, written by :mod:`harness.report.svg`), and the images on which the paths disagree most
with both paths' boxes drawn (JPEG, drawn with PIL).

Drawing those images is most of a report's time (11 ms each on the demo); where a run gives a folder
to keep them in, each is kept as ``<key>.jpg``, the key a sha256 over everything its pixels depend on
(:func:`drawing_key`): the image file's sha256, the ground truth and each path's detections drawn on
it, the paths' labels, the class names, this module's code and the Pillow that draws and encodes it.
A rerun that draws the same picture reads it back.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import PIL
from PIL import Image, ImageDraw, ImageFont, ImageOps, features

from harness.core.confine import make_folder
from harness.core.detections import Detections
from harness.core.environment import code_digest
from harness.core.errors import HarnessError
from harness.core.files import write_atomic
from harness.inputs.dataset import Dataset, GroundTruth, Sample
from harness.report import svg
from harness.verdict.metrics.agreement import differing_boxes
from harness.verdict.metrics.coco import ClassMatches, per_image_matches
from harness.verdict.metrics.distribution import SCORE_BIN_EDGES
from harness.verdict.result import PathResult

PATH_COLOURS = ("#1f77b4", "#d62728", "#ff7f0e", "#9467bd", "#8c564b")
TRUTH_COLOUR = "#2ca02c"
WORST_IMAGES = 6
PR_CLASSES = 12
_PANEL_SIDE = 360  # pixels of a worst-image panel's longer side
JPEG_QUALITY = 90  # the drawn images are photographs: JPEG encodes them in 1 ms where PNG took 80 ms
DRAWING_FORMAT = 1  # of a kept drawing's key
_COUNT = struct.Struct("<q")

log = logging.getLogger(__name__)


class ReportError(HarnessError):
    """Results that cannot be reported together, or against this dataset."""


@dataclass(frozen=True)
class Picture:
    title: str
    caption: str
    data: bytes
    media_type: str  # image/svg+xml (charts) or image/jpeg (images)


def ground_truths(result: PathResult, dataset: Dataset) -> list[GroundTruth]:
    """The ground truth of ``result``'s images, in model class ids (``settings.class_map``)."""
    by_id = {s.image_id: s for s in dataset.samples}
    missing = [i for i in result.image_ids if i not in by_id]
    if missing:
        raise ReportError(f"{result.label}: images {missing[:5]} are not samples of the dataset at {dataset.root}")
    class_map = np.asarray(result.settings.class_map, dtype=np.int64)
    truths = [by_id[i].ground_truth for i in result.image_ids]
    return [t.mapped(class_map) for t in truths] if len(class_map) else truths


def precision_recall(matches: ClassMatches) -> tuple[np.ndarray, np.ndarray]:
    """(recall, precision) at IoU 0.5 after each detection of one class, in descending score order."""
    order = np.argsort(-matches.score, kind="stable")
    tp = np.cumsum(matches.true_positive[0, order])
    fp = np.cumsum(matches.false_positive[0, order])
    n_positive = int(matches.n_positive.sum())
    recall = tp / n_positive if n_positive else np.zeros(len(tp))
    precision = tp / np.maximum(tp + fp, 1)
    return recall, precision


def pictures(
    results: Sequence[PathResult], dataset: Dataset, kept: Path | None = None
) -> tuple[list[Picture], list[Picture]]:
    """(charts, worst images); ``results[0]`` is the reference the others are held to; ``kept``: the
    folder the drawn images are kept in (see the module), None to draw them all."""
    if not results:
        raise ReportError("report: no path results")
    for r in results[1:]:
        if r.image_ids != results[0].image_ids:
            raise ReportError(f"report: {r.label} ran on other images than {results[0].label}")
    truths = ground_truths(results[0], dataset)
    charts = [score_histogram_chart(results), box_count_chart(results)]
    if dataset.labelled:  # images without labels have no precision-recall curve to draw
        charts.insert(0, precision_recall_chart(results, truths))
    return charts, worst_images(results, dataset, truths, kept=kept)


def precision_recall_chart(results: Sequence[PathResult], truths: Sequence[GroundTruth]) -> Picture:
    """One panel per class with ground truth, at most :data:`PR_CLASSES` (those with most ground truth)."""
    per_class = results[0].metrics.per_class
    names = [c.name for c in per_class]
    most = sorted((k for k, c in enumerate(per_class) if c.n_ground_truth), key=lambda k: -per_class[k].n_ground_truth)
    shown = sorted(most[:PR_CLASSES])
    if not shown:
        raise ReportError("report: no class has ground truth, so there is no precision-recall curve to draw")
    curves = [per_image_matches(truths, r.predictions, len(names)) for r in results]
    panels = []
    for k in shown:
        lines = []
        for i, (result, matches) in enumerate(zip(results, curves, strict=True)):
            x, y = svg.step_post(*precision_recall(matches.classes[k]))
            ap = result.metrics.per_class[k].ap50
            lines.append(svg.Line(x, y, _colour(i), f"{result.label} AP50 {_fmt(ap)}"))
        panels.append(svg.Panel(names[k], "recall", "precision", (0, 1.02), (0, 1.02), lines))
    left_out = len(most) - len(shown)
    caption = "IoU 0.5, every detection kept by the path" + (
        f"; the {len(shown)} classes with most ground truth ({left_out} more in the tables)" if left_out else ""
    )
    return _chart("Precision-recall per class", caption, panels, columns=min(len(shown), 3), size=(420, 360))


def score_histogram_chart(results: Sequence[PathResult]) -> Picture:
    lines = []
    for i, result in enumerate(results):
        s = result.scores
        outside = s.below_zero + s.above_one
        extra = f", {outside} outside [0, 1]" if outside else ""
        label = f"{result.label} ({s.n_boxes} boxes, {s.saturation:.1%} >= 0.99{extra})"
        lines.append(svg.Line(*svg.stairs(np.asarray(s.histogram), SCORE_BIN_EDGES), _colour(i), label))
    top = svg.top_of(max(max(r.scores.histogram, default=0) for r in results))
    panel = svg.Panel("", "score", "boxes", (0, 1), (0, top), lines, integer_y=True, legend="right")
    return _chart("Score histogram", "boxes per score bin of 0.05", [panel], columns=1, size=(1000, 360))


def box_count_chart(results: Sequence[PathResult]) -> Picture:
    counts = [np.array([len(p) for p in r.predictions]) for r in results]
    top = max(int(c.max(initial=0)) for c in counts)
    edges = np.arange(top + 2) - 0.5
    lines, highest = [], 0
    for i, (result, c) in enumerate(zip(results, counts, strict=True)):
        histogram, _ = np.histogram(c, bins=edges)
        highest = max(highest, int(histogram.max(initial=0)))
        b = result.box_counts
        label = f"{result.label} (mean {b.mean:.2f}, p95 {b.p95:.1f}, max {b.max})"
        lines.append(svg.Line(*svg.stairs(histogram, edges), _colour(i), label))
    xlim = (float(edges[0]) - 0.25, float(edges[-1]) + 0.25)
    ylim = (0.0, svg.top_of(highest))
    panel = svg.Panel(
        "", "boxes in an image", "images", xlim, ylim, lines, integer_x=True, integer_y=True, legend="right"
    )
    return _chart("Boxes per image", "how many images have each number of boxes", [panel], columns=1, size=(1000, 360))


def worst_images(
    results: Sequence[PathResult],
    dataset: Dataset,
    truths: Sequence[GroundTruth],
    count: int = WORST_IMAGES,
    kept: Path | None = None,
) -> list[Picture]:
    """The images where the paths disagree most with the first path (missed + extra + class-flipped
    boxes), then with the ground truth; each drawn once per path with its boxes and the truth (read
    from ``kept`` where a run kept the same drawing there, and kept there when drawn).
    Images on which every path agrees with the ground truth are not shown."""
    samples = {s.image_id: s for s in dataset.samples}
    reference = results[0].predictions
    n = len(reference)
    between = np.zeros(n, dtype=np.int64)
    against_truth = np.zeros(n, dtype=np.int64)
    truth = [Detections(t.boxes, np.ones(len(t)), t.class_ids) for t in truths]
    for result in results if dataset.labelled else ():
        against_truth += differing_boxes(truth, result.predictions)
    for result in results[1:]:
        between += differing_boxes(reference, result.predictions)
    order = np.lexsort((np.arange(n), -against_truth, -between))  # ties: dataset order
    order = order[(between[order] + against_truth[order]) > 0][:count]
    names = [c.name for c in results[0].metrics.per_class]
    labels = [r.label for r in results]
    ids = results[0].image_ids

    def key(i: int) -> str:
        return drawing_key(samples[ids[i]], truths[i], [r.predictions[i] for r in results], labels, names)

    def draw(i: int) -> bytes:
        return _draw(samples[ids[i]], truths[i], [r.predictions[i] for r in results], labels, names)

    files = {i: kept / f"{key(i)}.jpg" for i in order} if kept is not None else {}
    drawn = {i: jpeg for i, file in files.items() if (jpeg := _kept_drawing(file)) is not None}
    missing = [i for i in order if i not in drawn]
    if missing:
        with ThreadPoolExecutor(max_workers=2) as pool:  # PIL decodes, resizes and encodes without the GIL
            drawn.update(zip(missing, pool.map(draw, missing), strict=True))
        for i in missing:
            if i in files:
                _keep_drawing(files[i], drawn[i])
    pictures = []
    for i in order:
        caption = f"{between[i]} boxes differ between paths" + (
            f", {against_truth[i]} differ from the ground truth (green: ground truth)" if dataset.labelled else ""
        )
        pictures.append(Picture(ids[i], caption, drawn[i], "image/jpeg"))
    return pictures


def drawing_key(
    sample: Sample,
    truth: GroundTruth,
    predictions: Sequence[Detections],
    labels: Sequence[str],
    names: Sequence[str],
) -> str:
    """The sha256 (hex) of everything one worst image's drawing depends on (see the module)."""
    head = {
        "format": DRAWING_FORMAT,
        "code": code_digest("report/plots.py"),
        "pillow": [PIL.__version__, *(features.version(f) for f in ("jpg", "freetype2", "raqm"))],
        "image": sample.sha256,
        "labels": list(labels),
        "names": list(names),
    }
    digest = hashlib.sha256(json.dumps(head, sort_keys=True).encode())
    for arrays in ((truth.boxes, truth.class_ids), *((d.boxes, d.scores, d.class_ids) for d in predictions)):
        for array in arrays:  # fixed dtypes and widths (GroundTruth, Detections): the length says the rest
            digest.update(_COUNT.pack(len(array)) + np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _kept_drawing(file: Path) -> bytes | None:
    """The JPEG kept in ``file``; None where there is none or it is not a whole JPEG (logged: drawn again)."""
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        log.warning("kept drawing %s not used (%s): drawn again", file, error)
        return None
    if not (data.startswith(b"\xff\xd8") and data.endswith(b"\xff\xd9")):  # a JPEG's start and end markers
        log.warning("kept drawing %s not used (not a whole JPEG): drawn again", file)
        return None
    return data


def _keep_drawing(file: Path, data: bytes) -> None:
    try:
        make_folder(file.parent)
        write_atomic(file, data)
    except OSError as error:
        log.warning("drawing %s not kept (%s): the next run draws it again", file, error)


def _draw(
    sample: Sample,
    truth: GroundTruth,
    predictions: Sequence[Detections],
    labels: Sequence[str],
    names: Sequence[str],
) -> bytes:
    with Image.open(sample.path) as opened:
        image = ImageOps.exif_transpose(opened).convert("RGB")
    scale = _PANEL_SIDE / max(image.size)
    image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    font, heading = ImageFont.load_default(size=12), ImageFont.load_default(size=14)
    header = 20
    canvas = Image.new("RGB", (len(predictions) * (image.width + 6), image.height + header), "white")
    for i, (det, label) in enumerate(zip(predictions, labels, strict=True)):
        panel = image.copy()
        draw = ImageDraw.Draw(panel)
        for box in truth.boxes * scale:
            draw.rectangle(box.tolist(), outline=TRUTH_COLOUR, width=2)
        boxes = det.boxes * scale
        for box in boxes:
            draw.rectangle(box.tolist(), outline=_colour(i), width=2)
        placed: list[tuple[float, float, float, float]] = []
        for k in np.argsort(-det.scores, kind="stable"):  # the surest boxes get their labels first
            class_id = int(det.class_ids[k])
            name = names[class_id] if 0 <= class_id < len(names) else str(class_id)
            _label(draw, boxes[k], f"{name} {det.scores[k]:.2f}", _colour(i), font, placed)
        x = i * (image.width + 6)
        canvas.paste(panel, (x, header))
        title = fitted_title(label, len(det), len(placed), heading, image.width)
        ImageDraw.Draw(canvas).text((x, 2), title, fill=_colour(i), font=heading)
    out = io.BytesIO()
    canvas.save(out, format="JPEG", quality=JPEG_QUALITY, subsampling=0)  # 4:4:4: box lines and label chips stay crisp
    return out.getvalue()


def panel_title(path: str, boxes: int, labelled: int) -> str:
    """A path's panel title: its boxes, and how many of them carry no label chip because no place
    beside them was clear of the others' (:func:`_label`)."""
    title = f"{path}: {boxes} box{'' if boxes == 1 else 'es'}"
    hidden = boxes - labelled
    return f"{title}, {labelled} labelled (no clear place for the other {hidden})" if hidden else title


def fitted_title(path: str, boxes: int, labelled: int, font: Any, width: int) -> str:
    """The longest of a panel's titles that fits its ``width`` in ``font`` (:func:`panel_title`, then
    shorter forms saying the same counts), the path's name cut last: a title is never clipped."""
    hidden = boxes - labelled
    plural = "" if boxes == 1 else "es"
    counts = f"{boxes} box{plural}" + (f", {hidden} unlabelled" if hidden else "")
    for title in (panel_title(path, boxes, labelled), f"{path}: {counts}", counts):
        if font.getlength(title) <= width:
            return title
    return f"{boxes} box{plural}"


def _label(
    draw: ImageDraw.ImageDraw,
    box: np.ndarray,
    text: str,
    colour: str,
    font: Any,
    placed: list[tuple[float, float, float, float]],
) -> None:
    """White text on a chip of the path's colour beside the box (above its top-left corner, else
    inside it, else below it), inside the panel and clear of the chips ``placed`` before; a box
    with no such place keeps no label."""
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    w, h = right - left + 4, bottom - top + 4
    width, height = draw.im.size
    x0, y0, _, y1 = (float(v) for v in box)
    x = min(max(0.0, x0), max(0.0, width - w))
    for y in (y0 - h, y0, y1):
        y = min(max(0.0, y), max(0.0, height - h))
        chip = (x, y, x + w, y + h)
        if not any(chip[0] < o[2] and o[0] < chip[2] and chip[1] < o[3] and o[1] < chip[3] for o in placed):
            placed.append(chip)
            draw.rectangle(chip, fill=colour)
            draw.text((x + 2 - left, y + 2 - top), text, fill="white", font=font)
            return


def _chart(title: str, caption: str, panels: Sequence[svg.Panel], columns: int, size: tuple[int, int]) -> Picture:
    return Picture(title, caption, svg.chart(panels, columns, size), "image/svg+xml")


def _colour(i: int) -> str:
    return PATH_COLOURS[i % len(PATH_COLOURS)]


def _fmt(value: float) -> str:
    return "n/a" if value != value else f"{value:.3f}"
