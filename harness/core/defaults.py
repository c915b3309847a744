"""Every default of the harness, each defined once: the settings, the option table, the emulator,
the Dataflow Compiler scripts and the reports read them from here."""

from __future__ import annotations

from pathlib import Path

# Evaluation: the score threshold the demo HEF's NMS is compiled at, the YOLOv8 NMS op's IoU and
# per-class cap (hailo_model_zoo: cfg/postprocess_config/yolov8n_nms_config.json, nms_iou_th 0.7,
# max_proposals_per_class 100) and Ultralytics' max_det 300.
SCORE_THRESHOLD = 0.2
IOU_THRESHOLD = 0.7
MAX_PER_CLASS = 100
MAX_TOTAL = 300
# Candidates into Ultralytics' NMS (ultralytics: ultralytics/utils/nms.py, max_nms).
MAX_CANDIDATES = 30000
# A class output that cannot represent a score above this was calibrated without (enough) positives:
# every detection is capped below it (the field report's 64 off-domain frames). The static checks and
# the report's notes read it.
MIN_SCORE_CAP = 0.9
# Images quantization ranges are measured on (the emulator, `compile`); the field report's count.
CALIBRATION_COUNT = 64
# The calibration images the DFC wants for its default optimization level (2); with fewer it lowers
# the level and says so only in its log ("... less data than the recommended amount (1024)", as
# harness/backends/dfc/compiler.py's KNOWN_SIGNS quote it).
DFC_OPTIMIZATION_LEVEL = 2
DFC_FULL_OPTIMIZATION_IMAGES = 1024
# Where a run keeps its baselines, caches (predictions, emulated HEFs, the generated demo set) and
# reports: relative to the user's project (the working directory; the plugin: pytest's rootdir).
GOLDEN_DIR = Path("golden")
CACHE_DIR = Path(".harness-cache")
REPORT_DIR = Path("reports") / "latest"
# The dataset split evaluated (a COCO annotations file is one split, whatever its name).
SPLIT = "val"
# Images larger than this are refused unread (a 12000x12000 PNG of 140 KB decodes to 432 MB of RGB);
# 8K UHD is 33 MP.
MAX_IMAGE_PIXELS = 40_000_000
# Images inferred together, in one runner call where the backend takes a batch (the emulator,
# HailoRT). tools/bench_batch on the demo set, onnxruntime on 2 threads: the emulated path 139 images/s
# at 1, 147-153 at 4 to 16, with the same detections; 8 is the middle of that plateau.
BATCH = 8
# The most mAP@0.5 a DFC stage (fp_optimized, quantized, hardware) may lose against the float model
# before the stage gate fails (--stage-drop): a floor of the run itself, never blessed.
STAGE_DROP = 0.02
# The share of a dataset's images that may be unreadable before a run refuses it (none, by default).
MAX_UNREADABLE = 0.0
