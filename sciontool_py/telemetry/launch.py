"""From the hook: is anything listening, and start the detached worker (or, through
start_detached, the harness exit watcher and its standby, which are started the same way).

Both run after the hook answered and cost well under a millisecond: the
probe is one non-blocking connect to a loopback port (refused at once when
nothing listens), through the C `_socket` module (`socket.py` would import
enum, 3 ms); the worker is started with posix_spawn in a new session, with
/dev/null as its stdin, stdout and stderr, so the harness's pipes close
when the hook exits and the harness never waits for it.  It gets only the
environment it reads (Scion's, OpenTelemetry's, gRPC's, proxies, TLS,
locale and Python's own): not the harness's API keys.
"""

from __future__ import annotations

import _socket
import errno
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_started: list[int] = []  # pids of start_detached, until _reap_ended collects them
PROBE_WAIT_SECONDS = 0.02  # a loopback answers in microseconds; no answer counts as listening
WORKER_FD = 3  # where the worker finds the spool folder, locked for it
# COVERAGE_: coverage.py's subprocess measurement (the suite's coverage of the detached processes).
_PASSED_PREFIXES = ("SCION_", "SCIONTOOL_", "OTEL_", "GRPC_", "PYTHON", "LC_", "COVERAGE_")
_PASSED = frozenset(
    (
        "HOME",
        "PATH",
        "LANG",
        "TZ",
        "TMPDIR",
        "VIRTUAL_ENV",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
    )
)
# -c rather than -m: -m would put the harness's working folder (which the model writes) first
# on sys.path. The package's own parent goes there instead.
_BOOT = "import sys; sys.path[0] = {parent!r}\nfrom {module} import main\nsys.exit(main(sys.argv[1:]))"
# posix_spawn cannot set it (glibc takes only SCHED_OTHER, FIFO and RR there), so the process
# does, first; not Linux (no SCHED_IDLE): it keeps the hook's priority.
_IDLE = (
    "import os\ntry: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
    "except (AttributeError, OSError): pass\n"
)


def listening(host: str, port: int) -> bool:
    """False when a connect to host:port is refused; True when it is accepted or not answered."""
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    sock = _socket.socket(family, _socket.SOCK_STREAM)
    try:
        sock.settimeout(PROBE_WAIT_SECONDS)  # the C module waits with poll(): no select import
        return sock.connect_ex((host, port)) != errno.ECONNREFUSED
    except OSError:
        return False  # no such address family here, or no port to reach
    finally:
        sock.close()


def start_worker(home: str, drain_fd: int | None, reports: bool, env: Mapping[str, str] | None = None) -> int:
    """Start `sciontool_py.telemetry.worker` detached; its pid.

    drain_fd: the spool folder, locked by this process, handed over as the
    worker's fd 3 (the lock goes with it). reports: it also sends the
    session-metrics reports waiting for a sender. env: the environment it
    takes its variables from (this process's by default).
    """
    args = ["--home", home]
    if drain_fd is not None:
        args.append("--drain")
    if reports:
        args.append("--reports")
    return start_detached("sciontool_py.telemetry.worker", args, drain_fd, idle=True, env=env)


def start_detached(
    module: str,
    args: list[str],
    handed_fd: int | None = None,
    idle: bool = False,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run MODULE's main(ARGS) in a new session with /dev/null as stdio; its pid.

    handed_fd: a descriptor the process finds as its fd 3 (WORKER_FD). idle: it runs only on a
    CPU nothing else wants (Linux's SCHED_IDLE, set before MODULE loads): on two cores the
    worker's OpenTelemetry import and export would otherwise take the CPU from the harness.
    """
    return spawn_detached(sys.executable, command(module, args, idle), handed_fd, env)


def spawn_detached(
    program: str, argv: list[str], handed_fd: int | None = None, env: Mapping[str, str] | None = None
) -> int:
    """Run PROGRAM with ARGV as start_detached runs a module (the helper's standby is a shell)."""
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    _reap_ended()
    _close_on_exec(handed_fd)
    spare = -1
    if handed_fd is not None:
        if handed_fd == WORKER_FD:  # dup2 onto itself need not clear close-on-exec everywhere
            handed_fd = spare = os.dup(handed_fd)
        actions.append((os.POSIX_SPAWN_DUP2, handed_fd, WORKER_FD))
    try:
        # An empty signal mask: the helper starts these while it holds SIGTERM, SIGINT
        # and SIGHUP back to finish a hook (helper/relayed.py), and a mask outlives exec.
        pid = os.posix_spawn(
            program,
            argv,
            worker_environment(os.environ if env is None else env),
            file_actions=actions,
            setsid=True,
            setsigmask=(),
        )
    finally:
        if spare >= 0:
            os.close(spare)
    _started.append(pid)
    return pid


def command(module: str, args: list[str], idle: bool = False) -> list[str]:
    """The command line that runs MODULE's main(ARGS) in this Python, as start_detached runs it
    (the helper's standby execs the helper with it)."""
    parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    boot = (_IDLE if idle else "") + _BOOT.format(parent=parent, module=module)
    return [sys.executable, "-c", boot, *args]


def reap(pid: int) -> None:
    """Collect PID, started here, which has closed its descriptors (it is exiting): waited for,
    unless _reap_ended collected it already (its pid may be another process's by now)."""
    if pid in _started:
        _started.remove(pid)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass  # reaped by the caller's own wait


def _close_on_exec(keep: int | None) -> None:
    """Mark every descriptor past stderr close-on-exec (but KEEP): what the harness or a wrapper
    handed the hook (`flock FILE -c`'s lock, a pipe it waits on) must not live on in a detached
    process. The hook itself execs nothing else, and exits soon after."""
    from sciontool_py.process import descriptors

    for fd in descriptors():
        if fd != keep:
            try:
                os.set_inheritable(fd, False)
            except OSError:
                pass  # closed meanwhile (listdir's own descriptor among them)


def worker_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables the worker (its hub reports, the OpenTelemetry SDK, its exporters) reads."""
    return {
        name: value
        for name, value in env.items()
        if name in _PASSED or name.startswith(_PASSED_PREFIXES) or name.lower().endswith("_proxy")
    }


def _reap_ended() -> None:
    """Collect the processes started here that have ended: a caller that lives on (agentino, ADK)
    keeps no zombie past its next start. No thread waits for them: a daemon thread that wakes
    while the interpreter finalizes can crash it (CPython before 3.14; the likely cause of a
    hook's SIGSEGV on CPython 3.10 in CI, when the worker ended as the hook did)."""
    for pid in list(_started):
        try:
            ended = os.waitpid(pid, os.WNOHANG)[0] == pid
        except ChildProcessError:
            ended = True  # reaped by the caller's own wait
        if ended:
            _started.remove(pid)
