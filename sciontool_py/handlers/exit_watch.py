"""A session end for harnesses that exit without one (the dialect option watch_harness_exit).

`qwen -p` and `vibe -p` fire no hook when they exit, so agent-info.json would
say `working` for good. With the option, the hook records under the state lock
which process is the harness (its nearest ancestor that is not a shell, by pid
and start time, so a recycled pid is never taken for it) and, once it has
answered, starts one detached watcher per session and harness process. The
watcher waits for that process to exit (a pidfd: no polling where the kernel
has them) and then applies a session-end through the hook's own handlers,
unless the session ended meanwhile or another process took it up. It never
signals anything and writes only the state files the hook writes.
"""

from __future__ import annotations

import os

from sciontool_py.handlers import sessions

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.log.writer import AgentLog

MODULE = "sciontool_py.handlers.exit_watch"
RAW_NAME = "harness-exit"  # the synthetic event's raw name: no dialect maps it
REASON = "the harness exited without a session end"
POLL_SECONDS = 2.0  # only without pidfd_open (a kernel before 5.3)
_SHELLS = frozenset((b"sh", b"bash", b"dash", b"zsh", b"ash", b"busybox"))
_MAX_DEPTH = 8  # shells between the harness and the hook: one or two in practice


def _stat(pid: int) -> tuple[bytes, bytes, int, int] | None:
    """(comm, state, ppid, start time) from /proc/PID/stat; None when PID is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as proc:
            data = proc.read()
        comm = data[data.index(b"(") + 1 : data.rindex(b")")]
        fields = data[data.rindex(b")") + 2 :].split()
        return comm, fields[0], int(fields[1]), int(fields[19])  # fields 3, 4 and 22 of proc(5)
    except (OSError, ValueError, IndexError):
        return None


def harness() -> list[int] | None:
    """[pid, start time] of the hook's nearest ancestor that is not a shell; None when the hook
    was orphaned (its parent is init) or /proc cannot say."""
    pid = os.getppid()
    for _ in range(_MAX_DEPTH):
        if pid <= 1:
            return None
        stat = _stat(pid)
        if stat is None:
            return None
        comm, _, ppid, start = stat
        if comm not in _SHELLS:
            return [pid, start]
        pid = ppid
    return None


def claim(state: sessions.SessionState, event: CanonicalEvent) -> tuple[str, list[int]] | None:
    """Under the state lock: (session, harness) when this hook must start the session's watcher,
    recorded in STATE; None when one already watches this harness or nothing should."""
    session = sessions.key_text(event.text("session_id"))
    if event.name == "session-end" or state.has_ended(session):
        return None
    process = harness()
    if process is None or state.watched.get(session) == process:
        return None
    state.watch(session, process)  # a new process (a resume) replaces the last: its watcher stands down
    return session, process


def start(log: AgentLog, session: str, process: list[int], dialect: str | None, dialect_file: str | None) -> None:
    """Start the watcher detached, as the telemetry worker is; never raises."""
    args = ["--home", log.home, "--session", session, "--pid", str(process[0]), "--start", str(process[1])]
    if dialect_file:
        args += ["--dialect-file", os.path.abspath(dialect_file)]
    elif dialect:
        args += ["--dialect", dialect]
    try:
        from sciontool_py.telemetry.launch import start_detached

        start_detached(MODULE, args)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the session id
        log.debug(f"Harness exit watch not started: {exc}")


def wait_for_exit(pid: int, start: int) -> None:
    """Return once the process PID started at START has exited (at once if it already has)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):
        fd = -1
    try:
        if not _alive(pid, start):  # checked after the pidfd is held: it cannot be recycled now
            return
        if fd >= 0:
            import select

            poller = select.poll()
            poller.register(fd, select.POLLIN)  # readable once the process has exited
            while not poller.poll():
                pass
            return
        import time

        while _alive(pid, start):
            time.sleep(POLL_SECONDS)
    finally:
        if fd >= 0:
            os.close(fd)


def _alive(pid: int, start: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[3] == start and stat[1] not in (b"Z", b"X")


def _stand_down(home: str, session: str, process: list[int]) -> bool:
    """Under the lock: whether the session's end is still this watcher's to say (and forget it)."""
    from sciontool_py.fs import StateLock

    with StateLock(home):
        state = sessions.read(home)
        if state.watched.get(session) != process:
            return True  # ended another way, or taken up by another process
        state.unwatch(session)
        sessions.write(home, state)
        return state.has_ended(session)


def main(argv: list[str]) -> int:
    """The watcher: --home, --session, --pid, --start, and --dialect or --dialect-file."""
    options = dict(zip(argv[::2], argv[1::2]))
    home, session = options["--home"], options["--session"]
    process = [int(options["--pid"]), int(options["--start"])]
    wait_for_exit(*process)
    from sciontool_py.dialect.discover import resolve
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.handlers.truth import Truth
    from sciontool_py.hook import Answer, apply_event, log_failures
    from sciontool_py.log.writer import AgentLog
    from sciontool_py.telemetry import after_answer

    log = AgentLog(home, quiet=True)
    try:
        if _stand_down(home, session, process):
            return 0
        spec = resolve(options.get("--dialect"), options.get("--dialect-file"))
        data: dict[str, object] = {"reason": REASON}
        if session:
            data["session_id"] = session
        event = CanonicalEvent("session-end", RAW_NAME, spec.name, data, {})
        options_ = spec.options
        failures = apply_event(
            log,
            event,
            options_.get("input_tools") or [],  # type: ignore[arg-type]
            options_.get("resumes_after_wait") or (),  # type: ignore[arg-type]
            Truth.of(options_),
        )
        log_failures(log, failures)
        after_answer(log, Answer(event))
    except Exception as exc:  # detached, stdio on /dev/null: agent.log is the only place to say it
        log.debug(f"Harness exit watch failed: {type(exc).__name__}: {exc}")
        return 1
    return 0
