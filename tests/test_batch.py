"""`sciontool normalize`'s fast path writes exactly the bytes of the reference path."""

from __future__ import annotations

import io
import json
import string

from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from sciontool_py.batch import _Codec, normalize_stream
from sciontool_py.dialect.discover import find_dialect
from sciontool_py.dialect.load import load_dialect

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=string.printable + "<>&\u2028\u2029é\x00\x1f")
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
keys = st.sampled_from(
    [
        "tool_name",
        "tool_input",
        "tool_output",
        "prompt",
        "message",
        "success",
        "session_id",
        "usage",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "file_path",
        "tool_response",
        "call",
        "stats",
    ]
)
envelopes = st.builds(
    lambda name, rest: {**rest, "hook_event_name": name, "kind": name},
    st.sampled_from(
        [
            "tool-start",
            "tool-end",
            "model-start",
            "agent-end",
            "call.begin",
            "call.finish",
            "llm.usage",
            "other",
        ]
    ),
    st.dictionaries(keys, values, max_size=5),
)


def _reference(spec, data: bytes) -> bytes:  # type: ignore[no-untyped-def]
    """The same stream through gojson only: orjson switched off."""
    out = io.BytesIO()
    original = _Codec.__init__

    def without_orjson(self: _Codec, *args: object) -> None:  # the reference: gojson only
        original(self, *args)  # type: ignore[arg-type]
        self.orjson = None

    _Codec.__init__ = without_orjson  # type: ignore[method-assign]
    try:
        normalize_stream(spec, io.BytesIO(data), "x", out, False)
    finally:
        _Codec.__init__ = original  # type: ignore[method-assign]
    return out.getvalue()


SPECS = [
    find_dialect("core-agent"),
    find_dialect("claude"),
    load_dialect(str(FIXTURES / "nested-paths" / "dialect.yaml")),
]


@settings(max_examples=300, deadline=None)
@given(st.lists(envelopes, min_size=1, max_size=6), st.sampled_from(range(len(SPECS))))
def test_fast_path_bytes_equal_the_reference(batch: list[dict[str, object]], which: int) -> None:
    spec = SPECS[which]
    data = "".join(json.dumps(e) + "\n" for e in batch).encode()
    fast = io.BytesIO()
    normalize_stream(spec, io.BytesIO(data), "x", fast, False)
    assert fast.getvalue() == _reference(spec, data)


def test_pretty_printed_document_and_blank_lines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec = find_dialect("core-agent")
    out = io.BytesIO()
    doc = json.dumps({"hook_event_name": "tool-start", "tool_name": "x"}, indent=2).encode()
    assert normalize_stream(spec, io.BytesIO(doc), "x", out, False) == 1
    out2 = io.BytesIO()
    assert normalize_stream(spec, io.BytesIO(b'\n{"hook_event_name":"agent-end"}\n\n'), "x", out2, False) == 1
    assert (
        out2.getvalue() == b'{"name":"agent-end","raw_name":"agent-end","dialect":"core-agent","data":{}}\n'
    )


def test_bad_line_names_its_number_and_keeps_earlier_output(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from sciontool_py.errors import EventError

    spec = find_dialect("core-agent")
    out = io.BytesIO()
    data = b'{"hook_event_name":"agent-end"}\n{"hook_event_name":"agent-end"}\n{oops\n'
    try:
        normalize_stream(spec, io.BytesIO(data), "log.jsonl", out, False)
    except EventError as exc:
        assert str(exc).startswith("log.jsonl:3: invalid JSON")
    else:
        raise AssertionError("a bad line must be an error")
    assert out.getvalue().count(b"\n") == 2
