"""The pytest plugin (entry point ``pytest11: hailo_harness``).

It is loaded by every pytest run where the package is installed, so it imports the evaluation
(onnx, onnxruntime, the backends) only when an option asks for gates.

Options are also ini keys (``[tool.pytest.ini_options]`` or ``pytest.ini``). The harness' gates
are collected as ordinary test items under ``hailo-harness``, so they show up, fail and report
like any test, also in JUnit XML and under pytest-xdist.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.cli.plugin_items import (
    JOB,
    SHARD_VALUES,
    CalibrationCheckItem,
    ConformanceItem,
    JobGateItem,
    ShardItem,
    StaticCheckItem,
    live_lines,
    one_line_on_interrupt,
)
from harness.cli.plugin_setup import refuse_moved_setup
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily
from harness.families import descriptor
from harness.inputs.demo import DEMO_ONNX
from harness.pipeline.options import JOB_OPTIONS, OPTIONS, from_text, job_config
from harness.pipeline.spec import JobConfig, planned_gates

if TYPE_CHECKING:
    from harness.conformance.suite import Decoder, Property


DECODER_HELP = "run the decoder conformance suite against a six-output decoder 'package.module:function'"
# Every registered family's head, and a host decoder of the bbox-only buffer of those HailoRT has a bbox-only op for.
DECODER_HEADS = (
    *(f.value for f in HeadFamily),
    *(f"{f.value}-bbox-only" for f in HeadFamily if descriptor(f).bbox_only_op),
)
DECODER_HEAD_HELP = (
    "the head family --decoder decodes (default yolov8): "
    + ", ".join(f"{f.value} ({descriptor(f).display})" for f in HeadFamily)
    + "; "
    + ", ".join(h for h in DECODER_HEADS if h.endswith("-bbox-only"))
    + ": a host decoder of HailoRT's bbox-only buffer (anchors from DecodeConfig.anchors, an SSD config from "
    "DecodeConfig.ssd)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The option table's job options (also ini keys ``harness_<name>``) and ``--decoder``."""
    group = parser.getgroup("hailo-harness", "accuracy-regression gates for Hailo-compiled detectors")
    for name in JOB_OPTIONS:
        option = OPTIONS[name]
        action = {"flag": "store_true", "repeat": "append"}.get(option.kind, "store")
        group.addoption(option.flag, dest=f"harness_{name}", action=action, default=None, help=option.help)
        parser.addini(f"harness_{name}", option.help)
    group.addoption("--decoder", dest="harness_decoder", default=None, help=DECODER_HELP)
    parser.addini("harness_decoder", DECODER_HELP)
    group.addoption("--decoder-head", dest="harness_decoder_head", default=None, help=DECODER_HEAD_HELP)
    group.addoption(
        "--calibration-check",
        dest="harness_calibration_check",
        action="store_true",
        default=False,
        help="also judge the job's --calibration set before any compile (hailo-harness calibration-check): one "
        "item, failing where the set is unfit",
    )
    parser.addini("harness_decoder_head", DECODER_HEAD_HELP)


# The options whose value is a path, written ``--hef PATH`` as often as ``--hef=PATH``.
_PATH_FLAGS = frozenset(OPTIONS[n].flag for n in JOB_OPTIONS if OPTIONS[n].is_path)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> None:
    """Refuse, before any conftest loads, a run whose rootdir or ini file pytest may have chosen from
    the value of ``--hef PATH`` (read as a test path before this plugin declared the option)."""
    refuse_moved_setup(early_config, parser, _PATH_FLAGS)


# pytest knows this plugin by its entry point's name (pyproject.toml: [project.entry-points.pytest11]);
# `-p no:NAME` with a name no plugin has blocks nothing, silently. These are the names a user tries.
PLUGIN_NAME = "hailo_harness"
_NOT_ITS_NAME = frozenset({"harness", "hailo-harness", "harness.cli.plugin", "hailo_harness.plugin"})


def pytest_configure(config: pytest.Config) -> None:
    tried = [v[3:] for v in config.getoption("plugins", None) or [] if v.startswith("no:") and v[3:] in _NOT_ITS_NAME]
    if tried:
        raise pytest.UsageError(
            f"-p no:{tried[0]}: no plugin has that name, so it switches nothing off; "
            f"the harness's plugin is named {PLUGIN_NAME}: -p no:{PLUGIN_NAME}"
        )
    config.addinivalue_line("markers", "hailo_hw: needs a Hailo device and hailo_platform (HailoRT)")
    config.addinivalue_line("markers", "dfc: needs the Hailo Dataflow Compiler (hailo_sdk_client)")


def pytest_unconfigure(config: pytest.Config) -> None:
    from harness.core.confine import release

    release()  # the session's confinement ends with it (pytester runs sessions in one process)


def _given(config: pytest.Config, name: str) -> tuple[str | None, Path | None]:
    """An option's text, the command line's else the ini key's (None when neither is set), and the
    folder a relative path in it is relative to: the ini file's for an ini key (None for the command
    line's, relative to the working directory as written)."""
    value = config.getoption(f"harness_{name}")
    if isinstance(value, list):
        value = ",".join(value)
    if value not in (None, False, ""):
        return str(value), None
    value = config.getini(f"harness_{name}")
    if value in (None, False, "", []):
        return None, None
    return str(value), config.inipath.parent if config.inipath else config.rootpath


def _text(config: pytest.Config, name: str) -> str | None:
    return _given(config, name)[0]


def _values(config: pytest.Config) -> dict[str, Any]:
    """Every job option's value, parsed by the option table; a bad value is a usage error naming it.
    An ini key's relative path is relative to its ini file, and the defaults (``golden/``,
    ``.harness-cache/``, ``reports/latest/``) lie in the user's project: pytest's rootdir."""
    values = {}
    for name in JOB_OPTIONS:
        text, base = _given(config, name)
        if text is not None and base is not None and OPTIONS[name].is_path:
            text = str(base / text)  # as absolute before it is parsed (and checked)
        try:
            value = from_text(name, text)
        except HarnessError as error:
            raise pytest.UsageError(str(error)) from error
        if text is None and isinstance(value, Path):
            value = config.rootpath / value
        values[name] = value
    if len(values["hailo_device"]) > 1:  # under pytest-xdist each worker takes a device of its own
        from harness.backends.hailort.devices import worker_devices

        try:
            workers = _worker_count(config)
            if workers:  # the controller: every device used, and the last worker's refused as that worker would
                _every_device_used(values["hailo_device"], workers)
                worker_devices(values["hailo_device"], f"gw{workers - 1}")
            values["hailo_device"] = list(worker_devices(values["hailo_device"], os.environ.get(_XDIST_WORKER)))
        except HarnessError as error:
            raise pytest.UsageError(str(error)) from error
    return values


def _static_check_items(parent: pytest.Collector, hef: Path, values: dict[str, Any]) -> list[pytest.Item]:
    """One item per static check; when the inputs cannot be read, one failing item that says why. The
    HEF's score threshold is held against the one given (without one, an evaluation takes the HEF's)."""
    config = parent.config
    given = _text(config, "score_threshold") is not None
    from harness.inputs.hef.reader import read_hef
    from harness.inputs.hef.ultralytics import export_of
    from harness.pipeline.factory import load_dataset, model_facts
    from harness.verdict.hef_checks import CheckContext, run_checks

    try:
        ctx = CheckContext(
            hef=read_hef(hef),
            export=export_of(hef),
            model=model_facts(Path(values["onnx"]), values["cache"], ssd=values["ssd_config"])
            if values["onnx"]
            else None,
            dataset_names=load_dataset(values["dataset"], values["split"], images=values["images"]).names
            if values["dataset"]
            else None,
            eval_score_threshold=values["score_threshold"] if given else None,
        )
    except HarnessError as error:
        return [StaticCheckItem.from_parent(parent, name="test_hef_static[inputs]", result=None, error=str(error))]
    results = run_checks(ctx)
    items: list[pytest.Item] = [
        StaticCheckItem.from_parent(parent, name=f"test_hef_static[{r.name}]", result=r) for r in results
    ]
    if all(r.passed is None for r in results):  # every check skipped: the HEF was not checked at all
        why = "; ".join(f"{r.name}: {r.message}" for r in results)
        nothing = f"none of the {len(results)} static checks applies to {hef}, so nothing was checked ({why})"
        name = "test_hef_static[nothing_checked]"
        items.append(StaticCheckItem.from_parent(parent, name=name, result=None, error=nothing))
    return items


def _evaluates(values: Mapping[str, Any]) -> bool:
    """The evaluation gates need images: ``--dataset``, ``--images`` (without labels), or the demo
    model's own set where no ``--hef`` is given (``--hef`` alone asks for the HEF's static checks)."""
    onnx = values["onnx"]
    given = values["dataset"] is not None or values["images"] is not None
    demo = values["hef"] is None and onnx is not None and Path(onnx).resolve() == DEMO_ONNX
    return (onnx is not None and given) or demo


_XDIST_WORKER = "PYTEST_XDIST_WORKER"  # pytest-xdist's worker name (gw0, gw1, ...) in each worker's environment


def _checked_job(config: pytest.Config, values: dict[str, Any]) -> JobConfig:
    """The job the options describe, with everything it refuses before it runs refused here: a
    usage error, once."""
    try:
        invocation = ("pytest", *config.invocation_params.args)
        job = job_config(values, invocation, progress=False, hef_checked=True)
        # pytest-xdist's run id, the same in every worker: the first to bless writes, the others do not
        job = replace(job, bless_token=getattr(config, "workerinput", {}).get("testrunuid"))
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from error
    if job.har is not None:
        from harness.backends.dfc import DfcNotInstalled, load_sdk

        try:
            load_sdk()  # the stages need the Dataflow Compiler: a usage error here, not a failure per gate
        except DfcNotInstalled as error:
            raise pytest.UsageError(f"--har {job.har}: {error}") from error
    try:
        _refuse_bad_inputs(job, live_lines(config))  # once, not once per gate
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from error
    return job


def _job_gate_items(parent: pytest.Collector, job: JobConfig, values: dict[str, Any]) -> list[pytest.Item]:
    """One item per gate the job will yield, named from its identity; the job runs at the first.
    With ``--shard K/N`` one item, ``test_shard[K/N]``, that stores this runner's share."""
    config = parent.config
    config.stash[JOB] = job
    if values["shard"] is not None:
        config.stash[SHARD_VALUES] = values
        return [ShardItem.from_parent(parent, name=f"test_shard[{values['shard']}]")]
    return [JobGateItem.from_parent(parent, name=str(gate), gate_id=gate) for gate in planned_gates(job)]


def _quiet(line: str) -> None:
    """A log that keeps nothing."""


def _refuse_bad_inputs(job: JobConfig, log: Callable[[str], None]) -> None:
    """What the job refuses before it runs anything, refused at collection: each path's options and
    the Hailo path's preflight, and the dataset as the job reads it (its images and labels, its class
    names against the model's): bad input is one usage error, a bad model's or a bad dataset's alike,
    not a failure per gate."""
    from harness.pipeline.factory import check, load_dataset, preflight, prepare_run

    facts = preflight(job)
    dataset = load_dataset(job.dataset, job.split, job.cache_dir, job.images, log)
    paths = (job.hailo, *job.stages)
    run = prepare_run(
        job.onnx,
        dataset,
        job.settings,
        job.cache_dir,
        log=_quiet,  # the job says its thresholds when it runs
        max_unreadable=job.max_unreadable,
        paths=paths,
        batch=job.batch,
        facts=facts,
    )
    for spec in paths:
        check(spec, run.settings)


@dataclass(frozen=True)
class _Plan:
    """What the options ask for, every refusal made: their values, the evaluation's job (checked) where
    the evaluation gates run, the decoder conformance suite's target and properties, and a line saying
    which gates an option given did not ask for."""

    values: Mapping[str, Any]
    job: JobConfig | None
    decoder: str | None
    properties: tuple[Property, ...]
    note: str | None


def _plan(config: pytest.Config) -> _Plan:
    """The gates the options ask for, or the usage error that refuses them: the same on the controller
    of a pytest-xdist run (before any worker starts) as in a run without it and in each worker."""
    values = _values(config)
    _refuse_half_options(config, values)
    job = _checked_job(config, values) if _evaluates(values) else None
    target, planted = _conformance_plan(config)
    return _Plan(values, job, target, planted, _static_only_note(values))


def _conformance_plan(config: pytest.Config) -> tuple[str | None, tuple[Property, ...]]:
    """``--decoder``'s target, loaded once (a bad target is a usage error at collection, not seven
    failures), and the properties of its head family."""
    target = _text(config, "decoder")
    head = _text(config, "decoder_head")
    if head and not target:
        raise pytest.UsageError(f"--decoder-head {head}: belongs to --decoder package.module:function")
    if not target:
        return None, ()
    from harness.conformance.suite import conformance_head, load_decoder, properties

    try:
        load_decoder(target)
        family, bbox_only = conformance_head(head or HeadFamily.YOLOV8.value)
        planted = properties(family, bbox_only)
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from error
    except ValueError:
        raise pytest.UsageError(f"--decoder-head {head}: expected one of {list(DECODER_HEADS)}") from None
    return target, tuple(planted)


def _static_only_note(values: Mapping[str, Any]) -> str | None:
    """Where ``--hef`` runs the HEF's static checks and no evaluation gate: the line that says so."""
    if values["hef"] is None or _evaluates(values):
        return None
    return (
        f"--hef {values['hef']}: the HEF's static checks only; the evaluation gates (the Hailo path against the "
        "ONNX export and the baselines) need --onnx M.onnx with --dataset D (labelled) or --images DIR"
    )


def _confine(config: pytest.Config, values: dict[str, Any]) -> None:
    """Where the job may write (:mod:`harness.core.confine`): pytest's rootdir and the folders its
    options or ini keys name, links out of them refused unless ``--follow-links`` is given."""
    from harness.core.confine import confine
    from harness.pipeline.options import named_folders

    given = {name: value for name, value in values.items() if _given(config, name)[0] is not None}
    confine(config.rootpath, named_folders(given), bool(values.get("follow_links")))


class HarnessSuite(pytest.Collector):
    """The gate items the options ask for."""

    def collect(self) -> list[pytest.Item]:
        plan = _plan(self.config)
        self.config.stash[_NOTE] = plan.note
        values = dict(plan.values)
        items: list[pytest.Item] = []
        if values["hef"] is not None:
            items.extend(_static_check_items(self, values["hef"], values))
        if plan.job is not None:
            _confine(self.config, values)
            items.extend(_job_gate_items(self, plan.job, values))
            if self.config.getoption("harness_calibration_check"):
                if plan.job.hailo.calibration is None:
                    raise pytest.UsageError("--calibration-check: the set it judges is --calibration DIR; none given")
                items.append(CalibrationCheckItem.from_parent(self, name="test_calibration_check"))
        for prop in plan.properties:
            slug = re.sub(r"\W+", "_", prop.sentence).strip("_")
            items.append(
                ConformanceItem.from_parent(
                    self, name=f"test_decoder_conformance[{slug}]", decoder_target=plan.decoder, prop=prop
                )
            )
        return items


# Options that say how to run gates, given without any (--onnx, --dataset and --hef each ask for some).
# --require-signed is a policy over every file read (baselines, and where signed, recordings and caches), not a gate.
# --follow-links likewise: a policy over every write.
_GATE_OPTIONS = tuple(n for n in JOB_OPTIONS if n not in ("onnx", "hef", "dataset", "require_signed", "follow_links"))
# What the HEF's static checks read: the HEF, the export and the dataset's class names they are held to,
# the score threshold held against the HEF's, an SSD export's config, and the cache of export facts.
_STATIC_CHECK_OPTIONS = frozenset(
    {
        "onnx",
        "hef",
        "dataset",
        "split",
        "images",
        "score_threshold",
        "ssd_config",
        "cache",
        "require_signed",
        "follow_links",
    }
)


def _given_flags(config: pytest.Config, names: Iterable[str]) -> list[str]:
    return [OPTIONS[n].flag for n in names if config.getoption(f"harness_{n}") not in (None, False, [])]


def _options_of(given: list[str]) -> str:
    return f"{given[0]} is an option" if len(given) == 1 else f"{', '.join(given)} are options"


def _refuse_half_options(config: pytest.Config, values: Mapping[str, Any]) -> None:
    """A run that would check nothing it was asked to is a usage error naming what is missing: an
    export without labelled images, a dataset without a model, gate options without gates, evaluation
    options beside a HEF whose static checks alone run."""
    onnx, dataset, hef = values["onnx"], values["dataset"], values["hef"]
    if _evaluates(values):
        return
    if hef is not None:
        unread = _given_flags(config, (n for n in JOB_OPTIONS if n not in _STATIC_CHECK_OPTIONS))
        if unread:
            raise pytest.UsageError(
                f"{_options_of(unread)} of the evaluation gates, and --hef {hef} alone asks for the HEF's static "
                "checks: the evaluation gates need --onnx M.onnx with --dataset D (labelled) or --images DIR"
            )
        return
    if onnx is not None:
        raise pytest.UsageError(
            f"--onnx {onnx}: the evaluation gates need images: give --dataset D (labelled; only the demo model "
            "brings its own) or --images DIR (without labels), or --hef M.hef for the HEF's static checks"
        )
    if dataset is not None:
        raise pytest.UsageError(f"--dataset {dataset}: needs --onnx M.onnx (the model to evaluate on it) or --hef")
    given = _given_flags(config, _GATE_OPTIONS)
    if given:
        raise pytest.UsageError(
            f"{_options_of(given)} of the harness's gates, and none was asked for: the evaluation gates need "
            "--onnx M.onnx with --dataset D (or --images DIR), the HEF's static checks --hef M.hef"
        )


def _skip_unavailable(items: list[pytest.Item]) -> None:
    """``hailo_hw`` items skip without HailoRT or a device, ``dfc`` items without the Dataflow Compiler."""
    reasons: dict[str, str | None] = {}
    for item in items:
        if item.get_closest_marker("hailo_hw"):
            if "hailo_hw" not in reasons:
                from harness.backends.hailort import hardware_skip_reason

                reasons["hailo_hw"] = hardware_skip_reason()
            if reasons["hailo_hw"]:
                item.add_marker(pytest.mark.skip(reason=str(reasons["hailo_hw"])))
        if item.get_closest_marker("dfc") and importlib.util.find_spec("hailo_sdk_client") is None:
            item.add_marker(pytest.mark.skip(reason="the Hailo Dataflow Compiler (hailo_sdk_client) is not installed"))


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    _skip_unavailable(items)
    suite = HarnessSuite.from_parent(session, name="hailo-harness", nodeid="hailo-harness")
    with one_line_on_interrupt(), _told_to_controller(config):  # reading the model and the dataset
        gates = suite.collect()
    # Reported as collected, so that pytest's "collected N items" counts the gates too.
    config.hook.pytest_collectreport(report=pytest.CollectReport(suite.nodeid, "passed", None, [*gates]))
    items.extend(gates)


# pytest-xdist: the controller collects nothing, and a worker's usage error ends that worker alone with
# "no tests ran" (exit 5) and no line. The controller plans the run itself before any worker starts, and a
# refusal a worker meets all the same travels back in its workeroutput to be raised on the controller.
_USAGE_ERROR = "hailo_harness_usage_error"
_WORKER_REFUSALS = pytest.StashKey[list[str]]()
_NOTE = pytest.StashKey[str | None]()


def _xdist_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and config.pluginmanager.has_plugin("dsession")


def _worker_count(config: pytest.Config) -> int:
    """On pytest-xdist's controller, how many workers it starts (one per ``--tx`` spec, ``N*popen`` N
    of them); 0 elsewhere."""
    if not _xdist_controller(config):
        return 0
    count = 0
    for spec in config.getoption("tx", None) or []:
        times, star, _ = str(spec).partition("*")
        count += int(times) if star and times.isdigit() else 1
    return count


def _every_device_used(devices: list[str], workers: int) -> None:
    """Fewer workers than devices leaves a device given unused (each worker opens its own): refused."""
    if workers < len(devices):
        unused = ",".join(devices[workers:])
        raise HarnessError(
            f"--hailo-device {','.join(devices)}: {len(devices)} devices for {workers} pytest-xdist worker(s), so "
            f"{unused} would not be used; expected one worker per device (pytest -n {len(devices)})"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """pytest-xdist's controller refuses, before its workers start, what each of them would: the same
    line and status (4) as a run without it."""
    config = session.config
    if _xdist_controller(config):
        with one_line_on_interrupt():
            config.stash[_NOTE] = _plan(config).note


@contextlib.contextmanager
def _told_to_controller(config: pytest.Config) -> Iterator[None]:
    """A usage error on a pytest-xdist worker, kept in what the worker sends its controller."""
    try:
        yield
    except pytest.UsageError as error:
        output = getattr(config, "workeroutput", None)
        if isinstance(output, dict):
            output.setdefault(_USAGE_ERROR, str(error))
        raise


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller: a worker that stopped on a usage error (its line in its workeroutput)."""
    said = getattr(node, "workeroutput", {}).get(_USAGE_ERROR)
    if said:
        node.config.stash.setdefault(_WORKER_REFUSALS, []).append(said)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Iterator[None]:
    """The first worker's usage error, raised on the controller: pytest ends with it (status 4)."""
    result = yield
    refusals = session.config.stash.get(_WORKER_REFUSALS, [])
    if refusals:
        raise pytest.UsageError(refusals[0])
    return result


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Which gates an option given did not ask for, and what would run them."""
    note = config.stash.get(_NOTE, None)
    if note:
        terminalreporter.write_line(f"hailo-harness: {note}")


@pytest.fixture
def decoder_conformance() -> Callable[..., None]:
    """``decoder_conformance(my_decode)`` asserts that every conformance property holds for it;
    ``decoder_conformance(my_decode, "yolo26-one2one")`` for a decoder of another head family,
    ``decoder_conformance(my_decode, "yolov8-bbox-only")`` for a host decoder of HailoRT's bbox-only buffer."""

    def check(decoder: Decoder, head: str = "yolov8") -> None:
        from harness.conformance.suite import conformance_head, run_conformance

        family, bbox_only = conformance_head(head)
        failures = {k: v for k, v in run_conformance(decoder, family=family, bbox_only=bbox_only).items() if v}
        assert not failures, "decoder breaks:\n" + "\n".join(f"- {k}: {v}" for k, v in failures.items())

    return check
