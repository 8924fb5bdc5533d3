"""Go's encoding/json, byte for byte: what makes our events equal Scion's."""

import pytest

from sciontool_py import gojson
from sciontool_py.errors import JSONError


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-2.5, "-2.5"),
        (0.1, "0.1"),
        (100.0, "100"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (1.2e-6, "0.0000012"),
        (1e-10, "1e-10"),
        (123456789012345678.0, "123456789012345680"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (5e-324, "5e-324"),
        (-0.0, "-0"),
    ],
)
def test_floats_print_as_go_prints_float64(value: float, text: str) -> None:
    assert gojson.format_float(value) == text


def test_objects_are_compact_sorted_and_html_escaped() -> None:
    value = {"b": [1, 2.5, {"z": None, "a": True}], "a": "<&> \u2028\u2029 é\n\t\x01"}
    assert (
        gojson.dumps(value)
        == '{"a":"\\u003c\\u0026\\u003e \\u2028\\u2029 é\\n\\t\\u0001","b":[1,2.5,{"a":true,"z":null}]}'
    )


def test_numbers_decode_as_float64_like_go() -> None:
    # 2^53 + 1 is not a float64: Go rounds it, and so do we.
    assert gojson.dumps(gojson.loads('{"n": 9007199254740993}')) == '{"n":9007199254740992}'


def test_unpaired_surrogate_escape_becomes_replacement_character() -> None:
    assert gojson.loads('"a\\ud800b"') == "a\ufffdb"
    assert gojson.loads('"\\ud83d\\ude00"') == "\U0001f600"


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"a\xffb", "a\ufffdb"),
        (b"\xe2\x82A", "\ufffd\ufffdA"),  # a cut 3-byte sequence: one U+FFFD per byte, as Go
        (b"\xed\xa0\x80", "\ufffd" * 3),  # an encoded surrogate
        (b"\xc0\xaf", "\ufffd" * 2),  # overlong
        (b"\xf0\x9f\x98\x80", "\U0001f600"),
    ],
)
def test_bad_utf8_decodes_as_go_reads_it(data: bytes, text: str) -> None:
    assert gojson.decode_utf8(data) == text


def test_indent_matches_marshal_indent() -> None:
    assert gojson.dumps({"b": [], "a": {"x": [1]}}, indent="  ") == (
        '{\n  "a": {\n    "x": [\n      1\n    ]\n  },\n  "b": []\n}'
    )


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", "1e999", "{} x", "", "[1,]", '"\x00"'])
def test_what_go_refuses_is_refused(text: str) -> None:
    with pytest.raises(JSONError):
        gojson.loads(text)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(JSONError, match="nested too deeply"):
        gojson.loads("[" * 100_000 + "]" * 100_000)
