"""What HailoRT's own Python API says, as JSON on stdout. Run by the oracle tests under the Python of a
HailoRT build (tools/build_hailort.sh), never imported by the harness: that venv has hailo_platform and
numpy < 2, the harness's has neither constraint.

    python dump.py hef PATH            network groups, stream and vstream infos, or the refusal's status
    python dump.py api NAME...         signatures of hailo_platform's names, or pyhailort's (dotted for
                                       nested classes); a class: its public members and bases
"""

import enum
import inspect
import json
import sys

import hailo_platform
from hailo_platform.pyhailort import pyhailort


def _quant(q):
    return [float(q.qp_zp), float(q.qp_scale), float(q.limvals_min), float(q.limvals_max)]


def _nms(info):
    # pyhailort raises for nms_shape on a non-NMS info
    if "NMS" not in info.format.order.name:
        return None
    shape = info.nms_shape
    return [int(shape.number_of_classes), int(shape.max_bboxes_per_class)]


def _info(info, stream):
    record = {
        "name": info.name,
        "shape": [int(d) for d in info.shape],
        "order": info.format.order.name,
        "type": info.format.type.name,
        "quant": _quant(info.quant_info),
        "nms": None if stream else _nms(info),  # a stream's nms_shape is its frame size, already in shape
    }
    if stream:
        record["data_bytes"] = int(info.data_bytes)
    return record


def _status(error):
    """The libhailort status behind a hailo_platform exception (ExceptionWrapper chains it)."""
    cause = error.__context__ or error.__cause__
    if cause is not None and type(cause).__name__ == "HailoRTStatusException":
        return pyhailort.get_status_message(int(cause.args[0]))
    return None


def hef(path):
    try:
        loaded = hailo_platform.HEF(path)
    except Exception as error:  # every refusal is reported, with its status
        return {"error": type(error).__name__, "status": _status(error)}
    groups = []
    for name in loaded.get_network_group_names():
        groups.append(
            {
                "name": name,
                "input_streams": [_info(i, True) for i in loaded.get_input_stream_infos(name)],
                "output_streams": [_info(i, True) for i in loaded.get_output_stream_infos(name)],
                "input_vstreams": [_info(i, False) for i in loaded.get_input_vstream_infos(name)],
                "output_vstreams": [_info(i, False) for i in loaded.get_output_vstream_infos(name)],
            }
        )
    return {"network_groups": groups}


def _signature(obj):
    try:
        return [
            [p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default)]
            for p in inspect.signature(obj).parameters.values()
        ]
    except (TypeError, ValueError):  # a pybind11 builtin without a text signature
        return None


def api(names):
    described = {}
    for name in names:
        first, *rest = name.split(".")
        obj = getattr(hailo_platform, first, None) or getattr(pyhailort, first, None)
        for part in rest:
            obj = getattr(obj, part, None)
        if obj is None:
            described[name] = None
        elif isinstance(obj, type) and issubclass(obj, enum.Enum):
            described[name] = {"kind": "enum", "members": {m.name: int(m.value) for m in obj}}
        elif isinstance(obj, type) and not issubclass(obj, BaseException) and hasattr(obj, "__members__"):
            described[name] = {"kind": "enum", "members": {k: int(v) for k, v in obj.__members__.items()}}
        elif isinstance(obj, type):
            members = {
                k: _signature(v) if callable(v) else "attribute"
                for k, v in vars(obj).items()
                if not k.startswith("_") or k == "__init__"
            }
            for base in obj.__mro__[1:]:
                for k, v in vars(base).items():
                    if (not k.startswith("_") or k == "__init__") and k not in members and base is not object:
                        members[k] = _signature(v) if callable(v) else "attribute"
            described[name] = {"kind": "class", "members": members, "bases": [b.__name__ for b in obj.__mro__[1:]]}
        else:
            described[name] = {"kind": "function", "signature": _signature(obj)}
    return described


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    result = {"hef": lambda: hef(args[0]), "api": lambda: api(args)}[command]()
    json.dump(result, sys.stdout)
