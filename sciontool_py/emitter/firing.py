"""When core-agent fires a hook, given the agent's event stream (its newest rules).

Per event, parts in order: a function call fires tool-start and a function
response fires tool-end (both skipped on partial events, which only the
final aggregated event repeats); the first partial text part of a "thinking
window" fires model-start. A window opens at turn start and after every
tool-start / tool-end; non-partial text never fires. The turn's end fires
agent-end and reopens the window.

Events are duck-typed: ADK Python ``Event`` objects (``content.parts[*]``
with ``function_call`` / ``function_response`` / ``text``, ``partial``) or
their JSON form as dicts, with camelCase or snake_case keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from sciontool_py.emitter import envelope


@dataclass(frozen=True)
class Firing:
    """One hook to fire: the event name and the envelope keys beyond name and session."""

    event: str
    extra: dict[str, object]


def _get(obj: object, *names: str) -> object:
    """The first of ``names`` present (and not None) on an object or in a dict."""
    for name in names:
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


def _call(part: object, field: str, camel: str, payload: str) -> tuple[str, object] | None:
    call = _get(part, field, camel)
    if call is None:
        return None
    name = _get(call, "name")
    return (name if isinstance(name, str) else "", _get(call, payload))


class ThinkingWindow:
    """core-agent's firing state: whether model-start already fired in this window.

    ``model_start_on_final_text`` (off by default, which is core-agent's
    behaviour) lets non-partial text open model-start too, for agents that
    do not stream and so never produce partial text. Not thread-safe on its
    own; the Dispatcher serialises calls.
    """

    def __init__(self, model_start_on_final_text: bool = False) -> None:
        self._model_start_fired = False
        self._any_text = model_start_on_final_text

    def feed(self, event: object) -> list[Firing]:
        """The hooks one agent event fires, in order."""
        content = _get(event, "content")
        parts = _get(content, "parts") if content is not None else None
        if not isinstance(parts, (list, tuple)):
            return []
        partial = _get(event, "partial") is True
        fired: list[Firing] = []
        for part in parts:
            if part is None:
                continue
            call = _call(part, "function_call", "functionCall", "args")
            response = _call(part, "function_response", "functionResponse", "response")
            if partial and (call or response):
                continue  # partial chunks carry incomplete args; the final event repeats them
            if call:
                fired.append(Firing("tool-start", envelope.tool_start_extra(*call)))
                self._model_start_fired = False
            elif response:
                fired.append(Firing("tool-end", envelope.tool_end_extra(*response)))
                self._model_start_fired = False
            elif (partial or self._any_text) and _get(part, "text") and not self._model_start_fired:
                self._model_start_fired = True
                fired.append(Firing("model-start", {}))
        return fired

    def end_turn(self) -> Firing:
        """The turn is over: reopen the window, then fire agent-end."""
        self._model_start_fired = False
        return Firing("agent-end", {})
