"""`sciontool hook`: one envelope in, canonical event through the handlers."""

from __future__ import annotations

import os
import sys

from sciontool_py import gojson
from sciontool_py.dialect.discover import resolve
from sciontool_py.dialect.normalize import normalize
from sciontool_py.errors import EventError, SciontoolError
from sciontool_py.handlers import agent_info, agent_log
from sciontool_py.handlers.files import StateLock, failure, home_dir
from sciontool_py.handlers.limits import configured_limits, count_event, write_trigger
from sciontool_py.handlers.prompt_file import save_first_prompt

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Callable

    from sciontool_py.event import CanonicalEvent


def parse_envelope(data: bytes) -> object:
    """Decode stdin bytes; EventError says what is wrong in one line."""
    text = gojson.decode_utf8(data)  # as Go: a bad byte is U+FFFD, the event is not lost
    if not text.strip():
        raise EventError("envelope is blank: expected one JSON object")
    try:
        return gojson.loads(text)
    except gojson.JSONError as exc:
        raise EventError(f"envelope: {exc}") from None


def hub_configured() -> bool:
    return bool(os.environ.get("SCION_HUB_ENDPOINT") or os.environ.get("SCION_HUB_URL"))


def apply_event(home: str, event: CanonicalEvent, input_tools: list[str]) -> list[str]:
    """Run every handler of Scion's hook for one event, in Scion's order: status, log,
    prompt, hub, limits.

    As in Scion, one handler failing does not stop the others: a status file
    that cannot be written must not also cost the agent.log line, the limit
    count or the hub report.  Returns the failures, one line each.
    """
    limits = configured_limits()
    counts: dict[str, object] | None = None
    failures: list[str] = []
    with StateLock(home):
        info = agent_info.read(home)
        if agent_info.apply_event(info, event, input_tools):
            _attempt(failures, agent_info.write, home, info)
        agent_log.write_line(home, *agent_log.describe(event))
        _attempt(failures, save_first_prompt, home, event)
        activity = info.get("activity")  # what the hub handler sees: before the limit check
        if limits:
            counts, exceeded = count_event(home, event.name, limits)
            if exceeded:
                agent_info.set_activity(info, "limits_exceeded")
                _attempt(failures, agent_info.write, home, info)
                agent_log.write_line(home, "LIMITS_EXCEEDED", f"Agent stopped: {exceeded}")
                write_trigger(home, exceeded)
    if hub_configured():
        _report_to_hub(home, event, activity, event.text("tool_name") in input_tools, counts)
    return failures


def _attempt(failures: list[str], handler: Callable[..., None], *args: object) -> None:
    try:
        handler(*args)
    except OSError as exc:
        failures.append(failure(exc))


def report_failures(home: str, failures: list[str]) -> None:
    """Log what could not be written (Scion's wording) and fail the call with exit 1."""
    if failures:
        message = "cannot update agent state: " + "; ".join(failures)
        agent_log.write_line(home, "", f"Hook processing failed: {message}", level="ERROR")
        raise SciontoolError(message)


def _report_to_hub(
    home: str,
    event: CanonicalEvent,
    activity: object,
    waits_for_user: bool,
    counts: dict[str, object] | None,
) -> None:
    """The hub handler's requests, in Scion's order: the assistant reply, the event's status
    update, then (from the limits handler) the counts. The hook never reports
    limits_exceeded: Scion's init does, when it stops the agent."""
    from sciontool_py.assistant import AssistantContent
    from sciontool_py.handlers.hub import Hub, status_body
    from sciontool_py.handlers.hub_update import count_update, event_update, reply_body

    hub = Hub.from_env(home)
    if hub is None:
        return
    reply = event.text("assistant_text")
    if reply and event.name in ("agent-end", "session-end"):
        content = event.data.get("assistant_content")
        thinking = isinstance(content, AssistantContent) and content.has_thinking()
        body = reply_body(reply, thinking and event.name == "agent-end")
        hub.report(home, "Hub: outbound assistant reply", "outbound-message", body, retries=0)
    text = {f: event.text(f) for f in ("tool_name", "prompt", "message")}
    update = event_update(event.name, activity, text, waits_for_user)
    if update is None:
        skipped = f"Hub: no status update for {event.name} (local activity {activity})"
        agent_log.write_line(home, "", skipped, level="DEBUG")
    else:
        hub.report(home, "Hub status update", "status", status_body(update))
    if counts is not None:
        hub.report(home, "Hub counts update", "status", status_body(count_update(counts)))


def run_hook(dialect: str | None, dialect_file: str | None, data: bytes) -> str:
    """Process one envelope; returns what goes on stdout (the dialect's response)."""
    if not data:
        return ""  # Scion: empty stdin is a no-op
    payload = parse_envelope(data)
    spec = resolve(dialect, dialect_file)
    event = normalize(spec, payload)
    input_tools = spec.options.get("input_tools") or []
    home = home_dir()
    report_failures(home, apply_event(home, event, input_tools))  # type: ignore[arg-type]
    if event.raw_name in spec.responses:
        return gojson.dumps(spec.responses[event.raw_name]) + "\n"
    return ""


def read_stdin() -> bytes:
    """Stdin's bytes; nothing when it is a terminal (Scion treats that as a no-op)."""
    stdin = sys.stdin
    if stdin is None or stdin.isatty():
        return b""
    return stdin.buffer.read()
