"""The Dataflow Compiler's model script (.alls), and where its head has one its NMS config (JSON), written from
the ONNX's heads and checked against them before anything is compiled: each head family's part writes and
checks its own (``harness/families/<family>/dfc.py``, the same names in each: :class:`DfcPart`), loaded
through the registry (:func:`harness.families.part`); this module asks the export's family for it.

The shared pieces: the model script's commands and parser (:mod:`~harness.backends.dfc.alls`), the layer
names the files use (:mod:`~harness.backends.dfc.layers`), what the scripts are written from and as
(:mod:`~harness.backends.dfc.writing`), the checks every family's files share
(:mod:`~harness.backends.dfc.checks`) and the export's heads as the DFC is given them
(:mod:`~harness.backends.dfc.heads`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, cast

from harness.backends.dfc.alls import DfcScriptError, parse_alls
from harness.backends.dfc.layers import LayerTable
from harness.backends.dfc.writing import DfcHead, NmsSettings, ScriptFiles, ScriptRequest
from harness.core.checks import CheckResult
from harness.core.head_family import HeadFamily, HeadTensor
from harness.families import REGISTERED, descriptor, part
from harness.inputs.export_facts import ExportFacts


class DfcPart(Protocol):
    """A head family's DFC part: its head (``HEAD``: the words for it, how its export is cut and its head chosen),
    and its model script (with the NMS config of a head HailoRT's NMS op decodes) written and checked."""

    HEAD: DfcHead

    def end_nodes(self, facts: ExportFacts) -> tuple[HeadTensor, ...]:
        """The heads in the order the DFC is given them as end nodes: the order of its output layers and
        of the HEF's outputs."""
        ...

    def write_scripts(self, folder: Path, stem: str, request: ScriptRequest) -> ScriptFiles:
        """Write ``<stem>.alls``, ``<stem>_nms_config.json`` where the head has an NMS op, and
        ``layer_names.json`` into ``folder``."""
        ...

    def render_alls(self, request: ScriptRequest, nms_json_reference: str) -> str:
        """The model script, naming its NMS config (where it has one) as ``nms_json_reference``."""
        ...

    def check_scripts(
        self, alls_text: str, nms_json_text: str | None, request: ScriptRequest
    ) -> tuple[CheckResult, ...]:
        """Every check of the model script (and NMS config) against the request, in order."""
        ...


def dfc_part(family: HeadFamily) -> DfcPart:
    """``family``'s DFC part."""
    return cast(DfcPart, part(family, "dfc"))


def head_words(family: HeadFamily) -> str:
    """What ``family``'s head is compiled as, in the words of the messages."""
    return dfc_part(family).HEAD.words


def refuse_bbox_only(request: ScriptRequest) -> None:
    """A bbox-only op asked for a head HailoRT has none for (``FamilyDescriptor.bbox_only_op`` empty) refused,
    saying why and what to do: its NMS op refuses ``bbox_only`` (hailort: libhailort/src/net_flow/ops/
    yolox_post_process.cpp and ssd_post_process.cpp, as every op but YOLOv5's and YOLOv8's: libhailort/src/hef/
    hef.cpp builds a bbox-only op for those alone), or its HEF has no NMS op at all."""
    family = request.facts.require_heads()[0]
    known = descriptor(family)
    if not request.settings.bbox_decoding_only or known.bbox_only_op:
        return
    if known.nms_op:
        having = " and ".join(d.display for d in REGISTERED if d.bbox_only_op)
        why = (
            f"; HailoRT has no bbox-only op of meta_arch {known.nms_op} (hailort: libhailort/src/net_flow/ops/"
            f"{known.nms_op}_post_process.cpp refuses bbox_only; its bbox-only ops decode {having} heads only: "
            f"libhailort/src/hef/hef.cpp). Fix: compile the {known.display} NMS op"
        )
    else:
        why = ", whose HEF has no NMS op at all (the host decodes its raw heads). Fix: compile it without --bbox-only"
    raise DfcScriptError(f"{request.facts.source}: bbox_decoding_only asked for {head_words(family)}{why}")


def _nms_reference(alls: Path, nms_json: Path) -> tuple[CheckResult, ...]:
    """The model script's NMS path is ``nms_json`` (a relative path is taken from the model script's folder)."""
    reference = parse_alls(alls.read_text(encoding="utf-8")).nms_reference
    if reference is None or (alls.parent / reference).resolve() == nms_json.resolve():
        return ()
    return (
        CheckResult.failed(
            "nms_reference",
            "nms_postprocess path",
            f"{reference!r} ({(alls.parent / reference).resolve()})",
            f"the NMS config {nms_json}",
            "name the JSON beside the model script",
        ),
    )


def check_files(files: ScriptFiles, request: ScriptRequest) -> tuple[CheckResult, ...]:
    """Every check of the written files of the export's head (its part's), and that the model script's NMS
    path is its NMS config."""
    alls_text = files.alls.read_text(encoding="utf-8")
    nms_text = files.nms_json.read_text(encoding="utf-8") if files.nms_json is not None else None
    results = dfc_part(request.facts.require_heads()[0]).check_scripts(alls_text, nms_text, request)
    return results + (_nms_reference(files.alls, files.nms_json) if files.nms_json is not None else ())


def validate_files(alls: Path, nms_json: Path, facts: ExportFacts, table: LayerTable) -> tuple[CheckResult, ...]:
    """Every check of the model script and NMS config files of the export's head, held to ``table``, and that
    the model script's NMS path is this JSON; a head without an NMS op is refused (its script has no config)."""
    family = facts.require_heads()[0]
    if not descriptor(family).nms_op:
        with_nms = ", ".join(d.display for d in REGISTERED if d.nms_op)
        raise DfcScriptError(
            f"{nms_json}: {facts.source} carries a {family.value} head, whose NMS config the harness does not "
            f"write; expected an export of a head with an NMS op ({with_nms}); its model script has no NMS config"
        )
    return check_files(ScriptFiles(alls, nms_json, alls.parent / "layer_names.json"), ScriptRequest(facts, {}, table))


def write_checked_scripts(
    folder: Path,
    stem: str,
    facts: ExportFacts,
    names: dict[str, str],
    table: LayerTable,
    nms: NmsSettings,
    calibration_count: int,
) -> tuple[ScriptFiles, tuple[CheckResult, ...]]:
    """The model script of the ONNX's head (and its NMS config where it has an NMS op) written into
    ``folder``, and every check of them; a bbox-only op asked for a head HailoRT has none for is refused
    (:func:`refuse_bbox_only`)."""
    request = ScriptRequest(facts, names, table, nms, calibration_count)
    refuse_bbox_only(request)
    files = dfc_part(facts.require_heads()[0]).write_scripts(folder, stem, request)
    return files, check_files(files, request)


def dfc_alls(
    facts: ExportFacts, names: dict[str, str], table: LayerTable, scripts: ScriptFiles, nms: NmsSettings
) -> str:
    """The model script the DFC loads: the one on disk, naming its NMS config by absolute path (the file on
    disk names it beside the model script), the bbox-only op where ``nms`` asks for it (refused where the head has
    none: :func:`refuse_bbox_only`)."""
    if scripts.nms_json is None:
        refuse_bbox_only(ScriptRequest(facts, names, table, nms))
        return scripts.alls.read_text(encoding="utf-8")
    request = ScriptRequest(facts, names, table, nms)
    refuse_bbox_only(request)
    return dfc_part(facts.require_heads()[0]).render_alls(request, os.fspath(scripts.nms_json.resolve()))
