"""``hailo-harness inspect``: describe a HEF without HailoRT (or an Ultralytics Hailo export folder:
its HEF, and its metadata.yaml and nms_config.json held against it)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from harness.inputs.hef.inspect import render_text, summary
from harness.inputs.hef.reader import HefInfo, read_hef
from harness.inputs.hef.ultralytics import UltralyticsExport, export_of, hef_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("hef", help="path of the .hef file, or of an Ultralytics Hailo export folder")
    parser.add_argument("--json", action="store_true", help="print the description as JSON")
    parser.add_argument(
        "--tolerant",
        action="store_true",
        help="describe what can be read from a truncated or corrupted file instead of refusing it",
    )


def _export(info: HefInfo, export: UltralyticsExport) -> dict[str, Any]:
    from harness.verdict.hef_checks import CheckContext, check_export_metadata, check_export_nms_config

    context = CheckContext(info, export=export)
    checks = (
        [check(context) for check in (check_export_metadata, check_export_nms_config)] if info.network_groups else []
    )
    described = dataclasses.asdict(export)
    described.update(folder=str(export.folder), hef=str(export.hef))
    described["checks"] = [{"name": c.name, "passed": c.passed, "message": c.message} for c in checks]
    return described


def _export_lines(described: dict[str, Any]) -> list[str]:
    lines = [
        f"Ultralytics export: {described['folder']}",
        f"    names: {', '.join(described['names'])}; imgsz {described['imgsz'][0]}x{described['imgsz'][1]}; "
        f"hailo_arch {described['hailo_arch']}; task {described['task']}; NMS compiled in: "
        f"{'yes' if described['nms'] else 'no'}; end2end: {'yes' if described['end2end'] else 'no'}",
        f"    calibration: {described['calibration'] or 'not recorded (no data= in its args)'}",
    ]
    config = described["nms_config"]
    if config is not None:
        strides = ", ".join(str(d["stride"]) for d in config["bbox_decoders"])
        lines.append(
            f"    nms_config.json: score threshold {config['score_threshold']:g}, IoU {config['iou_threshold']:g}, "
            f"{config['max_proposals_per_class']} per class, {config['classes']} classes, regression length "
            f"{config['regression_length']}, strides {strides}"
        )
    for check in described["checks"]:
        verdict = {True: "ok", False: "FAILED", None: "skipped"}[check["passed"]]
        lines.append(f"    check {check['name']}: {verdict}: {check['message']}")
    return lines


def run(args: argparse.Namespace) -> int:
    hef = hef_of(Path(args.hef))
    info = read_hef(hef, tolerant=args.tolerant)
    export = export_of(hef)
    described = _export(info, export) if export is not None else None
    if args.json:
        print(json.dumps({**summary(info), "ultralytics_export": described}, indent=2))
    else:
        print("\n".join([*(_export_lines(described) if described else []), render_text(info)]))
    failed = described is not None and any(c["passed"] is False for c in described["checks"])
    return 1 if failed else 0
