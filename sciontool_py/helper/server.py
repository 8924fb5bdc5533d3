"""The HOME's helper process: the exit watcher, and the server of the hooks relayed to it.

One per HOME, holding the HOME's watcher lock for as long as it runs: left
behind by the hook that found none (adopt, a fork of that hook's process), or
started by one (harness_exit.ensure: inside Scion, or where nothing relays).
It waits on a pidfd per live agent's harness and says the end of each that
exits without one (harness_exit), and, outside Scion, it listens on the HOME's
abstract socket (client.py) and runs each relayed hook as the hook process
would have: in that hook's folder and environment, on the envelope it read,
its harness looked for from its own parent. One hook at a time: they would
take the HOME's state lock one after the other anyway. It exits once no agent
is left to watch (a helper that served hooks, some minutes later: a user's
next session in that HOME finds it); it never signals anything and writes only
what a hook writes. Its standby (standby.py) takes its place should it die.
"""

from __future__ import annotations

import os
import sys
import time

from sciontool_py import process, registry, telemetry, turns
from sciontool_py.helper import bash, client, relayed, standby, wire
from sciontool_py.receiver import harness_exit

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from collections.abc import Callable

Process = tuple[int, int]
NAME = "scion-helper"  # what `ps` shows it as (_retitle)
REQUEST_LIMIT = 8 << 20  # a hook's arguments and environment (its stdin is handed over, not sent)
# Outside Scion a user's next session usually comes to the same HOME: a helper that waits for it
# relays its first hook too (a Python start less, which the harness waits for).
LINGER_SWITCH = "SCIONTOOL_HELPER_LINGER"
LINGER_SECONDS = 300.0
LINGER_LIMIT = 86400.0
READ_WAIT = 2.0  # seconds for a relaying hook to send its request: it sends it at once, and waits no longer
# Hooks a harness fires come in bursts (a tool's start and end, the model's answer): the telemetry
# worker starts once none has come for this long (telemetry.start_later), or this long after the
# burst's first, should it never end (the spool keeps at most 1,000 events).
QUIET_SECONDS = 1.0
QUIET_LIMIT_SECONDS = 5.0
# What serving a hook loads: a helper started anew loads it first (preload), and the first relayed
# hook finds it all there. One forked from a hook has the hook's, and loads telemetry's once a hook
# has been answered: a preload would hold the next hook, which comes at once (5.7 ms with
# `signal`, which imports enum, and the telemetry modules).
PRELOADED = (
    "sciontool_py.fastpath",
    "sciontool_py.receiver.hook",
    "sciontool_py.receiver.stdin",
    "sciontool_py.receiver.handlers.truth",
    "sciontool_py.telemetry.launch",
    "sciontool_py.telemetry.spool",
)


def listen(home: str) -> _socket.socket | None:
    """The HOME's socket, listening; None where it cannot be had (another user holds the name)."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.bind(wire.address(home))
        sock.listen(bash.BACKLOG)
        sock.setblocking(False)
    except OSError:
        sock.close()
        return None
    return sock


def watch(
    home: str,
    say_end: Callable[[Process, list[str]], None],
    held: int,
    servers: dict[int, Callable[[], None]],
    stop: Callable[[], None],
    quiet: Callable[[], None],
    linger: float = 0.0,
    spare: standby.Standby | None = None,
) -> None:
    """Wait for every target's exit, calling say_end for each, and serve each relayed hook (a
    listening socket's fd -> what takes one of its hooks), until there is nothing to watch; then,
    where it serves hooks and watched an agent, LINGER seconds more for the HOME's next agent (its
    next session's first hook is then relayed too); then stop listening and release HELD, the
    watcher's lock, under the state lock. Where HOME or its lock file is removed or replaced
    meanwhile, it stops at once, watching or not: HOME's next hook starts a watcher that locks
    HOME's new lock file, so there is never a second one beside it. QUIET is
    called once the hooks served and ends said have gone quiet: QUIET_SECONDS after the last,
    QUIET_LIMIT_SECONDS after the first at the latest (the start counts as one: a helper forked
    from a hook has just answered it). SPARE, its standby, is started (again) whenever it is due
    and none runs, and collected when it dies."""
    import select

    from sciontool_py.fs import StateLock

    fds: dict[Process, int] = {}  # a pidfd, or -1 where the kernel has none (checked each rescan)
    watched = False  # an agent was seen: once none is left, a helper lingers (LINGER_SWITCH)
    idle_until: float | None = None
    # The last and the first hook or end since quiet() was called (None: none since).
    active_at: float | None = time.monotonic()
    first_at = active_at

    def busy() -> None:
        nonlocal active_at, first_at
        active_at = time.monotonic()
        first_at = active_at if first_at is None else first_at

    def end(proc: Process, ends: list[str]) -> None:
        say_end(proc, ends)
        busy()

    try:
        while True:
            if not _locks(home, held):
                stop()
                return
            current = harness_exit.targets(home)
            for proc in [p for p in fds if p not in current]:  # evicted, ended or taken over
                _close(fds.pop(proc))
            for proc, ends in current.items():
                if proc not in fds:
                    fd = process.open_pidfd(proc)
                    if fd is None:
                        end(proc, ends)  # gone before it was watched
                    else:
                        fds[proc] = fd
            for proc in [p for p, fd in fds.items() if fd < 0 and not process.alive(p)]:
                fds.pop(proc)
                end(proc, current[proc])
            watched = watched or bool(current)
            wait = harness_exit.RESCAN_SECONDS
            if fds:
                idle_until = None
            else:
                if idle_until is None:
                    idle_until = time.monotonic() + (linger if watched and servers else 0.0)
                wait = idle_until - time.monotonic()
                if wait <= 0:
                    # A hook adds an agent under the state lock, then calls ensure(): released
                    # inside it, the lock is free for that hook's ensure(), or this sees the agent.
                    with StateLock(home):
                        if not harness_exit.targets(home):
                            stop()  # a hook connecting now runs in its own process
                            os.close(held)
                            held = -1
                            return
                    idle_until = None
                    continue
                wait = min(wait, harness_exit.RESCAN_SECONDS)
            if active_at is not None and first_at is not None:
                due = min(active_at + QUIET_SECONDS, first_at + QUIET_LIMIT_SECONDS)
                left = due - time.monotonic()
                if left <= 0:
                    active_at = first_at = None
                    quiet()
                else:
                    wait = min(wait, left)
            if spare is not None:
                wait = min(wait, max(spare.keep(), 0.0))
            poller = select.poll()
            if spare is not None and spare.fileno() >= 0:
                poller.register(spare.fileno(), select.POLLIN)  # readable once it has exited
            by_fd = {fd: proc for proc, fd in fds.items() if fd >= 0}
            for fd in by_fd:
                poller.register(fd, select.POLLIN)  # readable once the process has exited
            for fd in servers:
                poller.register(fd, select.POLLIN)
            for fd, _ in poller.poll(wait * 1000):
                if spare is not None and fd == spare.fileno():
                    spare.ended()  # started again on the next pass, or a second after the last start
                    continue
                if fd in servers:
                    # Checked again: a hook served for a HOME replaced meanwhile would lock the
                    # new HOME's file in its ensure() and start a second watcher beside this one.
                    if not _locks(home, held):
                        stop()  # the hook, not taken, runs in its own process and starts it
                        return
                    servers[fd]()
                    busy()
                    continue
                proc = by_fd[fd]
                _close(fds.pop(proc))
                end(proc, harness_exit.targets(home).get(proc, []))
    finally:
        for fd in fds.values():
            _close(fd)
        _close(held)


def _locks(home: str, held: int) -> bool:
    """Whether HELD still locks the watcher's lock file at HOME (not one removed with its HOME)."""
    try:
        mine = os.fstat(held)
        there = os.stat(os.path.join(home, harness_exit.LOCK), follow_symlinks=False)
    except OSError:
        return False
    return mine.st_nlink > 0 and (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def lingering() -> float:
    """The seconds this helper stays once the HOME's last agent has ended (LINGER_SWITCH)."""
    try:
        seconds = float(os.environ.get(LINGER_SWITCH, LINGER_SECONDS))
    except ValueError:
        return LINGER_SECONDS
    return min(max(seconds, 0.0), LINGER_LIMIT) if seconds == seconds else LINGER_SECONDS  # NaN


def preload() -> None:
    """Load what serving a hook needs before the first comes: the harness waits for that one."""
    for module in PRELOADED:
        __import__(module)


def _close(fd: int) -> None:
    if fd >= 0:
        os.close(fd)


def door(listener: _socket.socket, home: str) -> turns.Door:
    """The relayed hooks' listening socket, for turns.in_order: each hook's request is read as
    it comes, and run in its turn; what cannot be run as it would run is declined (the hook then
    runs in its own process)."""
    return listener.fileno(), lambda: _take(listener, home)


def _take(listener: _socket.socket, home: str) -> Request | None:
    """The next hook's connection, when its peer is this user's; None for anything else."""
    try:
        conn = bash.accepted(listener)
    except OSError:
        return None  # it gave up meanwhile
    try:
        if wire.peer_uid(conn) == os.geteuid():  # another user's process: never its hook
            return Request(conn, wire.peer_pid(conn), home)
    except OSError:
        pass  # gone already
    conn.close()
    return None


class Request:
    """One relayed hook (client.py), from its request to its answer (turns.Pending): read whole
    as it comes, its stdin handed over with it; `ready` in its turn; on its `go`, its stdin read
    as it comes (relayed.Arrival), then run."""

    def __init__(self, conn: _socket.socket, client: int, home: str) -> None:
        self.conn, self.client, self.home = conn, client, home
        self.stage = turns.READING
        self.turn: turns.Turn | None = None
        self.queued_at = 0.0
        self.deadline = time.monotonic() + READ_WAIT
        self.chunks: list[bytes] = []
        self.size = 8  # bytes still to read: of the request's length, then of the request
        self.sized = False  # whether its length is read
        self.request: tuple[str, list[str], dict[str, str], bytes] | None = None
        self.handed = -1  # the hook's stdin, handed over with the request
        self.source: Source | None = None  # how it is read: opened anew, or the handed one
        self.payload = False  # `hook EVENT_NAME`: stdin holds an optional payload
        self.arrival: relayed.Arrival | None = None

    def fileno(self) -> int:
        if self.stage == turns.COMMITTED and self.arrival is not None:
            return self.arrival.fd
        return self.conn.fileno()

    def advance(self) -> bool:
        try:
            if self.stage == turns.READING:
                return self._read()
            if self.stage == turns.OFFERED and self.conn.recv(1) == wire.GO:
                self.stage = turns.COMMITTED
                if self.source is not None:
                    self.arrival = relayed.Arrival(
                        self.source.fd, self.source.read, self.payload, time.monotonic()
                    )
                    self.deadline = self.arrival.due()
                return True
            if self.stage == turns.COMMITTED and self.arrival is not None:
                self.arrival.take(time.monotonic())
                self.deadline = self.arrival.due()
                return True
        except (OSError, ValueError):
            pass  # the hook is gone, or sent what no relay sends: it runs by itself, or not at all
        self.close()  # queued: a word before `ready`, or the hook gave up (it runs by itself)
        return False

    def _read(self) -> bool:
        import _socket

        if self.handed < 0 and not self.chunks and self.size == 8:
            # The first bytes carry the hook's stdin; made close-on-exec as it arrives.
            chunk, ancillary, _, _ = self.conn.recvmsg(8, _socket.CMSG_SPACE(4), _socket.MSG_CMSG_CLOEXEC)
            for level, kind, data in ancillary:
                if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS and len(data) >= 4:
                    self.handed = int.from_bytes(data[:4], sys.byteorder)
        else:
            chunk = self.conn.recv(min(self.size, 1 << 20))
        if not chunk:
            raise ValueError("a relayed request cut short")
        self.chunks.append(chunk)
        self.size -= len(chunk)
        if self.size:
            return True
        data = b"".join(self.chunks)
        self.chunks = []
        if not self.sized:
            self.size, self.sized = int.from_bytes(data, "big"), True
            if not 0 < self.size <= REQUEST_LIMIT:
                raise ValueError("a relayed request too large")
            return True
        self.request = wire.unpack(wire.decode(data))
        if self.request is None or not relayed.runnable(self.home, self.request[0], self.request[2]):
            raise ValueError("declined")  # closed before `ready`: it runs by itself
        positional = client.relayable(self.request[1])
        if positional is None:
            raise ValueError("declined")  # help, an error the hook says, Scion's older form
        notify = bool(positional) and positional[0].lstrip().startswith("{")  # Codex's: no stdin read
        if not notify and self.request[3] == wire.HANDED:
            self.source = _source(self.handed)
            if self.source is None:
                raise ValueError("declined")  # a stdin that may block a read: read by the hook
        self.payload = bool(positional)
        self.turn = turns.of(self.client)
        self.stage, self.queued_at = turns.QUEUED, time.monotonic()
        self.deadline = self.queued_at + turns.TURN_WAIT + READ_WAIT  # offered by then
        return True

    def offer(self) -> bool:
        try:
            self.conn.sendall(wire.READY)
        except OSError:
            self.close()
            return False
        self.stage, self.deadline = turns.OFFERED, time.monotonic() + turns.COMMIT_WAIT
        return True

    def complete(self, now: float) -> bool:
        if self.arrival is None or self.arrival.complete(now):
            return True
        self.deadline = self.arrival.due()
        return False

    def run(self) -> None:
        import _socket
        import io

        conn, arrival = self.conn, self.arrival

        def answer(out: bytes, err: bytes, code: int) -> None:
            conn.sendall(wire.encode([out, err, str(code).encode()]))
            conn.shutdown(_socket.SHUT_WR)  # the hook reads to the end: it has all it waits for

        try:
            conn.setblocking(True)
            conn.settimeout(READ_WAIT)
            if self.request is not None:
                cwd, args, environ, _ = self.request
                origin = turns.origin(self.turn)
                stdin = (lambda: io.BytesIO()) if arrival is None else arrival.stdin
                if relayed.run(self.home, self.client, cwd, args, environ, stdin, answer, origin):
                    return
            # Nothing ran (its folder went away meanwhile): the hook runs it itself, on what was read.
            read = b"" if arrival is None else arrival.envelope or b""
            refused = b"" if arrival is None or arrival.refused is None else os.fsencode(str(arrival.refused))
            conn.sendall(wire.encode([b"", b"", wire.DECLINED, read, refused]))
        except (OSError, ValueError):
            return  # the hook is gone: what it was answered, it has
        finally:
            self.close()

    def close(self) -> None:
        if self.source is not None:
            self.source.close()
            self.source = None
        if self.handed >= 0:
            os.close(self.handed)
            self.handed = -1
        self.conn.close()


class Source:
    """A hook's handed stdin as the helper reads it: FD to poll, READ of at most N bytes that
    never blocks, CLOSE for what was opened here."""

    def __init__(self, fd: int, read: Callable[[int], bytes], close: Callable[[], None]) -> None:
        self.fd, self.read, self.close = fd, read, close


def _source(fd: int) -> Source | None:
    """How to read a hook's handed stdin FD without ever blocking: a pipe opened anew, with
    O_NONBLOCK on the new open file (not on the harness's); a socket with MSG_DONTWAIT; a file
    (/dev/null too) as it is. None for anything else (a terminal, a device), and for no FD."""
    import stat

    if fd < 0:
        return None
    found = os.fstat(fd)
    if stat.S_ISFIFO(found.st_mode):
        own = relayed.pipe_reader(f"/proc/self/fd/{fd}")
        return None if own is None else Source(own, lambda n: os.read(own, n), lambda: os.close(own))
    if stat.S_ISSOCK(found.st_mode):
        import _socket

        sock = _socket.socket(fileno=os.dup(fd))
        return Source(sock.fileno(), lambda n: sock.recv(n, _socket.MSG_DONTWAIT), sock.close)
    if stat.S_ISREG(found.st_mode) or (
        stat.S_ISCHR(found.st_mode) and found.st_rdev == os.stat(os.devnull).st_rdev
    ):
        return Source(fd, lambda n: os.read(fd, n), lambda: None)
    return None


def main(argv: list[str]) -> int:
    """The helper as harness_exit.start starts it: --home, and --dialect or
    --dialect-file (for Scion-mode session ends)."""
    options = dict(zip(argv[::2], argv[1::2], strict=True))
    home = options["--home"]
    held = harness_exit.take_lock(home)
    if held is None:
        return 0  # another one took the HOME meanwhile
    _retitle(f"{__name__} --home {home}", NAME)  # not `python -c` and its boot code
    listener = shells = None
    if not registry.in_scion(home):
        preload()  # before it listens: a hook that comes meanwhile runs by itself, not waiting
        listener, shells = listen(home), bash.listen()
        if shells is not None and not bash.announce(home, shells, os.getpid()):
            shells = None
    return _serve(home, held, listener, shells, options.get("--dialect"), options.get("--dialect-file"))


def adopt(home: str, held: int) -> bool:
    """Leave HOME's helper behind this hook process, which holds its watcher lock (HELD) and has
    run its hook: a forked child, with the modules the hook loaded. A helper started anew would
    spend a Python start and its imports (40 ms of CPU) on the CPU the harness wants, as a
    throwaway HOME's first session goes on. Its sockets listen, and its address file is written,
    before this process exits: the harness's next hook is relayed. The child keeps nothing of the
    hook's but them and the lock: not its stdio or other descriptors (the harness reads its pipes
    to their end), folder, session, command line or environment. Returns here only: whether the
    helper was left."""
    # The one thread a hook starts (a hub call, left at its deadline), which a fork could leave
    # holding a lock, needs SCION_AGENT_ID: there nothing is relayed, nor a helper adopted.
    listener, shells = listen(home), bash.listen()
    socks = [sock for sock in (listener, None if shells is None else shells.sock) if sock is not None]
    _let_go({held, *(sock.fileno() for sock in socks)})
    try:
        child = os.fork()
    except OSError:
        child = -1  # no helper: the lock is let go below, the next hook tries again
    if child == 0:
        code = 1
        try:
            os.setsid()
            os.chdir("/")
            _retitle(f"{__name__} --home {home}", NAME)
            from sciontool_py.telemetry.launch import worker_environment

            kept = worker_environment(os.environ)  # what a started helper gets (launch.py)
            os.environ.clear()
            os.environ.update(kept)
            code = _serve(home, held, listener, shells, None, None)
        finally:
            os._exit(code)  # never back into the hook's own code
    if child > 0 and shells is not None:
        # Written here, with the child's pid, before this hook exits. A child that stopped first
        # (no agent to watch) leaves the file naming a pid gone: a shell finds it dead and runs
        # its hook itself, and the next helper writes its own.
        bash.announce(home, shells, child)
    for sock in socks:
        sock.close()  # this process's copy: the child's listens on
    os.close(held)
    return child > 0


def _let_go(keep: set[int]) -> None:
    """Hand back what this hook process holds of its harness, before it forks: stdin, stdout and
    stderr become /dev/null, and every descriptor past them but KEEP is closed (a wrapper's lock,
    a pipe the harness waits on). The hook has written its answer; it only exits after this."""
    from sciontool_py.console import flush_std

    flush_std()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for fd in process.descriptors():
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # listdir's own descriptor, closed meanwhile


def _serve(
    home: str,
    held: int,
    listener: _socket.socket | None,
    shells: bash.Shells | None,
    dialect: str | None,
    dialect_file: str | None,
) -> int:
    """Watch HOME's agents and serve the hooks LISTENER and SHELLS take, holding HELD, the
    watcher's lock; 0, or 1 once something failed (agent.log says what)."""
    from sciontool_py.log.writer import AgentLog

    log = AgentLog(home, quiet=True)
    scion = registry.in_scion(home)
    served = turns.Served()  # one for both: a harness's hooks may come either way
    doors = [door(listener, home)] if listener is not None else []
    if shells is not None:
        doors.append(bash.door(shells, home))
    # Either door readable: both are taken from while a hook of either is on its way.
    servers: dict[int, Callable[[], None]] = {fd: lambda: turns.in_order(doors, served) for fd, _ in doors}

    def stop() -> None:
        if shells is not None:
            bash.withdraw(home, shells)
        if listener is not None:
            listener.close()

    def say_end(proc: Process, ends: list[str]) -> None:
        try:
            if scion:
                harness_exit.end_sessions(log, proc, ends, dialect, dialect_file)
            else:
                for key in ends:
                    harness_exit.end_agent(log, key)
        except Exception as exc:  # one agent's end must not cost the others their watcher
            log.debug(f"Harness exit watch: the end of {ends} not said: {type(exc).__name__}: {exc}")

    if not scion:
        telemetry.start_later()  # relayed hooks and the ends said here: once they go quiet
    # Should this process die, the standby becomes the helper, as main() with these options.
    spare = standby.Standby(harness_exit.options(home, dialect, dialect_file))
    spare.want()  # at once: a helper killed in its first second has one to take its place

    def leave() -> None:
        stop()
        spare.stop()

    leave_on_stop(leave)

    def quiet() -> None:
        telemetry.start_waiting(log)

    try:
        watch(home, say_end, held, servers, stop, quiet, lingering(), spare)
    except Exception as exc:  # detached, stdio on /dev/null: agent.log is the only place to say it
        stop()  # watch() has let its lock go
        log.debug(f"Harness exit watch failed: {type(exc).__name__}: {exc}")
        return 1
    finally:
        spare.stop()
        telemetry.start_waiting(log)  # what the last hooks left, before this helper is gone
    return 0


def leave_on_stop(leave: Callable[[], None]) -> None:
    """Have the stop signals (SIGHUP, SIGINT, SIGTERM) call LEAVE before they end this helper as
    they would have: its address withdrawn (a file naming a dead helper costs a shell nothing,
    but a pid reused by another process of the user could pass for it) and its standby told to
    leave too (a helper told to stop is not one that died). Taken between hooks (turns.in_order)."""
    import _signal  # type: ignore[import-not-found]  # the C module: `signal` imports enum (4 ms)

    def stopped(signum: int, _frame: object) -> None:
        leave()
        _signal.signal(signum, _signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # ended by it, as without this handler

    for signum in turns.STOPS:
        _signal.signal(signum, stopped)


def _retitle(title: str, name: str) -> None:
    """Show TITLE as this process's command line and NAME as its name, and blank the
    environment the kernel shows in /proc/PID/environ: a forked helper would show its hook's
    command line (to `ps`, and to turns.py, a hook that never ends) and keep its harness's API
    keys there; a started one (by the standby too), `python -c` and its boot code. Writes its own
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
