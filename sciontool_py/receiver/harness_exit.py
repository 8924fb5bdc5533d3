"""The exit watcher: an agent's end is said even when its harness fires no end hook.

A harness killed mid-tool (the OOM killer, a closed terminal, `kill -9`), or
one that exits without a session end (`qwen -p`, `vibe -p`), would leave its
status `executing` or `working` for good. After answering, the hook makes
sure one watcher runs for its HOME (ensure): a detached process, started as
the telemetry worker is (a new session, /dev/null as stdio), or, outside Scion,
forked from the hook that found none (server.adopt), that holds a
pidfd on every live agent's harness process (no polling where the kernel has
pidfds) and, when one exits, says the end under the state lock:

- outside Scion (registry.py), for every dialect: phase `error`, activity
  cleared and detail.message when a turn was under way or a call was open (a
  crash), phase `stopped` when the agent was between turns; an agent under a
  live `sciontool run` is left to it, since it knows the exit code;
- inside Scion, for a dialect with `watch_harness_exit` only, as before: a
  session-end through the dialect's rules for each session that process held.

One watcher per HOME (a lock file says which), whatever the number of agents,
sessions or hooks; it rescans the agents once a second, drops a process no
longer listed (an agent evicted, ended or taken over), and exits once nothing
is left to watch. It never signals anything and writes only what a hook writes.
Its standby (helper/standby.py), a second small process, becomes the watcher should it die.
"""

from __future__ import annotations

import os

from sciontool_py import process, registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.log.writer import AgentLog
    from sciontool_py.receiver.handlers.agent_end import Outcome
    from sciontool_py.receiver.handlers.agent_state import AgentState

MODULE = "sciontool_py.helper.server"  # the process ensure() starts: the watcher and the hooks' server
LOCK = ".scion/exit-watcher.lock"
RAW_NAME = "harness-exit"  # the synthetic event's raw name: no dialect maps it
SWITCH = "SCIONTOOL_EXIT_WATCH"  # off, 0, false or no: start no watcher
RESCAN_SECONDS = 1.0
Process = tuple[int, int]


def enabled() -> bool:
    return os.environ.get(SWITCH, "").strip().lower() not in ("off", "0", "false", "no")


def ensure(log: AgentLog, dialect: str | None, dialect_file: str | None) -> None:
    """Start HOME's watcher unless one runs; never raises. dialect: what a Scion-mode session end
    goes through (watch_harness_exit)."""
    if not enabled():
        return
    problem = start(log.home, dialect, dialect_file)
    if problem:
        log.debug(f"Harness exit watch not started: {problem}")


def start(home: str, dialect: str | None = None, dialect_file: str | None = None) -> str:
    """Start HOME's watcher unless one runs: '' or why it could not be started."""
    held = take_lock(home)
    if held is None:
        return ""  # one runs (it rescans the agents within a second), or the lock file is not usable
    os.close(held)
    try:
        from sciontool_py.telemetry.launch import start_detached

        start_detached(MODULE, options(home, dialect, dialect_file))
    except (OSError, ValueError) as exc:  # ValueError: a NUL in an argument
        return str(exc)
    return ""


def options(home: str, dialect: str | None, dialect_file: str | None) -> list[str]:
    """The watcher's command-line options (server.main), as start() and its standby pass them."""
    args = ["--home", home]
    if dialect_file:
        args += ["--dialect-file", os.path.abspath(dialect_file)]
    elif dialect:
        args += ["--dialect", dialect]
    return args


def take_lock(home: str) -> int | None:
    """The watcher's lock, taken without waiting; None when another process holds it (or the lock
    file cannot be used: a FIFO, a symlink, a folder planted at its name)."""
    from sciontool_py.fs import FileLock

    try:
        os.mkdir(os.path.join(home, ".scion"), 0o700)
    except OSError:
        pass  # there already, or HOME itself is not usable: the lock says which
    try:
        lock = FileLock(home, LOCK, wait=0).__enter__()
    except OSError:
        return None
    fd, lock.fd = lock.fd, -1
    return fd


def targets(home: str) -> dict[Process, list[str]]:
    """What to watch: each process whose exit ends something, with what it ends (agent keys outside
    Scion, session ids inside). Called each rescan: a file unchanged since the last is not read."""
    found: dict[Process, list[str]] = {}
    if registry.in_scion(home):
        for session, harness in _watched_sessions(home).items():
            found.setdefault((harness[0], harness[1]), []).append(session)
        return found
    for record in registry.records(home, cache=_RECORDS):
        if registry.ended(record):
            continue
        watched = record.run if record.run is not None and process.alive(record.run) else record.process
        if watched is not None:
            found.setdefault((watched[0], watched[1]), []).append(record.key)
    return found


_RECORDS = registry.Cache()
_SESSIONS: dict[registry.Identity, dict[str, list[int]]] = {}  # the last read, by its identity


def _watched_sessions(home: str) -> dict[str, list[int]]:
    """Inside Scion: the harness of each session agent-sessions.json watches."""
    from sciontool_py.receiver.handlers import sessions

    try:
        st = os.stat(os.path.join(home, sessions.FILE), follow_symlinks=False)
    except OSError:
        return {}
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if identity not in _SESSIONS:
        _SESSIONS.clear()
        _SESSIONS[identity] = sessions.read(home).watched
    return _SESSIONS[identity]


def end_agent(
    log: AgentLog, key: str, exit_code: int | None = None, requested: bool = False, limits: bool = False
) -> Outcome | None:
    """Say the end of the agent KEY (outside Scion); the outcome, None when nothing was said.

    Told by the watcher (no exit code, no limit), nothing is said when the agent ended already
    or its harness still runs (the `run` it was watched through ended first). Told by its
    parent (`sciontool run`), a crash or a limit is said even after the harness's own session
    end, as Scion's init says it; a clean exit then changes nothing but the hub's last word."""
    from sciontool_py.fs import StateLock
    from sciontool_py.receiver.handlers import agent_end
    from sciontool_py.receiver.handlers.agent_state import AgentState

    home = log.home
    told = exit_code is not None or limits
    with StateLock(home) as lock:
        if lock.given_up:
            log.write("", lock.given_up, level="WARN")
        record = registry.read(home, key)
        if record is None:
            return None
        running = record.process
        if not told and (registry.ended(record) or (running is not None and process.alive(running))):
            return None
        agent = AgentState.of(home, record)
        outcome = agent_end.classify(agent, exit_code, requested, limits)
        said = not registry.ended(record) or outcome.crashed or limits
        if said:
            event = _say(log, agent, outcome, record.harness, record.session)
    _report(log, outcome, event if said else None, told)
    return outcome


def guess(home: str, record: registry.Record) -> Outcome:
    """The end this watcher would say of RECORD's agent, whose harness is gone without one,
    written nowhere (`sciontool agents`, when no helper said it)."""
    from sciontool_py.receiver.handlers import agent_end
    from sciontool_py.receiver.handlers.agent_state import AgentState

    return agent_end.classify(AgentState.of(home, record), None)


def end_scion_agent(log: AgentLog, exit_code: int, requested: bool, limits: bool) -> Outcome:
    """Inside Scion (a `sciontool run` there): the end of the container's one agent, in HOME's files."""
    from sciontool_py.fs import StateLock
    from sciontool_py.receiver.handlers import agent_end
    from sciontool_py.receiver.handlers.agent_state import AgentState

    with StateLock(log.home):
        agent = AgentState.load(log.home, "", "", keeps_state=True)
        outcome = agent_end.classify(agent, exit_code, requested, limits)
        said = outcome.crashed or limits or agent.info.get("phase") not in ("stopped", "error")
        if said:
            event = _say(log, agent, outcome, "", agent.state.session)
    _report(log, outcome, event if said else None, True)
    return outcome


def _say(log: AgentLog, agent: AgentState, outcome: Outcome, dialect: str, session: str) -> CanonicalEvent:
    """Under the state lock: the end into the agent's status, its agent.log line; the event."""
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.receiver.handlers import agent_end
    from sciontool_py.receiver.hook import log_failures

    agent_end.apply(agent, outcome)
    data: dict[str, object] = {"reason": agent_end.REASON}
    if session:
        data["session_id"] = session
    event = CanonicalEvent("session-end", RAW_NAME, dialect, data, {})
    log.write("error" if outcome.crashed else "stopped", outcome.line, level=outcome.level)
    log_failures(log, agent.save(log, event, outcome.line, True, False))
    return event


def _report(log: AgentLog, outcome: Outcome, event: CanonicalEvent | None, told: bool) -> None:
    """Once the lock is released: the hub's last word (always, from the harness's parent) and the
    session's telemetry (when the end was said here)."""
    from sciontool_py.receiver.hook import hub_configured

    if (told or event is not None) and hub_configured():
        from sciontool_py.receiver.handlers.hub_update import report_end

        report_end(log.home, log, outcome)
    if event is not None:
        from sciontool_py.telemetry import after_answer

        after_answer(log, event)


def run_agents(home: str, run: list[int]) -> list[str]:
    """The keys of the agents a `sciontool run` started: the hooks' agents whose harness it runs
    (not those a tool of theirs started), and its own when it was taken for the harness."""
    own = registry.process_key(run[0], run[1])
    return [r.key for r in registry.records(home) if (r.run == run and not r.parent) or r.key == own]


def end_run(
    log: AgentLog,
    run: list[int],
    harness: list[int],
    name: str,
    command: list[str],
    exit_code: int,
    requested: bool,
    limits: bool,
) -> None:
    """`sciontool run`'s end: the end of each agent it ran, told with the exit code. A harness that
    fired no hook gets a record of its own, so that it is listed with how it ended."""
    home = log.home
    if registry.in_scion(home):
        end_scion_agent(log, exit_code, requested, limits)
        return
    from sciontool_py.fs import StateLock

    with StateLock(home):
        keys = run_agents(home, run)
        if not keys:
            import time

            record = registry.Record(registry.process_key(harness[0], harness[1]))
            record.harness = os.path.basename(command[0])[: registry.MAX_TEXT]
            record.name = name[: registry.MAX_TEXT]
            record.run = run
            record.project = os.getcwd()[: registry.MAX_TEXT]
            record.created = record.since = record.updated = time.time()
            try:
                registry.write(home, record)
                keys = [record.key]
            except OSError as exc:
                log.write("", f"Agent record not written: {exc}", level="WARN")
    for key in keys:
        end_agent(log, key, exit_code, requested, limits)


def mark_limits(log: AgentLog, run: list[int], why: str) -> None:
    """SCION_MAX_DURATION reached: the agents `run` runs read limits_exceeded before their harness
    is stopped, as Scion's init marks them (the activity is sticky); the hub is told."""
    from sciontool_py.fs import StateLock
    from sciontool_py.receiver.handlers import agent_info
    from sciontool_py.receiver.handlers.agent_state import AgentState
    from sciontool_py.receiver.hook import log_failures

    home = log.home
    with StateLock(home):
        if registry.in_scion(home):
            agents = [AgentState.load(home, "", "", keeps_state=False)]
        else:
            found = (registry.read(home, key) for key in run_agents(home, run))
            agents = [AgentState.of(home, r) for r in found if r is not None]
        from sciontool_py.event import CanonicalEvent

        event = CanonicalEvent("status", "limits_exceeded", "", {"message": why}, {})
        for agent in agents:
            agent_info.set_activity(agent.info, "limits_exceeded")
            log_failures(log, agent.save(log, event, f"Agent stopped: {why}", True, True))
        log.write("LIMITS_EXCEEDED", f"Agent stopped: {why}")
    from sciontool_py.receiver.hook import hub_configured

    if hub_configured():
        from sciontool_py.hub.client import Hub, status_body

        hub = Hub.from_env(home, log)
        if hub is not None:
            update: dict[str, object] = {"activity": "limits_exceeded", "message": f"Agent stopped: {why}"}
            hub.report("limits_exceeded", "status", status_body(update))


def end_sessions(
    log: AgentLog, harness: Process, ended: list[str], dialect: str | None, dialect_file: str | None
) -> None:
    """Inside Scion: a session-end through the dialect's rules for each session HARNESS held,
    unless it ended another way or a resumed process took it up (checked under the lock)."""
    from sciontool_py.dialect.discover import resolve
    from sciontool_py.dialect.options import DialectOptions
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.receiver.handlers.agent_end import REASON
    from sciontool_py.receiver.handlers.truth import Truth
    from sciontool_py.receiver.hook import apply_event, log_failures
    from sciontool_py.telemetry import after_answer

    spec = resolve(dialect, dialect_file)
    for session in ended:
        data: dict[str, object] = {"reason": REASON}
        if session:
            data["session_id"] = session
        event = CanonicalEvent("session-end", RAW_NAME, spec.name, data, {})
        options = spec.options
        truth = Truth.of(options) or Truth(DialectOptions())
        truth.watcher = list(harness)
        applied = apply_event(
            log,
            event,
            options.input_tools,
            options.resumes_after_wait,
            truth,
        )
        log_failures(log, applied.failures)
        if not truth.ignored:
            after_answer(log, event)
