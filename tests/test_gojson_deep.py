"""State files nested deeper than Python's own JSON parser goes (about 1 000 levels), as an agent
can leave them: read through fs.read_json_file, they decode as Go decodes them up to its 10 000
levels, every kind of value included, and a damaged one reads as empty with the reason, never a
crash. Also what Go's encoder does with values JSON has no form for."""

from __future__ import annotations

from pathlib import Path

import pytest

from sciontool_py import fs, gojson, gojson_bounded
from sciontool_py.errors import JSONError

DEPTH = 2_000  # past the C scanner's recursion, far inside Go's bound
INNER = '[true, false, null, -1.5e+2, 2E-1, 0, "\\u00e9\\ud800", {"k": {}}]'


def deep(inner: str, depth: int = DEPTH) -> str:
    return '{"a": [' * depth + inner + "]}" * depth


def test_a_deep_state_file_decodes_every_kind_of_value_as_go_does(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text(deep(INNER))
    value, problem = fs.read_json_file(str(tmp_path), "state.json")
    assert problem == ""
    for _ in range(DEPTH):  # walked down, not compared: == itself would recurse too deep
        assert isinstance(value, dict) and list(value) == ["a"]
        inner = value["a"]
        assert isinstance(inner, list) and len(inner) == 1
        value = inner[0]
    assert value == [True, False, None, -150.0, 0.2, 0.0, "\u00e9\ufffd", {"k": {}}]


@pytest.mark.parametrize(
    ("inner", "reason"),
    [
        ('"\x01"', "invalid JSON: Invalid control character at"),
        ("{1: 2}", "invalid JSON: expected a key at character"),
        ('{"k" 2}', "invalid JSON: expected ':' at character"),
        ("[1 2]", "invalid JSON: unexpected '2' at character"),
        ("-", "invalid JSON"),
    ],
)
def test_a_damaged_deep_state_file_reads_empty_and_says_why(tmp_path: Path, inner: str, reason: str) -> None:
    (tmp_path / "state.json").write_text(deep(inner))
    value, problem = fs.read_json_file(str(tmp_path), "state.json")
    assert value == {}
    assert problem.startswith(f"parsing {tmp_path}/state.json: {reason}")


def test_data_after_a_deep_document_is_refused() -> None:
    with pytest.raises(JSONError, match="extra data at character"):
        gojson.loads(deep("1") + " x", go_depth=True)


def test_a_document_deeper_than_go_reads_is_refused() -> None:
    with pytest.raises(JSONError, match="exceeded max depth of 10000"):
        gojson.loads("[" * 10_001 + "]" * 10_001, go_depth=True)


def test_the_first_value_of_a_stream_keeps_its_text_as_go_reads_it() -> None:
    assert gojson_bounded.first_value(b' {"a": "\\ud800x"} trailing') == {"a": "\ufffdx"}
    deep = b"[" * 5_000 + b"1" + b"]" * 5_000
    assert gojson.dumps(gojson_bounded.first_value(deep + b" trailing")) == deep.decode()  # Go's depth
    with pytest.raises(JSONError, match="exceeded max depth of 10000"):
        gojson_bounded.first_value(b"[" * 100_000)
    with pytest.raises(JSONError, match=r"^invalid JSON$"):
        gojson_bounded.first_value(b"{")


def test_why_a_text_is_not_json_is_said_in_one_line() -> None:
    with pytest.raises(JSONError) as caught:
        gojson.loads('{"a": 1,}')
    assert (
        str(caught.value)
        == "invalid JSON: Expecting property name enclosed in double quotes: line 1 column 9"
    )


def test_what_json_cannot_carry_is_an_error_and_a_lone_surrogate_is_replaced() -> None:
    for value in (float("nan"), float("inf")):
        with pytest.raises(JSONError, match="NaN and infinite numbers have no JSON form"):
            gojson.dumps({"x": value})
    assert gojson.dumps("a\ud800b") == '"a\ufffdb"'  # Go writes U+FFFD for what is not UTF-8
