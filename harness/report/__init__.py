"""Release sign-off reports of a run: Markdown, JSON, one self-contained HTML file, a few lines of
Markdown for a pull request or a chat (``report-summary.md``) and, where asked, the HTML as a PDF."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.core import defaults
from harness.core.confine import make_folder
from harness.core.files import write_atomic
from harness.core.stage_clock import Stage, clocked
from harness.inputs.dataset import Dataset
from harness.report.html import render_html
from harness.report.json_report import json_text, report_document
from harness.report.markdown import render_markdown
from harness.report.pdf import require_browser, write_pdf
from harness.report.plots import ReportError, pictures
from harness.report.summary import render_summary
from harness.verdict.gates import GateResult
from harness.verdict.golden import Golden
from harness.verdict.result import PathResult

__all__ = ["ReportError", "report_files", "write_reports"]


def report_files(out_dir: str | os.PathLike[str], pdf: bool = False) -> dict[str, Path]:
    """Where :func:`write_reports` writes, by format (``pdf``: where it prints the PDF too)."""
    out = Path(out_dir)
    files = {
        "markdown": out / "report.md",
        "json": out / "report.json",
        "html": out / "report.html",
        "summary": out / "report-summary.md",
    }
    return {**files, "pdf": out / "report.pdf"} if pdf else files


@clocked(Stage.REPORTS)
def write_reports(
    out_dir: str | os.PathLike[str],
    results: Sequence[PathResult],
    gates: Sequence[GateResult],
    dataset: Dataset,
    worst_layers: Sequence[dict[str, Any]] = (),
    calibration: str | None = None,
    baselines: Mapping[str, tuple[Path, Golden | None]] | None = None,
    thresholds: str | None = None,
    stage_drop: float = defaults.STAGE_DROP,
    kept: Path | None = None,
    pdf: bool = False,
) -> dict[str, Path]:
    """``report.md``, ``report.json`` and ``report.html`` in ``out_dir``; ``results[0]`` is the
    reference path (the ONNX) the others were compared with, all on the same images of ``dataset``;
    ``calibration`` says what the Hailo path was calibrated on, ``baselines`` which file each path
    was held against and what it held (path name -> (file, its baseline or None where there is none)),
    ``thresholds`` where the evaluation's thresholds come from, ``kept`` where the drawn worst images
    are kept for a rerun (:mod:`harness.report.plots`; None: drawn every time); ``pdf``: ``report.pdf``
    too, the HTML printed by headless Chromium (:mod:`harness.report.pdf`; refused without it).
    Each file is written whole or not at all (:func:`~harness.core.files.write_atomic`): where one cannot
    be written, its old version stays and the :class:`OSError` names it."""
    out = Path(out_dir)
    make_folder(out)
    document = report_document(results, gates, dataset, worst_layers, calibration, baselines, thresholds, stage_drop)
    charts, images = pictures(results, dataset, kept)
    files = report_files(out, pdf)
    texts = {
        "markdown": render_markdown(document),
        "json": json_text(document),
        "html": render_html(document, charts, images),
        "summary": render_summary(document, files["html"].name),
    }
    if pdf:
        require_browser()  # refused before any file is written
    for kind, text in texts.items():  # all rendered before any is written
        write_atomic(files[kind], text)
    if pdf:
        write_pdf(render_html(document, charts, images, unfolded=True), files["pdf"])
    return files
