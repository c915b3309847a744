"""``hailo-harness compile``: the DFC's model script (and NMS config) for an ONNX, checked, then a HEF.

A YOLOv8/YOLO11 export gets a model script with the NMS op and its NMS config; a YOLOv5/YOLOv7 export
(found by its decode tail) gets the sigmoid on every output and the YOLOv5 NMS op, its NMS config holding
the export's anchors per stride, as the Model Zoo compiles YOLOv5; a YOLO26 export (found
by its head convolutions) gets a model script without NMS op or sigmoid (both run on the host), 16-bit
head outputs, as Ultralytics compiles it, for the head the export carries: the one-to-one head by
default, the one-to-many head (NMS on the host) with ``--head one2many``.

The files name layers of the DFC's parsed graph (``conv41``, ...), known only after the DFC has
translated the ONNX. With the DFC the names come from its translation. With ``--dry-run`` (no DFC
needed) they come from ``--hn`` (a translated graph's HN JSON), from ``--layer-map`` (a JSON object
ONNX end node -> parsed layer name, the format of the ``layer_names.json`` written beside the
scripts), or else are placeholders ``UNRESOLVED_...`` that must be replaced before compiling. A layer
map is taken on trust (its shapes are the ONNX heads'); only a parsed graph lets the checks see names
that the DFC's graph contradicts.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.backends.dfc.checks import failures
from harness.backends.dfc.compiler import HW_ARCHS, CompileRequest, compile_hef, load_sdk
from harness.backends.dfc.heads import end_nodes_of, head_options, onnx_facts, table_from_names
from harness.backends.dfc.layers import LayerTable, names_from_map, names_from_parsed, parsed_layers, placeholder_names
from harness.backends.dfc.scripts import head_words, write_checked_scripts
from harness.backends.dfc.writing import NmsSettings
from harness.core.checks import CheckResult
from harness.core.documents import read_json
from harness.core.errors import HarnessError
from harness.inputs.calibration import calibration_paths, calibration_shortfall, calibration_size
from harness.inputs.export_facts import ExportFacts
from harness.inputs.onnx_graph import load_model, quantized_ops
from harness.pipeline.argparse_options import add_options

_MARKS = {True: "PASS", False: "FAIL", None: "SKIP"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--onnx",
        type=Path,
        required=True,
        metavar="M.onnx",
        help="float YOLOv8 / YOLO11 / YOLOv5 / YOLOv7 / YOLOX / YOLO26 / SSD export (SSD: with --ssd-config)",
    )
    parser.add_argument("--calibration", type=Path, required=True, metavar="DIR", help="folder of calibration images")
    add_options(parser, ["calibration_count", "follow_links"])
    parser.add_argument("--hw-arch", choices=HW_ARCHS, default="hailo8", help="target device (default hailo8)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="output folder (default runs/compile/<onnx stem>)")
    parser.add_argument("--dry-run", action="store_true", help="write and check the scripts without the DFC")
    parser.add_argument(
        "--end-nodes", nargs="+", metavar="N", help="the head nodes to cut at (default: found by structure)"
    )
    parser.add_argument(
        "--head",
        choices=tuple(head_options()),
        help="YOLO26 only: the head the export carries and the HEF is to carry (default one2one: top-k on the host; "
        "one2many: an export with end2end=False, NMS on the host)",
    )
    names = parser.add_mutually_exclusive_group()
    names.add_argument(
        "--hn",
        type=Path,
        metavar="HN.json",
        help="with --dry-run: the translated graph's HN JSON (layer names, shapes)",
    )
    names.add_argument(
        "--layer-map",
        type=Path,
        metavar="MAP.json",
        help="with --dry-run: JSON object ONNX end node -> parsed layer name",
    )
    add_options(parser, ["score_threshold", "iou_threshold", "max_per_class", "cache", "ssd_config"])  # the NMS op's
    parser.add_argument(
        "--bbox-only",
        action="store_true",
        help="YOLOv8/YOLO11 and YOLOv5/YOLOv7: compile HailoRT's bbox-only op (nms_postprocess(..., "
        "bbox_decoding_only=True): the HEF decodes the boxes, the host runs the NMS) in place of the NMS op",
    )


def _read_json(path: Path, what: str) -> object:
    return read_json(path, f"{what} JSON")


def _print_checks(checks: tuple[CheckResult, ...]) -> None:
    for check in checks:
        print(f"{_MARKS[check.passed]}  {check.name}: {check.message}")


def _print_head(facts: ExportFacts) -> None:
    print(f"head: {head_words(facts.require_heads()[0])}")
    print(f"end nodes: {' '.join(h.node for h in end_nodes_of(facts))}")


def _float_export(onnx: Path) -> CheckResult:
    """The scripts are written from the graph's structure, whatever its ops; the DFC parses a float export only."""
    wrong = quantized_ops(load_model(onnx), os.fspath(onnx))
    if wrong:
        return CheckResult("float_export", False, f"{wrong}. Fix: give the float export of the same model")
    return CheckResult.ok("float_export", "no quantized op: a float export, as the Dataflow Compiler parses")


def _dry_run(args: argparse.Namespace, out: Path, settings: NmsSettings, calibration_count: int) -> int:
    facts = onnx_facts(args.onnx, args.end_nodes, head_options().get(args.head), args.ssd_config)
    table: LayerTable
    if args.hn is not None:
        hn = _read_json(args.hn, "HN")
        if not isinstance(hn, dict):
            raise HarnessError(f"HN {os.fspath(args.hn)!r}: a JSON {type(hn).__name__}, expected an object")
        table = parsed_layers(hn)
        names = names_from_parsed(facts, table)
    elif args.layer_map is not None:
        mapping = _read_json(args.layer_map, "layer map")
        if not isinstance(mapping, dict):
            raise HarnessError(
                f"layer map {os.fspath(args.layer_map)!r}: a JSON {type(mapping).__name__}, "
                "expected an object ONNX end node -> parsed layer name"
            )
        names = names_from_map(facts, mapping)
        table = table_from_names(facts, names, "layer map")
    else:
        names = placeholder_names(facts)
        table = table_from_names(facts, names, "placeholder")
    files, checks = write_checked_scripts(out, args.onnx.stem, facts, names, table, settings, calibration_count)
    checks = (_float_export(args.onnx), *checks)
    for path in (files.alls, files.nms_json, files.layer_names):
        if path is not None:
            print(f"wrote {path}")
    _print_head(facts)
    print(f"layer names: {table.source}")
    _print_checks(checks)
    return 1 if failures(checks) else 0


def run(args: argparse.Namespace) -> int:
    out = args.out if args.out is not None else Path("runs") / "compile" / args.onnx.stem
    given = {"score_threshold": args.score_threshold, "iou_threshold": args.iou_threshold}  # None: the default
    settings = NmsSettings(
        **{k: v for k, v in given.items() if v is not None},
        max_proposals_per_class=args.max_per_class,
        bbox_decoding_only=args.bbox_only,
    )
    calibration_count = len(calibration_paths(args.calibration, args.calibration_count))
    shortfall = calibration_shortfall(calibration_count, available=calibration_size(args.calibration))
    if shortfall:  # before any work: the DFC itself says so only in its log
        print(f"warning: {shortfall}", file=sys.stderr)
    if args.dry_run:
        return _dry_run(args, out, settings, calibration_count)
    if args.hn is not None or args.layer_map is not None:
        raise HarnessError("compile: --hn and --layer-map apply to --dry-run; the DFC names the layers itself")
    load_sdk()
    request = CompileRequest(
        onnx=args.onnx,
        calibration=args.calibration,
        calibration_count=args.calibration_count,
        hw_arch=args.hw_arch,
        end_nodes=tuple(args.end_nodes) if args.end_nodes else None,
        nms=settings,
        head=head_options().get(args.head),
        ssd=args.ssd_config,
    )
    result = compile_hef(request, out, cache_root=args.cache / "dfc")
    _print_head(result.facts)
    _print_checks(result.checks)
    print(f"wrote {result.hef}{' (from the cache)' if result.cached else ''}")
    print(f"wrote {result.har}")
    print(f"log {result.log}")
    for warning in result.warnings:
        print(f"warning: {result.log.name} {warning}", file=sys.stderr)
    return 0
