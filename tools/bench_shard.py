"""Benchmark: one job run whole beside the same job in 2 and 4 shards merged (issue 27): whether the
merge gives the single run's verdict to the bit, and the wall times.

    python -m tools.bench_shard [--dataset D] [--rounds R] [--dir DIR]

Each round runs, interleaved: the whole job, then for N in 2 and 4 every shard one after the other
and the merge. Every run infers all it is given (the whole run's prediction cache is emptied first;
a shard writes its store anew); the emulated HEF is built once beforehand. Printed: medians over the
rounds of the whole run, the slowest shard (a fleet's wall time when the shards run at once on N
runners), all shards together, the merge, and the ratios to the whole run; and whether every merge's
predictions, gates and report.json equal the whole run's (but for created and from_cache). On one
machine the shards run one after the other: their sum is what one machine pays, the slowest what a
fleet waits for. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.pipeline.job import JobResult, run_job
from harness.pipeline.options import job_config
from harness.pipeline.shard import Shard, merge_job, run_shard
from tools.bench_paths import writable_folder

COUNTS = (2, 4)


def _quiet(line: str) -> None:
    """A log that keeps nothing."""


def _document(job: JobResult) -> dict[str, Any]:
    document = json.loads(job.reports["json"].read_text())
    for path in document["paths"]:
        path["provenance"].pop("created")
        path["provenance"].pop("from_cache")
    return document


def _equal(single: JobResult, merged: JobResult) -> bool:
    same = all(
        (a.boxes.tobytes(), a.scores.tobytes(), a.class_ids.tobytes())
        == (b.boxes.tobytes(), b.scores.tobytes(), b.class_ids.tobytes())
        for one, other in zip(single.results, merged.results, strict=True)
        for a, b in zip(one.predictions, other.predictions, strict=True)
    )
    gates = [[(g.name, g.passed, g.observed, g.text) for g in job.gates] for job in (single, merged)]
    return same and gates[0] == gates[1] and _document(single) == _document(merged)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=None, help="labelled set (default: the demo's)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("."), help="where the temporary folders go")
    args = parser.parse_args()
    writable_folder("bench_shard", "--dir", args.dir)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-shard-") as folder:
        tmp = Path(folder)
        values: dict[str, Any] = {"dataset": args.dataset, "cache": tmp / "cache", "golden": tmp / "golden"}

        def config(report: Path, **more: Any) -> Any:
            return job_config({**values, "report": report, **more}, ("hailo-harness", "run"), progress=False)

        run_job(config(tmp / "bless", update_golden=True, accept_weak_baseline=True), log=_quiet)  # HEF, baselines
        times: dict[str, list[float]] = {"whole": []}
        equal: list[bool] = []
        for _ in range(args.rounds):
            shutil.rmtree(tmp / "cache" / "predictions", ignore_errors=True)
            start = time.perf_counter()
            single = run_job(config(tmp / "single"), log=_quiet)
            times["whole"].append(time.perf_counter() - start)
            for count in COUNTS:
                stores, shards = [], []
                for index in range(1, count + 1):
                    store = tmp / f"{count}-{index}"
                    start = time.perf_counter()
                    run_shard(config(store), Shard(index, count), values, log=_quiet)
                    shards.append(time.perf_counter() - start)
                    stores.append(store)
                start = time.perf_counter()
                merged = merge_job(stores, values | {"report": tmp / f"merged-{count}"}, ("bench",), log=_quiet)
                times.setdefault(f"merge {count}", []).append(time.perf_counter() - start)
                times.setdefault(f"slowest shard of {count}", []).append(max(shards))
                times.setdefault(f"{count} shards together", []).append(sum(shards))
                equal.append(_equal(single, merged))
        images = len(single.results[0].image_ids)
        whole = statistics.median(times["whole"])
        print(f"{images} images, {args.rounds} interleaved rounds, medians (s):")
        for name, values_s in times.items():
            median = statistics.median(values_s)
            print(f"  {name:<24} {median:7.2f}   {median / whole:5.2f} x the whole run")
        print(f"every merge equal to the whole run (predictions, gates, report.json): {all(equal)}")


if __name__ == "__main__":
    main()
