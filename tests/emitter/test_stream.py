"""What `sciontool emit` reads and prints, in-process: agent events from JSONL, one event from
options, and the envelope lines core-agent's firing rules call for."""

from __future__ import annotations

import io

import pytest

from sciontool_py.emitter.stream import Printer, agent_event, read_events, replay
from sciontool_py.errors import EmitError

CALL = {"content": {"parts": [{"functionCall": {"name": "ls", "args": {"d": "."}}}]}}
PARTIAL = {"partial": True, "content": {"parts": [{"text": "a"}]}}
FINAL_TEXT = {"content": {"parts": [{"text": "done"}]}}


def printed(*events: dict[str, object] | None, session_id: str = "", final_text: bool = False) -> list[str]:
    out = io.StringIO()
    replay(iter(events), Printer(out, session_id, final_text))
    return out.getvalue().splitlines()


def test_a_turn_prints_one_envelope_per_hook() -> None:
    assert printed(CALL, PARTIAL, PARTIAL, None, session_id="s1") == [
        '{"hook_event_name":"tool-start","session_id":"s1","tool_input":{"d":"."},"tool_name":"ls"}',
        '{"hook_event_name":"model-start","session_id":"s1"}',
        '{"hook_event_name":"agent-end","session_id":"s1"}',
    ]


def test_final_text_fires_model_start_only_with_the_opt_in() -> None:
    assert printed(FINAL_TEXT, None) == ['{"hook_event_name":"agent-end"}']
    assert printed(FINAL_TEXT, None, final_text=True) == [
        '{"hook_event_name":"model-start"}',
        '{"hook_event_name":"agent-end"}',
    ]


def test_an_envelope_that_cannot_be_marshalled_is_an_error() -> None:
    bad = {"content": {"parts": [{"functionCall": {"name": "f", "args": {"v": object()}}}]}}
    with pytest.raises(EmitError) as caught:
        printed(bad)
    assert str(caught.value).startswith("tool-start: marshal envelope: ")


def test_each_line_is_flushed_as_it_is_written() -> None:
    class Recording(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.flushed: list[str] = []

        def flush(self) -> None:
            self.flushed.append(self.getvalue())

    out = Recording()
    printer = Printer(out)
    printer.on_event(CALL)
    assert out.flushed[-1].endswith('"tool_name":"ls"}\n')  # a pipe reader sees it now, not at exit


def read(data: bytes) -> list[dict[str, object] | None]:
    return list(read_events(io.BytesIO(data), "events.jsonl"))


def test_jsonl_events_with_turn_ends_and_blank_lines() -> None:
    data = b'{"partial": true}\n\n   \n{"turn_end": true}\n{"turn_end": false, "x": 1}\n'
    assert read(data) == [{"partial": True}, None, {"turn_end": False, "x": 1.0}]


def test_the_last_line_needs_no_newline() -> None:
    assert read(b'{"a": 1}\n{"turn_end": true}') == [{"a": 1.0}, None]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"a": 1}\n[1]\n', "events.jsonl:2: expected a JSON object (an agent event)"),
        (b"{nope\n", "events.jsonl:1: invalid JSON"),
        (b'{"a": 1}\n\n{"b": "\xff"}\n', "events.jsonl:3: not valid UTF-8"),
        (b"null\n", "events.jsonl:1: expected a JSON object (an agent event)"),
    ],
)
def test_a_bad_line_is_one_error_naming_the_line(data: bytes, message: str) -> None:
    with pytest.raises(EmitError) as caught:
        read(data)
    assert str(caught.value).startswith(message)


def test_events_before_a_bad_line_are_already_delivered() -> None:
    seen: list[object] = []
    with pytest.raises(EmitError):
        for item in read_events(io.BytesIO(b'{"a": 1}\n{bad\n'), "-"):
            seen.append(item)
    assert seen == [{"a": 1.0}]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("tool-start", "ls", '{"d": "."}', None), CALL),
        (
            ("tool-start", "ls", None, None),
            {"content": {"parts": [{"functionCall": {"name": "ls", "args": None}}]}},
        ),
        (
            ("tool-start", "ls", "null", None),
            {"content": {"parts": [{"functionCall": {"name": "ls", "args": None}}]}},
        ),
        (
            ("tool-end", "ls", None, '{"n": 2}'),
            {"content": {"parts": [{"functionResponse": {"name": "ls", "response": {"n": 2.0}}}]}},
        ),
        (("model-start", None, None, None), {"partial": True, "content": {"parts": [{"text": "…"}]}}),
        (("agent-end", None, None, None), None),
    ],
)
def test_one_event_from_options(
    args: tuple[str, str | None, str | None, str | None], expected: object
) -> None:
    assert agent_event(*args) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("tool-strat", None, None, None),
            'unknown event "tool-strat" (valid: [tool-start tool-end model-start agent-end])',
        ),
        (("tool-end", None, None, None), "tool-end needs --tool-name"),
        (("agent-end", "x", None, None), "--tool-name goes with tool-start or tool-end, not agent-end"),
        (("tool-end", "x", "{}", None), "--tool-input goes with tool-start, not tool-end"),
        (("tool-start", "x", None, "{}"), "--tool-output goes with tool-end, not tool-start"),
        (("tool-start", "x", "[1]", None), "--tool-input: expected a JSON object or null"),
        (("tool-end", "x", None, '"text"'), "--tool-output: expected a JSON object or null"),
        (("tool-start", "x", "{", None), "--tool-input: invalid JSON"),
    ],
)
def test_bad_options_are_one_error(
    args: tuple[str, str | None, str | None, str | None], message: str
) -> None:
    with pytest.raises(EmitError) as caught:
        agent_event(*args)
    assert str(caught.value).startswith(message)
