"""HEF inspection: derived facts, the JSON summary and text, and the ``inspect`` CLI module."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cli.commands import inspect as inspect_command
from harness.core.errors import HefError
from harness.core.specs import NmsShape, QuantInfo
from harness.inputs.hef.inspect import device_families, nms_frame_bytes, output_facts, render_text, sigmoid, summary
from harness.inputs.hef.reader import HefInfo, parse_hef, read_hef

from support.hef_writer import Decoder, Stream, nms_hef

TRUNCATED = "hef_bad/hailo8l_yolov8s_nms_truncated.hef"


@pytest.fixture(scope="module")
def yolo(shared_fixtures: Path) -> HefInfo:
    return read_hef(shared_fixtures / TRUNCATED, tolerant=True)


@pytest.fixture(scope="module")
def mnist(shared_fixtures: Path) -> HefInfo:
    return read_hef(shared_fixtures / "hef" / "hailo8_mnist_cnn.hef")


def test_class_outputs_of_a_sigmoid_compiled_hef_are_post_sigmoid(yolo: HefInfo) -> None:
    facts = {f.name: f for f in output_facts(yolo.network_groups[0])}
    assert sorted(f.role or "" for f in facts.values()) == ["box"] * 3 + ["class"] * 3
    cls = facts["yolov8s/conv42_97"]
    assert cls.role == "class" and cls.post_sigmoid is True and cls.within_unit_interval
    assert cls.max_score == pytest.approx(0.8355, rel=1e-4)
    assert cls.quant_steps == (pytest.approx(0.0032765, rel=1e-4),)
    box = facts["yolov8s/conv41_97"]
    assert box.role == "box" and box.post_sigmoid is None and box.max_score is None
    assert not box.within_unit_interval
    assert "NMS op 'yolov8s/yolov8_nms_postprocess'" in box.arrives_as


def test_class_outputs_with_logit_limvals_score_at_most_sigmoid_of_limvals_max(yolo: HefInfo) -> None:
    group = yolo.network_groups[0]
    logits = QuantInfo(120.0, 0.05, -6.0, 3.0)
    outputs = tuple(
        dataclasses.replace(s, quant_infos=(logits,)) if s.name == "yolov8s/conv42_97" else s for s in group.outputs
    )
    facts = {f.name: f for f in output_facts(dataclasses.replace(group, outputs=outputs))}
    cls = facts["yolov8s/conv42_97"]
    assert cls.post_sigmoid is False
    assert cls.max_score == pytest.approx(1 / (1 + math.exp(-3.0)))


def test_fcr_output_arrives_channel_last_on_the_host(mnist: HefInfo) -> None:
    (fact,) = output_facts(mnist.network_groups[0])
    assert fact.role is None and fact.max_score is None
    assert "dense (H, W, C) channel-last" in fact.arrives_as and "(4, 4, 16)" in fact.arrives_as
    assert device_families(mnist) == ("Hailo-8 (HailoRT 4.x)",)


def test_summary_of_the_nms_hef_is_json_with_one_nms_host_output(yolo: HefInfo) -> None:
    data = json.loads(json.dumps(summary(yolo)))
    assert data["size"] == {"declared": 31240818, "actual": 2883584, "truncated": True}
    assert data["checksum"] == {"kind": "xxh3-64", "verified": False}
    assert (data["hw_arch"], data["devices"]) == ("HAILO8L", ["HAILO8L", "HAILO8"])
    (group,) = data["network_groups"]
    assert group["host_outputs"] == [
        {
            "name": "yolov8s/yolov8_nms_postprocess",
            "shape": [3, 5, 100],
            "format_order": "NMS_BY_CLASS",
            "format_type": "FLOAT32",
        }
    ]
    assert [d["stride"] for d in group["nms"]["bbox_decoders"]] == [8, 16, 32]
    assert group["nms"]["output_frame_bytes"] == 3 * (1 + 5 * 100) * 4


def test_nms_frame_size_matches_hailort_for_80_classes() -> None:
    assert nms_frame_bytes(NmsShape(80, 100)) == 160_320


def test_text_reads_like_parse_hef(yolo: HefInfo) -> None:
    text = render_text(yolo)
    assert "Architecture HEF was compiled for: HAILO8L" in text
    assert "NOT verified: truncated, header declares 31240818 bytes, file has 2883584" in text
    assert "HAILO NMS BY CLASS(number of classes: 3, maximum bounding boxes per class: 100" in text
    assert "Decoder stride 8: boxes yolov8s/conv41_97, classes yolov8s/conv42_97" in text
    assert "class scores are post-sigmoid" in text


@given(st.floats(allow_nan=False))
def test_sigmoid_stays_in_unit_interval_without_overflow(x: float) -> None:
    assert 0.0 <= sigmoid(x) <= 1.0


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    inspect_command.add_arguments(parser)
    return parser.parse_args(argv)


def test_inspect_command_prints_json(shared_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_fixtures / "hef" / "hailo8_arcface_mobilefacenet.hef"
    assert inspect_command.run(_args(str(path), "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["checksum"] == {"kind": "crc32", "verified": True}
    assert data["network_groups"][0]["host_outputs"][0]["shape"] == [512]


def test_inspect_command_refuses_a_truncated_file_unless_tolerant(
    shared_fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(shared_fixtures / TRUNCATED)
    with pytest.raises(HefError, match="truncated"):
        inspect_command.run(_args(path))
    assert inspect_command.run(_args(path, "--tolerant")) == 0
    assert "Network group name: yolov8s" in capsys.readouterr().out


def test_inspect_plugs_into_the_cli_and_reports_errors_in_one_line(
    shared_fixtures: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main as cli

    monkeypatch.setitem(cli.COMMANDS, "inspect", "harness.cli.commands.inspect")
    assert cli.main(["inspect", str(shared_fixtures / "hef_bad" / "not_a_hef.hef")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hailo-harness inspect: error: ") and "not a HEF (no magic)" in err
    assert err.count("\n") == 1


def test_a_bbox_only_hef_is_described_with_its_one_float32_output_and_the_host_nms() -> None:
    streams = (Stream("net/box", (20, 20, 64), 0), Stream("net/cls", (20, 20, 3), 1))
    info = parse_hef(nms_hef(streams, "yolov8", (Decoder(32, 0, 1),), 3, True), "bbox.hef")
    group = summary(info)["network_groups"][0]
    assert group["host_outputs"] == [
        {"name": "net/nms_postprocess", "shape": [1, 400, 7], "format_order": "NHWC", "format_type": "FLOAT32"}
    ]
    assert group["nms"]["bbox_decoding_only"] and group["nms"]["output_frame_bytes"] == 4 * 400 * 7
    text = render_text(info)
    assert "Output net/nms_postprocess FLOAT32, NHWC(1x400x7)" in text and "the host runs the NMS" in text
    yolox = parse_hef(nms_hef(streams, "yolox", (Decoder(32, 0, 1),), 3, True), "yolox.hef")
    assert "host_outputs" not in summary(yolox)["network_groups"][0]
    assert "Output of a post-process op this reader does not describe" in render_text(yolox)
