"""The generated line of each raw event name writes the bytes of the general steps (event_data,
in_struct_order, the codec's fields) for every envelope it takes, in every dialect we ship."""

from __future__ import annotations

import functools
from collections.abc import Callable

import orjson
import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from sciontool_py.codec import GO, GoCodec, OrjsonCodec
from sciontool_py.dialect.compiled import compile_line
from sciontool_py.dialect.discover import find_dialect, list_dialects
from sciontool_py.dialect.load import load_dialect
from sciontool_py.dialect.normalize import DEFAULT_KEYS, TOKEN_KEYS, event_data, normalize
from sciontool_py.dialect.spec import DialectSpec, Mapping
from sciontool_py.event import in_struct_order

Line = Callable[[dict[str, object]], bytes]

SPECS = [find_dialect(name) for name, _ in list_dialects()]
SPECS.append(load_dialect(str(FIXTURES / "nested-paths" / "dialect.yaml")))
# Paths that read a default field's key for another field: both steps write from one key.
CROSSED = {"success": ("success", "ok"), "prompt": ("message",), "tool_input": ("tool_output",)}
SPECS.append(DialectSpec("crossed", ("kind",), {"x": Mapping("tool-end", CROSSED)}, {}, {}, "test"))
CASES = [(spec, raw) for spec in SPECS for raw in [*spec.mappings, "not-mapped"]]
CODECS = [GO, OrjsonCodec(orjson)]
TOKEN_NAMES = sorted(TOKEN_KEYS - {"usage"})

text = st.text(alphabet='ab<>&\u2028é"\\\x00', max_size=6)
leaves = (
    st.sampled_from(["", "Success", "success", "<&>"])  # what the string rules look at
    | st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.sampled_from([2**53 + 1, 2**63 - 1, 2**63])  # counts Go's float64 rounds, or cannot hold
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
values = st.recursive(
    leaves, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(text, inner, max_size=2)
)


def general_line(spec: DialectSpec, raw: str, envelope: dict[str, object], codec: GoCodec) -> bytes:
    mapping = spec.mappings.get(raw)
    name = mapping.event if mapping is not None else raw
    head = normalize(spec, {spec.name_fields[0]: raw}, codec).head(codec)
    data = event_data(spec, envelope, name, mapping, codec)
    return head + codec.fields(in_struct_order(data)) + b"}\n"


@functools.cache
def compiled(spec: DialectSpec, raw: str, codec: GoCodec) -> tuple[frozenset[str], Line] | None:
    """compile_line, its general steps the reference; they fail the test when given an envelope
    without any of slow_keys (the compiled line's own)."""
    mapping = spec.mappings.get(raw)
    name = mapping.event if mapping is not None else raw
    head = normalize(spec, {spec.name_fields[0]: raw}, codec).head(codec)
    slow_keys: list[frozenset[str]] = []

    def general(envelope: dict[str, object]) -> bytes:
        assert not slow_keys[0].isdisjoint(envelope), "the compiled line's own envelope"
        return general_line(spec, raw, envelope, codec)

    made = compile_line(spec, raw, name, mapping, head, codec, general)
    if made is not None:
        slow_keys.append(made[0])
    return made


# The parts of an envelope, built once: a strategy made anew for each draw is validated anew,
# which cost more than the test itself. The same strategies, so the same inputs.
field_values = leaves | values
default_keys = st.sampled_from(sorted(DEFAULT_KEYS))
tool_inputs = st.fixed_dictionaries({}, optional={"file_path": values, "k": values})
token_counts = st.dictionaries(st.sampled_from(TOKEN_NAMES), leaves, max_size=3)
usages = token_counts | values


@functools.cache
def envelopes(spec: DialectSpec, raw: str) -> st.SearchStrategy[dict[str, object]]:
    """What the mapping reads, at its paths and beside them, with values of every JSON type."""
    mapping = spec.mappings.get(raw)
    paths = list(mapping.fields.values()) if mapping is not None else []
    path_lists = st.lists(st.sampled_from(paths), unique=True) if paths else None

    @st.composite
    def envelope_of(draw: st.DrawFn) -> dict[str, object]:
        envelope: dict[str, object] = {spec.name_fields[0]: raw}
        for path in draw(path_lists) if path_lists is not None else []:
            node = envelope
            for key in path[:-1]:
                child = node.setdefault(key, {})
                if type(child) is not dict:
                    break
                node = child
            else:
                node[path[-1]] = draw(field_values)
        if draw(st.booleans()):  # a default key is often one the compiled line leaves to event_data
            envelope[draw(default_keys)] = draw(leaves)
        if draw(st.booleans()):
            envelope["tool_input"] = draw(tool_inputs)
        if draw(st.booleans()):  # what the shared token extraction reads
            envelope.update(draw(token_counts))
            if draw(st.booleans()):
                envelope["usage"] = draw(usages)
        return envelope

    return envelope_of()


@pytest.mark.parametrize(("spec", "raw"), CASES, ids=[f"{s.name}:{raw}" for s, raw in CASES])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_the_compiled_line_writes_the_general_steps_bytes(
    spec: DialectSpec, raw: str, data: st.DataObject
) -> None:
    envelope = data.draw(envelopes(spec, raw))
    for codec in CODECS:
        made = compiled(spec, raw, codec)
        if made is not None:
            assert made[1](envelope) == general_line(spec, raw, envelope, codec)


def test_most_envelopes_of_a_mapping_take_the_compiled_line() -> None:
    """The keys a mapping reads at the top level are the compiled line's own, defaults included."""
    spec = find_dialect("core-agent")
    made = compiled(spec, "tool-end", OrjsonCodec(orjson))
    assert made is not None
    slow_keys, line = made
    envelope = {"hook_event_name": "tool-end", "tool_name": "<x>", "tool_output": {"a": [1.0, "\u2028"]}}
    assert slow_keys.isdisjoint(envelope)
    assert line(envelope) == general_line(spec, "tool-end", envelope, GO)
    assert {"tool_response", "file_path", "prompt"} <= slow_keys
    made = compiled(spec, "agent-end", GO)
    assert made is not None
    assert made[0].isdisjoint({"usage", "input_tokens"})  # token counts: the compiled line's too
    for envelope in (
        {"usage": {"input_tokens": 5.9}},
        {"usage": {"output_tokens": 2**60}, "prompt_tokens": 3},
    ):
        assert made[1](envelope) == general_line(spec, "agent-end", envelope, GO)
    copilot = find_dialect("copilot")
    made = compiled(copilot, "postToolUse", GO)
    assert made is not None
    assert "toolResult" not in made[0]


def test_an_agent_end_of_a_dialect_with_options_takes_the_general_steps() -> None:
    """The assistant turn (final message, transcript) stays with event_data."""
    claude = find_dialect("claude")
    assert compiled(claude, "Stop", GO) is None
    assert compiled(claude, "PreToolUse", GO) is not None
