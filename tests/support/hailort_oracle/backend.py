"""The harness's hailort backend over the real hailo_platform, as far as it goes without a device: run
under a HailoRT build's Python with the project on PYTHONPATH (the backend imports numpy and the
harness's core only). Prints JSON: the specs the backend makes of the real vstream infos, and the
error the runner raises where HailoRT needs a device.

    python backend.py HEF
"""

import json
import sys

import hailo_platform

from harness.backends.hailort.runner import HailoRTRunner, input_spec, output_spec
from harness.core.errors import HarnessError
from harness.core.specs import FormatOrder, FormatType


def _spec(make, info):
    try:
        spec = make(info)
    except HarnessError as error:
        return {"name": info.name, "refused": str(error)}
    return {
        "name": spec.name,
        "shape": list(spec.shape),
        "order": spec.format_order.name,
        "type": spec.format_type.name,
        "quant": [[q.zero_point, q.scale, q.limvals_min, q.limvals_max] for q in getattr(spec, "quant", ())],
    }


hef_path = sys.argv[1]
hef = hailo_platform.HEF(hef_path)
params = hailo_platform.ConfigureParams.create_from_hef(hef, interface=hailo_platform.HailoStreamInterface.PCIe)
outputs = hef.get_output_vstream_infos()
result = {
    "configure_params": sorted(params),
    "inputs": [_spec(input_spec, i) for i in hef.get_input_vstream_infos()],
    "outputs": {
        t.name: [_spec(lambda info, t=t: output_spec(info, t, FormatOrder.NMS_BY_CLASS), i) for i in outputs]
        for t in (FormatType.FLOAT32, FormatType.UINT8)
    },
}
try:
    HailoRTRunner(hef_path)
    result["runner"] = None
except HarnessError as error:
    result["runner"] = {"error": type(error).__name__, "message": str(error)}
json.dump(result, sys.stdout)
