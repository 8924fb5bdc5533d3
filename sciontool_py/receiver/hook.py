"""`sciontool hook`: one envelope in, canonical event through the handlers.

apply_event is the one orchestration of the handlers: the hook, the agentino
callbacks and `sciontool status` (whose status event it also takes) all run it.
"""

from __future__ import annotations

import os

from sciontool_py import gojson, registry
from sciontool_py.dialect.discover import resolve
from sciontool_py.dialect.normalize import normalize
from sciontool_py.errors import EventError, JSONError
from sciontool_py.fs import StateLock, attempt
from sciontool_py.receiver.handlers import agent_info, agent_log
from sciontool_py.receiver.handlers.agent_state import AgentState
from sciontool_py.receiver.handlers.limits import configured_limits, count_event, write_trigger
from sciontool_py.receiver.handlers.prompt_file import save_first_prompt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.dialect.options import DialectOptions
    from sciontool_py.dialect.spec import DialectSpec
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.log.writer import AgentLog
    from sciontool_py.receiver.handlers.agent_end import Outcome
    from sciontool_py.receiver.handlers.truth import Truth


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
    input_tools: list[str] | tuple[str, ...],
    resumes_after_wait: list[str] | tuple[str, ...] = (),
    truth: Truth | None = None,
    origin: int = 0,
    options: DialectOptions | None = None,
) -> Applied:
    """Run every handler of Scion's hook for one event, in Scion's order: status, log,
    prompt, hub, limits. truth: the dialect's rules beyond Scion's (None: Scion's alone).

    The status is the event's agent's (handlers/agent_state.py): inside Scion the files in
    HOME, outside it the agent's own record; origin: the process where the search for the
    harness starts (0: this process's parent; agentino passes its own pid, the helper
    its client's parent); options: the dialect's (where its usage is read, outside Scion).
    Every file a Scion reader reads, and the agent's record, is written here, before the hook
    answers (Scion's contract: when the hook exits, they hold its event). As in Scion, one
    handler failing does not stop the others: a status file that cannot be
    written must not also cost the agent.log line, the limit count or the hub report.
    """
    home = log.home
    limits = configured_limits()
    counts: dict[str, object] | None = None
    failures: list[str] = []
    # Outside Scion a burst of hooks (a harness that waits for none) is waited for while its
    # holders make progress; inside Scion, Scion's 2 s.
    lock = StateLock(home, progress=None if registry.in_scion(home) else registry.progress(home)).acquire()
    try:
        if lock.given_up:
            log.write("", lock.given_up, level="WARN")
        counting = options is not None and event.name in _USAGE_EVENTS and _counts_usage()
        reads = counting and options is not None and bool(options.usage_transcript)
        keeps_state = (truth is not None and truth.keeps_state) or reads
        agent = AgentState.load(home, event.text("session_id"), event.dialect, keeps_state, origin)
        info = agent.info
        revised = _revised(agent, event)
        if revised is not None:
            log.write("stopped", revised.line, level=revised.level)
        if counting and options is not None:
            from sciontool_py.receiver.handlers import usage

            # The agent's record keeps its tokens; in a Scion HOME, agent-sessions.json keeps
            # where the transcript was read to.
            holder = agent.record if agent.record is not None else agent.state if reads else None
            usage.count(holder, event, options)
            agent.state.dirty = agent.state.dirty or holder is agent.state
        ignored = ""
        if truth is None:
            changed = agent_info.apply_event(info, event, input_tools, resumes_after_wait)
        else:
            changed, ignored = _apply_truth(truth, agent, event, input_tools, resumes_after_wait)
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
        if revised is None:
            failures += agent.save(log, event, message, changed, bool(ignored))
        else:
            failures += agent.save(log, event, revised.line, True, False)
        attempt(failures, save_first_prompt, home, event)
        activity = info.get("activity")  # what the hub handler sees: before the limit check
        local = dict(info) if truth is not None else None
        if limits:
            counts, exceeded = count_event(home, event.name, limits, log)
            if exceeded:
                agent_info.set_activity(info, "limits_exceeded")
                failures += agent.save(log, event, message, True, True)
                log.write("LIMITS_EXCEEDED", f"Agent stopped: {exceeded}")
                write_trigger(exceeded, log)
    finally:
        lock.release()
    if hub_configured() and revised is not None:  # the hub heard the crash: it hears the stop
        from sciontool_py.receiver.handlers.hub_update import report_end

        report_end(home, log, revised)
    elif hub_configured() and not ignored:  # an ignored event is not news for the hub either
        from sciontool_py.receiver.handlers.hub_update import report_to_hub

        report_to_hub(home, log, event, activity, event.text("tool_name") in input_tools, counts, local)
    return Applied(failures, agent)


def _revised(agent: AgentState, event: CanonicalEvent) -> Outcome | None:
    """A crash the exit watcher guessed, revised by an end of the turn that ran late
    (handlers/agent_end.py); imported only for such an agent."""
    if agent.record is None or not agent.record.guessed:
        return None
    from sciontool_py.receiver.handlers.agent_end import revised

    return revised(agent, event)


class Applied:
    """What apply_event did: the files it could not write (one line each) and the agent's state."""

    __slots__ = ("failures", "agent")

    def __init__(self, failures: list[str], agent: AgentState) -> None:
        self.failures = failures
        self.agent = agent

    @property
    def watched(self) -> bool:
        """Whether an exit watcher must watch the agent's harness: outside Scion every agent a
        harness process names, inside only a claim of watch_harness_exit."""
        record = self.agent.record
        return record is not None and record.process is not None


# The events usage is counted at (handlers/usage.py): a model call's end says its counts, a
# turn's end reads the transcript on. The others, most of a session, never import it.
_USAGE_EVENTS = frozenset(("model-end", "agent-end", "subagent-end", "session-end", "response-complete"))


def _counts_usage() -> bool:
    """Whether this hook counts usage (handlers/usage.py): no deriver of Scion's counts it."""
    from sciontool_py.receiver.handlers.usage import wanted

    return wanted(os.environ)


def _apply_truth(
    truth: Truth,
    agent: AgentState,
    event: CanonicalEvent,
    input_tools: list[str] | tuple[str, ...],
    resumes_after_wait: list[str] | tuple[str, ...],
) -> tuple[bool, str]:
    """The status by the dialect's rules beyond Scion's: (changed, why the event was ignored)."""
    state = agent.state
    ignored = truth.ignores(event, state)
    changed = False if ignored else truth.apply(agent.info, state, event, input_tools, resumes_after_wait)
    if truth.watch_exit and not ignored and agent.record is None:
        # Inside Scion: which process's exit ends the session (outside, every agent is watched).
        from sciontool_py.receiver.handlers import exit_watch

        truth.claimed = exit_watch.claim(state, event)
    if not truth.keeps_state:
        state.dirty = False  # rules that need no memory across calls read and write no file
    return changed, ignored


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
    stdout, what could not be written ('' when every state file was: exit 0), and whether the
    HOME's exit watcher must run once answered."""

    __slots__ = ("event", "failure", "response", "watch")

    def __init__(
        self, event: CanonicalEvent | None, response: str = "", failure: str = "", watch: bool = False
    ) -> None:
        self.event = event
        self.response = response
        self.failure = failure
        self.watch = watch


def receive(
    spec: DialectSpec, payload: object, log: AgentLog, event_name: str | None = None, origin: int = 0
) -> Answer:
    """The receiver's pipeline for one decoded envelope: normalize, then every handler.

    event_name is the raw event name when the envelope carries none; origin: where the search
    for the harness starts (apply_event). Raises EventError when the envelope has no event; a
    state file that cannot be written is in the Answer.
    """
    event = normalize(spec, payload, fallback_name=event_name)
    input_tools = spec.options.input_tools
    resumes = spec.options.resumes_after_wait
    truth = None
    if spec.options:
        from sciontool_py.receiver.handlers.truth import Truth

        truth = Truth.of(spec.options)
        if truth is not None:
            truth.prepare(event)
    response = ""
    if event.raw_name in spec.responses:
        response = gojson.dumps(spec.responses[event.raw_name]) + "\n"
    applied = apply_event(log, event, input_tools, resumes, truth, origin, spec.options)
    failure = log_failures(log, applied.failures)
    watch = applied.watched or (truth is not None and truth.claimed is not None)
    if truth is not None and truth.foreign and event.raw_name in truth.stream:
        return Answer(None, response, failure, watch)  # a chunk of an answer: no step to export yet
    return Answer(event, response, failure, watch)


def run_hook(
    dialect: str | None,
    dialect_file: str | None,
    data: bytes,
    log: AgentLog,
    event_name: str | None = None,
    origin: int = 0,
) -> Answer:
    """Process one envelope's bytes (empty: Scion's no-op); origin: as for receive()."""
    if not data:
        return Answer(None)
    payload = parse_envelope(data)
    del data  # the caller passed its only reference: a huge envelope is not held twice
    return receive(resolve(dialect, dialect_file), payload, log, event_name, origin)


def receive_named(
    dialect: str | None,
    dialect_file: str | None,
    name: str,
    event_name: str | None,
    log: AgentLog,
    origin: int = 0,
) -> Answer:
    """`hook EVENT_NAME`: the payload on stdin, if one arrives in time, under that name (it wins
    over the payload's own hook_event_name, as in Scion); else the synthetic {"hook_event_name"}."""
    from sciontool_py.receiver.stdin import Ignored, read_optional_object

    payload = read_optional_object()
    if isinstance(payload, Ignored):
        if payload.reason != "stdin is empty":
            log.debug(f"hook {name}: {payload.reason}; using the event name alone")
        payload = {}
    payload["hook_event_name"] = name
    return receive(resolve(dialect, dialect_file), payload, log, event_name, origin)
