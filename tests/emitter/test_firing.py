"""core-agent's firing rules and envelope bytes, over ADK events in every form they come in."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

import pytest

from sciontool_py.emitter import envelope
from sciontool_py.emitter.firing import ThinkingWindow

try:
    HAS_ADK = importlib.util.find_spec("google.adk") is not None
except ModuleNotFoundError:  # no `google` package at all: find_spec imports the parent first
    HAS_ADK = False


def camel(kind: str, partial: bool = False, **fields: object) -> dict[str, object]:
    key = {"call": "functionCall", "response": "functionResponse"}.get(kind)
    part = {"text": fields["text"]} if key is None else {key: fields}
    return {"partial": partial, "content": {"parts": [part]}}


def snake(kind: str, partial: bool = False, **fields: object) -> dict[str, object]:
    key = {"call": "function_call", "response": "function_response"}.get(kind)
    part = {"text": fields["text"]} if key is None else {key: fields}
    return {"partial": partial, "content": {"role": "model", "parts": [part]}}


def adk(kind: str, partial: bool = False, **fields: object) -> object:
    from google.adk.events.event import Event
    from google.genai import types

    if kind == "call":
        part = types.Part(function_call=types.FunctionCall(**fields))  # type: ignore[arg-type]
    elif kind == "response":
        part = types.Part(function_response=types.FunctionResponse(**fields))  # type: ignore[arg-type]
    else:
        part = types.Part(text=str(fields["text"]))
    return Event(author="agent", partial=partial, content=types.Content(role="model", parts=[part]))


FORMS = [
    pytest.param(camel, id="json-camelCase"),
    pytest.param(snake, id="json-snake_case"),
    pytest.param(
        adk, id="adk-Event", marks=pytest.mark.skipif(not HAS_ADK, reason="google-adk not installed")
    ),
]
Make = Callable[..., object]


def names(window: ThinkingWindow, events: list[object | None]) -> list[str]:
    """Feed events (None = turn end) and return the hook names fired, in order."""
    fired = []
    for event in events:
        firings = [window.end_turn()] if event is None else window.feed(event)
        fired += [f.event for f in firings]
    return fired


@pytest.mark.parametrize("make", FORMS)
def test_core_agents_sequence_model_tool_tool_model(make: Make) -> None:
    events = [
        make("text", partial=True, text="Let me"),
        make("text", partial=True, text=" look"),  # same window: no second model-start
        make("call", name="ls", args={"d": "."}),
        make("response", name="ls", response={"files": []}),
        make("text", partial=True, text="Done"),
    ]
    assert names(ThinkingWindow(), events) == ["model-start", "tool-start", "tool-end", "model-start"]


@pytest.mark.parametrize("make", FORMS)
def test_turn_end_fires_agent_end_and_reopens_the_window(make: Make) -> None:
    events = [make("text", partial=True, text="a"), None, make("text", partial=True, text="b")]
    assert names(ThinkingWindow(), events) == ["model-start", "agent-end", "model-start"]


@pytest.mark.parametrize("make", FORMS)
def test_partial_tool_parts_neither_fire_nor_reset_the_window(make: Make) -> None:
    events = [
        make("text", partial=True, text="a"),
        make("call", partial=True, name="ls", args={}),
        make("response", partial=True, name="ls", response={}),
        make("text", partial=True, text="b"),
    ]
    assert names(ThinkingWindow(), events) == ["model-start"]


@pytest.mark.parametrize("make", FORMS)
def test_final_text_never_fires_model_start_unless_opted_in(make: Make) -> None:
    events = [make("text", text="The answer"), make("call", name="ls", args={}), make("text", text="More")]
    assert names(ThinkingWindow(), events) == ["tool-start"]
    opted_in = ThinkingWindow(model_start_on_final_text=True)
    assert names(opted_in, events) == ["model-start", "tool-start", "model-start"]


@pytest.mark.parametrize("make", FORMS)
def test_tool_extras_carry_name_and_objects(make: Make) -> None:
    window = ThinkingWindow()
    [start] = window.feed(make("call", name="read_file", args={"path": "/etc/hosts"}))
    [end] = window.feed(make("response", name="read_file", response={"content": "x"}))
    assert (start.event, start.extra) == (
        "tool-start",
        {"tool_name": "read_file", "tool_input": {"path": "/etc/hosts"}},
    )
    assert (end.event, end.extra) == ("tool-end", {"tool_name": "read_file", "tool_output": {"content": "x"}})


def test_parts_of_one_event_fire_in_order() -> None:
    event = {
        "content": {
            "parts": [
                {"text": "I will call two tools"},  # non-partial text: nothing
                {"functionCall": {"name": "a", "args": {}}},
                None,
                {"functionCall": {"name": "b", "args": {}}},
            ]
        }
    }
    firings = ThinkingWindow().feed(event)
    assert [(f.event, f.extra["tool_name"]) for f in firings] == [("tool-start", "a"), ("tool-start", "b")]


def test_a_partial_event_with_text_and_a_call_fires_only_model_start() -> None:
    event = {"partial": True, "content": {"parts": [{"text": "x"}, {"functionCall": {"name": "a"}}]}}
    assert names(ThinkingWindow(), [event]) == ["model-start"]


@pytest.mark.parametrize(
    "event",
    [
        None,
        {},
        {"content": None},
        {"content": {"parts": None}},
        {"partial": True, "content": {"parts": [{"text": ""}]}},
    ],
)
def test_events_without_hook_worthy_parts_fire_nothing(event: object) -> None:
    assert ThinkingWindow().feed(event) == []


def test_tool_start_envelope_bytes_match_go_marshal() -> None:
    body = envelope.encode(
        envelope.build("tool-start", "s1", envelope.tool_start_extra("ls", {"b": 1, "a": "<&>"}))
    )
    # Go sorts map keys: tool_input before tool_name; HTML characters escaped; no newline.
    assert body == (
        b'{"hook_event_name":"tool-start","session_id":"s1",'
        b'"tool_input":{"a":"\\u003c\\u0026\\u003e","b":1},"tool_name":"ls"}'
    )


def test_absent_args_are_null_and_an_empty_session_is_left_out() -> None:
    [firing] = ThinkingWindow().feed({"content": {"parts": [{"functionCall": {"name": "list_tools"}}]}})
    body = envelope.encode(envelope.build(firing.event, "", firing.extra))
    assert body == b'{"hook_event_name":"tool-start","tool_input":null,"tool_name":"list_tools"}'
    assert envelope.encode(envelope.build("agent-end")) == b'{"hook_event_name":"agent-end"}'
