"""What `sciontool emit` feeds a Dispatcher or prints: agent events from JSONL or from options."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import BinaryIO, Protocol, TextIO

from sciontool_py import gojson
from sciontool_py.emitter import envelope
from sciontool_py.emitter.config import KNOWN_EVENTS, valid_events
from sciontool_py.emitter.firing import ThinkingWindow
from sciontool_py.errors import EmitError, JSONError

TURN_END = "turn_end"  # a JSONL line {"turn_end": true} marks the end of a turn


class Sink(Protocol):
    """Where agent events go: a Dispatcher, or a Printer."""

    def on_event(self, event: object) -> None: ...

    def on_turn_end(self) -> None: ...


class Printer:
    """Writes the envelope of every hook the firing rules call for, one JSON line each."""

    def __init__(self, out: TextIO, session_id: str = "", model_start_on_final_text: bool = False) -> None:
        self._out = out
        self._session_id = session_id
        self._window = ThinkingWindow(model_start_on_final_text)

    def on_event(self, event: object) -> None:
        for firing in self._window.feed(event):
            self._write(firing.event, firing.extra)

    def on_turn_end(self) -> None:
        firing = self._window.end_turn()
        self._write(firing.event, firing.extra)

    def _write(self, event: str, extra: dict[str, object]) -> None:
        try:
            line = envelope.encode(envelope.build(event, self._session_id, extra)).decode("utf-8")
        except JSONError as exc:
            raise EmitError(f"{event}: marshal envelope: {exc}") from None
        self._out.write(line + "\n")
        self._out.flush()


def read_events(stream: BinaryIO, name: str) -> Iterator[dict[str, object] | None]:
    """Agent events from JSONL (ADK Event JSON per line); None for a turn end."""
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            value = gojson.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise EmitError(f"{name}:{number}: not valid UTF-8") from None
        except JSONError as exc:
            raise EmitError(f"{name}:{number}: {exc}") from None
        if not isinstance(value, dict):
            raise EmitError(f"{name}:{number}: expected a JSON object (an agent event)")
        yield None if value.get(TURN_END) is True else value


def replay(events: Iterator[dict[str, object] | None], sink: Sink) -> None:
    for event in events:
        if event is None:
            sink.on_turn_end()
        else:
            sink.on_event(event)


def _json_object(option: str, text: str | None) -> object:
    """An option's JSON: an object, or null; core-agent's args and responses are maps."""
    if text is None:
        return None
    try:
        value = gojson.loads(text)
    except JSONError as exc:
        raise EmitError(f"{option}: {exc}") from None
    if value is not None and not isinstance(value, dict):
        raise EmitError(f"{option}: expected a JSON object or null")
    return value


def agent_event(
    event: str, tool_name: str | None, tool_input: str | None, tool_output: str | None
) -> dict[str, object] | None:
    """The agent event (ADK JSON form) that makes core-agent fire ``event``; None for agent-end."""
    if event not in KNOWN_EVENTS:
        raise EmitError(f"unknown event {json.dumps(event)} (valid: {valid_events()})")
    tool = event in ("tool-start", "tool-end")
    if tool and tool_name is None:
        raise EmitError(f"{event} needs --tool-name")
    if not tool and tool_name is not None:
        raise EmitError(f"--tool-name goes with tool-start or tool-end, not {event}")
    if tool_input is not None and event != "tool-start":
        raise EmitError(f"--tool-input goes with tool-start, not {event}")
    if tool_output is not None and event != "tool-end":
        raise EmitError(f"--tool-output goes with tool-end, not {event}")
    if event == "tool-start":
        call = {"name": tool_name, "args": _json_object("--tool-input", tool_input)}
        return {"content": {"parts": [{"functionCall": call}]}}
    if event == "tool-end":
        response = {"name": tool_name, "response": _json_object("--tool-output", tool_output)}
        return {"content": {"parts": [{"functionResponse": response}]}}
    if event == "model-start":
        # The first partial text of a thinking window is what fires model-start.
        return {"partial": True, "content": {"parts": [{"text": "…"}]}}
    return None
