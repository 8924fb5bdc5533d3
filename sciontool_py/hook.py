"""`sciontool hook`: one envelope in, canonical event through the handlers.

apply_event is the one orchestration of the handlers: the hook, the agentino
callbacks and `sciontool status` (whose status event it also takes) all run it.
"""

from __future__ import annotations

import os
import sys

from sciontool_py import gojson
from sciontool_py.dialect.discover import resolve
from sciontool_py.dialect.normalize import normalize
from sciontool_py.errors import EventError, JSONError
from sciontool_py.fs import StateLock, failure
from sciontool_py.handlers import agent_info, agent_log
from sciontool_py.handlers.limits import configured_limits, count_event, write_trigger
from sciontool_py.handlers.prompt_file import save_first_prompt

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Callable

    from sciontool_py.dialect.spec import DialectSpec
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.handlers.truth import Truth
    from sciontool_py.log.writer import AgentLog


def parse_envelope(data: bytes) -> object:
    """Decode stdin bytes; EventError says what is wrong in one line."""
    if not data.strip():
        raise EventError("envelope is blank: expected one JSON object")
    try:
        # As Go: a bad byte is U+FFFD (the event is not lost), 10,000 levels.
        if len(data) <= gojson.LARGE:
            return gojson.loads(gojson.decode_utf8(data), go_depth=True)
        from sciontool_py import gojson_bounded  # in memory linear in its size, whatever its shape

        return gojson_bounded.loads(data)
    except JSONError as exc:
        raise EventError(f"envelope: {exc}") from None


def hub_configured() -> bool:
    return bool(os.environ.get("SCION_HUB_ENDPOINT") or os.environ.get("SCION_HUB_URL"))


def apply_event(
    log: AgentLog,
    event: CanonicalEvent,
    input_tools: list[str],
    resumes_after_wait: list[str] | tuple[str, ...] = (),
    truth: Truth | None = None,
) -> list[str]:
    """Run every handler of Scion's hook for one event, in Scion's order: status, log,
    prompt, hub, limits. truth: the dialect's rules beyond Scion's (None: Scion's alone).

    As in Scion, one handler failing does not stop the others: a status file
    that cannot be written must not also cost the agent.log line, the limit
    count or the hub report.  Returns the failures, one line each.
    """
    home = log.home
    limits = configured_limits()
    counts: dict[str, object] | None = None
    failures: list[str] = []
    with StateLock(home) as lock:
        if lock.given_up:
            log.write("", lock.given_up, level="WARN")
        info = agent_info.read(home)
        ignored = ""
        if truth is None:
            changed = agent_info.apply_event(info, event, input_tools, resumes_after_wait)
        else:
            changed, ignored = _apply_truth(
                home, truth, info, event, input_tools, resumes_after_wait, failures
            )
        if changed:
            _attempt(failures, agent_info.write, home, info)
        tag, message = agent_log.describe(event)
        level = agent_log.level_of(event)
        if truth is not None:
            tag, message, level = truth.describe(event, tag, message, level)
        if ignored and truth is not None and truth.foreign:
            log.debug(f"{ignored}; not logged: {message}")  # it did not happen to this agent
        else:
            log.write(tag, message, level=level)
            if ignored:
                log.debug(ignored)
        _attempt(failures, save_first_prompt, home, event)
        activity = info.get("activity")  # what the hub handler sees: before the limit check
        local = dict(info) if truth is not None else None
        if limits:
            counts, exceeded = count_event(home, event.name, limits, log)
            if exceeded:
                agent_info.set_activity(info, "limits_exceeded")
                _attempt(failures, agent_info.write, home, info)
                log.write("LIMITS_EXCEEDED", f"Agent stopped: {exceeded}")
                write_trigger(exceeded, log)
    if hub_configured() and not ignored:  # an ignored event is not news for the hub either
        from sciontool_py.handlers.hub_update import report_to_hub

        report_to_hub(home, log, event, activity, event.text("tool_name") in input_tools, counts, local)
    return failures


def _apply_truth(
    home: str,
    truth: Truth,
    info: dict[str, object],
    event: CanonicalEvent,
    input_tools: list[str],
    resumes_after_wait: list[str] | tuple[str, ...],
    failures: list[str],
) -> tuple[bool, str]:
    """The status by the dialect's rules beyond Scion's: (changed, why the event was ignored)."""
    from sciontool_py.handlers import sessions

    # Rules that need no memory across calls (keep_state_sources alone) read and write no file.
    state = sessions.read(home) if truth.keeps_state else sessions.SessionState()
    ignored = truth.ignores(event, state)
    changed = False if ignored else truth.apply(info, state, event, input_tools, resumes_after_wait)
    if truth.watch_exit and not ignored:
        from sciontool_py.handlers import exit_watch

        truth.claimed = exit_watch.claim(state, event)
    if state.dirty and truth.keeps_state:
        written = len(failures)
        _attempt(failures, sessions.write, home, state)
        if len(failures) > written:
            truth.claimed = None  # a watcher with no record would stand down: start none
    return changed, ignored


def _attempt(failures: list[str], handler: Callable[..., None], *args: object) -> None:
    try:
        handler(*args)
    except OSError as exc:
        failures.append(failure(exc))


def log_failures(log: AgentLog, failures: list[str]) -> str:
    """Log what could not be written (Scion's wording); the message the call fails with ('' when
    everything was written)."""
    if not failures:
        return ""
    message = "cannot update agent state: " + "; ".join(failures)
    log.write("", f"Hook processing failed: {message}", level="ERROR")
    return message


class Answer:
    """What one hook call produced: the event (None when stdin was empty), the response for
    stdout, what could not be written ('' when every state file was: exit 0), and the harness
    exit watcher to start once answered ((session, [pid, start time]), or None)."""

    __slots__ = ("event", "failure", "response", "watch")

    def __init__(
        self,
        event: CanonicalEvent | None,
        response: str = "",
        failure: str = "",
        watch: tuple[str, list[int]] | None = None,
    ) -> None:
        self.event = event
        self.response = response
        self.failure = failure
        self.watch = watch


def receive(spec: DialectSpec, payload: object, log: AgentLog, event_name: str | None = None) -> Answer:
    """The receiver's pipeline for one decoded envelope: normalize, then every handler.

    event_name is the raw event name when the envelope carries none. Raises EventError
    when the envelope has no event; a state file that cannot be written is in the Answer.
    """
    event = normalize(spec, payload, fallback_name=event_name)
    input_tools = spec.options.get("input_tools") or []
    resumes = spec.options.get("resumes_after_wait") or ()
    truth = None
    if spec.options:
        from sciontool_py.handlers.truth import Truth

        truth = Truth.of(spec.options)
        if truth is not None:
            truth.prepare(event)
    failure = log_failures(log, apply_event(log, event, input_tools, resumes, truth))  # type: ignore[arg-type]
    response = ""
    if event.raw_name in spec.responses:
        response = gojson.dumps(spec.responses[event.raw_name]) + "\n"
    return Answer(event, response, failure, truth.claimed if truth is not None else None)


def run_hook(
    dialect: str | None, dialect_file: str | None, data: bytes, log: AgentLog, event_name: str | None = None
) -> Answer:
    """Process one envelope's bytes (empty: Scion's no-op)."""
    if not data:
        return Answer(None)
    payload = parse_envelope(data)
    del data  # the caller passed its only reference: a huge envelope is not held twice
    return receive(resolve(dialect, dialect_file), payload, log, event_name)


def receive_named(
    dialect: str | None, dialect_file: str | None, name: str, event_name: str | None, log: AgentLog
) -> Answer:
    """`hook EVENT_NAME`: the payload on stdin, if one arrives in time, under that name (it wins
    over the payload's own hook_event_name, as in Scion); else the synthetic {"hook_event_name"}."""
    from sciontool_py.stdin import Ignored, read_optional_object

    payload = read_optional_object()
    if isinstance(payload, Ignored):
        if payload.reason not in ("stdin is empty", "no stdin"):
            log.debug(f"hook {name}: {payload.reason}; using the event name alone")
        payload = {}
    payload["hook_event_name"] = name
    return receive(resolve(dialect, dialect_file), payload, log, event_name)


def read_stdin() -> bytes:
    """Stdin's envelope, bounded in size and time; nothing when it is a terminal (Scion treats
    that as a no-op)."""
    from sciontool_py.stdin_envelope import read_envelope

    stdin = sys.stdin
    if stdin is None or stdin.isatty():
        return b""
    return read_envelope(stdin.buffer)
