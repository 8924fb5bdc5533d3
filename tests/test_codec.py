"""OrjsonCodec's fast path writes exactly gojson's bytes (Go's, per tests/test_go_golden.py) on
values rich in what orjson writes differently from Go: floats of every magnitude, integers past
2^53, -0, text in several scripts, HTML characters and U+2028/9."""

from __future__ import annotations

import io
import json
import math
import struct
from decimal import Decimal

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sciontool_py import gojson
from sciontool_py.codec import GO, OrjsonCodec, number_walker
from sciontool_py.dialect.discover import find_dialect
from sciontool_py.dialect.normalize import normalize
from sciontool_py.dialect.stream import normalize_stream

FAST = OrjsonCodec(orjson)
CORE_AGENT = find_dialect("core-agent")  # loaded once: 600 examples read it

# Where Go's notation or orjson's changes, and the ends of float64.
EDGE_FLOATS = [
    0.0,
    -0.0,
    1e-7,
    9.999999999999999e-7,
    1e-6,
    1e-5,
    9.99e-5,
    1e-4,
    0.1,
    100.0,
    -100.0,
    1e15,
    1e15 + 0.5,
    9007199254740993.0,
    1e16,
    1.2345678901234568e17,
    1e20,
    999999999999999900000.0,
    1e21,
    -1e21,
    6.02214076e23,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
]
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(EDGE_FLOATS)
# Any float64 by its bits: every exponent, not only the ones Hypothesis favours.
float_bits = st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", bits.to_bytes(8, "little"))[0])
integers = st.integers(-(2**64), 2**64) | st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 2**63])
text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",))
    | st.sampled_from('<>&\u2028\u2029"\\é日😀\x00\x1f\u2014'),
    max_size=20,
)
scalars = st.none() | st.booleans() | floats | float_bits.filter(math.isfinite) | integers | text
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(text, inner, max_size=5),
    max_leaves=25,
)


def go_float(value: float) -> str:
    """Go's encoding/json float64, written from its rule with decimal arithmetic: shortest
    round-trip digits (repr's), 'f' for 1e-6 <= |x| < 1e21 else 'e' with e-07 cleaned to e-7."""
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    exact = Decimal(repr(value))
    if 1e-6 <= abs(value) < 1e21:
        text = format(exact, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    sign, digits, exponent = exact.normalize().as_tuple()
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    power = exponent + len(digits) - 1  # type: ignore[operator]
    exponent_text = f"{'+' if power >= 0 else '-'}{abs(power):02d}".replace("-0", "-")  # Go's clean-up
    return f"{'-' if sign else ''}{mantissa}e{exponent_text}"


@settings(max_examples=3000, deadline=None)
@given(floats | float_bits.filter(math.isfinite))
def test_format_float_follows_gos_rule(value: float) -> None:
    assert gojson.format_float(value) == go_float(value)


@settings(max_examples=3000, deadline=None)
@given(floats | float_bits.filter(math.isfinite))
def test_the_fast_path_formats_a_float_from_orjsons_digits_as_go(value: float) -> None:
    text = FAST._go_float(value)
    assert (text if isinstance(text, str) else text.decode()) == go_float(value)


@settings(max_examples=3000, deadline=None)
@given(floats | float_bits.filter(math.isfinite))
def test_the_walk_takes_exactly_the_floats_orjson_writes_otherwise(value: float) -> None:
    """Every float the walk leaves to orjson orjson writes as Go; every one it hands over as a
    fragment orjson writes otherwise (a fragment costs a call, a copy of its container)."""
    walked = number_walker(orjson.Fragment, FAST._go_float)([value])
    assert (walked[0] is value) is (orjson.dumps(value).decode() == go_float(value))


@settings(max_examples=1500, deadline=None)
@given(values)
def test_the_fast_path_writes_gojsons_bytes(value: object) -> None:
    expected = gojson.dumps(value)
    assert FAST.marshal(value) == expected
    assert FAST.marshal_bytes(value) == expected.encode()
    # A payload field: the text as a JSON string, escaped once more by the outer Marshal.
    data = {"tool_name": "<t>\u2028", "tool_input": FAST.payload_text(value)}
    assert FAST.fields(data) == GO.fields({"tool_name": "<t>\u2028", "tool_input": expected})
    # The same field as the compiled line writes it: the body of that JSON string.
    assert b'"%s"' % FAST.payload_string_body(value) == GO.fields({"t": expected})[5:-1]
    assert FAST.payload_string_body(value) == GO.payload_string_body(value)


@settings(max_examples=1500, deadline=None)
@given(text)
def test_a_string_field_is_written_as_gojson_writes_it(value: str) -> None:
    assert FAST.strings[value] == GO.strings[value] == gojson.dumps(value).encode()


def test_short_strings_are_written_the_same_from_the_cache_which_stays_bounded() -> None:
    codec = OrjsonCodec(orjson)
    strings = [f"<tool {i}>\u2028" for i in range(1500)] + ["x" * 65, "é" * 64]
    for _ in range(2):  # the second time from the cache, for those it keeps
        assert [codec.strings[s] for s in strings] == [GO.strings[s] for s in strings]
    assert len(codec.strings) == 1024


def test_a_payload_deeper_than_orjson_writes_is_written_by_gojson() -> None:
    value: object = []
    for _ in range(300):  # orjson stops at 255 levels
        value = [value]
    assert b'"%s"' % FAST.payload_string_body(value) == GO.fields({"t": gojson.dumps(value)})[5:-1]


def test_a_value_orjson_writes_as_go_does_is_not_copied() -> None:
    value = {"a": [1, "x", None, True, 0.5, {"b": 2**53}], "c": -123.456}
    fragment_calls: list[str] = []
    assert number_walker(fragment_calls.append)(value) is value
    assert fragment_calls == []


# Envelopes like real tool payloads: what `make bench`'s second log is made of.
payload_values = st.dictionaries(
    st.sampled_from(["duration_ms", "score", "lat", "lon", "cost", "stdout", "results", "bbox", "n"]),
    values,
    max_size=6,
)
envelopes = st.one_of(
    st.builds(
        lambda name, tool, payload: {"hook_event_name": name, "tool_name": tool, "tool_input": payload},
        st.just("tool-start"),
        text,
        payload_values,
    ),
    st.builds(
        lambda tool, payload: {"hook_event_name": "tool-end", "tool_name": tool, "tool_output": payload},
        text,
        payload_values | values,
    ),
    st.builds(
        lambda usage, took: {"hook_event_name": "agent-end", "usage": usage, "duration_ms": took},
        st.dictionaries(st.sampled_from(["input_tokens", "output_tokens"]), floats | integers),
        floats,
    ),
)


@pytest.mark.parametrize("include_raw", [False, True])
@settings(max_examples=300, deadline=None)
@given(batch=st.lists(envelopes, min_size=1, max_size=8))
def test_normalize_writes_the_reference_bytes_on_float_rich_envelopes(
    include_raw: bool, batch: list[dict[str, object]]
) -> None:
    spec = CORE_AGENT
    # json writes 2**64 (orjson cannot) and non-ASCII as it is, as harnesses do.
    data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in batch).encode()
    expected = b"".join(
        normalize(spec, gojson.loads(line.decode())).to_json_bytes(include_raw) + b"\n"
        for line in data.splitlines()
    )
    out = io.BytesIO()
    normalize_stream(spec, io.BytesIO(data), "x", out, include_raw, FAST)
    assert out.getvalue() == expected


@pytest.mark.parametrize(
    "zero", ["-0", "[-0]", "-0 ", '{"z":-0}', "[-0.5,-0]", "-0.0", "[-0e0,-0E+2,-0.25]", '"-0"']
)
def test_the_integer_minus_zero_is_written_as_go_writes_it(zero: str) -> None:
    """orjson reads -0 as the integer 0; Go reads every number as a float64 and writes -0.
    A float that starts -0 (-0.5, -0e0) orjson reads as Go does: those lines take the fast
    reader, and an integer -0 after one is still found."""
    line = f'{{"hook_event_name":"tool-end","tool_name":"2026-01-05","tool_output":{zero}}}\n'.encode()
    out = io.BytesIO()
    normalize_stream(find_dialect("core-agent"), io.BytesIO(line), "x", out, False, FAST)
    expected = normalize(find_dialect("core-agent"), GO.loads(line)).to_json_bytes() + b"\n"
    assert out.getvalue() == expected
    assert b"-0" in out.getvalue().split(b'"tool_output":')[1]


@pytest.mark.parametrize(
    ("line", "lost"),
    [
        (b'{"lat":-0.53,"e":-0e1,"E":-0E1}', False),
        (b'{"a":1e-07,"b":[2E-05]}', False),  # Python's json writes exponents so
        (b'{"a":"x"}', False),
        (b'{"a":-0}', True),
        (b'{"a":-0.5,"b":[-0]}', True),
        (b"-0", True),
        (b'{"a":"-0"}', True),  # in a string: only the slower reader, never a wrong value
    ],
)
def test_only_an_integer_minus_zero_sends_a_line_to_the_slower_reader(line: bytes, lost: bool) -> None:
    assert bool(FAST.lost_minus_zero(line)) is lost
    assert not GO.lost_minus_zero(line)
