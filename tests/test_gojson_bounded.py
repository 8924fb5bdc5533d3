"""gojson_bounded, the reader of large envelopes: the values gojson.loads gives (Go's), in memory
linear in the document. Its limits are shrunk here so that small documents take each path:
runs cut at the window's edge or found by counting brackets, containers written back past the
budget, objects sorted in segments and merged in buckets, brackets opened and closed back to
back, Go's depth limit; the oracle is gojson.loads, itself checked against Go (go-golden)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sciontool_py import gojson, gojson_bounded
from sciontool_py.errors import JSONError

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gojson_bounded, "WINDOW", 48)
    monkeypatch.setattr(gojson_bounded, "BUDGET", 1500)
    monkeypatch.setattr(gojson_bounded, "SEGMENT", 8)
    monkeypatch.setattr(gojson_bounded, "BLOCK", 3)
    monkeypatch.setattr(gojson_bounded, "SLICE", 3)  # chains read three levels at a time
    monkeypatch.setattr(gojson_bounded, "_compiled", None)  # the patterns, with SLICE


def go(text: bytes) -> str:
    """Go's bytes of the document, or the error's kind: the oracle."""
    try:
        return gojson.dumps(gojson.loads(gojson.decode_utf8(text), go_depth=True))
    except JSONError:
        return "refused"


def bounded(text: bytes) -> str:
    try:
        value, end = gojson_bounded.decode(text)
        gojson_bounded.rest_is_space(text, end)
    except JSONError:
        return "refused"
    return gojson.dumps(value)  # a GoJSON in it is written as it is: Go's bytes


# Documents as text, so that objects can repeat keys (the last one wins) and numbers, strings
# and spaces take the forms Go's reader meets: -0, 1e400, big integers, escapes, lone surrogates.
numbers = st.sampled_from(
    ["0", "-0", "-0.0", "1", "-5", "1.5", "1e-7", "2E+3", "1e400", "123456789012345678", "1" * 30]
) | st.integers(-(10**20), 10**20).map(str)
strings = st.sampled_from(
    ['""', '"a"', '"\\ud800"', '"\\ud83d\\ude00"', '"<>&\\u2028"', '"\\/"', '"\\x"', '"\u00e9\\n"', '"\t"']
) | st.text(max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False))
scalars = numbers | strings | st.sampled_from(["true", "false", "null", "NaN"])
keys = st.sampled_from(['"a"', '"b"', '"k1"', '"\\u0061"', '"\u00e9"', '"\\ud800"', '"\ufffd"'])
spaces = st.sampled_from(["", "", " ", "\n  ", "\t"])


@st.composite
def documents(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.integers(0, 9)) if depth < 5 else 0
    space = draw(spaces)
    if kind < 4:
        return draw(scalars)
    if kind < 7:
        items = draw(st.lists(documents(depth + 1), max_size=8))
        return "[" + space + ("," + space).join(items) + space + "]"
    members = draw(st.lists(st.tuples(keys, documents(depth + 1)), max_size=8))
    return "{" + space + ",".join(f"{k}{space}:{space}{v}" for k, v in members) + "}"


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    text = draw(documents()).encode()
    if text and draw(st.booleans()):
        at = draw(st.integers(0, len(text) - 1))
        cut = draw(st.sampled_from([b"", b",", b"]", b"}", b"[", b"{", b'"', b"\\", b"\xff", b":", b" x"]))
        text = text[:at] + cut + text[at + 1 :]
    nest = draw(st.integers(0, 12))
    return b"[" * nest + text + b"]" * nest


@st.composite  # a strategy, beside the chains of test_depth_is_gos_ten_thousand_levels
def linked(draw: st.DrawFn) -> str:
    """Containers nested 2 to 40 deep, each with a few small values (or members) around the next."""
    levels = draw(
        st.lists(
            st.tuples(st.booleans(), st.lists(scalars, max_size=2), st.lists(scalars, max_size=2)),
            min_size=2,
            max_size=40,
        )
    )
    text = draw(documents(4))
    for is_object, before, after in reversed(levels):
        space = draw(spaces)
        if is_object:
            members = (
                [f"{draw(keys)}:{v}" for v in before]
                + [f"{draw(keys)}:{space}{text}"]
                + [f"{draw(keys)}:{v}" for v in after]
            )
            text = "{" + space + ("," + space).join(members) + "}"
        else:
            text = "[" + ",".join([*before, text, *after]) + space + "]"
    return text


@FUZZ
@given(linked())
def test_every_chain_decodes_as_go_decodes_it(small: None, text: str) -> None:
    data = ('{"x":[' + text + "," + text + "]}").encode("utf-8", "surrogatepass")
    assert bounded(data) == go(data)


@FUZZ
@given(documents())
def test_every_document_decodes_as_go_decodes_it(small: None, text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    assert bounded(data) == go(data)


@FUZZ
@given(damaged())
def test_a_damaged_document_is_refused_where_go_refuses_it(small: None, data: bytes) -> None:
    assert bounded(data) == go(data)


def wide(count: int, keys: int, value: str) -> bytes:
    """An object of count members over keys distinct keys (so some repeat), each worth value."""
    members = ",".join(f'"k{(i * 7919) % keys}":{value.replace("N", str(i))}' for i in range(count))
    return ('{"o":{' + members + '},"after":1}').encode()


@pytest.mark.parametrize(
    "value", ["N", '"vN"', "[N,-0,1.5]", "[[[[[[[N]]]]]]]", '"' + "x" * 60 + 'N"', '{"z":N}']
)
@pytest.mark.parametrize("keys", [7, 300, 5000])
def test_a_wide_object_is_sorted_and_merged_as_go_does_the_last_value_winning(
    small: None, value: str, keys: int
) -> None:
    data = wide(2_000, keys, value)
    assert bounded(data) == go(data)


def chains(levels: int) -> Iterator[bytes]:
    """Documents levels deep, nested every way the reader handles a level."""
    yield b"[" * levels + b"]" * levels  # brackets back to back: one frame
    yield b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)  # a frame a level
    yield b"[" * (levels - 1) + b"[1," + b"2," * 40 + b"3]" + b"]" * (levels - 1)  # a run at the bottom
    mixed = [b"[" if level % 3 else b'{"a":' for level in range(levels)]
    yield b"".join(mixed) + b"0" + b"".join(b"]" if o == b"[" else b"}" for o in reversed(mixed))
    yield b"[0," * (levels - 1) + b"[]" + b"]" * (levels - 1)  # each level holds a value too


def test_depth_is_gos_ten_thousand_levels(small: None) -> None:
    seen = set()
    for levels in (9_999, 10_000, 10_001):
        for data in chains(levels):
            got = bounded(data)
            assert got == go(data), (levels, data[:40])
            seen.add((levels, got == "refused"))
    assert seen == {(9_999, False), (10_000, False), (10_001, True)}


def test_past_the_depth_limit_is_one_error_line(small: None) -> None:
    with pytest.raises(JSONError) as raised:
        gojson_bounded.decode(b"[" * 10_001 + b"]" * 10_001)
    assert str(raised.value) == "invalid JSON: exceeded max depth of 10000"


def test_a_bad_byte_deep_in_a_document_is_placed_by_line_and_column(small: None) -> None:
    data = b'{"a": [\n' + b"1,\n" * 500 + b"2 3]}"
    with pytest.raises(JSONError) as raised:
        gojson_bounded.decode(data)
    assert str(raised.value) == "invalid JSON: Expecting ',' delimiter: line 502 column 3"


def test_the_envelope_stays_a_dict_and_only_a_dense_payload_becomes_gos_bytes() -> None:
    # The real limits: 300,000 empty arrays are more than the budget keeps as Python objects.
    dense = b"[" + b",".join([b"[]"] * 300_000) + b"]"
    data = b'{"hook_event_name":"PreToolUse","tool_input":{"file_path":"/f","edits":' + dense + b'},"x":1}'
    value = gojson_bounded.loads(data)
    assert type(value) is dict and value["hook_event_name"] == "PreToolUse" and value["x"] == 1.0
    tool_input = value["tool_input"]
    assert type(tool_input) is dict and tool_input["file_path"] == "/f"  # the fields a dialect reads
    edits = tool_input["edits"]
    assert type(edits) is gojson.GoJSON and edits.kind() == "an array" and edits.data == dense
    assert gojson.dumps(value) == go(data)


def test_a_large_document_that_is_not_dense_decodes_to_python_values() -> None:
    text = "x" * (1 << 20)
    data = json.dumps({"hook_event_name": "Stop", "last_assistant_message": text, "n": [1, 2]}).encode()
    assert gojson_bounded.loads(data) == {
        "hook_event_name": "Stop",
        "last_assistant_message": text,
        "n": [1.0, 2.0],
    }
