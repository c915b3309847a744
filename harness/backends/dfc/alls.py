"""The Dataflow Compiler's model script (.alls): the commands every script writes, and the commands the
checks read from one (:func:`parse_alls`). File formats as the Model Zoo writes them
(hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov8n.alls, yolov5s.alls)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.core.errors import HarnessError

# The HEF takes raw 0-255 RGB; the /255 of an Ultralytics export happens inside it
# (hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov8n.alls).
NORMALIZATION = ((0.0, 0.0, 0.0), (255.0, 255.0, 255.0))
# The command every model script opens with, its values written as floats (as the Model Zoo writes them).
NORMALIZATION_COMMAND = "normalization1 = normalization([{}], [{}])".format(
    *(", ".join(f"{v:.1f}" for v in values) for values in NORMALIZATION)
)


class DfcScriptError(HarnessError):
    """A model script or NMS config that cannot be written or does not match the model."""


def unscoped(name: str) -> str:
    """``yolov8n/conv41`` -> ``conv41``: the Model Zoo writes layer names with and without the network scope."""
    return name.rsplit("/", 1)[-1]


# The model script asks for the bbox-only op with an argument of ``nms_postprocess``, its NMS config
# being the NMS op's (hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov5s_bbox_decoding_only.alls,
# ``nms_postprocess(..., yolov5, engine=cpu, bbox_decoding_only=True)``;
# cfg/postprocess_config/yolov8s_bbox_decoding_only_nms_config.json holds the NMS config's keys alone).
BBOX_DECODING_ONLY = "bbox_decoding_only"


def nms_command(reference: str, meta_arch: str, bbox_decoding_only: bool) -> str:
    """The ``nms_postprocess`` command of a model script: the op on the CPU, decoding boxes only where asked."""
    only = f", {BBOX_DECODING_ONLY}=True" if bbox_decoding_only else ""
    return f'nms_postprocess("{reference}", meta_arch={meta_arch}, engine=cpu{only})'


def decodes_boxes_only(alls: AllsScript) -> bool:
    """Whether the script's ``nms_postprocess`` asks for the bbox-only op."""
    return alls.nms_options.get(BBOX_DECODING_ONLY, "False") == "True"


def nms_command_said(alls: AllsScript, meta_arch: str) -> str:
    """The command as a passed check says it, and what a bbox-only op leaves to the host."""
    said = f"nms_postprocess({alls.nms_reference!r}, meta_arch={meta_arch})"
    if decodes_boxes_only(alls):
        said += ", bbox_decoding_only: HailoRT decodes the boxes, the host must run the NMS"
    return said


@dataclass(frozen=True)
class AllsScript:
    """The commands of a model script the checks look at."""

    normalization: tuple[tuple[float, ...], tuple[float, ...]] | None
    activations: dict[str, str]  # unscoped layer name -> activation
    nms_reference: str | None
    nms_options: dict[str, str]
    nms: bool = False  # an nms_postprocess command, with or without a path
    precision: tuple[tuple[str, str], ...] = ()  # (unscoped layer, precision_mode) per quantization_param layer
    optimization: dict[str, str] = field(default_factory=dict)  # model_optimization_flavor's options
    post_quantization: dict[str, dict[str, str]] = field(default_factory=dict)  # algorithm -> its options
    # change_output_activation(<activation>) without a layer: every output layer (the Model Zoo's YOLOv5
    # script, hailo_model_zoo: hailo_model_zoo/cfg/alls/generic/yolov5s.alls)
    every_output_activation: str | None = None

    def activation_of(self, layer: str) -> str | None:
        """The activation the script gives output layer ``layer``: its own command, else the one for
        every output layer; None where none is changed."""
        return self.activations.get(unscoped(layer), self.every_output_activation)

    @property
    def changed_activations(self) -> dict[str, str]:
        """Every activation change, by layer; ``every output layer`` for a command without one."""
        every = {"every output layer": self.every_output_activation} if self.every_output_activation else {}
        return every | self.activations


_NORMALIZATION = re.compile(r"=\s*normalization\(\s*\[([^\]]*)\]\s*,\s*\[([^\]]*)\]\s*\)")
_ACTIVATION = re.compile(r"change_output_activation\(\s*([^,\s()]+)\s*,\s*(\w+)\s*\)")
_EVERY_ACTIVATION = re.compile(r"change_output_activation\(\s*(\w+)\s*\)")
_WORD = re.compile(r"^\s*(\w+)\s*$")
_NMS = re.compile(r"nms_postprocess\((.*)\)")
_NMS_PATH = re.compile(r'^\s*(?:config_path\s*=\s*)?"([^"]*)"\s*$')
_QUANTIZATION = re.compile(r"quantization_param\(\s*(\[[^\]]*\]|[^,\[\]()]+)\s*,([^()]*)\)")
_FLAVOR = re.compile(r"model_optimization_flavor\(([^()]*)\)")
_POST_QUANTIZATION = re.compile(r"post_quantization_optimization\(\s*(\w+)\s*(?:,([^()]*))?\)")


def _options(arguments: str) -> dict[str, str]:
    """``a=1, b=x`` -> ``{"a": "1", "b": "x"}``."""
    pairs = (argument.split("=", 1) for argument in arguments.split(",") if "=" in argument)
    return {key.strip(): value.strip() for key, value in pairs}


def parse_alls(text: str) -> AllsScript:
    normalization = None
    activations: dict[str, str] = {}
    reference = None
    options: dict[str, str] = {}
    nms = False
    precision: list[tuple[str, str]] = []
    optimization: dict[str, str] = {}
    post_quantization: dict[str, dict[str, str]] = {}
    every_output = None
    for full_line in text.splitlines():
        line = full_line.split("#", 1)[0]  # a model script's comments start with #
        if m := _QUANTIZATION.search(line):
            mode = _options(m.group(2)).get("precision_mode", "")
            precision += [(unscoped(t.strip()), mode) for t in m.group(1).strip("[] ").split(",") if t.strip()]
        if m := _FLAVOR.search(line):
            optimization |= _options(m.group(1))
        if m := _POST_QUANTIZATION.search(line):
            post_quantization[m.group(1)] = _options(m.group(2) or "")
        if m := _NORMALIZATION.search(line):
            try:
                normalization = tuple(tuple(float(v) for v in group.split(",")) for group in m.groups())
            except ValueError as error:
                raise DfcScriptError(f"model script: {line.strip()!r}: {error}") from error
        for layer, activation in _ACTIVATION.findall(line):
            activations[unscoped(layer)] = activation
        for activation in _EVERY_ACTIVATION.findall(line):
            every_output = activation
        if m := _NMS.search(line):
            nms = True
            for argument in m.group(1).split(","):
                if path := _NMS_PATH.match(argument):
                    reference = path.group(1)
                elif word := _WORD.match(argument):  # the Model Zoo names meta_arch by position (yolov5s.alls)
                    options.setdefault("meta_arch", word.group(1))
                elif "=" in argument:
                    key, value = argument.split("=", 1)
                    options[key.strip()] = value.strip()
    return AllsScript(
        normalization,  # type: ignore[arg-type]
        activations,
        reference,
        options,
        nms,
        tuple(precision),
        optimization,
        post_quantization,
        every_output,
    )
