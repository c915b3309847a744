"""The one JSON form of input and output specs (the output store's header and the emulated HEF's facts)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.base import InputSpec
from harness.backends.spec_json import input_json, input_spec, output_json, output_spec
from harness.core.documents import DocumentError, Fields
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo

_quant = st.builds(
    QuantInfo,
    st.floats(0, 255),
    st.floats(1e-6, 10),
    st.floats(-100, 0),
    st.floats(0, 100),
)


@st.composite
def _outputs(draw: st.DrawFn) -> OutputSpec:
    """A spec HailoRT could give: a raw map (no, one or per-channel quant infos) or an NMS buffer."""
    name = draw(st.text(min_size=1, max_size=20))
    if draw(st.booleans()):
        nms = draw(st.builds(NmsShape, st.integers(1, 80), st.integers(1, 100), st.integers(0, 3000)))
        order = draw(st.sampled_from([FormatOrder.NMS_BY_CLASS, FormatOrder.NMS_BY_SCORE]))
        return OutputSpec(name, (1, 1, 1), order, FormatType.FLOAT32, (), nms)
    h, w, c = draw(st.integers(1, 80)), draw(st.integers(1, 80)), draw(st.integers(1, 8))
    quant = tuple(draw(st.lists(_quant, min_size=c, max_size=c) | st.lists(_quant, max_size=1)))
    order = draw(st.sampled_from([FormatOrder.NHWC, FormatOrder.NCHW, FormatOrder.FCR]))
    return OutputSpec(name, (h, w, c), order, draw(st.sampled_from([FormatType.UINT8, FormatType.UINT16])), quant)


@given(_outputs())
def test_an_output_spec_read_back_from_its_json_is_the_spec_written(spec: OutputSpec) -> None:
    assert output_spec(Fields(output_json(spec), "facts.json")) == spec


def test_an_input_spec_read_back_from_its_json_is_the_spec_written() -> None:
    spec = InputSpec("images", (640, 640, 3), FormatOrder.NHWC, FormatType.UINT8)
    assert input_spec(Fields(input_json(spec), "facts.json")) == spec


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"order": "NCHWX"}, "facts.json: field heads[0].order is 'NCHWX', expected one of"),
        ({"quant": [{"zero_point": 0, "scale": "0.1", "limvals_min": 0, "limvals_max": 1}]}, "heads[0].quant[0].scale"),
        ({"shape": [1, -2]}, "heads[0].shape is [1, -2], expected a list of non-negative integers"),
        ({"unknown": 1}, "field heads[0] has unknown keys ['unknown']"),
    ],
)
def test_a_spec_field_not_of_its_type_is_refused_naming_its_place(change: dict, words: str) -> None:
    spec = OutputSpec("out", (20, 20, 2), FormatOrder.NHWC, FormatType.UINT8, (QuantInfo(0, 0.1, 0, 1),))
    with pytest.raises(DocumentError, match=words.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        output_spec(Fields(output_json(spec) | change, "facts.json", "heads[0]"))
