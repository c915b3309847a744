"""HailoRT's own code as the oracle: what the harness reads from a HEF, prints about it and fakes of
hailo_platform, held against libhailort, hailortcli and hailo_platform built from source
(tools/build_hailort.sh). HailoRT runs in its build's own venv (it pins numpy < 2), driven through
tests/support/hailort_oracle/: dump.py and backend.py (hailo_platform, one process per HEF), transform.cpp
(the transform contexts) and yolov8_nms.cpp (the YOLOv8 NMS op).

Builds are found through HARNESS_HAILORT (build folders separated by ':'); without one these tests
skip saying so, and with HARNESS_REQUIRE_HAILORT=VERSION[,VERSION] (as .ci/run sets it) they fail.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.backends.emulator.outputs import nms_spec
from harness.backends.emulator.runner import nms_op
from harness.core.errors import HefError
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig, NmsMode, SsdConfig
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo
from harness.decode.heads import decoder
from harness.formats.layout import device_to_host, frame_bytes, host_to_device, padded_shape
from harness.formats.nms_buffer import BBOX_PARAMS, encode_nms_by_class
from harness.formats.quant import dequantize, quantize
from harness.inputs.hef.inspect import render_text
from harness.inputs.hef.reader import DEFAULT_HOST_ORDER, HefInfo, StreamInfo, VStreamInfo, parse_hef

from support.strategies import geometries

VERSIONS = ("4.23.0", "5.2.0")
ROOT = Path(__file__).resolve().parents[2]
ORACLE = ROOT / "tests" / "support" / "hailort_oracle"
DUMP = ORACLE / "dump.py"
BACKEND = ORACLE / "backend.py"


@dataclass(frozen=True)
class Build:
    version: str
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    @property
    def hailortcli(self) -> Path:
        return self.root / "bin" / "hailortcli"

    def run(self, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
        """One HailoRT process; its hailort.log goes to ``cwd``, never into the project."""
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HAILORT_LOGGER_PATH": str(cwd)}
        return subprocess.run(
            [str(a) for a in args], capture_output=True, text=True, timeout=120, check=False, cwd=cwd, env=env
        )

    def dump(self, *args: str | Path, cwd: Path, script: Path = DUMP) -> dict:
        done = self.run(self.python, script, *args, cwd=cwd)
        if done.returncode < 0:
            return {"crashed": signal.Signals(-done.returncode).name}
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)


def _builds() -> dict[str, Build]:
    found = {}
    for folder in filter(None, os.environ.get("HARNESS_HAILORT", "").split(":")):
        version_file = Path(folder) / "VERSION"
        if version_file.is_file():
            found[version_file.read_text().strip()] = Build(version_file.read_text().strip(), Path(folder))
    return found


@pytest.fixture(scope="module", params=VERSIONS)
def build(request) -> Build:
    version = request.param
    builds = _builds()
    if version not in builds:
        reason = f"no HailoRT {version} build in HARNESS_HAILORT (run tools/build_hailort.sh {version})"
        if version in os.environ.get("HARNESS_REQUIRE_HAILORT", "").split(","):
            pytest.fail(reason)
        pytest.skip(reason)
    return builds[version]


# ----------------------------------------------------------------------------------- the fakes


def _parameters(obj: object) -> list[str] | None:
    try:
        return [p.name for p in inspect.signature(obj).parameters.values()]  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _real_parameters(described: list | None) -> list[str] | None:
    return None if described is None else [name for name, _, _ in described]


# Objects hailo_platform makes and hands out (from configure, create_infer_model, create_bindings...):
# the harness never calls their constructors, so only their other members are compared.
MADE_BY_HAILORT = {
    "ConfiguredNetwork",
    "ActivatedNetworkContextManager",
    "EmptyContextManager",
    "InferModel",
    "InferModel.InferStream",
    "ConfiguredInferModel",
    "ConfiguredInferModel.Bindings",
    "ConfiguredInferModel.Bindings.InferStream",
    "AsyncInferJob",
}


def _fake_members(name: str, cls: type) -> dict[str, object]:
    public = {k: v for k, v in vars(cls).items() if not k.startswith("_") or k == "__init__"}
    if name in MADE_BY_HAILORT:
        public.pop("__init__", None)
    return public


# Not checked here, for want of a device: what the fake computes (outputs, NMS forms, the statuses of a
# failing device). Not checked by signature: members of the classes the pybind11 module defines
# without text signatures (VStreamInfo, QuantInfo, NmsShape, HailoFormat); their fields are compared
# through the HEF infos below.


def test_every_class_method_and_enum_the_fake_provides_is_hailo_platforms_with_the_same_parameters(build, tmp_path):
    from support import fake_hailo_platform as fakes

    profile = fakes.HAILORT_4_23 if build.version.startswith("4.") else fakes.HAILORT_5_1
    fake = fakes.FakeHailoRT({}, profile)
    exceptions = sorted({name for name, _ in profile.classes.values()} | {"HailoRTException"})
    real = build.dump("api", *fake.api, *exceptions, cwd=tmp_path)
    mismatches, unchecked = [], []
    for name, obj in fake.api.items():
        described = real[name]
        if described is None:
            mismatches.append(f"{name}: not in hailo_platform {build.version}")
        elif isinstance(obj, type) and issubclass(obj, enum.Enum):
            members = {m.name: int(m.value) for m in obj}
            wrong = {k: v for k, v in members.items() if described.get("members", {}).get(k) != v}
            if described["kind"] != "enum" or wrong:
                mismatches.append(f"{name}: members {wrong} are not the real enum's")
        elif isinstance(obj, type):
            if described["kind"] != "class":
                mismatches.append(f"{name}: a class in the fake, a {described['kind']} in hailo_platform")
                continue
            for member, value in _fake_members(name, obj).items():
                if member not in described["members"]:
                    mismatches.append(f"{name}.{member}: not in hailo_platform {build.version}")
                    continue
                real_member = described["members"][member]
                if isinstance(value, property) or not callable(value):
                    if real_member != "attribute":
                        mismatches.append(f"{name}.{member}: an attribute in the fake, a method in hailo_platform")
                    continue
                if real_member == "attribute":
                    mismatches.append(f"{name}.{member}: a method in the fake, an attribute in hailo_platform")
                    continue
                expected = _real_parameters(real_member)
                if expected is None:
                    unchecked.append(f"{name}.{member}")
                elif _parameters(value) != expected:
                    mismatches.append(f"{name}.{member}: parameters {_parameters(value)}, hailo_platform {expected}")
        else:
            expected = _real_parameters(described.get("signature"))
            if expected is not None and _parameters(obj) != expected:
                mismatches.append(f"{name}: parameters {_parameters(obj)}, hailo_platform {expected}")
    for name in exceptions:
        bases = (real[name] or {}).get("bases", [])
        if name != "HailoRTException" and "HailoRTException" not in bases:
            mismatches.append(f"{name}: not a HailoRTException in hailo_platform {build.version}")
    assert not mismatches, "\n".join(mismatches)
    assert len(fake.api) >= 12 and len(unchecked) < len(fake.api), unchecked


# ----------------------------------------------------------------------------------- HEF reading

INTACT = ("hef/hailo8_mnist_cnn.hef", "hef/hailo8_arcface_mobilefacenet.hef", "hef/hailo10h_lightface_slim.hef")
DAMAGED = ("hef_bad/hailo8l_yolov8s_nms_truncated.hef", "hef_bad/not_a_hef.hef")
# Where HailoRT itself fails, with what it does and why; the harness reads these files.
HAILORT_DEFECTS = {
    # 4.23.0 is the Hailo-8 line (hailort branch hailo8): it dies reading a Hailo-10H HEF (header v3)
    ("4.23.0", "hef/hailo10h_lightface_slim.hef"): "SIGSEGV",
}


def _order_name(hailort_name: str) -> str:
    return hailort_name.removeprefix("HAILO_")


def _quant(q) -> list[float]:
    return [q.zero_point, q.scale, q.limvals_min, q.limvals_max]


def _stream_record(stream: StreamInfo) -> dict:
    assert stream.nms is None, f"{stream.name}: an on-chip NMS stream is not in the fixtures"
    h, w, c = stream.padded_shape
    shape = [c] if stream.device_order.name == "NC" else [h, w] if stream.device_order.name == "NHW" else [h, w, c]
    return {
        "name": stream.name,
        "shape": shape,
        "order": stream.device_order.name,
        "type": stream.data_type.name,
        "quant": _quant(stream.quant),
        "nms": None,
        "data_bytes": {"UINT8": 1, "UINT16": 2}[stream.data_type.name],
    }


def _vstream_record(vstream: VStreamInfo) -> dict:
    return {
        "name": vstream.name,
        "shape": list(vstream.shape),
        "order": vstream.order.name,
        "type": vstream.type.name,
        "quant": _quant(vstream.quant),
        "nms": None if vstream.nms is None else [vstream.nms.number_of_classes, vstream.nms.max_bboxes_per_class],
    }


def harness_view(info: HefInfo) -> dict:
    """What the harness reads, in the records tests/support/hailort_oracle/dump.py makes of hailo_platform's infos."""
    return {
        "network_groups": [
            {
                "name": group.name,
                "input_streams": [_stream_record(s) for s in group.inputs],
                "output_streams": [_stream_record(s) for s in group.outputs],
                "input_vstreams": [_vstream_record(v) for v in group.input_vstreams],
                "output_vstreams": [_vstream_record(v) for v in group.output_vstreams],
            }
            for group in info.network_groups
        ]
    }


def hailort_view(dumped: dict) -> dict:
    for group in dumped.get("network_groups", ()):
        for infos in group.values():
            for info in infos if isinstance(infos, list) else ():
                info["order"] = _order_name(info["order"])
    return dumped


def harness_read(data: bytes, source: str) -> dict:
    """The harness's strict read, as the oracle's JSON: its records, or its refusal's HailoRT status."""
    try:
        return harness_view(parse_hef(data, source))
    except HefError as error:
        return {"error": "HefError", "status": error.status, "message": str(error)}


def assert_same_reading(build: Build, path: Path, data: bytes, what: str, tmp_path: Path) -> dict:
    """HailoRT and the harness read ``path`` (bytes ``data``) alike: the same infos, or the same refusal.

    One difference is the harness's on purpose: HailoRT 5.x checks only the proto of a v3 HEF that
    carries the proto's own checksum, not its magic, size or whole-file checksum, and leaves the rest
    to the device (hailort v5.2.0: libhailort/src/hef/hef.cpp, "let the rest of the HEF be validated
    later"); the harness refuses such a file at once, and where the magic holds its tolerant read is
    HailoRT's reading."""
    hailort = hailort_view(build.dump("hef", path, cwd=tmp_path))
    ours = harness_read(data, str(path))
    if "error" not in hailort and "error" in ours and build.version.startswith("5."):
        beyond_the_proto = ("no magic", "truncated", "size mismatch", "bytes after the header")
        assert int.from_bytes(data[4:8], "big") == 3 and any(w in ours["message"] for w in beyond_the_proto), ours
        if "no magic" not in ours["message"]:
            assert harness_view(parse_hef(data, str(path), tolerant=True)) == hailort, what
        return hailort
    if "error" in hailort:
        assert ours.get("status") == hailort["status"], f"{what}: HailoRT {hailort}, the harness {ours}"
    else:
        assert ours == hailort, f"{what}: the harness and HailoRT {build.version} read it differently"
    return hailort


def hailort_fails_on(build: Build, fixture: str, path: Path, tmp_path: Path) -> bool:
    """Whether ``fixture`` is one HailoRT ``build`` fails on (:data:`HAILORT_DEFECTS`); the failure is
    asserted, so a HailoRT that reads the file makes the test say so, and the harness must read it."""
    defect = HAILORT_DEFECTS.get((build.version, fixture))
    if defect is None:
        return False
    assert build.dump("hef", path, cwd=tmp_path) == {"crashed": defect}
    assert parse_hef(path.read_bytes(), str(path)).network_groups
    return True


def test_the_oracle_covers_every_fixture_hef(shared_fixtures):
    found = sorted(str(p.relative_to(shared_fixtures)) for p in shared_fixtures.glob("hef*/*.hef"))
    assert found == sorted(INTACT + DAMAGED)


@pytest.mark.parametrize("fixture", INTACT + DAMAGED)
def test_hailort_and_the_harness_read_each_fixture_hef_alike(build, fixture, shared_fixtures, tmp_path):
    path = shared_fixtures / fixture
    if hailort_fails_on(build, fixture, path, tmp_path):
        return
    read = assert_same_reading(build, path, path.read_bytes(), fixture, tmp_path)
    assert ("error" in read) == (fixture in DAMAGED)
    assert "error" in read or all(g["input_vstreams"] and g["output_vstreams"] for g in read["network_groups"])


def mutations(data: bytes) -> dict[str, bytes]:
    """Damage a reader meets: cuts (inside the header, the proto, the last byte), a byte added, bytes
    flipped (in the proto, the last one), another header version, another magic."""
    header = {0: 32, 1: 24, 2: 28, 3: 56}[int.from_bytes(data[4:8], "big")]

    def flipped(at: int) -> bytes:
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]

    return {
        "empty": b"",
        "cut to 3 bytes": data[:3],
        "cut to 11 bytes": data[:11],
        "cut inside the header": data[: header - 1],
        "cut inside the proto": data[: header + (len(data) - header) // 2],
        "last byte cut": data[:-1],
        "a byte appended": data + b"\0",
        "a proto byte flipped": flipped(header + 40),
        "last byte flipped": flipped(len(data) - 1),
        "header version 7": data[:4] + (7).to_bytes(4, "big") + data[8:],
        "another magic": b"\x02" + data[1:],
    }


@pytest.mark.parametrize("fixture", INTACT)
def test_hailort_refuses_each_damaged_hef_with_the_status_the_harness_names(build, fixture, shared_fixtures, tmp_path):
    if hailort_fails_on(build, fixture, shared_fixtures / fixture, tmp_path):
        return
    statuses = set()
    for what, data in mutations((shared_fixtures / fixture).read_bytes()).items():
        path = tmp_path / f"{what.replace(' ', '_')}.hef"
        path.write_bytes(data)
        statuses.add(assert_same_reading(build, path, data, f"{fixture}, {what}", tmp_path).get("status"))
    assert {"HAILO_HEF_FILE_CORRUPTED", "HAILO_HEF_NOT_SUPPORTED"} <= statuses


# ----------------------------------------------------------------------------------- inspect text

_HEADER_LINES = ("Architecture HEF was compiled for:", "HEF Compatible for:", "HEF Compiler Version:")


def described(text: str) -> dict[str, list[str]]:
    """What a HEF description says line by line that both describers say: the architecture lines, the
    network groups, and the stream and vstream info lines of each."""
    found: dict[str, list[str]] = {"header": [], "groups": [], "Stream infos:": [], "VStream infos:": []}
    section = None
    for line in (raw.strip() for raw in text.splitlines()):
        if line.startswith(_HEADER_LINES):
            found["header"].append(line)
        elif line.startswith("Network group name:"):
            found["groups"].append(line.split(",")[0])  # HailoRT adds its context count
        elif line in ("Stream infos:", "VStream infos:"):
            section = line
        elif section and line.startswith(("Input ", "Output ")):
            found[section].append(line)
        elif line.endswith(":") or line.startswith(("Host outputs", "Operation:")):
            section = None
    return found


@pytest.mark.parametrize("streams", [False, True], ids=["vstreams", "with --parse-streams"])
@pytest.mark.parametrize("fixture", INTACT)
def test_inspect_says_what_hailortcli_parse_hef_says(build, fixture, streams, shared_fixtures, tmp_path):
    path = shared_fixtures / fixture
    if hailort_fails_on(build, fixture, path, tmp_path):
        return
    done = build.run(build.hailortcli, "parse-hef", path, *(["--parse-streams"] if streams else []), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    theirs, ours = described(done.stdout), described(render_text(parse_hef(path.read_bytes(), str(path))))
    assert theirs["header"] and set(theirs["header"]) <= set(ours["header"]), (theirs["header"], ours["header"])
    assert theirs["groups"] == ours["groups"]
    assert theirs["VStream infos:"] == ours["VStream infos:"] and theirs["VStream infos:"]
    if streams:
        assert theirs["Stream infos:"] == ours["Stream infos:"] and theirs["Stream infos:"]
    else:
        assert not theirs["Stream infos:"]


# ----------------------------------------------------------------------------------- hailort backend


@pytest.mark.parametrize("fixture", INTACT)
def test_the_hailort_backend_over_the_real_hailo_platform_reads_the_hef_and_says_no_device_was_found(
    build, fixture, shared_fixtures, tmp_path
):
    path = shared_fixtures / fixture
    if hailort_fails_on(build, fixture, path, tmp_path):
        return
    real = build.dump(path, cwd=tmp_path, script=BACKEND)
    info = parse_hef(path.read_bytes(), str(path))
    group = info.network_groups[0]
    assert real["configure_params"] == [group.name]
    assert [(i["name"], tuple(i["shape"]), i["order"]) for i in real["inputs"]] == [
        (v.name, v.shape, v.order.name) for v in group.input_vstreams
    ]
    per_feature = {s.name for s in group.outputs if s.is_per_feature}
    for format_type in (FormatType.FLOAT32, FormatType.UINT8):
        for spec, made in zip(info.output_specs(format_type), real["outputs"][format_type.name], strict=True):
            if spec.name in per_feature:
                # HailoRT's vstream info holds no per-feature quant infos (all zero; the HEF does): FLOAT32
                # is HailoRT's to de-quantize, and the device's type is refused naming the reason
                if format_type is FormatType.UINT8:
                    assert "quantizes per feature" in made["refused"], made
                else:
                    assert (made["name"], made["type"], made["quant"]) == (spec.name, "FLOAT32", []), made
                continue
            ours = {"name": spec.name, "shape": list(spec.shape), "order": spec.format_order.name}
            ours |= {"type": spec.format_type.name, "quant": [_quant(q) for q in spec.quant]}
            assert made == ours
    error = real["runner"]
    assert error["error"] == "DeviceFailureError", error
    assert "no Hailo device found" in error["message"] and "HAILO_OUT_OF_PHYSICAL_DEVICES" in error["message"]


# ----------------------------------------------------------------------------------- transforms

TRANSFORM_DRIVER = ORACLE / "transform.cpp"


class Driver:
    """A compiled driver's process: one request on stdin, one answer ``STATUS NBYTES\n`` + bytes."""

    def __init__(self, binary: Path, folder: Path) -> None:
        env = {**os.environ, "HAILORT_LOGGER_PATH": str(folder)}
        self.process = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=folder, env=env)

    def exchange(self, request: bytes) -> tuple[int, bytes]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(request)
        stdin.flush()
        status, size = (int(v) for v in stdout.readline().split())
        return status, stdout.read(size)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


class Transforms:
    """HailoRT's OutputTransformContext / InputTransformContext, one driver process per build
    (tests/support/hailort_oracle/transform.cpp, compiled against the build's headers and libhailort)."""

    def __init__(self, build: Build, folder: Path) -> None:
        binary = folder / "transform"
        lib = next((build.root / "lib").glob("libhailort.so*"))
        include = build.root / "src" / "hailort" / "libhailort" / "include"
        compiled = subprocess.run(
            ["g++", "-std=c++17", "-O1", f"-I{include}", str(TRANSFORM_DRIVER), "-o", str(binary),
             f"-L{lib.parent}", f"-l:{lib.name}", f"-Wl,-rpath,{lib.parent}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr[-3000:]
        self.driver = Driver(binary, folder)

    def __call__(
        self,
        direction: str,
        src: tuple[FormatOrder, FormatType],
        dst: tuple[FormatOrder, FormatType],
        host: tuple[int, ...],
        device: tuple[int, ...],
        quant: Sequence[QuantInfo],
        data: bytes,
    ) -> tuple[int, bytes]:
        """``(status, bytes)`` of one frame through HailoRT; NC shapes are HailoRT's (1, 1, C)."""
        host3, device3 = ((1, 1, *host) if len(host) == 1 else host), ((1, 1, *device) if len(device) == 1 else device)
        fields = [direction, *(int(v) for v in (*src, *dst)), *host3, *device3, len(quant)]
        fields += [repr(float(x)) for q in quant for x in (q.zero_point, q.scale, q.limvals_min, q.limvals_max)]
        return self.driver.exchange(" ".join(map(str, [*fields, len(data)])).encode() + b"\n" + data)


@pytest.fixture(scope="module")
def transforms(build, tmp_path_factory) -> Iterator[Transforms]:
    transforms = Transforms(build, tmp_path_factory.mktemp(f"transforms-{build.version}"))
    yield transforms
    transforms.driver.close()


def _quants(draw, channels: int, dtype: np.dtype) -> list[QuantInfo]:
    top = np.iinfo(dtype).max
    count = draw(st.sampled_from([1, channels])) if channels > 1 else 1
    quants = []
    for _ in range(count):
        zp = draw(st.integers(0, top))
        scale = draw(st.floats(1 / 1024, 4.0, width=32))
        quants.append(QuantInfo(float(zp), float(scale), float((0 - zp) * scale), float((top - zp) * scale)))
    return quants


@st.composite
def output_cases(draw):
    """A device frame of any order and type the harness handles, its padding, and quant infos (per tensor
    or per feature)."""
    order, shape, dtype, padded = draw(geometries())
    quant = _quants(draw, shape[-1], dtype)
    seed = draw(st.integers(0, 2**32 - 1))
    _, aligned = frame_bytes(order, padded, dtype)
    frame = np.random.default_rng(seed).integers(0, np.iinfo(dtype).max, aligned // dtype.itemsize, dtype=dtype)
    return order, shape, dtype, padded, quant, frame.tobytes()


FORMAT_TYPE = {np.dtype(np.uint8): FormatType.UINT8, np.dtype(np.uint16): FormatType.UINT16}


@settings(max_examples=60, deadline=None, derandomize=True)  # the same frames every run
@given(case=output_cases())
def test_hailorts_output_transform_gives_the_harness_layout_and_dequantization_for_every_order_and_type(
    transforms, case
):
    order, shape, dtype, padded, quant, frame = case
    device_type = FORMAT_TYPE[dtype]
    host_order = DEFAULT_HOST_ORDER[order]
    host = device_to_host(frame, order, shape, dtype, padded)
    status, raw = transforms("d2h", (order, device_type), (host_order, device_type), shape, padded, quant, frame)
    assert status == 0, f"HailoRT status {status}"
    np.testing.assert_array_equal(np.frombuffer(raw, dtype).reshape(shape), host)
    status, floats = transforms(
        "d2h", (order, device_type), (host_order, FormatType.FLOAT32), shape, padded, quant, frame
    )
    assert status == 0, f"HailoRT status {status}"
    np.testing.assert_array_equal(np.frombuffer(floats, np.float32).reshape(shape), dequantize(host, quant))


@settings(max_examples=60, deadline=None, derandomize=True)  # the same frames every run
@given(case=output_cases())
def test_hailorts_input_transform_writes_the_device_frame_the_harness_writes(transforms, case):
    order, shape, dtype, padded, quant, frame = case
    assume(order is not FormatOrder.NC)  # an input is an image: host NHWC to any device image order
    host = device_to_host(frame, order, shape, dtype, padded)
    device_type = FORMAT_TYPE[dtype]
    status, raw = transforms(
        "h2d", (FormatOrder.NHWC, device_type), (order, device_type), shape, padded, quant[:1], host.tobytes()
    )
    assert status == 0, f"HailoRT status {status}"
    ours = host_to_device(host, order, padded)
    np.testing.assert_array_equal(np.frombuffer(raw, dtype)[: ours.size], ours)


@settings(max_examples=60, deadline=None, derandomize=True)  # the same frames every run
@given(case=output_cases(), seed=st.integers(0, 2**32 - 1))
def test_hailorts_input_transform_quantizes_float_frames_as_the_harness_does(transforms, case, seed):
    order, shape, dtype, padded, quant, _ = case
    assume(order is not FormatOrder.NC)
    lo, hi = quant[0].limvals_min, quant[0].limvals_max
    margin = (hi - lo) / 4  # values past both limits too: they are clipped
    floats = np.random.default_rng(seed).uniform(lo - margin, hi + margin, shape).astype(np.float32)
    src, dst = (FormatOrder.NHWC, FormatType.FLOAT32), (order, FORMAT_TYPE[dtype])
    status, raw = transforms("h2d", src, dst, shape, padded, quant[:1], floats.tobytes())
    assert status == 0, f"HailoRT status {status}"
    ours = host_to_device(quantize(floats, quant[:1], dtype), order, padded)
    np.testing.assert_array_equal(np.frombuffer(raw, dtype)[: ours.size], ours)


# ----------------------------------------------------------------------------------- the YOLOv8 NMS op


class NmsOpDriver:
    """One of HailoRT's NMS post-process ops in a driver process per build (``source``: a driver in
    tests/support/hailort_oracle/). Their symbols are hidden in libhailort.so, so the driver is compiled
    with libhailort's own flags and linked with its objects and static libraries, as the build's CMake
    files list them."""

    def __init__(self, build: Build, folder: Path, source: Path) -> None:
        target = build.root / "src" / "build" / "hailort" / "libhailort" / "src"
        objects = target / "CMakeFiles" / "libhailort.dir"
        flags = dict(
            line.split(" = ", 1) for line in (objects / "flags.make").read_text().splitlines() if " = " in line
        )
        defines = [d for d in flags["CXX_DEFINES"].split() if d != "-Dlibhailort_EXPORTS"]
        link = (objects / "link.txt").read_text().split()
        libs = [
            a if a.startswith("-l") else str((target / a).resolve())
            for a in link
            if a.endswith(".a") or a.startswith("-l")
        ]
        binary = folder / source.stem
        includes = flags["CXX_INCLUDES"].split()
        steps = (
            ["g++", "-std=c++17", "-O1", *defines, *includes, "-c", str(source), "-o", f"{binary}.o"],
            ["g++", "-o", str(binary), f"{binary}.o", *map(str, sorted(objects.rglob("*.o"))), *libs, "-lpthread"],
        )  # fmt: skip
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False)
            assert done.returncode == 0, done.stderr[-3000:]
        self.driver = Driver(binary, folder)

    def __call__(
        self, heads: Sequence[Head], classes: int, config: DecodeConfig, dtype: np.dtype, anchors: bool = False
    ) -> tuple[int, bytes]:
        """The op's answer to one frame: the YOLOv8 op's box and class head per stride, or (``anchors``)
        the YOLOv5 op's one anchored head per stride, each with ``config.anchors`` of its stride."""
        h, w = config.input_hw
        fields = [classes, config.max_per_class, repr(config.score_threshold), repr(config.iou_threshold), h, w]
        strides = len(heads) if anchors else len(heads) // 2
        request = [" ".join(map(str, [*fields, int(FORMAT_TYPE[dtype]), strides])).encode() + b"\n"]
        for i, head in enumerate(heads):
            if anchors:
                group = config.anchors[i]
                request.append(
                    " ".join(map(str, [len(group), *(int(v) for pair in group for v in pair)])).encode() + b"\n"
                )
            elif i % 2 == 0:
                request.append(f"{head.stride}\n".encode())
            q = head.quant
            numbers = [
                *head.shape,
                *head.padded,
                *(repr(v) for v in (q.zero_point, q.scale, q.limvals_min, q.limvals_max)),
            ]
            request.append(" ".join(map(str, [*numbers, len(head.frame)])).encode() + b"\n" + head.frame)
        return self.driver.exchange(b"".join(request))


@dataclass(frozen=True)
class Head:
    """One raw head as the device writes it: an NHCW frame (padded width), its quant info and stride."""

    name: str
    stride: int
    shape: tuple[int, int, int]
    padded: tuple[int, int, int]
    quant: QuantInfo
    frame: bytes


@pytest.fixture(scope="module")
def yolov8_op(build, tmp_path_factory) -> Iterator[NmsOpDriver]:
    """HailoRT's YOLOV8PostProcessOp (tests/support/hailort_oracle/yolov8_nms.cpp)."""
    op = NmsOpDriver(build, tmp_path_factory.mktemp(f"yolov8-nms-{build.version}"), ORACLE / "yolov8_nms.cpp")
    yield op
    op.driver.close()


@pytest.fixture(scope="module")
def yolov5_op(build, tmp_path_factory) -> Iterator[NmsOpDriver]:
    """HailoRT's YOLOv5PostProcessOp (tests/support/hailort_oracle/yolov5_nms.cpp)."""
    op = NmsOpDriver(build, tmp_path_factory.mktemp(f"yolov5-nms-{build.version}"), ORACLE / "yolov5_nms.cpp")
    yield op
    op.driver.close()


@st.composite
def nms_frames(draw):
    """Six raw heads of a YOLOv8 detector (box: 4 x 16 DFL bins, class: post-sigmoid scores, both
    quantized as the DFC leaves them), random device values, and NMS settings.

    No two class cells hold the same value: HailoRT sorts candidates with std::sort, which leaves the
    order of equal scores to libstdc++'s introsort (hailort: net_flow/ops/nms_post_process.cpp,
    remove_overlapping_boxes); the emulator keeps equal scores in candidate order. With ties the two
    may keep another of two equally scored, overlapping boxes."""
    dtype = np.dtype(draw(st.sampled_from([np.uint8, np.uint16])))
    top = np.iinfo(dtype).max
    side = draw(st.sampled_from([32, 64, 96] if dtype == np.uint16 else [32]))
    classes = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cells = [(side // s) ** 2 * classes for s in (8, 16, 32)]
    distinct = iter(np.split(rng.choice(top + 1, sum(cells), replace=False).astype(dtype), np.cumsum(cells)[:-1]))
    heads = []
    for stride in (8, 16, 32):
        grid = side // stride
        # DFL logits within +-64: past 88.7 HailoRT's softmax overflows (see the NaN test below)
        box_zp = draw(st.integers(0, top))
        box_scale = draw(st.floats(1 / 64, 0.25, width=32)) * 255 / top
        box_quant = QuantInfo(float(box_zp), float(box_scale), (0 - box_zp) * box_scale, (top - box_zp) * box_scale)
        cls_scale = float(np.float32(1 / top))
        cls_quant = QuantInfo(0.0, cls_scale, 0.0, top * cls_scale)
        for kind, channels, quant in (("box", 64, box_quant), ("cls", classes, cls_quant)):
            shape = (grid, grid, channels)
            padded = padded_shape(FormatOrder.NHCW, shape, dtype)
            _, aligned = frame_bytes(FormatOrder.NHCW, padded, dtype)
            if kind == "box":
                frame = rng.integers(0, top, aligned // dtype.itemsize, endpoint=True, dtype=dtype).tobytes()
            else:
                frame = host_to_device(next(distinct).reshape(shape), FormatOrder.NHCW, padded).tobytes()
            heads.append(Head(f"{kind}{stride}", stride, shape, padded, quant, frame))
    config = DecodeConfig(
        input_hw=(side, side),
        score_threshold=draw(st.sampled_from([0.2, 0.5, 0.9])),
        iou_threshold=draw(st.sampled_from([0.45, 0.7])),
        max_per_class=draw(st.sampled_from([3, 100])),
        mode=NmsMode.HAILORT,
        classes_are_probabilities=True,
    )
    return heads, classes, config, dtype


@settings(max_examples=40, deadline=None, derandomize=True)  # the same frames every run
@given(frame=nms_frames())
def test_hailorts_yolov8_nms_op_writes_the_nms_by_class_buffer_the_emulator_writes(yolov8_op, frame):
    heads, classes, config, dtype = frame
    status, theirs = yolov8_op(heads, classes, config, dtype)
    assert status == 0, f"HailoRT status {status}"
    raw = {h.name: device_to_host(h.frame, FormatOrder.NHCW, h.shape, dtype, h.padded) for h in heads}
    specs = {h.name: OutputSpec(h.name, h.shape, FormatOrder.NHWC, FORMAT_TYPE[dtype], (h.quant,)) for h in heads}
    # HailoRT sums the DFL bins in another order: a few ulp of a normalised coordinate
    assert_same_nms_buffer(theirs, nms_op(raw, specs, config, nms_spec(classes, config.max_per_class)), classes)


def assert_same_nms_buffer(theirs: bytes, ours: np.ndarray, classes: int) -> None:
    """HailoRT's HAILO_NMS_BY_CLASS buffer and the emulator's: the same counts, classes, order and scores,
    bit for bit; box corners within float32 rounding (HailoRT computes them in another order, or
    normalised where the emulator works in input pixels)."""
    theirs_array = np.frombuffer(theirs, np.float32)
    assert ours.size == theirs_array.size
    boxes = box_positions(ours, classes)
    np.testing.assert_array_equal(theirs_array[~boxes], ours[~boxes])
    np.testing.assert_allclose(theirs_array[boxes], ours[boxes], rtol=1e-6, atol=1e-6)


def box_positions(buffer: np.ndarray, classes: int) -> np.ndarray:
    """Which floats of a HAILO_NMS_BY_CLASS buffer are box corners (per class: count, then count
    records of y_min, x_min, y_max, x_max, score)."""
    boxes = np.zeros(buffer.size, dtype=bool)
    offset = 0
    for _ in range(classes):
        count = int(buffer[offset])
        for k in range(count):
            first = offset + 1 + 5 * k
            boxes[first : first + 4] = True
        offset += 1 + 5 * count
    return boxes


def test_hailorts_yolov8_nms_op_gives_nan_boxes_for_dfl_logits_past_88_where_the_emulator_does_not(yolov8_op):
    """HailoRT's softmax over the DFL bins exponentiates without subtracting the maximum
    (hailort: libhailort/src/net_flow/ops/softmax_post_process.cpp, SoftmaxPostProcessOp::softmax):
    a bin past ln(FLT_MAX) = 88.7 overflows and the box comes out NaN. The emulator's softmax is the
    stable one. Asserted, so that a HailoRT that fixes it makes this test say so."""
    quant = QuantInfo(0.0, 1.0, 0.0, 255.0)  # DFL logits 0..255
    frame = np.zeros((1, 64, 8), np.uint8)
    frame[0, 0, 0] = 200  # one bin of the left side at 200: exp(200) = inf in float32
    score = QuantInfo(0.0, float(np.float32(1 / 255)), 0.0, 1.0)
    cls = np.full((1, 1, 8), 255, np.uint8)
    heads = [Head("box8", 8, (1, 1, 64), (1, 1, 64), quant, frame[:, :, :1].tobytes()),
             Head("cls8", 8, (1, 1, 1), (1, 8, 1), score, cls.tobytes())]  # fmt: skip
    config = DecodeConfig(input_hw=(8, 8), score_threshold=0.5, mode=NmsMode.HAILORT, classes_are_probabilities=True)
    status, theirs = yolov8_op(heads, 1, config, np.dtype(np.uint8))
    assert status == 0
    record = np.frombuffer(theirs, np.float32)[:6]
    assert record[0] == 1 and np.isnan(record[1:5]).any() and record[5] == 1.0
    raw = {h.name: device_to_host(h.frame, FormatOrder.NHCW, h.shape, np.uint8, h.padded) for h in heads}
    specs = {h.name: OutputSpec(h.name, h.shape, FormatOrder.NHWC, FormatType.UINT8, (h.quant,)) for h in heads}
    ours = nms_op(raw, specs, config, nms_spec(1, config.max_per_class))
    assert np.isfinite(ours).all()


# ----------------------------------------------------------------------------------- the YOLOv5 NMS op


@st.composite
def yolov5_frames(draw):
    """One anchored head per stride of a YOLOv5 detector (per anchor x, y, w, h, objectness and class
    scores, post-sigmoid as the HEF leaves them), random device values, anchors and NMS settings.
    Objectness and class codes are drawn without repeats, so that equal scores are rare (HailoRT's
    std::sort leaves their order to libstdc++, see nms_frames)."""
    dtype = np.dtype(draw(st.sampled_from([np.uint8, np.uint16])))
    top = np.iinfo(dtype).max
    side = draw(st.sampled_from([32, 64] if dtype == np.uint16 else [32]))  # 8-bit: 16 cells x 3 x 5 codes at most
    classes = draw(st.integers(1, 4))
    na = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = float(np.float32(1 / top))
    quant = QuantInfo(0.0, scale, 0.0, 1.0)  # post-sigmoid: the op reads probabilities (should_sigmoid false)
    heads, anchors = [], []
    for stride in (8, 16, 32):
        grid = side // stride
        shape = (grid, grid, na * (5 + classes))
        values = rng.integers(0, top, shape, endpoint=True, dtype=dtype).reshape(grid, grid, na, 5 + classes)
        scores = rng.choice(top + 1, grid * grid * na * (1 + classes), replace=False).astype(dtype)
        values[..., 4:] = scores.reshape(grid, grid, na, 1 + classes)
        padded = padded_shape(FormatOrder.NHCW, shape, dtype)
        frame = host_to_device(values.reshape(shape), FormatOrder.NHCW, padded).tobytes()
        heads.append(Head(f"head{stride}", stride, shape, padded, quant, frame))
        anchors.append(tuple((float(w), float(h)) for w, h in rng.integers(2, 4 * side, (na, 2))))
    config = DecodeConfig(
        input_hw=(side, side),
        score_threshold=draw(st.sampled_from([0.2, 0.5, 0.9])),
        iou_threshold=draw(st.sampled_from([0.45, 0.7])),
        max_per_class=draw(st.sampled_from([3, 100])),
        mode=NmsMode.HAILORT,
        classes_are_probabilities=True,
        anchors=tuple(anchors),
    )
    return heads, classes, config, dtype


@settings(max_examples=40, deadline=None, derandomize=True)  # the same frames every run
@given(frame=yolov5_frames())
def test_hailorts_yolov5_nms_op_writes_the_nms_by_class_buffer_the_emulator_writes(yolov5_op, frame):
    heads, classes, config, dtype = frame
    status, theirs = yolov5_op(heads, classes, config, dtype, anchors=True)
    assert status == 0, f"HailoRT status {status}"
    raw = {h.name: device_to_host(h.frame, FormatOrder.NHCW, h.shape, dtype, h.padded) for h in heads}
    specs = {h.name: OutputSpec(h.name, h.shape, FormatOrder.NHWC, FORMAT_TYPE[dtype], (h.quant,)) for h in heads}
    ours = nms_op(raw, specs, config, nms_spec(classes, config.max_per_class), HeadFamily.YOLOV5)
    assert_same_nms_buffer(theirs, ours, classes)  # HailoRT's boxes normalised by the grid and the image


# ----------------------------------------------------------------------------------- the SSD NMS op


@pytest.fixture(scope="module")
def ssd_op(build, tmp_path_factory) -> Iterator[NmsOpDriver]:
    """HailoRT's SSDPostProcessOp (tests/support/hailort_oracle/ssd_nms.cpp)."""
    op = NmsOpDriver(build, tmp_path_factory.mktemp(f"ssd-nms-{build.version}"), ORACLE / "ssd_nms.cpp")
    yield op
    op.driver.close()


def ssd_request(heads: Sequence[Head], classes: int, config: DecodeConfig, dtype: np.dtype) -> bytes:
    """One frame for ssd_nms.cpp: the NMS settings and ``config.ssd``, then per layer its anchors, its regression
    head and its class head (``heads``: regression, class, per layer in ``config.ssd.anchors``' order)."""
    ssd = config.ssd
    assert ssd is not None
    h, w = config.input_hw
    background = -1 if ssd.background_class is None else ssd.background_class
    fields = [classes, config.max_per_class, repr(config.score_threshold), repr(config.iou_threshold), h, w,
              int(FORMAT_TYPE[dtype]), ssd.centers_scale_factor, ssd.bbox_dimensions_scale_factor, *ssd.box_indices,
              background, int(ssd.normalize_boxes), len(ssd.anchors)]  # fmt: skip
    lines = [" ".join(map(str, fields)).encode() + b"\n"]
    for i, head in enumerate(heads):
        if i % 2 == 0:
            group = ssd.anchors[i // 2]
            lines.append(" ".join(map(str, [len(group), *(repr(v) for pair in group for v in pair)])).encode() + b"\n")
        q = head.quant
        numbers = [*head.shape, *head.padded, *(repr(v) for v in (q.zero_point, q.scale, q.limvals_min, q.limvals_max))]
        lines.append(" ".join(map(str, [*numbers, len(head.frame)])).encode() + b"\n" + head.frame)
    return b"".join(lines)


def ssd_frame(
    rng: np.random.Generator, dtype: np.dtype, grids: Sequence[tuple[int, int]], classes: int, ssd: SsdConfig
) -> list[Head]:
    """Per layer an SSD regression head (4 x na, offsets within +-3) and class head (na x classes, scores as the
    HEF leaves them), the class codes drawn without repeats (HailoRT's std::sort leaves the order of equal
    scores to libstdc++, see nms_frames)."""
    top = np.iinfo(dtype).max
    sizes = [gh * gw * len(a) * classes for (gh, gw), a in zip(grids, ssd.anchors, strict=True)]
    distinct = np.split(rng.choice(top + 1, sum(sizes), replace=False).astype(dtype), np.cumsum(sizes)[:-1])
    score_quant = QuantInfo(0.0, float(np.float32(1 / top)), 0.0, 1.0)  # the op reads scores: no activation
    heads = []
    for i, ((gh, gw), group, scores) in enumerate(zip(grids, ssd.anchors, distinct, strict=True)):
        zp = int(rng.integers(0, top, endpoint=True))
        scale = float(np.float32(6 / top))
        reg_quant = QuantInfo(float(zp), scale, (0 - zp) * scale, (top - zp) * scale)
        maps = (
            ("reg", rng.integers(0, top, (gh, gw, 4 * len(group)), endpoint=True, dtype=dtype), reg_quant),
            ("cls", scores.reshape(gh, gw, len(group) * classes), score_quant),
        )
        for kind, values, quant in maps:
            padded = padded_shape(FormatOrder.NHCW, values.shape, dtype)
            frame = host_to_device(values, FormatOrder.NHCW, padded).tobytes()
            heads.append(Head(f"{kind}{i}", 0, values.shape, padded, quant, frame))
    return heads


@st.composite
def ssd_frames(draw):
    """An SSD detector's heads on 1 to 3 layers with 1 to 3 anchors each (float32 fractions of the input), its
    box coding (scale factors, channel order, background class, HailoRT's clip) and NMS settings. The input is
    a power of two, so that the harness's pixels and HailoRT's fractions are the same floats scaled exactly."""
    dtype = np.dtype(draw(st.sampled_from([np.uint8, np.uint16])))
    small = dtype == np.uint8  # 256 codes: 14 cells x 2 anchors x 3 classes at most
    layers = draw(st.integers(1, 3))
    grids = [((3, 3), (2, 2), (1, 1)), ((8, 8), (5, 3), (2, 2))][not small][:layers]
    classes = draw(st.sampled_from([1, 2, 3] if small else [1, 2, 3, 5, 6]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    most = 2 if small else 3
    anchors = tuple(
        tuple((float(np.float32(wa)), float(np.float32(ha))) for wa, ha in rng.uniform(0.05, 0.9, (n, 2)))
        for n in (draw(st.integers(1, most)) for _ in range(layers))
    )
    ty, tx, th, tw = draw(st.permutations([0, 1, 2, 3]))
    ssd = SsdConfig(
        anchors,
        centers_scale_factor=draw(st.sampled_from([1, 10])),
        bbox_dimensions_scale_factor=draw(st.sampled_from([1, 5])),
        ty_index=ty,
        tx_index=tx,
        th_index=th,
        tw_index=tw,
        background_class=draw(st.sampled_from([None, 0, classes - 1] if classes > 1 else [None])),
        normalize_boxes=draw(st.booleans()),
    )
    side = draw(st.sampled_from([64, 256]))
    config = DecodeConfig(
        input_hw=(side, side),
        score_threshold=draw(st.sampled_from([0.2, 0.5, 0.9])),
        iou_threshold=draw(st.sampled_from([0.45, 0.7])),
        max_per_class=draw(st.sampled_from([3, 100])),
        mode=NmsMode.HAILORT,
        ssd=ssd,
    )
    return ssd_frame(rng, dtype, grids, classes, ssd), classes, config, dtype


def harness_ssd_buffer(heads: Sequence[Head], classes: int, config: DecodeConfig, dtype: np.dtype) -> np.ndarray:
    """The harness decoder's NMS_BY_CLASS buffer of one frame (the background class left out)."""
    assert config.ssd is not None
    kept = classes - (config.ssd.background_class is not None)
    raw = {h.name: device_to_host(h.frame, FormatOrder.NHCW, h.shape, dtype, h.padded) for h in heads}
    specs = {h.name: OutputSpec(h.name, h.shape, FormatOrder.NHWC, FORMAT_TYPE[dtype], (h.quant,)) for h in heads}
    spec = OutputSpec("ssd_nms_postprocess", (kept, BBOX_PARAMS, config.max_per_class), FormatOrder.NMS_BY_CLASS,
                      FormatType.FLOAT32, nms=NmsShape(kept, config.max_per_class))  # fmt: skip
    return encode_nms_by_class(decoder(HeadFamily.SSD)(raw, specs, config), spec, config.input_hw)


def hailort_ssd_buffer(
    op: NmsOpDriver, heads: Sequence[Head], classes: int, config: DecodeConfig, dtype: np.dtype, size: int
) -> bytes:
    """HailoRT's NMS_BY_CLASS buffer of one frame, its first ``size`` floats. HailoRT writes a count for every
    class of the class map, the background's too (always 0: the last class once the classes after a first
    background move down, hailort: ssd_post_process.hpp, ``extract_bbox_classes``), past the classes its
    vstream declares (nms_post_process.cpp, ``nms_info``: one class fewer); what lies past ``size`` is checked
    zero."""
    status, theirs = op.driver.exchange(ssd_request(heads, classes, config, dtype))
    assert status == 0, f"HailoRT status {status}"
    array = np.frombuffer(theirs, np.float32)
    assert not array[size:].any()
    return array[:size].tobytes()


@settings(max_examples=40, deadline=None, derandomize=True)  # the same frames every run
@given(frame=ssd_frames())
def test_hailorts_ssd_nms_op_writes_the_nms_by_class_buffer_the_harness_decoder_writes(ssd_op, frame):
    heads, classes, config, dtype = frame
    ours = harness_ssd_buffer(heads, classes, config, dtype)
    theirs = hailort_ssd_buffer(ssd_op, heads, classes, config, dtype, ours.size)
    assert config.ssd is not None
    assert_same_nms_buffer(theirs, ours, classes - (config.ssd.background_class is not None))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"ty_index": 1, "tx_index": 0}, id="ty-and-tx-swapped"),
        pytest.param({"th_index": 3, "tw_index": 2}, id="th-and-tw-swapped"),
        pytest.param({"centers_scale_factor": 1}, id="centres-not-scaled"),
        pytest.param({"bbox_dimensions_scale_factor": 1}, id="sizes-not-scaled"),
        pytest.param({"anchors": (((0.4, 0.2), (0.25, 0.5)), ((0.3, 0.6),))}, id="anchors-height-width"),
        pytest.param({"background_class": 2}, id="background-last-not-first"),
    ],
)
def test_a_decoder_with_a_wrong_ssd_coding_writes_another_buffer_than_hailorts(ssd_op, change):
    """The comparison above can fail: one frame decoded right equals HailoRT's buffer; decoded with each
    mistake of the coding, it does not."""
    ssd = SsdConfig((((0.2, 0.4), (0.5, 0.25)), ((0.6, 0.3),)), 10, 5, background_class=0)
    dtype = np.dtype(np.uint16)
    heads = ssd_frame(np.random.default_rng(11), dtype, ((8, 8), (4, 4)), 3, ssd)
    config = DecodeConfig((256, 256), score_threshold=0.5, iou_threshold=0.45, max_per_class=100, ssd=ssd)
    ours = harness_ssd_buffer(heads, 3, config, dtype)
    theirs = hailort_ssd_buffer(ssd_op, heads, 3, config, dtype, ours.size)
    assert_same_nms_buffer(theirs, ours, 2)
    mistaken = harness_ssd_buffer(heads, 3, dataclasses.replace(config, ssd=dataclasses.replace(ssd, **change)), dtype)
    with pytest.raises(AssertionError):
        assert_same_nms_buffer(theirs, mistaken, 2)
