"""``hailo-harness doctor``: every failure mode (harness.doctor.modes) injected into one model's run; is
each caught by a gate and named by the diagnosis, and do clean runs pass?"""

from __future__ import annotations

import argparse
import json
import sys

from harness.core import signing
from harness.core.errors import HarnessError
from harness.pipeline.argparse_options import add_options
from harness.pipeline.options import DOCTOR_OPTIONS, onnx_of, settings_spec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, DOCTOR_OPTIONS)
    parser.add_argument("--first", type=int, metavar="N", help="use only the first N images of the dataset")
    parser.add_argument("--mode", action="append", metavar="NAME", help="run only this failure mode (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.first is not None and args.first < 1:
        raise HarnessError(f"--first {args.first}: expected a positive number of images")
    from harness.doctor.bench import open_bench  # the evaluation, once the options hold
    from harness.doctor.modes import modes_by_name, modes_for
    from harness.doctor.render import table_dict, table_lines
    from harness.doctor.table import run_doctor
    from harness.families import REGISTERED, descriptor
    from harness.pipeline.factory import model_facts

    if args.require_signed:
        signing.require_signed()  # the clean runs' baselines are held to it
    by_name = modes_by_name()
    unknown = [name for name in args.mode or () if name not in by_name]
    if unknown:
        raise HarnessError(f"--mode {unknown[0]}: expected one of {list(by_name)}")
    values = vars(args)
    facts = model_facts(onnx_of(values), args.cache, ssd=args.ssd_config)  # the head family, before any work
    family = facts.family or facts.require_heads()[0]
    if args.bbox_only and not descriptor(family).bbox_only_op:
        raise HarnessError(
            f"--bbox-only: HailoRT has no bbox-only op for {descriptor(family).display} heads (it has one for "
            f"{', '.join(d.display for d in REGISTERED if d.bbox_only_op)}); leave the option out"
        )
    own = modes_for(family, args.bbox_only)
    foreign = [name for name in args.mode or () if by_name[name] not in own]
    if foreign:
        raise HarnessError(
            f"--mode {foreign[0]}: not a mistake of {family.value} heads; theirs: {[m.name for m in own]}"
        )
    modes = [by_name[name] for name in args.mode] if args.mode else own
    bench = open_bench(
        onnx_of(values),
        args.dataset,
        first=args.first,
        split=args.split,
        images=args.images,
        max_unreadable=args.max_unreadable,
        calibration=args.calibration,
        cache_dir=args.cache,
        golden_root=args.golden,
        settings=settings_spec(values),
        log=_stderr,
        bbox_only=args.bbox_only,
    )
    table = run_doctor(bench, modes, log=_stderr)
    print(json.dumps(table_dict(table), indent=2) if args.json else "\n".join(table_lines(table)))
    return 0 if not table.problems else 1
