"""Release sign-off reports of a run: Markdown, JSON and one self-contained HTML file."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.inputs.dataset import Dataset
from harness.report.html import render_html
from harness.report.json_report import report_document, write_json
from harness.report.markdown import render_markdown
from harness.report.plots import ReportError, pictures
from harness.verdict.gates import GateResult
from harness.verdict.result import PathResult

__all__ = ["ReportError", "report_files", "write_reports"]


def report_files(out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Where :func:`write_reports` writes, by format."""
    out = Path(out_dir)
    return {"markdown": out / "report.md", "json": out / "report.json", "html": out / "report.html"}


def write_reports(
    out_dir: str | os.PathLike[str],
    results: Sequence[PathResult],
    gates: Sequence[GateResult],
    dataset: Dataset,
    worst_layers: Sequence[dict[str, Any]] = (),
    calibration: str | None = None,
    baselines: Mapping[str, Path] | None = None,
    thresholds: str | None = None,
) -> dict[str, Path]:
    """``report.md``, ``report.json`` and ``report.html`` in ``out_dir``; ``results[0]`` is the
    reference path (the ONNX) the others were compared with, all on the same images of ``dataset``;
    ``calibration`` says what the Hailo path was calibrated on, ``baselines`` which file each path
    was held against (path name -> file), ``thresholds`` where the evaluation's thresholds come from."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    document = report_document(results, gates, dataset, worst_layers, calibration, baselines, thresholds)
    charts, images = pictures(results, dataset)
    files = report_files(out)
    files["markdown"].write_text(render_markdown(document), encoding="utf-8")
    write_json(files["json"], document)
    files["html"].write_text(render_html(document, charts, images), encoding="utf-8")
    return files
