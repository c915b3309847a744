"""Campaign family ``gates``: a gate that cannot fail and an option read two ways.

- A label-free baseline of a sparse set (a few images with fire and smoke among many empty ones: under
  0.25 boxes per image), then a new version of the model that finds nothing (its input multiplied by
  zero): the box count gate must fail it, or the baseline be refused as too weak to hold it.
- ``--map-class fire=fire --map-class fire=smoke``: one dataset class mapped twice must be refused
  naming the option and both values, not blessed with one of them kept.
- A host that puts HailoRT's NMS scores, probabilities already, through a sigmoid again (the doctor's
  ``host_sigmoid_on_nms_scores`` on the YOLOX export at threshold 0.5): the same boxes in the same
  order, every score in [0.5, 0.731]; the mAP and the box count cannot see it, the agreement gate's
  score scale must fail it.
- Every doctor mode on the demo's first 8 images at threshold 0.5 (about 13 boxes, where the agreement
  floor's margin widens by the noise of counting so few): each mode not stated as a gap must fail a gate.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from PIL import Image

from tools.campaign import MODEL, ROOT, Campaign, Ran

FAMILY = "gates"
REAL_IMAGES = 3  # demo images with objects: about 2.5 boxes each
EMPTY_IMAGES = 40  # images with nothing on them: the set's mean falls below 0.25 boxes per image


def run(c: Campaign) -> None:
    sparse_set_model_finds_nothing(c)
    map_class_twice(c)
    sigmoid_twice_at_a_high_threshold(c)
    every_mode_on_few_boxes(c)


def every_mode_on_few_boxes(c: Campaign) -> None:
    """The doctor on 8 images at 0.5: recorded as caught (exit 1) where every mode not stated as a gap failed a
    gate, a false pass (exit 0) naming those none did."""
    folder = c.case_dir("few_boxes")
    ran = c.cli("doctor", "--first", "8", "--score-threshold", "0.5", "--json", "--cache", c.cache, cwd=folder)
    case = "every doctor mode on 8 images at 0.5"
    if ran.rc not in (0, 1):
        c.record(FAMILY, case, ran, "fail")
        return
    rows = json.loads(ran.out)["modes"]
    missed = [r["mode"] for r in rows if r["injected"] and not r["gap"] and not r["gate_failed"]]
    said = f"no gate failed: {missed}" if missed else f"{len(rows)} modes, each caught or a stated gap"
    c.record(FAMILY, case, Ran(0 if missed or not rows else 1, ran.out, said, ran.seconds), "fail")


def sigmoid_twice_at_a_high_threshold(c: Campaign) -> None:
    """The doctor's host sigmoid over NMS scores on the YOLOX export at 0.5, where its mean score drift
    (0.056) stays under the drift limit: recorded as caught (exit 1) where a gate failed it, a false
    pass (exit 0) where none did."""
    folder = c.case_dir("sigmoid_twice")
    mode = "host_sigmoid_on_nms_scores"
    onnx = ROOT / "tests" / "support" / "data" / "fire_smoke_yolox_256.onnx"
    args = ("doctor", "--onnx", onnx, "--first", "30", "--score-threshold", "0.5", "--mode", mode, "--json")
    ran = c.cli(*args, "--cache", c.cache, cwd=folder)
    case = "host sigmoid over NMS scores at 0.5"
    if ran.rc not in (0, 1):
        c.record(FAMILY, case, ran, "fail")
        return
    rows = [r for r in json.loads(ran.out)["modes"] if r["mode"] == mode]
    caught = bool(rows) and rows[0]["gate_failed"] is True
    said = rows[0]["gate"].splitlines()[0] if caught else f"no gate failed: {rows}"
    c.record(FAMILY, case, Ran(1 if caught else 0, ran.out, said, ran.seconds), "fail")


def sparse_set_model_finds_nothing(c: Campaign) -> None:
    folder = c.case_dir("sparse_set_no_box")
    images = folder / "images"
    images.mkdir()
    labelled = sorted((c.demo_set / "labels" / "val").glob("*.txt"))
    with_objects = [f for f in labelled if f.read_text().strip()][:REAL_IMAGES]
    size = (256, 256)
    for label in with_objects:
        source = c.demo_set / "images" / "val" / f"{label.stem}.png"
        shutil.copy(source, images / source.name)
        size = Image.open(source).size
    for i in range(EMPTY_IMAGES):
        Image.new("RGB", size, (90 + i, 100, 110)).save(images / f"empty_{i:03d}.png")
    golden = folder / "golden"
    blessed = c.cli("run", "--images", images, "--update-golden", "--golden", golden, *c.places(folder), cwd=folder)
    if blessed.rc == 2:  # the sparse baseline refused as too weak to hold a run: what had to hold held
        c.record(FAMILY, "sparse label-free baseline, no box", blessed, "refuse")
        return
    if blessed.rc not in (0, 1):
        c.record(FAMILY, "sparse label-free baseline, no box", blessed, "fail")
        return
    blind = folder / "blind" / f"{MODEL}.onnx"  # a new version of the same model: its baseline folder
    blind.parent.mkdir()
    _blinded(ROOT / "harness" / "data" / "demo" / f"{MODEL}.onnx", blind)
    ran = c.cli("run", "--onnx", blind, "--images", images, "--golden", golden, *c.places(folder), cwd=folder)
    c.record(FAMILY, "sparse label-free baseline, no box", ran, "fail")


def _blinded(source: Path, target: Path) -> None:
    """``source`` with its input multiplied by zero before the first layer: a model that sees nothing."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    name = graph.input[0].name
    graph.initializer.append(numpy_helper.from_array(np.zeros((), np.float32), "campaign_zero"))
    for node in graph.node:
        node.input[:] = ["campaign_blind" if i == name else i for i in node.input]
    graph.node.insert(0, helper.make_node("Mul", [name, "campaign_zero"], ["campaign_blind"]))
    onnx.save(model, str(target))


def map_class_twice(c: Campaign) -> None:
    folder = c.case_dir("map_class_twice")
    ran = c.cli(
        "run",
        "--map-class",
        "fire=fire",
        "--map-class",
        "fire=smoke",
        "--update-golden",
        "--golden",
        folder / "golden",
        *c.places(folder),
        cwd=folder,
    )
    c.record(FAMILY, "--map-class fire=fire, fire=smoke", ran, "refuse")
