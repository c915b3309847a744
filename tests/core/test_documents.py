"""The strict reader of every JSON and YAML document (harness.core.documents): what a lenient reader
would silently give a meaning to is refused, naming the file, where in it, and what was expected;
bombs cost nothing before they are refused; plain documents read as the standard readers read them."""

from __future__ import annotations

import json
import os
import time
import tracemalloc

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core import documents
from harness.core.documents import DocumentError, Fields, parse_json, parse_yaml, read_bytes, read_json, read_yaml
from harness.core.errors import HarnessError

keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)
plain_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


def refusal(parse, text: str) -> str:
    with pytest.raises(DocumentError) as caught:
        parse(text, "doc.txt")
    assert isinstance(caught.value, HarnessError) and str(caught.value).startswith("doc.txt")
    return str(caught.value)


def _bounded(seconds: float, memory: int):
    """A context that fails the test if what it holds took longer or allocated more than given."""

    class Bound:
        def __enter__(self):
            tracemalloc.start()
            self.start = time.perf_counter()

        def __exit__(self, *exc):
            elapsed = time.perf_counter() - self.start
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert elapsed < seconds and peak < memory, (elapsed, peak)

    return Bound()


# --- what reads --------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(value=plain_values)
def test_a_plain_document_reads_as_the_standard_readers_read_it(value):
    assert parse_json(json.dumps(value), "d.json") == json.loads(json.dumps(value))
    assert parse_yaml(yaml.safe_dump(value), "d.yaml") == yaml.safe_load(yaml.safe_dump(value))


def test_yaml_scalars_keep_their_yaml_types_and_integer_keys_stay_integers():
    assert parse_yaml("a: yes\nb: 1.5\nnames: {0: fire, 1: smoke}\n", "d.yaml") == {
        "a": True,
        "b": 1.5,
        "names": {0: "fire", 1: "smoke"},
    }


# --- duplicate keys ----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(value=plain_values, depth=st.integers(0, 3), key=keys)
def test_a_key_given_twice_is_refused_at_any_depth_naming_the_key(value, depth, key):
    inner = f'{{"{key}": 1, "{key}": 2}}'
    text = inner
    for level in range(depth):
        text = f'{{"k{level}": [{json.dumps(value)}, {text}]}}'
    message = refusal(parse_json, text)
    assert f"key {key!r} given twice" in message
    if depth:
        assert "(field k" in message  # the object's key path
    yaml_text = f"{key}: 1\n{key}: 2\n"
    for level in range(depth):
        yaml_text = f"k{level}:\n" + "".join(f"  {line}\n" for line in yaml_text.splitlines())
    assert f"key {key!r} given twice" in refusal(parse_yaml, yaml_text)


def test_json_refusals_name_the_key_path_of_the_value():
    assert refusal(parse_json, '{"a": [1, {"b": NaN}]}') == (
        "doc.txt: NaN is not a JSON number (field a[1].b), expected a finite number or null"
    )
    assert "key 'x' given twice in one object (field a.c), expected each key once" in refusal(
        parse_json, '{"a": {"c": {"x": 1, "x": 2}}}'
    )
    assert "the number '1e400' is too large (field [1])" in refusal(parse_json, "[1, 1e400]")


# --- numbers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" * 41, "-" + "1" * 41])
def test_a_number_json_cannot_hold_or_python_must_guess_at_is_refused(text):
    message = refusal(parse_json, f'{{"x": {text}}}')
    assert "(field x), expected" in message


@pytest.mark.parametrize("text", [".nan", ".inf", "-.inf", "1.0e+400", "1" * 41, "0x" + "f" * 41])
def test_a_yaml_number_that_is_not_finite_or_too_long_is_refused(text):
    assert "line 1" in refusal(parse_yaml, f"x: {text}\n")


def test_forty_digits_read_and_a_5000_digit_integer_is_refused_quickly():
    assert parse_json("1" * 40, "d") == int("1" * 40)
    with _bounded(1, 10**6):
        assert "5000 digits" in refusal(parse_json, "9" * 5000)
        assert "5000 digits" in refusal(parse_yaml, "nc: " + "9" * 5000)


# --- bombs -------------------------------------------------------------------------------------


def _alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_its_first_anchor_in_bounded_time_and_memory():
    bomb = _alias_bomb()
    assert len(bomb) < 600  # 9**9 strings expanded
    with _bounded(1, 2 * 10**6):
        assert "line 1: a YAML anchor &a0" in refusal(parse_yaml, bomb)


def test_an_alias_or_an_unused_anchor_is_refused_naming_its_line():
    assert "line 2: a YAML alias" in refusal(parse_yaml, "a: 1\nb: *a\n")
    assert "line 2: a YAML anchor &x" in refusal(parse_yaml, "a: 1\nb: &x 2\n")
    assert "YAML" in refusal(parse_yaml, "a: &x {k: 1}\nb:\n  <<: *x\n")  # merge keys need aliases


@pytest.mark.parametrize(("opening", "closing"), [("[", "]"), ('{"k": ', "}")])
def test_nesting_to_the_depth_bound_reads_and_deeper_is_refused_without_recursion(opening, closing):
    def nested(depth: int) -> str:
        return opening * depth + '"x"' + closing * depth

    parse_json(nested(documents.MAX_DEPTH), "d")
    parse_yaml(nested(documents.MAX_DEPTH), "d")
    for depth in (documents.MAX_DEPTH + 1, 100_000):
        text = nested(depth)
        with _bounded(30, 64 * 2**20):  # quadratic work or recursion would take minutes; a busy runner seconds
            assert f"nested deeper than {documents.MAX_DEPTH} levels" in refusal(parse_json, text)
            assert f"nested deeper than {documents.MAX_DEPTH} levels" in refusal(parse_yaml, text)


def test_brackets_inside_strings_do_not_count_as_depth():
    text = json.dumps({"s": "[" * 1000, "t": '{\\"' * 100})
    assert parse_json(text, "d") == json.loads(text)


def test_a_document_over_the_size_bound_is_refused_unparsed(monkeypatch):
    monkeypatch.setattr(documents, "MAX_BYTES", 100)
    assert "101 bytes, expected a document of at most 100" in refusal(parse_json, " " * 99 + "[]")
    assert "bytes, expected a YAML document of at most" in refusal(
        parse_yaml, "a: 1\n" * (documents.MAX_YAML_BYTES // 5 + 1)
    )


def test_bytes_that_are_not_utf8_are_refused_naming_the_byte():
    assert "not UTF-8 text (byte 6)" in refusal(parse_json, b'{"a": \xff}')
    assert "not UTF-8 text (byte 3)" in refusal(parse_yaml, b"a: \xfe\n")


@pytest.mark.parametrize("key", ["true", "null", "1.5", "[1, 2]"])
def test_a_yaml_key_that_is_not_a_string_or_an_integer_is_refused(key):
    assert "expected a string or an integer" in refusal(parse_yaml, f"{key}: v\n")


# --- files -------------------------------------------------------------------------------------


def test_files_that_are_not_regular_files_are_refused_unread(tmp_path):
    (tmp_path / "doc.json").write_text('{"a": 1}')
    assert read_json(tmp_path / "doc.json") == {"a": 1}
    os.mkfifo(tmp_path / "pipe")  # opened for reading without a writer: would wait forever
    with _bounded(2, 10**6):
        for path, words in (
            ("/dev/zero", "not a regular file"),
            (tmp_path / "pipe", "not a regular file"),
            (tmp_path, "a folder"),
            (tmp_path / "none.yaml", "no such"),
        ):
            with pytest.raises(DocumentError, match=words):
                read_yaml(path)
    with pytest.raises(DocumentError, match=r"none.json: no such label list file"):
        read_bytes(tmp_path / "none.json", "label list")


# --- typed reads -------------------------------------------------------------------------------


def test_typed_reads_refuse_what_would_be_coerced_naming_the_key_path_and_what_was_expected():
    data = {"flag": "false", "count": 1.0, "score": "0.5", "one": 1, "inner": {"n": True}}
    fields = Fields(data, "f.json")
    cases = [
        (lambda: fields.boolean("flag"), "f.json: field flag is 'false', expected true or false"),
        (lambda: fields.boolean("one"), "field one is 1, expected true or false"),
        (lambda: fields.integer("count"), "field count is 1.0, expected an integer"),
        (lambda: fields.number("score"), "field score is '0.5', expected a number"),
        (lambda: fields.integer("one", lo=2), "field one is 1, expected an integer >= 2"),
        (lambda: fields.object("inner").integer("n"), "field inner.n is True, expected an integer"),
        (lambda: fields.string("absent"), "field absent is missing"),
    ]
    for read, words in cases:
        with pytest.raises(DocumentError, match=None) as caught:
            read()
        assert words in str(caught.value)
    assert fields.number("one") == 1.0 and isinstance(fields.number("one"), float)
    assert fields.boolean("absent", False) is False


def test_keys_no_read_took_are_refused_with_their_key_path():
    fields = Fields({"a": 1, "inner": {"b": 2, "zz": 3}, "typo": 4}, "f.json")
    fields.integer("a")
    inner = fields.object("inner")
    inner.integer("b")
    with pytest.raises(DocumentError, match=r"f.json: field inner has unknown keys \['zz'\], expected only \['b'\]"):
        inner.done()
    with pytest.raises(DocumentError, match=r"f.json: \(top level\) has unknown keys \['typo'\]"):
        fields.done()


def test_a_list_of_objects_names_each_by_its_index():
    fields = Fields({"items": [{"x": 1}, {"x": "1"}]}, "f.json")
    with pytest.raises(DocumentError, match=r"field items\[1\]\.x is '1', expected an integer"):
        [item.integer("x") for item in fields.objects("items")]
    with pytest.raises(DocumentError, match=r"\(top level\) is \[1\], expected an object of fields"):
        Fields([1], "f.json")
