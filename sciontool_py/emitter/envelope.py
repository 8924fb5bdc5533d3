"""The JSON envelope core-agent writes on a hook's stdin, byte for byte.

core-agent marshals a ``map[string]any``: Go sorts map keys, so a tool-start
reads ``hook_event_name, session_id, tool_input, tool_name``; ``session_id``
is left out when empty; absent args or response still appear, as ``null``;
no trailing newline.
"""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.errors import JSONError

Envelope = dict[str, object]


def build(event: str, session_id: str = "", extra: dict[str, object] | None = None) -> Envelope:
    envelope: Envelope = {"hook_event_name": event}
    if session_id:
        envelope["session_id"] = session_id
    if extra:
        envelope.update(extra)
    return envelope


def tool_start_extra(name: str, args: object) -> dict[str, object]:
    return {"tool_name": name, "tool_input": args}


def tool_end_extra(name: str, response: object) -> dict[str, object]:
    return {"tool_name": name, "tool_output": response}


def encode(envelope: Envelope) -> bytes:
    """Go's ``json.Marshal`` bytes; JSONError when a value has no JSON form."""
    try:
        return gojson.dumps(envelope).encode("utf-8")
    except TypeError as exc:  # e.g. an args dict with keys of mixed types cannot be sorted
        raise JSONError(str(exc)) from None
