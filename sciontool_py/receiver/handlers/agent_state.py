"""Which agent an event belongs to, and where that agent's status is read and written.

Inside Scion (registry.in_scion) the agent is the container's one agent and
its state is Scion's own files, exactly as before: $HOME/agent-info.json and
agent-sessions.json. Outside Scion the hook names the agent by its harness
process (process.py) and keeps its state in its own record (registry.py), so
two sessions in one HOME, or a child harness run inside a tool, never change
each other's status. $HOME/agent-info.json then shows one agent, as Scion
would write it for that agent alone: the one whose status changed last among
the live agents that do not run inside another live agent's tool; when the
last of those ends, the one that ended last.
"""

from __future__ import annotations

import os
import time

from sciontool_py import process, registry
from sciontool_py.fs import attempt, regular_size, remove
from sciontool_py.receiver.handlers import agent_info, sessions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.log.writer import AgentLog

# A turn is under way from the prompt until its answer: a crash then is a crash, not a stop.
_TURN_STARTS = frozenset(("prompt-submit", "agent-start", "model-start", "tool-start"))
_TURN_ENDS = frozenset(("agent-end", "response-complete", "session-end"))


class AgentState:
    """The status of the agent an event belongs to, read under the state lock: info is its
    agent-info.json content, state the rules' memory (agent-sessions.json). record is None
    inside Scion, where both are the files in HOME."""

    __slots__ = ("home", "record", "info", "state", "before")

    def __init__(
        self, home: str, record: registry.Record | None, info: dict[str, object], state: sessions.SessionState
    ) -> None:
        self.home = home
        self.record = record
        self.info = info
        self.state = state
        self.before = (info.get("phase"), info.get("activity"), info.get("toolName"))

    @staticmethod
    def load(home: str, session: str, dialect: str, keeps_state: bool, origin: int = 0) -> AgentState:
        """The state of the agent whose hook this process runs (SESSION: the event's session id;
        origin: the process the search for the harness starts at, 0 for this one's parent)."""
        if registry.in_scion(home):
            state = sessions.read(home) if keeps_state else sessions.SessionState()
            return AgentState(home, None, agent_info.read(home), state)
        record = find(home, session, dialect, origin)
        return AgentState(home, record, record.info, sessions.of_record(record.state))

    @staticmethod
    def of(home: str, record: registry.Record) -> AgentState:
        return AgentState(home, record, record.info, sessions.of_record(record.state))

    def save(
        self, log: AgentLog, event: CanonicalEvent, message: str, info_changed: bool, ignored: bool
    ) -> list[str]:
        """Write what changed (the record's own bookkeeping included); the failures, one line each.

        Outside Scion the agent's record is this package's own bookkeeping, not a file Scion
        reads: one that cannot be written is a WARN line, and only agent-info.json fails the call
        (a damaged record, like a missing one, costs at most the calls in flight)."""
        failures: list[str] = []
        record = self.record
        if record is None:
            if info_changed:
                attempt(failures, agent_info.write, self.home, self.info)
            if self.state.dirty:
                attempt(failures, sessions.write, self.home, self.state)
            return failures
        now = time.time()
        if not ignored:  # an event the rules ignore tells nothing of the agent, its message neither
            note(record, event, now)
            record.message = message[: registry.MAX_TEXT]
        if (self.info.get("phase"), self.info.get("activity"), self.info.get("toolName")) != self.before:
            record.since = now
        record.updated = now
        record.info = self.info
        record.state = self.state.to_value() if self.state.dirty or record.state else {}
        self.state.dirty = False
        if info_changed:
            attempt(failures, show, self.home, record)
        # Before the hook answers too: once its harness has exited, nothing may write into HOME
        # (a throwaway HOME is removed then), and `sciontool agents` reads it.
        self.write_record(log, record)
        return failures

    def write_record(self, log: AgentLog, record: registry.Record) -> None:
        unsaved: list[str] = []
        attempt(unsaved, registry.write, self.home, record)
        if unsaved:
            log.write("", f"Agent record not written: {unsaved[0]}", level="WARN")


def note(record: registry.Record, event: CanonicalEvent, now: float) -> None:
    """What the event says of the agent beyond its status: its session, whether a turn is under way."""
    name = event.name
    session = event.text("session_id")
    if session:
        record.session = session[: registry.MAX_TEXT]
    if name in _TURN_STARTS:
        record.turn = True
        record.failed = False
    elif name in _TURN_ENDS or (name == "status" and event.raw_name == "task_completed"):
        record.turn = False  # failed stays: the watcher's end is one too, and a late end reads it
    elif name == "model-end":
        # A call the user aborted (opencode's interrupt: "Aborted") is no failure to end in error.
        record.failed = event.text("error").strip().lower() not in ("", "aborted")
    if not record.harness and event.dialect:
        record.harness = event.dialect


def find(home: str, session: str, dialect: str, origin: int = 0) -> registry.Record:
    """The record of the agent this hook runs for, a new one (not yet written) the first time;
    its harness is looked for from ORIGIN up (0: this process's parent)."""
    chain = process.ancestors(origin or None)
    at = process.harness_index(chain)
    if at < 0:
        # No /proc, or an orphaned hook: its harness exited before the hook looked (a hook fired
        # as it was killed, opencode's exit hand-off). Then it is the agent of that session whose
        # harness is gone, or else the session names a new one.
        key = _gone_agent(home, session) or registry.session_key(session)
    else:
        key = registry.process_key(chain[at][0], chain[at][1])
    record = registry.read(home, key)
    if record is not None:
        return record
    now = time.time()
    record = registry.Record(key)
    record.harness = dialect
    record.created = record.since = now
    # Where the harness runs its hooks: its project, as a person names the agent by it.
    try:
        record.project = os.getcwd()[: registry.MAX_TEXT]
    except OSError:  # a folder removed under it
        record.project = process.cwd(chain[at][0])[: registry.MAX_TEXT] if at >= 0 else ""
    if at >= 0:
        _place(home, record, chain[at:])
    if not registry.keys(home):
        # The first agent this HOME has seen takes up what the status file says (left by
        # Scion, by an earlier version, or by nothing).
        record.info = agent_info.read(home)
    elif at >= 0:
        _resume(home, record, session)
    registry.prune(home, now, keep=key)
    return record


def _gone_agent(home: str, session: str) -> str:
    """The key of the most recently updated agent that named SESSION and whose harness has exited
    ('' for none): a live one with that session (a resumed run) is another process's."""
    if not session:
        return ""
    for record in registry.records(home):
        running = record.process
        if (
            record.session == session[: registry.MAX_TEXT]
            and running is not None
            and not process.alive(running)
        ):
            return record.key
    return ""


def _resume(home: str, record: registry.Record, session: str) -> None:
    """A harness that resumes a session whose process has exited (`claude --resume ID` after a
    crash, `codex exec resume --last`) continues that agent: one agent, one row. The new record
    takes the old one's start and says how it ended (RECORD.resumed); the old one goes."""
    if not session:
        return
    for previous in sorted(registry.records(home), key=lambda r: r.updated, reverse=True):
        running = previous.process
        if (
            previous.key != record.key
            and previous.session == session[: registry.MAX_TEXT]
            and previous.harness == record.harness
            and (running is None or not process.alive(running))
        ):
            record.created = previous.created
            record.name = record.name or previous.name
            record.resumed = _ending(previous)
            try:
                remove(home, f"{registry.FOLDER}/{previous.key}.json")
            except OSError:
                pass  # a folder at the name: it reads as missing anyway
            return


def _ending(record: registry.Record) -> str:
    """How an agent whose harness has exited ended, in words."""
    phase = record.info.get("phase")
    if phase == "error":
        return "crashed" if record.exit_code is None else f"crashed (exit {record.exit_code})"
    if phase == "stopped":
        return "stopped"
    return "exited without its end"


def _place(home: str, record: registry.Record, chain: list[tuple[int, int, bytes]]) -> None:
    """Set what the agent runs inside: the `sciontool run` of this hook's environment, when it is
    the harness itself or the nearest of its ancestors; else the nearest ancestor that is another
    agent's harness (a child session started from its tool)."""
    run = os.environ.get(registry.RUN_VARIABLE, "")
    for n, (pid, start, _) in enumerate(chain):
        key = registry.process_key(pid, start)
        if n and regular_size(home, f"{registry.FOLDER}/{key}.json") is not None:
            record.parent = key
            return
        if run == f"{pid}-{start}":
            record.run = [pid, start]
            record.name = os.environ.get(registry.RUN_NAME_VARIABLE, "")[: registry.MAX_TEXT]
            return


def eligible(home: str, record: registry.Record) -> bool:
    """Whether the agent may be shown in $HOME/agent-info.json: it does not run inside the tool of
    an agent that still runs."""
    if not record.parent:
        return True
    parent = registry.read(home, record.parent)
    return parent is None or registry.ended(parent) or not _runs(parent)


def _runs(record: registry.Record) -> bool:
    running = record.process
    return running is None or process.alive(running)


def show(home: str, record: registry.Record) -> None:
    """$HOME/agent-info.json after RECORD's status changed: its status, unless it is nested in a
    live agent, or it ended while another eligible agent still runs (then that one's)."""
    if not eligible(home, record):
        return
    shown = record
    if registry.ended(record):
        for other in registry.records(home):  # the most recently updated first
            live = not registry.ended(other) and _runs(other)
            if other.key != record.key and live and eligible(home, other):
                shown = other
                break
    agent_info.write(home, shown.info)
