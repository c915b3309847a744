"""Campaign family ``compile``: a model script that would claim what it does not compile.

- ``compile --dry-run --bbox-only`` of a head HailoRT has no bbox-only op for (the YOLO26 demo, whose HEF has
  no NMS op at all) must be refused with one line naming why (exit 2), no model script written: never a
  script that compiles something else than the bbox-only op asked for.
- ``compile --dry-run`` of the YOLOv8 demo with the bbox-only op asked for must write the script with it.
"""

from __future__ import annotations

from pathlib import Path

from tools.campaign import ROOT, Campaign, Ran

FAMILY = "compile"
DEMO = ROOT / "harness" / "data" / "demo"


def run(c: Campaign) -> None:
    ran, out = _bbox_only_dry_run(c, "bbox_only_without_op", "fire_smoke_yolo26n_256")
    written = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    lost = f"refused, yet wrote {written}" if ran.rc == 2 and written else None
    c.record(FAMILY, "--bbox-only, YOLO26 (no NMS op)", ran, "refuse", lost)
    ran, out = _bbox_only_dry_run(c, "bbox_only_with_op", "fire_smoke_yolo11n_256")
    script = out / "fire_smoke_yolo11n_256.alls"
    asked = script.is_file() and "bbox_decoding_only=True" in script.read_text(encoding="utf-8")
    lost = None if ran.rc != 0 or asked else f"exit 0, but {script.name} does not ask for the bbox-only op"
    c.record(FAMILY, "--bbox-only, YOLOv8 (its op)", ran, "pass", lost)


def _bbox_only_dry_run(c: Campaign, case: str, model: str) -> tuple[Ran, Path]:
    """``compile --dry-run --bbox-only`` of the demo ``model`` in a folder of its own, and its output folder."""
    folder = c.case_dir(case)
    out = folder / "out"
    calibration = ("--calibration", c.demo_set / "images" / "val", "--calibration-count", "2")
    ran = c.cli(
        "compile", "--onnx", DEMO / f"{model}.onnx", *calibration, "--out", out, "--dry-run", "--bbox-only", cwd=folder
    )
    return ran, out
