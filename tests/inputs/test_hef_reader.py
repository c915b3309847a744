"""HEF reader: real fixtures read fully (each once per module), the truncated NMS HEF in tolerant mode,
error cases, the hand-written protobuf wire decoder, and robustness on arbitrary bytes."""

from __future__ import annotations

import hashlib
import os
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.errors import HefError
from harness.core.head_family import HeadFamily
from harness.core.settings import SsdConfig
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec
from harness.formats.bbox_only import bbox_only_spec
from harness.inputs.hef import reader
from harness.inputs.hef.reader import HefInfo, HwArch, parse_hef, read_hef
from harness.inputs.hef.wire import Message, ProtoError

from support.hef_writer import Decoder, Stream, nms_hef

TRUNCATED = "hef_bad/hailo8l_yolov8s_nms_truncated.hef"


@pytest.fixture(scope="module")
def infos(shared_fixtures: Path) -> dict[str, HefInfo]:
    names = ("hailo8_mnist_cnn", "hailo8_arcface_mobilefacenet", "hailo10h_lightface_slim")
    return {name: read_hef(shared_fixtures / "hef" / f"{name}.hef") for name in names}


@pytest.fixture(scope="module")
def yolo(shared_fixtures: Path) -> HefInfo:
    return read_hef(shared_fixtures / TRUNCATED, tolerant=True)


@pytest.fixture(scope="module")
def mnist_bytes(shared_fixtures: Path) -> bytes:
    return (shared_fixtures / "hef" / "hailo8_mnist_cnn.hef").read_bytes()


# --- intact fixtures -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "version", "arch", "devices", "sdk"),
    [
        ("hailo8_mnist_cnn", 0, HwArch.HAILO8P, ("HAILO8",), "3.27.0"),
        ("hailo8_arcface_mobilefacenet", 1, HwArch.HAILO8P, ("HAILO8",), "3.29.0"),
        ("hailo10h_lightface_slim", 3, HwArch.HAILO15H, ("HAILO15H", "HAILO10H"), "5.4.0"),
    ],
)
def test_intact_fixture_reads_fully_with_checksum_verified(
    infos: dict[str, HefInfo], name: str, version: int, arch: HwArch, devices: tuple[str, ...], sdk: str
) -> None:
    info = infos[name]
    assert info.checksum_verified and not info.truncated
    assert info.file_size == info.declared_size
    assert (info.header_version, info.hw_arch, info.devices, info.sdk_version) == (version, arch, devices, sdk)
    assert len(info.network_groups) == 1 and info.network_groups[0].nms is None


def test_mnist_streams_keep_device_and_host_orders(infos: dict[str, HefInfo]) -> None:
    group = infos["hailo8_mnist_cnn"].network_groups[0]
    assert group.name == "MNIST_CNN"
    (inp,) = group.inputs
    assert (inp.name, inp.shape, inp.device_order, inp.host_order) == (
        "MNIST_CNN/input_layer1",
        (32, 32, 1),
        FormatOrder.NHCW,
        FormatOrder.NHWC,
    )
    (out,) = group.outputs
    assert (out.name, out.shape, out.device_order, out.host_order, out.data_type) == (
        "MNIST_CNN/maxpool3",
        (4, 4, 16),
        FormatOrder.FCR,
        FormatOrder.FCR,
        FormatType.UINT8,
    )
    assert out.quant.scale == pytest.approx(0.0357312, rel=1e-5) and out.quant.limvals_max == pytest.approx(
        9.111455, rel=1e-5
    )
    (spec,) = group.output_specs(FormatType.UINT8)
    assert (spec.shape, spec.format_order, spec.format_type, spec.quant) == (
        (4, 4, 16),
        FormatOrder.FCR,
        FormatType.UINT8,
        (out.quant,),
    )


def test_nc_output_arrives_as_a_vector(infos: dict[str, HefInfo]) -> None:
    (spec,) = infos["hailo8_arcface_mobilefacenet"].output_specs()
    assert (spec.name, spec.shape, spec.format_order, spec.format_type) == (
        "arcface_mobilefacenet/fc1",
        (512,),
        FormatOrder.NC,
        FormatType.FLOAT32,
    )
    assert spec.quant[0].zero_point == 144 and spec.quant[0].scale == pytest.approx(0.0167389, rel=1e-5)


def test_per_feature_scales_give_one_quant_info_per_channel(infos: dict[str, HefInfo]) -> None:
    group = infos["hailo10h_lightface_slim"].network_groups[0]
    assert len(group.outputs) == 8
    for stream, spec in zip(group.sorted_outputs, group.output_specs(), strict=True):
        assert stream.quant.is_zero  # HailoRT reports an all-zero per-tensor quant info
        assert len(spec.quant) == stream.shape[2] == spec.channels
        assert len({q.limvals_max for q in spec.quant}) == 1
    conv23 = group.sorted_outputs[0]  # the vstream order; streams come in the contexts' order
    assert conv23.name == "lightface_slim/conv23" and conv23.is_per_feature
    assert min(q.scale for q in conv23.quant_infos) == pytest.approx(0.0291855, rel=1e-5)
    assert conv23.quant_infos[0].zero_point == 133


def test_asking_a_quantized_type_the_device_does_not_deliver_is_refused(infos: dict[str, HefInfo]) -> None:
    with pytest.raises(HefError, match=r"output 'MNIST_CNN/maxpool3': format type UINT16 asked, the device delivers"):
        infos["hailo8_mnist_cnn"].output_specs(FormatType.UINT16)


# --- the truncated YOLOv8 NMS HEF ----------------------------------------------------------------------


def test_truncated_file_is_refused_by_default(shared_fixtures: Path) -> None:
    with pytest.raises(HefError, match=r"truncated: header declares 31240818 bytes, file has 2883584"):
        read_hef(shared_fixtures / TRUNCATED)


def test_tolerant_read_of_truncated_file_records_it_and_keeps_the_metadata(yolo: HefInfo) -> None:
    assert yolo.truncated and not yolo.checksum_verified
    assert (yolo.header_version, yolo.hw_arch, yolo.devices) == (2, HwArch.HAILO8L, ("HAILO8L", "HAILO8"))
    (group,) = yolo.network_groups
    assert group.name == "yolov8s"
    (inp,) = group.inputs
    assert (inp.name, inp.shape, inp.data_type) == ("yolov8s/input_layer1", (640, 640, 3), FormatType.UINT8)


def test_tolerant_read_gives_six_raw_outputs_with_quantization(yolo: HefInfo) -> None:
    outputs = {s.name: s for s in yolo.network_groups[0].outputs}
    assert len(outputs) == 6
    grids = sorted((s.shape, s.data_type) for s in outputs.values())
    assert grids == sorted(((g, g, c), FormatType.UINT8) for g in (80, 40, 20) for c in (64, 3))
    cls = outputs["yolov8s/conv42_97"].host_quant
    box = outputs["yolov8s/conv41_97"].host_quant
    assert len(cls) == len(box) == 1
    assert (cls[0].zero_point, cls[0].limvals_min) == (0, 0)
    assert cls[0].scale == pytest.approx(0.0032765, rel=1e-4)
    assert cls[0].limvals_max == pytest.approx(0.8355, rel=1e-4)
    assert box[0].zero_point == 164 and box[0].scale == pytest.approx(0.13575, rel=1e-4)
    assert (box[0].limvals_min, box[0].limvals_max) == (pytest.approx(-22.26, abs=5e-3), pytest.approx(12.35, abs=5e-3))
    assert outputs["yolov8s/conv62_97"].padded_shape == (20, 24, 64)


def test_tolerant_read_gives_the_yolov8_nms_config(yolo: HefInfo) -> None:
    nms = yolo.network_groups[0].nms
    assert nms is not None
    assert (nms.kind, nms.classes, nms.max_proposals_per_class, nms.regression_length) == ("yolov8", 3, 100, 16)
    assert nms.score_threshold == pytest.approx(0.2) and nms.iou_threshold == pytest.approx(0.7)
    assert (nms.image_height, nms.image_width, nms.background_removal) == (640, 640, False)
    outputs = {s.name: s for s in yolo.network_groups[0].outputs}
    assert [d.stride for d in nms.bbox_decoders] == [8, 16, 32]
    for decoder, grid in zip(nms.bbox_decoders, (80, 40, 20), strict=True):
        assert outputs[decoder.box_stream].shape == (grid, grid, 64)
        assert outputs[decoder.class_stream].shape == (grid, grid, 3)


def test_nms_hef_has_one_nms_by_class_host_output(yolo: HefInfo) -> None:
    (spec,) = yolo.output_specs(FormatType.UINT8)
    assert spec.name == "yolov8s/yolov8_nms_postprocess"
    assert (spec.format_order, spec.format_type, spec.shape) == (
        FormatOrder.NMS_BY_CLASS,
        FormatType.FLOAT32,
        (3, 5, 100),
    )
    assert spec.nms == NmsShape(3, 100, 300)


# --- errors --------------------------------------------------------------------------------------


def test_text_file_is_not_a_hef(shared_fixtures: Path) -> None:
    with pytest.raises(HefError, match=r"not a HEF \(no magic\)"):
        read_hef(shared_fixtures / "hef_bad" / "not_a_hef.hef")


def test_missing_file_is_a_hef_error(tmp_path: Path) -> None:
    with pytest.raises(HefError, match=r"missing.hef: cannot read the file"):
        read_hef(tmp_path / "missing.hef")


def test_a_device_a_pipe_or_a_folder_is_refused_unread_naming_it(tmp_path: Path) -> None:
    """``inspect /dev/zero`` was killed for memory; a pipe without a writer would wait forever."""
    os.mkfifo(tmp_path / "pipe.hef")
    started = time.perf_counter()
    for path, words in (
        (Path("/dev/zero"), "/dev/zero: not a regular file"),
        (tmp_path / "pipe.hef", "pipe.hef: not a regular file (a device, a pipe or a socket), expected a HEF file"),
        (tmp_path, "a folder, expected a HEF file"),
    ):
        for tolerant in (False, True):
            with pytest.raises(HefError, match=None) as caught:
                read_hef(path, tolerant=tolerant)
            assert words in str(caught.value)
    assert time.perf_counter() - started < 2


def test_a_file_over_the_size_bound_is_refused_unread(shared_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_HEF_BYTES", 1000)
    with pytest.raises(HefError, match=r"mnist_cnn\.hef: 130423 bytes, expected a HEF of at most 1000 bytes"):
        read_hef(shared_fixtures / "hef" / "hailo8_mnist_cnn.hef", tolerant=True)


def test_messages_nested_far_deeper_than_the_schema_are_read_without_recursion() -> None:
    """The wire decoder scans one message at a time; only the fields the reader asks for are descended
    into, to the schema's fixed depth: nesting in the bytes cannot make it recurse."""
    nested = b""
    for _ in range(20_000):
        nested = b"\x12" + _varint(len(nested)) + nested  # field 2 (network_groups), length-delimited
    header = struct.pack(">III", 0x01484546, 0, len(nested)) + struct.pack(">I16s", 0, hashlib.md5(nested).digest())
    info = parse_hef(header + nested, "nested.hef")
    assert len(info.network_groups) == 1 and info.network_groups[0].outputs == ()
    message = Message(nested, "m")
    for _ in range(100):
        message = message.message(2, "again")
    assert message.has(2)


def test_corrupted_body_byte_is_a_checksum_error_unless_tolerant(mnist_bytes: bytes) -> None:
    data = bytearray(mnist_bytes)
    data[32 + 40000] ^= 0x10
    with pytest.raises(
        HefError, match=r"mnist.hef: checksum mismatch: md5 .* is [0-9a-f]{32}, header expects fb584e3e"
    ):
        parse_hef(bytes(data), "mnist.hef")
    info = parse_hef(bytes(data), "mnist.hef", tolerant=True)
    assert not info.checksum_verified and not info.truncated


def _v0(proto: bytes) -> bytes:
    """A v0 HEF around ``proto`` with the right size and MD5, so the proto itself is what gets tested."""
    return struct.pack(">III", 0x01484546, 0, len(proto)) + b"\0" * 4 + hashlib.md5(proto).digest() + proto


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def test_malformed_proto_field_names_the_file_and_its_path() -> None:
    header = _field(1, _varint(1 << 3 | 5) + b"\0\0\0\0")  # hw_arch written as a 32-bit value
    with pytest.raises(
        HefError, match=r"^bad\.hef: malformed proto field ProtoHEFHef\.header\.hw_arch: wire type 32"
    ) as e:
        parse_hef(_v0(header), "bad.hef")
    assert e.value.status == "HAILO_HEF_FILE_CORRUPTED"  # the status HailoRT refuses it with, kept


def test_overlong_field_in_a_complete_proto_is_malformed() -> None:
    proto = _varint(2 << 3 | 2) + _varint(100) + b"abc"
    with pytest.raises(HefError, match=r"malformed proto field ProtoHEFHef\.#2: length 100 runs past the end"):
        parse_hef(_v0(proto), "bad.hef")


def test_unknown_hw_arch_is_unsupported() -> None:
    with pytest.raises(HefError, match=r"^arch\.hef: unsupported hw_arch 77"):
        parse_hef(_v0(_field(1, _varint(1 << 3) + _varint(77))), "arch.hef")


# --- wire decoder ----------------------------------------------------------------------------------


def test_wire_decoder_reads_scalars_strings_and_packed_doubles() -> None:
    data = (
        _varint(1 << 3) + _varint(300)
        + _varint(2 << 3 | 1) + struct.pack("<d", 0.7)
        + _varint(3 << 3 | 5) + struct.pack("<f", 0.25)
        + _field(4, b"yolov8s")
        + _field(5, struct.pack("<3d", 1.0, 2.0, 3.0))
        + _varint(5 << 3 | 1) + struct.pack("<d", 4.0)
        + _field(6, _varint(1 << 3) + _varint(7))
        + _varint(1 << 3) + _varint(5)
    )  # fmt: skip
    message = Message(data, "m")
    assert message.uint(1, "a") == 5  # the last occurrence wins
    assert message.double(2, "b") == 0.7 and message.float32(3, "c") == 0.25
    assert message.string(4, "d") == "yolov8s"
    assert message.doubles(5, "e") == (1.0, 2.0, 3.0, 4.0)
    assert message.message(6, "f").uint(1, "g") == 7
    assert message.message(9, "absent").uint(1, "x") == 0 and not message.has(9)


def test_partial_message_keeps_the_bytes_of_a_cut_field() -> None:
    inner = _varint(1 << 3) + _varint(42) + _field(2, b"long name")
    data = _varint(1 << 3) + _varint(3) + _field(2, inner)
    cut = Message(data[:-4], "m", partial=True)
    assert cut.cut and cut.uint(1, "a") == 3
    assert cut.message(2, "b").uint(1, "c") == 42
    with pytest.raises(HefError, match=r"malformed proto field m\.#2: length"):
        Message(data[:-4], "m")


# --- robustness ------------------------------------------------------------------------------------


def _messages() -> st.SearchStrategy[bytes]:
    """Random but well-formed protobuf messages with the small field numbers the HEF schema uses."""
    numbers = st.integers(min_value=1, max_value=13)
    scalar = st.one_of(
        st.tuples(numbers, st.integers(0, 2**64 - 1)).map(lambda f: _varint(f[0] << 3) + _varint(f[1])),
        st.tuples(numbers, st.binary(min_size=8, max_size=8)).map(lambda f: _varint(f[0] << 3 | 1) + f[1]),
        st.tuples(numbers, st.binary(min_size=4, max_size=4)).map(lambda f: _varint(f[0] << 3 | 5) + f[1]),
    )
    return st.recursive(
        st.lists(scalar, max_size=4).map(b"".join),
        lambda children: st.lists(
            st.one_of(scalar, st.tuples(numbers, children).map(lambda f: _field(*f))), max_size=6
        ).map(b"".join),
        max_leaves=40,
    )


@given(st.binary(max_size=300))
def test_reader_raises_only_hef_errors_on_random_bytes(data: bytes) -> None:
    for candidate in (data, b"\x01HEF" + data, _v0(data)):
        for tolerant in (False, True):
            try:
                parse_hef(candidate, "random.hef", tolerant=tolerant)
            except HefError:
                pass


@given(_messages())
def test_reader_raises_only_hef_errors_on_random_well_formed_protos(proto: bytes) -> None:
    try:
        info = parse_hef(_v0(proto), "random.hef")
    except HefError:
        return
    for group in info.network_groups:
        try:
            group.output_specs()
        except HefError:
            pass


@given(
    edits=st.lists(st.tuples(st.integers(0, 130390), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.integers(0, 130423),
)
def test_reader_raises_only_hef_errors_on_a_mutated_or_cut_real_file(
    mnist_bytes: bytes, edits: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(mnist_bytes)
    for position, value in edits:
        data[32 + position] = value
    for candidate, tolerant in ((bytes(data), True), (mnist_bytes[:cut], True), (bytes(data[:cut]), False)):
        try:
            info = parse_hef(candidate, "mutated.hef", tolerant=tolerant)
        except HefError:
            continue
        for group in info.network_groups:
            try:
                group.output_specs()
            except HefError:
                pass


@pytest.mark.parametrize("name", ["hailo8_mnist_cnn", "hailo8_arcface_mobilefacenet", "hailo10h_lightface_slim"])
def test_hailort_reports_the_same_host_outputs(infos: dict[str, HefInfo], name: str) -> None:
    pytest.importorskip("hailo_platform", reason="hailo_platform (HailoRT's Python package) is not installed")
    from harness.backends.hailort.hef_info import hailort_output_specs

    def key(specs: tuple[OutputSpec, ...]) -> list[tuple[object, ...]]:
        return sorted((s.name, s.shape, s.format_order, s.format_type, s.nms) for s in specs)

    info = infos[name]
    assert key(hailort_output_specs(info.path)) == key(info.output_specs())


def test_hailort_cross_check_without_hailo_platform_is_a_hef_error(infos: dict[str, HefInfo]) -> None:
    try:
        import hailo_platform  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("hailo_platform is installed")
    from harness.backends.hailort.hef_info import hailort_output_specs

    with pytest.raises(HefError, match=r"hailo_platform \(HailoRT's Python package\) is not installed"):
        hailort_output_specs(infos["hailo8_mnist_cnn"].path)


def test_wire_decoder_reads_repeated_unsigned_varints_packed_or_not() -> None:
    data = _field(2, _varint(13) + _varint(300) + _varint(23)) + _varint(2 << 3) + _varint(7) + _field(3, b"")
    message = Message(data, "m")
    assert message.uints(2, "h") == (13, 300, 23, 7)
    assert message.uints(3, "w") == () and message.uints(4, "absent") == ()
    with pytest.raises(ProtoError, match=r"m\.h: varint runs past the end"):
        Message(_field(2, b"\x80"), "m").uints(2, "h")


# --- bbox-only ops ---------------------------------------------------------------------------------

GRIDS = ((8, 80), (16, 40), (32, 20))


def _yolov8_hef(classes: int, bbox_only: bool, grids=GRIDS) -> bytes:
    streams, decoders = [], []
    for i, (stride, g) in enumerate(grids):
        streams += [Stream(f"net/box{i}", (g, g, 64), 2 * i), Stream(f"net/cls{i}", (g, g, classes), 2 * i + 1)]
        decoders.append(Decoder(stride, 2 * i, 2 * i + 1))
    return nms_hef(tuple(streams), "yolov8", tuple(decoders), classes, bbox_only)


def _yolov5_hef(classes: int, anchors: int, grids=GRIDS) -> bytes:
    streams = tuple(Stream(f"net/conv{i}", (g, g, anchors * (5 + classes)), i) for i, (_, g) in enumerate(grids))
    decoders = tuple(
        Decoder(stride, i, i, tuple((10 * (k + 1), 13 * (k + 1)) for k in range(anchors)))
        for i, (stride, _) in enumerate(grids)
    )
    return nms_hef(streams, "yolov5", decoders, classes, True)


def test_a_yolov8_bbox_only_hef_gives_one_float32_nhwc_output_of_every_proposals_box_and_classes() -> None:
    group = parse_hef(_yolov8_hef(3, True), "bbox.hef").network_groups[0]
    assert group.nms is not None and group.nms.bbox_decoding_only and group.nms.kind == "yolov8"
    expected = bbox_only_spec("net/nms_postprocess", 80 * 80 + 40 * 40 + 20 * 20, 3, HeadFamily.YOLOV8)
    assert group.output_specs() == (expected,) == group.output_specs(FormatType.UINT8)
    assert expected.shape == (1, 8400, 7)
    (vstream,) = group.output_vstreams
    assert (vstream.order, vstream.type, vstream.shape, vstream.nms) == (
        FormatOrder.NHWC, FormatType.FLOAT32, (1, 8400, 7), None
    )  # fmt: skip
    assert vstream.quant == reader.QuantInfo(0.0, 1.0, 0.0, 0.0)
    with_nms = parse_hef(_yolov8_hef(3, False), "nms.hef").network_groups[0].output_specs()
    assert [s.format_order for s in with_nms] == [FormatOrder.NMS_BY_CLASS]


def test_a_yolov5_bbox_only_hef_counts_each_maps_anchors_and_cells_with_objectness_before_the_classes() -> None:
    (spec,) = parse_hef(_yolov5_hef(80, 3), "bbox5.hef").output_specs()
    assert spec == bbox_only_spec("net/nms_postprocess", 3 * 8400, 80, HeadFamily.YOLOV5)
    assert spec.shape == (1, 25200, 85)


@given(
    grids=st.lists(st.tuples(st.sampled_from((8, 16, 32, 64)), st.integers(1, 30)), min_size=1, max_size=4),
    classes=st.integers(1, 90),
    anchors=st.integers(1, 4),
)
def test_the_proposals_are_the_cells_of_each_grid_times_its_anchors(
    grids: list[tuple[int, int]], classes: int, anchors: int
) -> None:
    cells = sum(g * g for _, g in grids)
    (v8,) = parse_hef(_yolov8_hef(classes, True, grids), "v8.hef").output_specs()
    (v5,) = parse_hef(_yolov5_hef(classes, anchors, grids), "v5.hef").output_specs()
    assert v8.shape == (1, cells, 4 + classes) and v5.shape == (1, anchors * cells, 5 + classes)


def test_a_yolox_nms_ops_decoders_name_their_box_class_and_objectness_streams_by_pad() -> None:
    streams = (Stream("net/box", (20, 20, 4), 0), Stream("net/cls", (20, 20, 3), 1), Stream("net/obj", (20, 20, 1), 2))
    nms = parse_hef(nms_hef(streams, "yolox", (Decoder(32, 0, 1, objectness_pad=2),), 3, False), "x.hef")
    (decoder,) = nms.network_groups[0].nms.bbox_decoders
    assert (decoder.box_stream, decoder.class_stream, decoder.objectness_stream) == ("net/box", "net/cls", "net/obj")
    with pytest.raises(HefError, match=r"bbox_decoders\[0\]\.obj_pad_index: pad 7 is not a core output stream"):
        parse_hef(nms_hef(streams, "yolox", (Decoder(32, 0, 1, objectness_pad=7),), 3, False), "x.hef")


SSD_STREAMS = (
    Stream("net/reg19", (19, 19, 12), 0),
    Stream("net/cls19", (19, 19, 9), 1),
    Stream("net/reg10", (10, 10, 24), 2),
    Stream("net/cls10", (10, 10, 18), 3),
)
SSD_ANCHORS = (
    ((0.1, 0.1), (0.2, 0.1), (0.1, 0.2)),
    ((0.35, 0.35), (0.5, 0.25), (0.25, 0.5), (0.6, 0.2), (0.2, 0.6), (0.4, 0.4)),
)


def test_an_ssd_ops_anchors_and_box_coding_are_read_as_hailort_builds_them_largest_grid_first() -> None:
    decoders = (Decoder(0, 2, 3, SSD_ANCHORS[1]), Decoder(0, 0, 1, SSD_ANCHORS[0]))  # the HEF lists 10x10 first
    data = nms_hef(SSD_STREAMS, "ssd", decoders, 3, False, (300, 300), background_index=0)
    ssd = parse_hef(data, "ssd.hef").network_groups[0].nms.ssd
    f32 = tuple(tuple(tuple(float(np.float32(v)) for v in a) for a in layer) for layer in SSD_ANCHORS)
    assert ssd == SsdConfig(f32, 10, 5, 0, 1, 2, 3, background_class=0)
    coded = nms_hef(SSD_STREAMS, "ssd", decoders, 3, False, (300, 300), ssd_coding=(10, 5, 1, 0, 3, 2))
    ssd = parse_hef(coded, "ssd.hef").network_groups[0].nms.ssd
    assert ssd.box_indices == (1, 0, 3, 2) and ssd.background_class is None
    broken = nms_hef(SSD_STREAMS, "ssd", decoders, 3, False, (300, 300), ssd_coding=(0, 5, 0, 0, 0, 0))
    with pytest.raises(HefError, match=r"ssd_nms_op: SSD config: centers_scale_factor is 0; expected an integer >= 1"):
        parse_hef(broken, "ssd.hef")


def test_bbox_decoding_only_on_an_op_hailort_has_no_bbox_only_op_for_is_refused_naming_it() -> None:
    streams = (Stream("net/box", (20, 20, 4), 0), Stream("net/cls", (20, 20, 3), 1))
    data = nms_hef(streams, "yolox", (Decoder(32, 0, 1),), 3, True)
    group = parse_hef(data, "yolox.hef").network_groups[0]
    with pytest.raises(HefError, match=r"NMS op 'nms_op' of kind yolox with bbox_decoding_only; .*yolov8 or yolov5"):
        group.output_specs()


def test_a_bbox_only_op_without_classes_is_refused_naming_the_field() -> None:
    group = parse_hef(_yolov8_hef(0, True), "none.hef").network_groups[0]
    with pytest.raises(HefError, match=r"8400 proposals of 0 classes \(bbox_decoding_only\); expected at least one"):
        group.output_specs()
