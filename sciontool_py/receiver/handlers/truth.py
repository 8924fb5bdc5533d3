"""Status true to the agent: the rules that go beyond Scion's, for dialects that ask for them.

Scion's hook treats every event alone (agent_info.apply_event). Real harnesses
fire hooks concurrently and out of order, run tools in parallel and end a
session while a failure is still being reported, so one event alone often
cannot say what the agent does. The options below (docs/dialects.md) turn on
rules that read and keep agent-sessions.json (sessions.py); a dialect without
them goes through Scion's rules only, exactly as before.
"""

from __future__ import annotations

from sciontool_py.console import cut
from sciontool_py.receiver.handlers import agent_info, sessions
from sciontool_py.vocabulary import PHASE_FOR_EVENT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.dialect.options import DialectOptions
    from sciontool_py.event import CanonicalEvent

_TURN_ENDS = frozenset({"prompt-submit", "agent-end"})  # a new turn or a turn's end: no call is still open


def _segments(path: str) -> list[str]:
    """A payload path the dialect's validation accepted (`.a.b`), as its keys."""
    return path.lstrip(".").split(".")


class Truth:
    """The dialect's options beyond Scion's rules, read once per hook call."""

    __slots__ = (
        "call_ids",
        "batch_ends",
        "stay_ended",
        "keep_sources",
        "own_session",
        "interrupts",
        "no_reply",
        "model_calls",
        "errors",
        "stamp",
        "resumes",
        "model_thinks",
        "input_tools",
        "watch_exit",
        "stream",
        "stream_end",
        "queued",
        "claimed",
        "watcher",
        "ignored",
        "foreign",
    )

    def __init__(self, options: DialectOptions) -> None:
        ids = options.call_id_fields
        self.call_ids = None if ids is None else [_segments(p) for p in ids]
        self.batch_ends = options.batch_end_events
        self.stay_ended = options.ended_sessions_stay_ended
        self.keep_sources = options.keep_state_sources
        self.own_session = options.own_session_events
        self.interrupts = options.interrupt_events
        self.no_reply = options.no_reply_texts
        self.model_calls = options.model_call_events
        self.errors = options.error_events
        self.stamp = _segments(options.stamp_field) if options.stamp_field else None
        self.resumes = options.resume_events
        self.model_thinks = options.thinking_from_model_start
        self.input_tools = options.input_tools
        self.watch_exit = options.watch_harness_exit
        self.stream = options.stream_events
        self.stream_end = _segments(options.stream_end_field) if options.stream_end_field else []
        self.queued = options.queued_prompts
        self.claimed: tuple[str, list[int]] | None = None  # the exit watcher this hook must start
        # Set by the exit watcher: the harness process [pid, start time] whose exit it reports.
        self.watcher: list[int] | None = None
        # Why this call's event changed nothing ('' when it applied), and whether it is not this
        # agent's at all (its agent.log line would then say what did not happen to the agent).
        self.ignored = ""
        self.foreign = False

    @staticmethod
    def of(options: DialectOptions) -> Truth | None:
        """None when the dialect sets none of these options: Scion's rules alone, no state file."""
        return Truth(options) if options.beyond_scion else None

    @property
    def keeps_state(self) -> bool:
        return (
            self.call_ids is not None
            or bool(self.batch_ends or self.stay_ended or self.own_session or self.stamp or self.watch_exit)
            or self.queued
            or self.watcher is not None
        )

    def prepare(self, event: CanonicalEvent) -> None:
        """Before any handler: an agent-end whose text is the harness's placeholder for no answer
        is a turn that failed, with no reply for the hub."""
        if event.name == "agent-end" and event.text("assistant_text") in self.no_reply:
            text = event.data.pop("assistant_text")
            event.data.pop("assistant_content", None)
            event.data.setdefault("error", f"no response ({text})")

    def describe(self, event: CanonicalEvent, tag: str, message: str, level: str) -> tuple[str, str, str]:
        """The log line's (tag, message, level) by these rules."""
        if event.raw_name in self.interrupts:
            return tag, "Agent turn interrupted by the user", level
        if event.raw_name in self.errors:  # an error report, not a question: nothing waits
            error = event.text("error") or event.text("message")
            return "error", f"Error: {cut(error)}" if error else "Error reported", "ERROR"
        if self.model_thinks and event.name == "prompt-submit":
            return "working", message, level  # as the status says: thinking comes with the model request
        if event.name == "tool-start" and event.text("tool_name") in self.input_tools:
            return "waiting_for_input", message, level  # a question to the user: the agent waits
        return tag, message, level

    def ignores(self, event: CanonicalEvent, state: sessions.SessionState) -> str:
        """Why the event must not change the status ('' when it may); sets ignored and foreign."""
        self.ignored, self.foreign = self._ignores(event, state)
        return self.ignored

    def _ignores(self, event: CanonicalEvent, state: sessions.SessionState) -> tuple[str, bool]:
        session = sessions.key_text(event.text("session_id"))
        named = session or "(no id)"
        watcher = self.watcher
        if watcher is not None and (state.watched.get(session) != watcher or state.has_ended(session)):
            # Checked under the lock the change takes: a session end the harness fired while
            # the watcher woke up is said once, by the harness.
            why = "ended already" if state.has_ended(session) else "is another process's now (or ended)"
            return f"the harness of session {named} exited; the session {why}", True
        if event.raw_name in self.stream and _at(event.raw, self.stream_end) in (None, ""):
            # One chunk of a streamed answer: the model still answers, and nothing happened yet.
            return f"{event.raw_name}: a streamed chunk, the response goes on", True
        if self.queued and event.name == "prompt-submit" and state.calls(session):
            # The harness queues a prompt typed while a tool runs: it starts when the turn lets it.
            return f"prompt of session {named} queued while a tool call runs: status unchanged", False
        if event.raw_name in self.own_session and session and state.session and session != state.session:
            mine = state.session
            return f"{event.raw_name} of session {session}, not this agent's ({mine}): status unchanged", True
        lifecycle = event.name in PHASE_FOR_EVENT and event.name != "session-end"  # Scion's own: always apply
        if self.stay_ended and not lifecycle and event.name != "session-start" and state.has_ended(session):
            # This agent's own event, true as a log line, that no longer changes the status.
            return f"{event.raw_name} after session {named} ended: status unchanged", False
        return "", False

    def apply(
        self,
        info: dict[str, object],
        state: sessions.SessionState,
        event: CanonicalEvent,
        input_tools: list[str] | tuple[str, ...],
        resumes_after_wait: list[str] | tuple[str, ...],
    ) -> bool:
        """Update info (and state) for the event; False when info does not change."""
        name = event.name
        session = sessions.key_text(event.text("session_id"))
        if event.raw_name in self.errors:
            return False  # the harness goes on (a retry, the next step) or ends the session itself
        late = self._late(state, session, event)
        if name == "session-start":
            if event.text("source") in self.keep_sources:
                return False  # compaction: the agent does what it did before, calls and all
            if late:  # fired with the prompt, run after it: the session is live, its work stays
                state.rejoin(session)
                if not self.stay_ended or info.get("phase") == "running":
                    return False
                info["phase"] = "running"
                return True
            state.start_session(session)
            changed = agent_info.apply_event(info, event, input_tools, resumes_after_wait)
            if self.stay_ended:  # a resumed session runs again
                info["phase"] = "running"
                changed = True
            return self._settle(info, state) or changed
        if name == "session-end":
            state.unwatch(session)  # said: the session's watcher stands down
            if self.stay_ended:
                state.end_session(session)
            else:
                state.end_calls(session)
            return agent_info.apply_event(info, event, input_tools, resumes_after_wait)
        revived = event.raw_name in self.resumes and info.get("phase") == "stopped"
        if revived:  # a session taken up again without a session-start (Hermes's --continue)
            info["phase"] = "running"
        if self.call_ids is not None:
            self._track(state, event, session, input_tools)
        if event.raw_name in self.batch_ends or name in _TURN_ENDS:
            state.end_calls(session)
        changed = agent_info.apply_event(info, event, input_tools, resumes_after_wait)
        if self.model_thinks and name == "prompt-submit" and info.get("activity") == "thinking":
            # The harness announces each model request (a model-start): until it comes, the
            # agent prepares the turn, between steps.
            agent_info.set_activity(info, "working")
        changed = self._settle(info, state) or changed or revived
        if event.raw_name in self.model_calls and info.get("activity") == "working":
            # The harness calls the model next and says nothing while it does (no calls open).
            agent_info.set_activity(info, "thinking")
            changed = True
        return changed

    def _track(
        self,
        state: sessions.SessionState,
        event: CanonicalEvent,
        session: str,
        input_tools: list[str] | tuple[str, ...],
    ) -> None:
        name = event.name
        if name == "tool-start":
            tool = event.text("tool_name")
            state.start_call(
                session, sessions.Call(self._call_key(event), sessions.key_text(tool), tool in input_tools)
            )
        elif name == "tool-end":
            state.end_call(session, self._call_key(event))
        elif name == "notification":
            _mark_waiting(state, session, event)

    def _late(self, state: sessions.SessionState, session: str, event: CanonicalEvent) -> bool:
        """Whether the harness stamped the event (stamp_field) before one of its session already
        applied; the newest stamp is kept."""
        if self.stamp is None:
            return False
        value: object = event.raw
        for key in self.stamp:
            value = value.get(key) if isinstance(value, dict) else None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value:
            return False
        return value < state.stamp(session, float(value))

    def _call_key(self, event: CanonicalEvent) -> str:
        """The harness's call id; without one, the tool's name and input (the same on its start
        and its end, as Gemini CLI sends them)."""
        for path in self.call_ids or ():
            value: object = event.raw
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, str) and value:
                return sessions.key_text("id:" + value)
        import zlib  # only for harnesses without call ids

        tool_input = event.text("tool_input").encode("utf-8", "surrogatepass")
        return sessions.key_text(
            f"in:{zlib.crc32(tool_input):08x}:{len(tool_input)}:" + event.text("tool_name")
        )

    def _settle(self, info: dict[str, object], state: sessions.SessionState) -> bool:
        """Calls still open outlive a model-end or the end of another call: the agent still runs them
        (or, for a call the user must answer or approve, still waits). Every session's count: a
        subagent's session (opencode's) ends while its parent's call still runs."""
        calls = [call for open_calls in state.open.values() for call in open_calls]
        if not calls or info.get("activity") != "working":
            return False
        waiting = [c for c in calls if c.waits]
        if waiting:
            agent_info.set_activity(info, "waiting_for_input")
        else:
            agent_info.set_activity(info, "executing", calls[-1].tool)
        return True


def _at(value: object, path: list[str]) -> object:
    """The value at PATH in an envelope (a number indexes an array); None when there is none."""
    for key in path:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def _mark_waiting(state: sessions.SessionState, session: str, event: CanonicalEvent) -> None:
    """A notification while calls are open is a permission prompt for one of them: the one with
    the tool it names, else the newest. Its end is then the user's answer."""
    calls = state.calls(session)
    if not calls:
        return
    tool = event.text("tool_name")
    named = [c for c in calls if c.tool == tool] if tool else []
    for call in named or calls[-1:]:
        if not call.waits:
            call.waits = True
            state.dirty = True
