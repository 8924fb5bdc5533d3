"""`sciontool normalize`'s stream writes, through either codec, exactly the bytes of the reference:
`normalize()` then `CanonicalEvent.to_json()` with gojson, one envelope at a time."""

from __future__ import annotations

import io
import json
import string
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from sciontool_py import gojson
from sciontool_py.codec import GO, GoCodec, OrjsonCodec
from sciontool_py.dialect.discover import find_dialect
from sciontool_py.dialect.load import load_dialect
from sciontool_py.dialect.normalize import (
    DEFAULT_KEYS,
    FILE_PATH_KEYS,
    TOKEN_KEYS,
    TRANSCRIPT_KEYS,
    event_data,
    keys_that_fill_data,
    normalize,
)
from sciontool_py.dialect.spec import DialectSpec
from sciontool_py.dialect.stream import normalize_stream
from sciontool_py.errors import EventError

CODECS = [pytest.param(GO, id="gojson"), pytest.param(OrjsonCodec(orjson), id="orjson")]
SPECS = [
    find_dialect("core-agent"),
    find_dialect("claude"),
    find_dialect("opencode"),
    load_dialect(str(FIXTURES / "nested-paths" / "dialect.yaml")),
]
STEP_FINISH = "message.part.updated.step-finish"  # opencode's model-end, which maps model
RAW_NAMES = [
    "tool-start",
    "tool-end",
    "model-start",
    "agent-end",
    "Stop",
    "call.begin",
    "llm.usage",
    STEP_FINISH,
    "other",
]
TOKEN_NAMES = sorted(TOKEN_KEYS - {"usage"})

# Go's corner cases: what an encoder gets wrong first.
TRICKY_TEXT = [
    "<b>&amp;</b>",
    "line\u2028sep\u2029para",
    "é ü ß 日本",
    "nul \x00 \x1f ctl",
    "emoji \U0001f600",
    "",
]
TRICKY_NUMBERS = [
    1e21,
    1e20,
    1e-7,
    1e-6,
    100.0,
    2.5,
    -0.0,
    2**53,
    2**53 + 1,
    2**63,
    -(2**63),
    12345678901234567890,
]

text = st.text(alphabet=string.printable + "<>&\u2028\u2029é日\x00\x1f", max_size=12) | st.sampled_from(
    TRICKY_TEXT
)
numbers = (
    st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(TRICKY_NUMBERS)
)
scalars = st.none() | st.booleans() | numbers | text
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
# Claude content blocks (claude's Stop reads them with options.assistant_blocks).
blocks = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "thinking", "tool_use", "tool_result", "error", "", "image"])},
        optional={"text": text, "thinking": text, "name": text, "content": text | values},
    )
    | values,
    max_size=4,
)
final_messages = blocks | blocks.map(json.dumps) | text
# Every key a step of event_data reads, the mapped paths' first segments, and strangers.
keys = st.sampled_from(
    [
        *sorted(DEFAULT_KEYS | FILE_PATH_KEYS | TOKEN_KEYS | TRANSCRIPT_KEYS),
        *("call", "stats", "tool", "last_assistant_message", "model", "toolName"),
    ]
)
# Top level: a string, a count or a boolean is what fills data, so draw them on purpose.
top_values = text | numbers | st.booleans() | values
token_fields = st.dictionaries(st.sampled_from(TOKEN_NAMES), numbers, max_size=3)
envelopes = st.builds(
    lambda name, rest, tokens, usage, final: {
        **rest,
        **tokens,
        **({"usage": usage} if usage else {}),
        **({"last_assistant_message": final} if final is not None else {}),
        "hook_event_name": name,
        "kind": name,
    },
    st.sampled_from(RAW_NAMES),
    st.dictionaries(keys, top_values, max_size=5),
    token_fields,
    token_fields,
    st.none() | final_messages,
)

# Fixed envelopes: every run checks these whatever Hypothesis draws.
CORPUS: list[dict[str, object]] = [
    {"hook_event_name": "tool-start", "tool_name": t, "tool_input": {"k": t, t: [t]}} for t in TRICKY_TEXT
]
CORPUS += [{"hook_event_name": "tool-end", "tool_name": "x", "tool_output": {"n": n}} for n in TRICKY_NUMBERS]
CORPUS += [{"hook_event_name": "agent-end", name: 7} for name in TOKEN_NAMES]
CORPUS += [{"hook_event_name": "agent-end", "usage": {name: 3}} for name in TOKEN_NAMES]
CORPUS += [
    {"hook_event_name": "agent-end", "input_tokens": 2**53 + 1, "output_tokens": 2.9},
    {"hook_event_name": "tool-end", "success": False},
    {"hook_event_name": "tool-end", "success": False, "tool_name": "x"},
    {"hook_event_name": "tool-end", "success": True, "error": "boom", "tool_name": "x", "message": "m"},
    {"hook_event_name": "Stop", "prompt": "p\u2028", "file_path": "/a&b"},
    {"hook_event_name": "other", "tool_response": {"filePath": "<f>"}},
    {"hook_event_name": STEP_FINISH, "model": "<m>&\u2028", "input_tokens": 3},
    {"hook_event_name": "Stop", "last_assistant_message": "  plain <b>\u2028  "},
    {"hook_event_name": "Stop", "last_assistant_message": [{"type": "text", "text": t} for t in TRICKY_TEXT]},
    {
        "hook_event_name": "Stop",
        "last_assistant_message": json.dumps(
            [{"type": "thinking", "thinking": "<think>"}, {"type": "tool_use", "name": "Bash"}, None]
        ),
    },
    {"hook_event_name": "Stop", "last_assistant_message": [{"type": "thinking", "text": "only"}, 5, "x"]},
]
CORPUS = [{**e, "kind": e["hook_event_name"]} for e in CORPUS]  # the nested-paths dialect's name field


def reference(spec: DialectSpec, data: bytes, include_raw: bool) -> bytes:
    """One envelope at a time through normalize() and CanonicalEvent with gojson."""
    out = b""
    for line in data.splitlines():
        event = normalize(spec, gojson.loads(line.decode()))
        out += event.to_json(include_raw, GO).encode() + b"\n"
    return out


def stream(spec: DialectSpec, data: bytes, include_raw: bool, codec: GoCodec) -> bytes:
    out = io.BytesIO()
    normalize_stream(spec, io.BytesIO(data), "x", out, include_raw, codec)
    return out.getvalue()


def jsonl(batch: list[dict[str, object]]) -> bytes:
    # orjson cannot write 2**64; json can, and both codecs read it.
    return "".join(json.dumps(e) + "\n" for e in batch).encode()


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("include_raw", [False, True])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_the_corpus_of_go_corner_cases_matches_the_reference(
    spec: DialectSpec, include_raw: bool, codec: GoCodec
) -> None:
    data = jsonl(CORPUS)
    assert stream(spec, data, include_raw, codec) == reference(spec, data, include_raw)


@settings(max_examples=300, deadline=None)
@given(st.lists(envelopes, min_size=1, max_size=6), st.sampled_from(range(len(SPECS))), st.booleans())
def test_both_codecs_write_the_reference_bytes(
    batch: list[dict[str, object]], which: int, include_raw: bool
) -> None:
    spec = SPECS[which]
    data = jsonl(batch)
    expected = reference(spec, data, include_raw)
    assert stream(spec, data, include_raw, OrjsonCodec(orjson)) == expected
    assert stream(spec, data, include_raw, GO) == expected


@settings(max_examples=300, deadline=None)
@given(envelopes, st.sampled_from(range(len(SPECS))))
def test_an_envelope_without_the_keys_that_fill_data_has_empty_data(
    envelope: dict[str, object], which: int
) -> None:
    """The template path's premise, checked against event_data itself."""
    spec = SPECS[which]
    raw_name = str(envelope["hook_event_name"])
    mapping = spec.mappings.get(raw_name)
    name = mapping.event if mapping else raw_name
    if keys_that_fill_data(spec, raw_name).isdisjoint(envelope):
        assert event_data(spec, envelope, name, mapping, GO) == {}


@pytest.mark.parametrize("codec", CODECS)
def test_pretty_printed_document_and_blank_lines(codec: GoCodec) -> None:
    spec = find_dialect("core-agent")
    doc = json.dumps({"hook_event_name": "tool-start", "tool_name": "x"}, indent=2).encode()
    assert stream(spec, doc, False, codec).count(b"\n") == 1
    out = stream(spec, b'\n{"hook_event_name":"agent-end"}\n\n', False, codec)
    assert out == b'{"name":"agent-end","raw_name":"agent-end","dialect":"core-agent","data":{}}\n'


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("include_raw", [False, True])
def test_a_minus_zero_is_written_as_go_writes_it_wherever_it_is_read(
    codec: GoCodec, include_raw: bool
) -> None:
    """orjson reads the integer -0 as 0: a line that wrote a 0 is read again. In a pretty-printed
    document (read whole by gojson) its first line alone is no JSON, and is not read again."""
    spec = find_dialect("core-agent")
    envelope = '{"hook_event_name": "tool-end", "tool_output": {"a": -0, "b": 0}, "duration_ms": -0}'
    pretty = envelope.replace(", ", ",\n  ").replace("{", "{\n  ", 1).encode() + b"\n"
    with_zero = b'{"hook_event_name":"tool-end","tool_output":[0,1]}'
    expected = normalize(spec, GO.loads(envelope.encode())).to_json_bytes(include_raw) + b"\n"
    assert b"-0" in expected
    # A line after it writes 0 as it is.
    out = stream(spec, envelope.encode() + b"\n" + with_zero, include_raw, codec)
    assert out.startswith(expected) and b"[0,1]" in out[len(expected) :]
    assert stream(spec, pretty, include_raw, codec) == expected
    assert not codec.wrote_zero[0]  # the stream clears it


@pytest.mark.parametrize("codec", CODECS)
def test_a_lone_surrogate_escape_is_read_as_go_reads_it(codec: GoCodec) -> None:
    spec = find_dialect("core-agent")
    out = stream(spec, b'{"hook_event_name":"tool-start","tool_name":"a\\ud800b"}\n', False, codec)
    assert json.loads(out)["data"]["tool_name"] == "a\ufffdb"


@pytest.mark.parametrize("codec", CODECS)
def test_invalid_utf8_in_a_string_is_read_as_go_reads_it(codec: GoCodec) -> None:
    spec = find_dialect("core-agent")
    out = stream(spec, b'{"hook_event_name":"tool-start","tool_name":"a\xff\xe2\x82b"}\n', False, codec)
    assert json.loads(out)["data"]["tool_name"] == "a\ufffd\ufffd\ufffdb"


@pytest.mark.parametrize("codec", CODECS)
def test_bad_line_names_its_number_and_keeps_earlier_output(codec: GoCodec) -> None:
    spec = find_dialect("core-agent")
    out = io.BytesIO()
    data = b'{"hook_event_name":"agent-end"}\n{"hook_event_name":"agent-end"}\n{oops\n'
    with pytest.raises(EventError, match=r"^log\.jsonl:3: invalid JSON"):
        normalize_stream(spec, io.BytesIO(data), "log.jsonl", out, False, codec)
    assert out.getvalue().count(b"\n") == 2


def test_orjson_is_the_default_and_gojson_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    from sciontool_py.codec import default_codec

    assert isinstance(default_codec(), OrjsonCodec)
    monkeypatch.setitem(sys.modules, "orjson", None)  # what an interpreter without the wheel sees
    assert default_codec() is GO


def test_normalize_without_orjson_prints_the_same_bytes(tmp_path: Path) -> None:
    """A platform without an orjson wheel: the real command, with orjson made unimportable."""
    log = tmp_path / "log.jsonl"
    log.write_bytes(jsonl(CORPUS))
    argv = ["normalize", "--dialect-file", str(FIXTURES / "nested-paths" / "dialect.yaml"), "--raw", str(log)]
    probe = (
        "import sys; sys.modules['orjson'] = None\n"
        "from sciontool_py.main import main\n"
        "code = main(); sys.stdout.flush()\n"
        "assert 'orjson' not in sys.modules or sys.modules['orjson'] is None\n"
        "sys.exit(code)\n"
    )
    without = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, check=True)
    with_orjson = subprocess.run(
        [sys.executable, "-m", "sciontool_py", *argv], capture_output=True, check=True
    )
    assert without.stdout == with_orjson.stdout
    assert without.stdout.count(b"\n") == len(CORPUS)
