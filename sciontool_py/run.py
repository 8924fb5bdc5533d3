"""`sciontool run [--name NAME] -- COMMAND...`: Scion's init duties for a harness that is not PID 1.

Scion's init runs the harness as its child and, when it exits, classifies the
exit (handlers/agent_end.py), enforces SCION_MAX_DURATION and keeps the hub
told. Outside Scion nothing does; `run` does it for one harness in the
terminal it was started in: COMMAND is its child in the same process group,
so the terminal's keys, resizes and Ctrl-C reach it as they would without
`run`, which prints nothing. The hooks fired inside it know it by two
variables (handlers/agent_state.py), so their agent is this one, named NAME.

`run` exits with the harness's exit code (128 + N for a signal N), or 10 when
SCION_MAX_DURATION stopped it. SIGTERM (and SIGHUP) to `run` is passed on to
the harness, and SIGKILL follows after the grace period (SCION_GRACE_PERIOD,
Go's duration syntax, 10s by default): a requested stop. `run` never signals
anything but its own child, and only while it has not seen it exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from sciontool_py import process, registry
from sciontool_py.errors import SciontoolError
from sciontool_py.fs import home_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.log.writer import AgentLog

SYNOPSIS = "sciontool run [--name NAME] -- COMMAND [ARG...]"
USAGE = f"usage: {SYNOPSIS}"
HELP = f"""Usage: {SYNOPSIS}

  Run COMMAND (a harness: claude, codex, gemini, ...) as Scion's init would:
  in this terminal, as its child, with the hooks it fires marked as this
  agent's. When it exits, its status says how: stopped (exit 0, or a stop
  asked for with SIGTERM), error with "Agent crashed with exit code N" (any
  other exit; 128+N for a signal N), or limits_exceeded when SCION_MAX_DURATION
  stopped it (exit 10). Exits with the harness's exit code.

  SCION_MAX_DURATION and SCION_GRACE_PERIOD (default 10s) take Go's duration
  syntax (90m, 1h30m). With a hub configured: a heartbeat every 30 s and each
  activity change, and the session closed and reported at the exit.

Arguments:
  COMMAND [ARG...]  The harness and its arguments.

Options:
  --name NAME       The agent's name in `sciontool agents` (default: the
                    dialect's or the command's).
  -h, --help        Show this message and exit.
"""
GRACE_SECONDS = 10.0  # Scion's --grace-period default
HEARTBEAT_SECONDS = 30.0  # Scion's `sciontool heartbeat` interval
POLL_SECONDS = 5.0  # and how often it reads the status for a change
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(text: str) -> float:
    """Seconds in Go's time.ParseDuration syntax ("90m", "1h30m", "2.5s"); 0 for empty or invalid
    input, as Scion reads SCION_MAX_DURATION (no limit)."""
    text = text.strip()
    sign = -1.0 if text.startswith("-") else 1.0
    rest = text.lstrip("+-")
    if rest == "0":
        return 0.0
    total = 0.0
    while rest:
        number = ""
        while rest and (rest[0].isdigit() or rest[0] == "."):
            number, rest = number + rest[0], rest[1:]
        unit = next((u for u in sorted(_UNITS, key=len, reverse=True) if rest.startswith(u)), "")
        if not number or number == "." or not unit or number.count(".") > 1:
            return 0.0
        total += float(number) * _UNITS[unit]
        rest = rest[len(unit) :]
    return sign * total


def parse(args: list[str]) -> tuple[str, list[str]]:
    """(name, command) from run's arguments; SciontoolError for anything else."""
    name = ""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-h", "--help"):
            raise HelpRequested
        if arg == "--name" or arg.startswith("--name="):
            if "=" in arg:
                name = arg.partition("=")[2]
            elif i + 1 < len(args):
                i += 1
                name = args[i]
            else:
                raise SciontoolError(f"--name needs a value ({USAGE})")
        elif arg.startswith("-"):
            raise SciontoolError(f"unknown option {arg} ({USAGE})")
        else:
            break  # the command itself, without a `--`
        i += 1
    command = args[i:]
    if not command:
        raise SciontoolError(f"no command to run ({USAGE})")
    return name, command


class HelpRequested(Exception):
    pass


class Child:
    """The harness: our child, signalled only while it has not been seen to exit."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        try:
            self.proc = subprocess.Popen(command, env=env)
        except OSError as exc:
            raise SciontoolError(f"cannot run {command[0]}: {exc.strerror or exc}") from None
        found = process.stat(self.proc.pid)
        self.process = [self.proc.pid, found[3] if found else 0]
        self.lock = threading.Lock()

    def signal(self, sig: int) -> None:
        with self.lock:  # poll() reaps: after it says the child exited, its pid is nobody's
            if self.proc.poll() is None:
                self.proc.send_signal(sig)

    def wait(self, timeout: float | None) -> int | None:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return 128 - code if code < 0 else code


def main(args: list[str]) -> int:
    from sciontool_py.fastpath import error_line

    try:
        name, command = parse(args)
    except HelpRequested:
        sys.stdout.write(HELP)
        return 0
    except SciontoolError as exc:
        error_line(f"sciontool run: {exc}")
        return 1
    from sciontool_py.log.writer import AgentLog

    log = AgentLog(home_dir(), quiet=True)
    try:
        return supervise(log, name, command)
    except SciontoolError as exc:
        error_line(f"sciontool run: {exc}")
        return 1


def supervise(log: AgentLog, name: str, command: list[str]) -> int:
    me = process.stat(os.getpid())
    mine = [os.getpid(), me[3] if me else 0]
    env = {**os.environ, registry.RUN_VARIABLE: f"{mine[0]}-{mine[1]}", registry.RUN_NAME_VARIABLE: name}
    limit = go_duration(os.environ.get("SCION_MAX_DURATION", ""))
    grace = go_duration(os.environ.get("SCION_GRACE_PERIOD", "")) or GRACE_SECONDS
    requested = threading.Event()
    stopping: list[float] = []  # when the harness was asked to stop

    def stop(signum: int, frame: object) -> None:
        if signum == signal.SIGTERM:  # asked to stop; a closed terminal (SIGHUP) is not asked
            requested.set()
        child.signal(signum)
        stopping.append(time.monotonic())

    # A Python handler, not SIG_IGN, which the harness would inherit: the terminal sends Ctrl-C
    # and Ctrl-\ to the harness itself, and `run` waits for what it does with them.
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    signal.signal(signal.SIGQUIT, lambda signum, frame: None)
    child = Child(command, env)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    started = time.monotonic()
    beat = Heartbeat(log, mine)
    beat.start()
    limited = False
    code: int | None = None
    while code is None:
        now = time.monotonic()
        deadline = [started + limit] if limit > 0 and not limited else []
        if stopping:
            deadline.append(stopping[0] + grace)
        code = child.wait(max(0.0, min(deadline) - now) if deadline else None)
        if code is not None:
            break
        now = time.monotonic()
        if stopping and now >= stopping[0] + grace:
            child.signal(signal.SIGKILL)
        elif limit > 0 and not limited and now >= started + limit:
            limited = True
            from sciontool_py.receiver.harness_exit import mark_limits

            mark_limits(log, mine, f"max_duration of {os.environ['SCION_MAX_DURATION']} exceeded")
            child.signal(signal.SIGTERM)
            stopping.append(now)
    beat.stop()
    from sciontool_py.receiver.harness_exit import end_run

    end_run(log, mine, child.process, name, command, code, requested.is_set(), limited)
    return 10 if limited else code


class Heartbeat:
    """With a hub configured, Scion's `sciontool heartbeat`: a heartbeat every 30 s, and each change
    of the agent's activity (its status read every 5 s). A daemon thread: nothing waits for it."""

    def __init__(self, log: AgentLog, mine: list[int]) -> None:
        self.log = log
        self.mine = mine
        self.done = threading.Event()

    def start(self) -> None:
        from sciontool_py.receiver.hook import hub_configured

        if hub_configured():
            threading.Thread(target=self._run, daemon=True).start()

    def stop(self) -> None:
        self.done.set()

    def _run(self) -> None:
        from sciontool_py.hub.client import Hub, status_body

        last_beat = -HEARTBEAT_SECONDS  # the first one at once: the hub knows the agent is up
        seen: tuple[object, object] | None = None
        while True:
            hub = Hub.from_env(self.log.home, self.log, warn=False)  # its time budget is per call
            status = _status_of(self.log.home, self.mine)
            now = time.monotonic()
            if hub is not None and now - last_beat >= HEARTBEAT_SECONDS:
                last_beat = now
                hub.report("heartbeat", "status", {"heartbeat": True})
            changed = status is not None and (status.get("phase"), status.get("activity")) != seen
            if hub is not None and status is not None and changed:
                seen = (status.get("phase"), status.get("activity"))
                fields = ("phase", "activity", "toolName")
                update: dict[str, object] = {k: status[k] for k in fields if k in status}
                hub.report("heartbeat", "status", status_body(update))
            if self.done.wait(POLL_SECONDS):
                return


def _status_of(home: str, mine: list[int]) -> dict[str, object] | None:
    """The status of the agent running under this `run` (agent-info.json inside Scion)."""
    if registry.in_scion(home):
        from sciontool_py.fs import read_json_file

        return read_json_file(home, "agent-info.json")[0]
    for record in registry.records(home):
        if record.run == mine and not record.parent:
            return record.info
    return None
