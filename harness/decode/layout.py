"""The head layout: what each raw output of a detect head is, per stride, described once.

A layout is read from what is known of the outputs: their host specs paired by grid and channel
count (:func:`pair_by_grid`: a HEF's or a runner's outputs, whose names and order differ between
exports and compilers), or outputs whose roles are known already (:func:`layout_of`: an ONNX export's
head tensors, the roles an emulated HEF recorded). Whoever needs to know which output is a box map,
which a class map, its stride, reg_max or nc asks the layout; a head family's decode part (its
``harness/families/<family>/decode.py``, found by :mod:`harness.decode.heads`) says how its layout is read and
decodes it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.core.errors import HeadPairingError, SpecError
from harness.core.head_family import HeadRole, HeadTensor
from harness.core.specs import FormatOrder, OutputSpec

if TYPE_CHECKING:
    from harness.inputs.export_facts import ExportFacts

# The Ultralytics default (YOLOv8/YOLO11 ``Detect(reg_max=16)``): 4 x 16 = 64 box channels. It
# settles which head is which when both channel counts are multiples of 4 (e.g. nc = 80).
DEFAULT_BOX_CHANNELS = 64

# Per stride (or SSD layer), its anchors' ``(width, height)``: an anchored head's (:attr:`Level.anchors`).
Anchors = tuple[tuple[tuple[float, float], ...], ...]


@dataclass(frozen=True)
class HeadOutput:
    """One raw output: ``channels`` maps on ``grid`` ``(H, W)``; ``spec``: as the host receives it
    (format order, type, quant infos) where that is known, None for a tensor of an ONNX graph."""

    name: str
    role: HeadRole
    grid: tuple[int, int]
    channels: int
    spec: OutputSpec | None = None

    @classmethod
    def of_spec(cls, spec: OutputSpec, role: HeadRole) -> HeadOutput:
        return cls(spec.name, role, spec.grid, spec.channels, spec)

    @property
    def host_spec(self) -> OutputSpec:
        """``spec``, where the layout was read from output specs."""
        if self.spec is None:
            raise SpecError(f"output {self.name!r}: field 'spec' is None; expected the output's host spec")
        return self.spec


@dataclass(frozen=True)
class Level:
    """The outputs of one stride: its box map (4 x reg_max channels), its class map (nc) and, in a
    family that has them, its objectness map and its anchors' ``(width, height)`` in input pixels.
    In an anchor-based head (YOLOv5/YOLOv7) one ``ANCHORED`` map holds all three: ``box``, ``classes``
    and ``objectness`` are that one output (:attr:`anchored`). In an SSD head the box and class maps hold
    per anchor 4 and nc channels (:attr:`per_anchor`), the anchors' ``(width, height)`` as fractions of the
    input."""

    stride: int
    grid: tuple[int, int]
    box: HeadOutput
    classes: HeadOutput
    objectness: HeadOutput | None = None
    anchors: tuple[tuple[float, float], ...] = ()

    @property
    def anchored(self) -> bool:
        """Whether one map holds every anchor's box, objectness and class channels."""
        return self.box.role is HeadRole.ANCHORED

    @property
    def per_anchor(self) -> bool:
        """Whether the box and class maps hold 4 and nc channels per anchor (SSD)."""
        return self.box.role is HeadRole.ANCHOR_BOXES

    @property
    def outputs(self) -> tuple[HeadOutput, ...]:
        """Box, class, then objectness where there is one; the one map of an anchored level."""
        if self.anchored:
            return (self.box,)
        return (self.box, self.classes) if self.objectness is None else (self.box, self.classes, self.objectness)

    @property
    def box_name(self) -> str:
        return self.box.name

    @property
    def class_name(self) -> str:
        return self.classes.name

    @property
    def reg_max(self) -> int:
        """Bins per box side: 1 where the box map holds the distances (or offsets) themselves."""
        return 1 if self.anchored or self.per_anchor else self.box.channels // 4

    @property
    def classes_count(self) -> int:
        """nc: the class map's channels, or an anchored map's per anchor less its 5 box and objectness."""
        if self.anchored:
            return self.classes.channels // len(self.anchors) - 5
        return self.classes.channels // len(self.anchors) if self.per_anchor else self.classes.channels

    @property
    def cells(self) -> int:
        return self.grid[0] * self.grid[1]


@dataclass(frozen=True)
class HeadLayout:
    """A detect head's outputs by stride, stride ascending; every level has one reg_max and one nc."""

    levels: tuple[Level, ...]

    def __post_init__(self) -> None:
        if not self.levels:
            raise HeadPairingError("no outputs given: expected a box head and a class head per stride")
        if len({level.box.role for level in self.levels}) != 1:
            raise HeadPairingError(
                f"outputs {_describe(self.outputs)}: some strides have one anchored map, others box and class maps, "
                f"or box maps of another kind; expected one kind of head"
            )
        if self.anchored:
            _check_anchored(self.levels)
            return
        if self.levels[0].per_anchor:
            _check_per_anchor(self.levels)
            return
        for field, channels in (
            ("box heads (4 * reg_max)", [level.box.channels for level in self.levels]),
            ("class heads (nc)", [level.classes.channels for level in self.levels]),
        ):
            if len(set(channels)) != 1:
                found = ", ".join(f"stride {v.stride}: {c}" for v, c in zip(self.levels, channels, strict=True))
                raise HeadPairingError(f"{field} have different channel counts ({found}); expected one for all strides")

    @property
    def outputs(self) -> tuple[HeadOutput, ...]:
        """Every output in head order: stride ascending, box before class (before objectness)."""
        return tuple(output for level in self.levels for output in level.outputs)

    def of_role(self, role: HeadRole) -> tuple[HeadOutput, ...]:
        """The outputs of ``role``, stride ascending."""
        return tuple(output for output in self.outputs if output.role is role)

    @property
    def reg_max(self) -> int:
        return self.levels[0].reg_max

    @property
    def classes(self) -> int:
        """nc: the class maps' channels (per anchor, in an anchored head)."""
        return self.levels[0].classes_count

    @property
    def anchored(self) -> bool:
        """Whether the head is anchor-based (YOLOv5/YOLOv7): one anchored map per stride."""
        return self.levels[0].anchored

    @property
    def anchors(self) -> tuple[tuple[tuple[float, float], ...], ...]:
        """Per stride, ascending, its anchors' ``(width, height)`` in input pixels (empty: anchor-free); per SSD
        layer, largest grid first, as fractions of the input."""
        return tuple(level.anchors for level in self.levels)

    @property
    def cells(self) -> int:
        """Grid cells over all strides (anchor points: one per cell)."""
        return sum(level.cells for level in self.levels)


def _check_anchored(levels: tuple[Level, ...]) -> None:
    """Every anchored map holds ``na x (5 + nc)`` channels for its stride's ``na`` anchors, one nc for all."""
    counts = []
    for level in levels:
        na, channels = len(level.anchors), level.box.channels
        if na == 0 or channels % na or channels // na < 6:
            raise HeadPairingError(
                f"output {level.box.name!r} (stride {level.stride}): {channels} channels for {na} anchor(s); "
                f"expected anchors x (5 + nc) channels with at least one anchor and one class"
            )
        counts.append(channels // na - 5)
    if len(set(counts)) != 1:
        found = ", ".join(f"stride {v.stride}: {c}" for v, c in zip(levels, counts, strict=True))
        raise HeadPairingError(f"anchored maps hold different class counts ({found}); expected one for all strides")


def _check_per_anchor(levels: tuple[Level, ...]) -> None:
    """Every SSD layer's box map holds 4 channels per anchor and its class map nc per anchor, one nc for all."""
    counts = []
    for level in levels:
        na = len(level.anchors)
        if na == 0 or level.box.channels != 4 * na or level.classes.channels % na or level.classes.channels < na:
            raise HeadPairingError(
                f"outputs {level.box.name!r} ({level.box.channels} channels) and {level.classes.name!r} "
                f"({level.classes.channels} channels), grid {level.grid[0]}x{level.grid[1]}: {na} anchor(s); expected "
                f"4 x anchors box channels and anchors x nc class channels, with at least one anchor and one class"
            )
        counts.append(level.classes.channels // na)
    if len(set(counts)) != 1:
        found = ", ".join(f"grid {v.grid[0]}x{v.grid[1]}: {c}" for v, c in zip(levels, counts, strict=True))
        raise HeadPairingError(f"class maps hold different class counts per anchor ({found}); expected one for all")


def _describe(outputs: Iterable[OutputSpec | HeadOutput]) -> str:
    return ", ".join(f"{o.name!r} {o.shape if isinstance(o, OutputSpec) else (*o.grid, o.channels)}" for o in outputs)


def _stride(grid: tuple[int, int], input_hw: tuple[int, int], outputs: Iterable[OutputSpec | HeadOutput]) -> int:
    (h, w), (in_h, in_w) = grid, input_hw
    if in_h % h or in_w % w or in_h // h != in_w // w:
        raise HeadPairingError(
            f"grid {h}x{w} ({_describe(outputs)}): input {in_h}x{in_w} does not give one integral stride "
            f"(height / grid = {in_h / h:g}, width / grid = {in_w / w:g})"
        )
    return in_h // h


def _could_be_box(channels: int) -> bool:
    return channels % 4 == 0 and channels >= 8


def _box_and_class(
    grid_specs: list[OutputSpec], grid: tuple[int, int], box_channels: int | None
) -> tuple[OutputSpec, OutputSpec]:
    a, b = grid_specs
    if a.channels == b.channels:
        raise HeadPairingError(
            f"grid {grid[0]}x{grid[1]}: outputs {_describe(grid_specs)} have the same channel count, so box head "
            f"(4 * reg_max channels) and class head (nc channels) are ambiguous; nc == 4 * reg_max is not supported"
        )
    if box_channels is not None:  # a head without DFL (YOLO26: 4 distances)
        plausible = [s for s in (a, b) if s.channels == box_channels]
        expected = f"exactly one with {box_channels} channels"
    else:
        plausible = [s for s in (a, b) if _could_be_box(s.channels)]
        if len(plausible) == 2:
            plausible = [s for s in plausible if s.channels == DEFAULT_BOX_CHANNELS]
        expected = f"exactly one with 4 * reg_max channels (a multiple of 4, or {DEFAULT_BOX_CHANNELS} when both are)"
    if len(plausible) != 1:
        raise HeadPairingError(
            f"grid {grid[0]}x{grid[1]}: cannot tell the box head from the class head among {_describe(grid_specs)}: "
            f"expected {expected}"
        )
    box = plausible[0]
    return box, (b if box is a else a)


def maps_by_grid(specs: Iterable[tuple[str, OutputSpec]]) -> dict[tuple[int, int], list[OutputSpec]]:
    """The outputs ``(name, spec)`` grouped by grid, each checked to be a raw head map: a channel-last
    ``(H, W, C)`` output keyed by its own name (a :class:`SpecError` or :class:`HeadPairingError` naming
    it otherwise)."""
    grids: dict[tuple[int, int], list[OutputSpec]] = {}
    for name, spec in specs:
        if name != spec.name:
            raise SpecError(
                f"specs[{name!r}] is the spec of output {spec.name!r}; expected each key to be its output's name"
            )
        if spec.is_nms or len(spec.shape) != 3 or min(spec.shape) < 1 or spec.format_order is FormatOrder.NCHW:
            raise HeadPairingError(
                f"output {name!r}: shape {spec.shape}, order {spec.format_order.name} is not a raw head map; "
                f"expected a channel-last (H, W, C) output"
            )
        grids.setdefault(spec.grid, []).append(spec)
    return grids


def pair_by_grid(
    specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], box_channels: int | None = None
) -> HeadLayout:
    """The layout of box and class outputs paired by grid size and channel count, never by name or order.

    Every output must be a channel-last ``(H, W, C)`` map; each grid must hold exactly two of
    them; ``input_hw`` divided by the grid must give one integral stride. Within a grid the box
    head is the one whose channel count is a multiple of 4 (``4 * reg_max``); when both are, the
    one with 64 channels (reg_max 16); with ``box_channels`` (4 for YOLO26, reg_max 1) the one with
    exactly that many. All box heads share one reg_max and all class heads one nc.
    Raises :class:`~harness.core.errors.HeadPairingError` otherwise. A decoder asks once per frame:
    the layouts of recent specs are kept.
    """
    return _paired(tuple(specs.items()), tuple(input_hw), box_channels)


@functools.lru_cache(maxsize=64)
def _paired(
    specs: tuple[tuple[str, OutputSpec], ...], input_hw: tuple[int, int], box_channels: int | None
) -> HeadLayout:
    grids = maps_by_grid(specs)
    levels = []
    for grid, grid_specs in grids.items():
        if len(grid_specs) != 2:
            raise HeadPairingError(
                f"grid {grid[0]}x{grid[1]}: found {len(grid_specs)} output(s) ({_describe(grid_specs)}); "
                f"expected exactly 2, a box head and a class head"
            )
        stride = _stride(grid, input_hw, grid_specs)
        box, cls = _box_and_class(grid_specs, grid, box_channels)
        levels.append(
            Level(stride, grid, HeadOutput.of_spec(box, HeadRole.BOX), HeadOutput.of_spec(cls, HeadRole.CLASS))
        )
    return HeadLayout(tuple(sorted(levels, key=lambda level: level.stride)))


def layout_of(
    outputs: Iterable[HeadOutput],
    input_hw: tuple[int, int],
    anchors: Mapping[str, tuple[tuple[float, float], ...]] | None = None,
) -> HeadLayout:
    """The layout of outputs whose roles are known: per grid one box output, one class output and at
    most one objectness output, or one anchored output (its anchors: ``anchors[name]``), or an SSD layer's
    regression and class maps (its anchors: ``anchors[regression map's name]``, as fractions of the input);
    ``input_hw`` divided by each grid one integral stride (an SSD layer's: rounded up, as
    :func:`harness.families.ssd.decode.layout` gives it). Raises
    :class:`~harness.core.errors.HeadPairingError` otherwise."""
    grids: dict[tuple[int, int], dict[HeadRole, list[HeadOutput]]] = {}
    for output in outputs:
        grids.setdefault(output.grid, {}).setdefault(output.role, []).append(output)
    levels = []
    for grid, roles in grids.items():
        found = [o for role in roles.values() for o in role]
        if HeadRole.ANCHORED in roles:
            if len(found) != 1:
                described = ", ".join(f"{o.name!r} ({o.role.value})" for o in found)
                raise HeadPairingError(
                    f"grid {grid[0]}x{grid[1]}: outputs {described}; expected one anchored map per grid and no other"
                )
            (one,) = found
            levels.append(Level(_stride(grid, input_hw, found), grid, one, one, one, (anchors or {}).get(one.name, ())))
            continue
        if HeadRole.ANCHOR_BOXES in roles or HeadRole.ANCHOR_CLASSES in roles:
            boxes, classes = roles.get(HeadRole.ANCHOR_BOXES, []), roles.get(HeadRole.ANCHOR_CLASSES, [])
            if len(boxes) != 1 or len(classes) != 1 or len(found) != 2:
                described = ", ".join(f"{o.name!r} ({o.role.value})" for o in found)
                raise HeadPairingError(
                    f"grid {grid[0]}x{grid[1]}: outputs {described}; expected an SSD layer's regression map and class "
                    "map and no other"
                )
            group = (anchors or {}).get(boxes[0].name, ())
            levels.append(Level(-(-input_hw[0] // grid[0]), grid, boxes[0], classes[0], anchors=group))
            continue
        counts = {role: len(roles.get(role, [])) for role in HeadRole}
        if counts[HeadRole.BOX] != 1 or counts[HeadRole.CLASS] != 1 or counts[HeadRole.OBJECTNESS] > 1:
            described = ", ".join(f"{o.name!r} ({o.role.value})" for o in found)
            raise HeadPairingError(
                f"grid {grid[0]}x{grid[1]}: outputs {described}; expected one box and one class map per grid "
                f"(and at most one objectness map)"
            )
        (box,), (cls,) = roles[HeadRole.BOX], roles[HeadRole.CLASS]
        objectness = roles.get(HeadRole.OBJECTNESS, [None])[0]
        levels.append(Level(_stride(grid, input_hw, found), grid, box, cls, objectness))
    return HeadLayout(tuple(sorted(levels, key=lambda level: level.stride)))


def layout_of_tensors(heads: Iterable[HeadTensor], input_hw: tuple[int, int]) -> HeadLayout:
    """The layout of an ONNX export's head tensors (:func:`~harness.inputs.onnx_graph.export_heads`)."""
    heads = tuple(heads)
    outputs = (HeadOutput(h.tensor, h.role, h.grid, h.channels) for h in heads)
    return layout_of(outputs, input_hw, {h.tensor: h.anchors for h in heads if h.anchors})


def anchored_by_grid(
    specs: Mapping[str, OutputSpec],
    input_hw: tuple[int, int],
    anchors: tuple[tuple[tuple[float, float], ...], ...],
) -> HeadLayout:
    """The layout of an anchor-based head's outputs (YOLOv5/YOLOv7): one channel-last ``(H, W, C)`` map
    per grid, ``C = na x (5 + nc)``, stride ascending by grid, never by name or order; ``anchors``: per
    stride, ascending, its anchors' ``(width, height)`` (one group per output).
    Raises :class:`~harness.core.errors.HeadPairingError` otherwise."""
    by_grid = maps_by_grid(specs.items())
    for grid, found in by_grid.items():
        if len(found) != 1:
            raise HeadPairingError(
                f"grid {grid[0]}x{grid[1]}: found {len(found)} outputs ({_describe(found)}); expected one anchored "
                f"map per stride (anchors x (5 + nc) channels)"
            )
    ordered = sorted((spec for (spec,) in by_grid.values()), key=lambda s: _stride(s.grid, input_hw, [s]))
    require_anchor_groups(
        ordered,
        len(ordered),
        anchors,
        "an anchor-based head but no anchors given; expected per stride its anchors' (width, height) in input pixels "
        "(DecodeConfig.anchors, read from the export or the HEF)",
        "{levels} stride(s) but anchors for {groups}; expected one group of (width, height) anchors per stride, "
        "stride ascending",
    )
    levels = []
    for spec, group in zip(ordered, anchors, strict=True):
        one = HeadOutput.of_spec(spec, HeadRole.ANCHORED)
        levels.append(Level(_stride(spec.grid, input_hw, [spec]), spec.grid, one, one, one, group))
    return HeadLayout(tuple(levels))


def require_anchor_groups(
    outputs: Sequence[OutputSpec], levels: int, anchors: Sequence[object], none: str, mismatch: str
) -> None:
    """One group of anchors per level of the head whose ``outputs`` these are (``levels`` of them), else a
    :class:`~harness.core.errors.HeadPairingError` naming them: ``none`` what is expected where no anchors are
    given, ``mismatch`` where the groups are not one per level (``{levels}`` and ``{groups}`` their counts)."""
    if not anchors:
        raise HeadPairingError(f"outputs {_describe(outputs)}: {none}")
    if len(anchors) != levels:
        raise HeadPairingError(f"outputs {_describe(outputs)}: {mismatch.format(levels=levels, groups=len(anchors))}")


def layout_of_export(facts: ExportFacts) -> HeadLayout:
    """The layout of an export's head maps; a :class:`~harness.core.errors.GraphError` saying why where
    they were not found."""
    return layout_of_tensors(facts.require_heads()[1], facts.input_hw)
