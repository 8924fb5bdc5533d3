"""The helper's standby: a second, small process per HOME that takes the helper's place
when it dies (the OOM killer, a `kill -9`), so that no one process is the end of an agent's watch.

The helper (server.py) starts it as it starts the telemetry worker (launch.start_detached: a
session of its own, /dev/null as stdio, the worker's environment), with one end of a socket pair
as its fd 3; the helper holds the other end, and nothing else holds either (both are
close-on-exec, and neither process forks). The standby blocks in one read on it: no CPU and no
wakeups while it waits, its only cost the memory of a Python that imported nothing (about
9.5 MiB of VmRSS, 3.5 MiB of it its own: the rest is the interpreter's shared pages). Then:

- the helper leaves as it should (no agent left, its linger over, its HOME or lock file gone):
  it writes STOP first, and the standby leaves too;
- the helper dies: the kernel closes its end, the read returns nothing, and the standby execs the
  helper anew, with the options the helper had. That one takes the HOME's watcher lock (a hook that
  took it first has a helper of its own coming: it then leaves), says the end of every harness
  that exited meanwhile, and starts a standby of its own. A HOME that was removed is left alone.

The helper reads EOF on its end when the standby dies, collects it and starts another, at most
one a second. Neither ever signals anything. `ps` shows them as `scion-helper` and
`scion-standby`, their command lines `sciontool_py.helper.server --home HOME` and
`sciontool_py.helper.standby --home HOME`.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket

NAME = "scion-standby"
FD = 3  # the helper's socket end, as start_detached hands it over (launch.WORKER_FD)
STOP = b"stop"
# A standby that dies at once (a Python that cannot start) is started again at most this often.
RESTART_SECONDS = 1.0
LEAVE_WAIT = 1.0  # seconds a leaving helper waits to collect its standby (it reads STOP and exits)


def main(argv: list[str]) -> int:
    """The standby as Standby starts it: the helper's options (--home HOME first)."""
    home = argv[1]
    os.chdir("/")  # the helper's folder (a started one keeps its hook's) must stay removable
    retitle(f"{__name__} --home {home}", NAME)
    if not _helper_died() or not os.path.isdir(home):
        return 0
    from sciontool_py.receiver.harness_exit import MODULE
    from sciontool_py.telemetry.launch import command

    helper = command(MODULE, argv)
    # os.environ: the C library's environment lies in the memory retitle() blanked.
    os.execve(helper[0], helper, os.environ)


def _helper_died() -> bool:
    """Wait for the helper: False once it said STOP, True once its end closed (it exited)."""
    try:
        return not os.read(FD, len(STOP))
    except OSError:
        return True  # reset by a helper that died: gone all the same
    finally:
        try:
            os.close(FD)  # not into the helper it may become
        except OSError:
            pass  # never had one


class Standby:
    """The helper's side of its standby: started once the helper's hooks first go quiet (its
    Python start, about 10 ms of CPU, off the session's busiest moment), again when it dies,
    told to stop as the helper leaves."""

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

        from sciontool_py.telemetry.launch import start_detached

        self.due = time.monotonic() + RESTART_SECONDS  # the next, should this one die or fail
        try:
            mine, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        except OSError:
            return  # out of descriptors: tried again
        try:
            self.pid = start_detached(__name__, self.args, theirs.fileno())
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


def retitle(title: str, name: str) -> None:
    """Show TITLE as this process's command line and NAME as its name, and blank the
    environment the kernel shows in /proc/PID/environ: a forked helper would show its hook's
    command line (to `ps`, and to turns.py, a hook that never ends) and keep its harness's API
    keys there; a started one, or the standby, `python -c` and its boot code. Writes its own
    memory through /proc/self/mem, where exec put argv and then the environment; best effort."""
    try:
        with open("/proc/self/comm", "w") as comm:
            comm.write(name)  # neither a shell, a wrapper, python nor sciontool
        with open("/proc/self/stat", "rb") as stat:
            data = stat.read()
        fields = data[data.rindex(b")") + 2 :].split()
        arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])  # proc(5) 48-51
        end = env_end if env_start == arg_end else arg_end  # the title may run into the environment
        text = os.fsencode(title)[: end - arg_start - 1]
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(arg_start)
            mem.write(text.ljust(end - arg_start, b"\0"))
            if end == arg_end and env_end > env_start:
                mem.seek(env_start)
                mem.write(bytes(env_end - env_start))
    except (OSError, ValueError, IndexError):
        pass  # no /proc, or a kernel that will not: the title and environment stay as they were
