"""The helper's standby: a second, small process per HOME that takes the helper's place
when it dies (the OOM killer, a `kill -9`), so that no one process is the end of an agent's watch.

The helper (server.py) starts it the moment it starts, as it starts the telemetry worker (a
session of its own, /dev/null as stdio, the worker's environment), with one end of a socket pair
as its fd 3; the helper holds the other end, and nothing else holds either (both are
close-on-exec). The standby is a POSIX shell (SCRIPT), blocked in one read on it: about 1 ms to
start, no CPU and no wakeups while it waits, about 1 MiB of memory. Then:

- the helper leaves as it should (no agent left, its linger over, its HOME or lock file gone):
  it writes STOP first, and the standby leaves too;
- the helper dies: the kernel closes its end, the read returns nothing, and the standby execs the
  helper anew, with the options the helper had. That one takes the HOME's watcher lock (a hook that
  took it first has a helper of its own coming: it then leaves), says the end of every harness
  that exited meanwhile, and starts a standby of its own. A HOME that was removed is left alone.

The helper reads EOF on its end when the standby dies, collects it and starts another, at most
one a second. Neither ever signals anything. `ps` shows the helper as `scion-helper`
(`sciontool_py.helper.server --home HOME`) and the standby's command line as
`scion-standby -c SCRIPT scion-standby HOME PYTHON ...` (its process name is the shell's).
"""

from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket

NAME = "scion-standby"  # the standby's argv[0]
FD = 3  # the helper's socket end, as start_detached hands it over (launch.WORKER_FD)
STOP = b"stop\n"
# $1: HOME; then the helper's command line. A line read (STOP) ends it; the end of the stream
# (the helper died) makes it the helper, unless HOME is gone. Its folder: one never removed.
SCRIPT = (
    'cd / || exit 0; IFS= read -r said <&3; exec 3<&-; [ -z "$said" ] && [ -d "$1" ] || exit 0; '
    'shift; exec "$@"'
)
SHELL = "/bin/sh"
# A standby that dies at once (a shell that cannot start) is started again at most this often.
RESTART_SECONDS = 1.0
LEAVE_WAIT = 1.0  # seconds a leaving helper waits to collect its standby (it reads STOP and exits)


def command(args: list[str]) -> list[str]:
    """The standby's command line for a helper started with ARGS (--home HOME first)."""
    from sciontool_py.receiver.harness_exit import MODULE
    from sciontool_py.telemetry.launch import command as helper

    return [NAME, "-c", SCRIPT, NAME, args[1], *helper(MODULE, args)]


class Standby:
    """The helper's side of its standby: started with the helper, again when it dies, told to
    stop as the helper leaves."""

    def __init__(self, args: list[str]) -> None:
        self.args = args  # the helper's options, which the standby execs it with
        self.sock: _socket.socket | None = None
        self.pid = 0
        self.due = float("inf")  # when one is to be started, should none run

    def fileno(self) -> int:
        """The helper's end (readable once the standby has exited); -1 while none runs."""
        return -1 if self.sock is None else self.sock.fileno()

    def want(self) -> None:
        """One is to run from now on."""
        self.due = min(self.due, time.monotonic())

    def keep(self) -> float:
        """Start one when it is due and none runs; the seconds until the next is due."""
        if self.sock is None and self.due <= time.monotonic():
            self._start()
        return float("inf") if self.sock is not None else self.due - time.monotonic()

    def _start(self) -> None:
        import _socket

        from sciontool_py.telemetry.launch import spawn_detached

        self.due = time.monotonic() + RESTART_SECONDS  # the next, should this one die or fail
        try:
            mine, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        except OSError:
            return  # out of descriptors: tried again
        try:
            self.pid = spawn_detached(SHELL, command(self.args), theirs.fileno())
        except (OSError, ValueError):
            mine.close()
            return
        finally:
            theirs.close()
        self.sock = mine

    def ended(self) -> None:
        """Its end read EOF: it has exited. Collected (no zombie); the next one is due."""
        from sciontool_py.telemetry.launch import reap

        if self.sock is not None:
            self.sock.close()
            self.sock = None
            reap(self.pid)

    def stop(self) -> None:
        """The helper leaves: so does the standby, told STOP. Collected once it has (not left to
        an init that may not collect it), unless it takes longer than LEAVE_WAIT (stopped)."""
        import _socket
        import select

        self.due = float("inf")
        if self.sock is None:
            return
        try:
            self.sock.send(STOP, _socket.MSG_NOSIGNAL)
        except OSError:
            pass  # it died meanwhile: nothing to tell
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN)
        if poller.poll(LEAVE_WAIT * 1000):
            self.ended()
        else:
            self.sock.close()
            self.sock = None
