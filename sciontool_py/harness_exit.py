"""The harness exit watcher: a session end for harnesses that exit without one.

With the dialect option watch_harness_exit, the hook records under the state
lock which process is the harness (handlers/exit_watch.py) and, once it has
answered, starts this watcher detached, as the telemetry worker is started:
a new session, /dev/null as stdio. It waits for that process to exit (a
pidfd: no polling where the kernel has them; else a slow poll that checks the
start time, so a recycled pid is never waited for) and then applies a
session-end through the hook's own handlers, unless the session ended
meanwhile or another process took it up. It never signals anything and
writes only what the hook writes.
"""

from __future__ import annotations

import os

from sciontool_py.handlers.exit_watch import process_stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from sciontool_py.log.writer import AgentLog

MODULE = "sciontool_py.harness_exit"
RAW_NAME = "harness-exit"  # the synthetic event's raw name: no dialect maps it
REASON = "the harness exited without a session end"
POLL_SECONDS = 2.0  # only without pidfd_open (a kernel before 5.3)


def start(
    log: AgentLog, session: str, process: list[int], dialect: str | None, dialect_file: str | None
) -> None:
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
    stat = process_stat(pid)
    return stat is not None and stat[3] == start and stat[1] not in (b"Z", b"X")


def main(argv: list[str]) -> int:
    """The watcher: --home, --session, --pid, --start, and --dialect or --dialect-file."""
    options = dict(zip(argv[::2], argv[1::2], strict=True))
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
        spec = resolve(options.get("--dialect"), options.get("--dialect-file"))
        data: dict[str, object] = {"reason": REASON}
        if session:
            data["session_id"] = session
        event = CanonicalEvent("session-end", RAW_NAME, spec.name, data, {})
        dialect_options = spec.options
        truth = Truth.of(dialect_options) or Truth({})
        # Under the state lock, the event is ignored (a DEBUG line, nothing else) unless this
        # process still holds the session: it ended another way, or a resume took it up.
        truth.watcher = process
        failures = apply_event(
            log,
            event,
            dialect_options.get("input_tools") or [],  # type: ignore[arg-type]
            dialect_options.get("resumes_after_wait") or (),  # type: ignore[arg-type]
            truth,
        )
        log_failures(log, failures)
        if not truth.ignored:
            after_answer(log, Answer(event))
    except Exception as exc:  # detached, stdio on /dev/null: agent.log is the only place to say it
        log.debug(f"Harness exit watch failed: {type(exc).__name__}: {exc}")
        return 1
    return 0
