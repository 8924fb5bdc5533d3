"""How an agent's end reads once its harness process is gone, as Scion's init classifies it.

Scion's init, the harness's parent, knows its exit code: 0 or a requested
stop is `stopped`, the limits code is `limits_exceeded`, anything else is a
crash (phase `error`, activity cleared, detail.message "Agent crashed with
exit code N"). `sciontool run` is such a parent. The exit watcher is not, so
it tells a crash from an exit by what the agent was doing: a turn under way
or a call still open is a crash, an agent between turns stopped.
"""

from __future__ import annotations

from sciontool_py.console import cut

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.receiver.handlers.agent_state import AgentState

LIMITS_EXIT_CODE = 10  # Scion's ExitCodeLimitsExceeded
REASON = "the harness exited without a session end"
# A turn's end: one that runs after the watcher guessed a crash was fired before the exit. (Not
# a session-end: opencode's bridge says one for an instance it disposes of, killed or not.)
_TURN_ENDS = frozenset(("agent-end", "response-complete"))


class Outcome:
    """The end: the phase, the activity left, detail.message, and the agent.log line."""

    __slots__ = ("phase", "activity", "message", "level", "line", "exit_code")

    def __init__(self, phase: str, activity: str, message: str, level: str, line: str, exit_code: int | None):
        self.phase = phase
        self.activity = activity
        self.message = message  # detail.message ('' leaves none)
        self.level = level
        self.line = line
        self.exit_code = exit_code

    @property
    def crashed(self) -> bool:
        return self.phase == "error"


def classify(
    agent: AgentState, exit_code: int | None, requested: bool = False, limits: bool = False
) -> Outcome:
    """The end of AGENT. exit_code: the harness's, when its parent knows it (None: the watcher);
    requested: the stop was asked for (SIGTERM to `run`); limits: a limit stopped it."""
    if limits or exit_code == LIMITS_EXIT_CODE:
        line = "Agent stopped: limits exceeded"
        return Outcome("stopped", "limits_exceeded", "limits exceeded", "INFO", line, exit_code)
    if exit_code is not None:
        if exit_code == 0 or requested:
            return Outcome("stopped", "", "", "INFO", f"Agent exited with code {exit_code}", exit_code)
        message = f"Agent crashed with exit code {exit_code}"
        return Outcome("error", "", message, "ERROR", message, exit_code)
    doing = _under_way(agent)
    if not doing and agent.record is not None and agent.record.failed:
        # Its turn ended on a failed model call (opencode exits 1 after an API error): whether
        # the turn's end ran before the exit or late, the crash.
        doing = "after a failed model call"
    if not doing:
        return Outcome("stopped", "", "", "INFO", f"Session ended (reason: {REASON})", None)
    message = f"Agent exited {doing} without a session end"
    return Outcome("error", "", message, "ERROR", message, None)


def _under_way(agent: AgentState) -> str:
    """What the agent was in the middle of ('' when it was between turns)."""
    calls = [call for open_calls in agent.state.open.values() for call in open_calls]
    activity = agent.info.get("activity")
    if calls:
        return f"during a tool call ({cut(calls[-1].tool, 200)})"
    if activity == "executing":
        tool = agent.info.get("toolName")
        return f"during a tool call ({cut(tool, 200)})" if isinstance(tool, str) and tool else "mid-tool"
    if activity == "thinking":
        return "during a model call"
    if activity == "waiting_for_input" and agent.record is not None and agent.record.turn:
        return "while waiting for the user"
    if agent.record is not None and agent.record.turn:
        return "mid-turn"
    return ""


def apply(agent: AgentState, outcome: Outcome) -> None:
    """Write the end into the agent's status and memory (not yet to disk)."""
    info = agent.info
    info["phase"] = outcome.phase
    if outcome.activity:
        info["activity"] = outcome.activity
    else:
        info.pop("activity", None)
    info.pop("toolName", None)
    detail = info.get("detail")
    detail = dict(detail) if isinstance(detail, dict) else {}
    if outcome.message:
        detail["message"] = outcome.message
    else:
        detail.pop("message", None)
    if detail:
        info["detail"] = detail
    else:
        info.pop("detail", None)
    state = agent.state
    for session in list(state.open):
        state.end_calls(session)
    record = agent.record
    if record is not None:
        record.turn = False
        record.exit_code = outcome.exit_code
        record.guessed = outcome.crashed and outcome.exit_code is None
        if record.session:
            state.end_session(record.session)


def revised(agent: AgentState, event: CanonicalEvent) -> Outcome | None:
    """The end of an agent whose crash the watcher guessed (mid-turn at its harness's exit), when
    the end of that turn (the event) runs after it: the harness fired it before it exited, and
    its hook ran late (opencode's bridge hands the last events over as opencode exits). The turn
    had completed: the agent stopped. None for any other agent or event, and when the turn
    failed (its last model call, or this end, says an error: opencode exits 1 after an API
    error, and its bridge still hands the idle session over)."""
    record = agent.record
    if record is None or not record.guessed or event.name not in _TURN_ENDS:
        return None
    if record.failed or event.text("error"):
        return None
    line = "Session ended (reason: the turn's end ran after the harness exited)"
    outcome = Outcome("stopped", "", "", "INFO", line, None)
    apply(agent, outcome)
    return outcome
