"""The resident helper's side of relay.bash: hooks a shell hands over on 127.0.0.1.

A hook that is a bash process, not a Python one, costs the harness a few
milliseconds instead of twenty (docs/performance.md). Bash reaches no unix
socket, only TCP, so outside Scion the resident also listens on a free port of
127.0.0.1 and writes it in $HOME/.scion/relay (mode 0600, replaced atomically,
removed when it stops), with its pid and two fresh tokens. The shell proves it
read that file by sending one token; the helper answers with the other only to
a shell that did, so no process that cannot read the file learns either, and a
listener that took a dead helper's port cannot pass for it.

The hook runs in the shell's folder and environment, read from /proc/PID (as
only this user and root may). A turn, on the shell's connection:

    shell:  relay2 NUL TOKEN NUL PID NUL N NUL ARG NUL ... (its N arguments)
    helper: SERVED ready PORT LF   it will run the hook (otherwise it closes);
                                   PORT takes the envelope; "-": none goes over TCP (Codex's
                                   notify reads no stdin; a pipe the helper opens itself,
                                   through /proc/PID/fd/0)
    shell:  TOKEN LF + stdin, on a connection to PORT (or "go LF" here)
    helper: STATUS OUT ERR [open] LF, then OUT bytes of stdout and ERR of stderr (no proof:
                                   the same connection as the proven ready)
                                   ("open": the envelope came whole from a stdin never
                                   closed, so the shell stops its cat, left waiting on it)

Until the shell connects to PORT (or says go), it can still run the hook
itself with stdin untouched, and does whenever the helper closes, declines or
is slow to answer.
"""

from __future__ import annotations

import os
from _operator import _compare_digest  # hmac.compare_digest's own: hmac loads OpenSSL (8 ms)

from sciontool_py import fs, process, relay, relayed, turns

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from collections.abc import Callable
    from typing import BinaryIO

ADDRESS = ".scion/relay"  # relative to HOME: port, helper pid, the helper's token, the shell's
PROTOCOL = b"relay2"  # relay1 repeated the proof on the answer line
HELLO_LIMIT = 1 << 20  # bytes: a hook's arguments, far past any real command line
ENVIRON_LIMIT = 4 << 20  # bytes of /proc/PID/environ
HELLO_WAIT = 1.0  # seconds for the shell's hello: it sends it as soon as it connects
WAIT = 5.0  # seconds for the shell's next steps (its go, its envelope's connection: a fork)
# The answer when the hook's folder went away after the check (or its process did).
UNRUNNABLE = (b"", b"sciontool hook: the resident helper could not enter the hook's folder\n", 1)


class Shells:
    """The listening socket, and the tokens written beside its port."""

    def __init__(self, sock: _socket.socket, served: bytes, token: bytes) -> None:
        self.sock = sock
        self.served = served  # the helper's token: proves its `ready` (the answer follows on it)
        self.token = token  # the shell's: what proves the hello came from this user


def listen() -> Shells | None:
    """Listen on 127.0.0.1, with fresh tokens; None where it fails (the shells then run their
    hooks themselves). Tokens from os.urandom: `secrets` (and `socket`, _listening's reason)
    would cost a helper 17 ms before its first hook."""
    if not os.path.isdir(f"/proc/{os.getpid()}"):
        return None  # no /proc (macOS): no shell's folder and environment to run its hook in
    try:
        sock = _listening(64)
    except OSError:
        return None
    return Shells(sock, os.urandom(16).hex().encode(), os.urandom(16).hex().encode())


def announce(home: str, shells: Shells, pid: int) -> bool:
    """Say in HOME's address file where SHELLS listen, and that PID (the helper) takes them;
    False, the socket closed, where the file cannot be written."""
    port = shells.sock.getsockname()[1]
    line = b"%d %d %s %s\n" % (port, pid, shells.served, shells.token)
    try:
        fs.write_atomic(home, ADDRESS, line, mode=0o600, sync=False)
    except OSError:
        shells.sock.close()
        return False
    return True


def _listening(backlog: int) -> _socket.socket:
    """A free port on 127.0.0.1, listening, through the C `_socket` module."""
    import _socket

    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def accepted(sock: _socket.socket) -> _socket.socket:
    """The next connection to SOCK, through the C module (as every socket of the helper's: the
    `socket` module would cost a helper 10 ms of imports before its first hook)."""
    import _socket

    fd, _ = sock._accept()  # type: ignore[attr-defined]
    return _socket.socket(fileno=fd)


def withdraw(home: str, shells: Shells) -> None:
    """Remove the address file, then stop listening: a shell from now on runs its hook itself."""
    try:
        fs.remove(home, ADDRESS)
    except OSError:
        pass  # HOME unusable now: the next helper replaces the file, and the port is closed
    shells.sock.close()


def serve(shells: Shells, home: str, served: turns.Served) -> None:
    """Take the shells' hooks, each in its turn (turns.in_order): run it and answer, or close
    before `ready` (the shell runs it)."""
    turns.in_order(shells.sock.fileno(), lambda: _arrive(shells, home), served)


def _arrive(shells: Shells, home: str) -> turns.Waiting | None:
    """The next shell, once its hello proved it read the address file; None for anything else."""
    try:
        shells.sock.setblocking(False)
        conn = accepted(shells.sock)
    except OSError:
        return None  # it gave up meanwhile
    try:
        conn.setblocking(True)
        conn.settimeout(HELLO_WAIT)
        hello = _hello(conn)
        if hello is not None and _compare_digest(hello[0], shells.token):
            pid, argv = hello[1], hello[2]
            if "hook" in argv and _owner(f"/proc/{pid}") == os.geteuid():
                turn = turns.of(pid)

                def run() -> None:
                    try:
                        _serve(conn, pid, argv, shells, home, turns.origin(turn))
                    except (OSError, ValueError):  # a timeout is an OSError
                        pass  # the shell is gone, or sent what relay.bash never sends
                    finally:
                        conn.close()

                return turn, run
    except (OSError, ValueError):
        pass  # the shell is gone, or sent what relay.bash never sends
    conn.close()
    return None


def _serve(conn: _socket.socket, pid: int, argv: list[str], shells: Shells, home: str, origin: int) -> None:
    import io

    conn.settimeout(WAIT)
    args = argv[argv.index("hook") + 1 :]
    positional = relay.relayable(args)
    cwd, environ = process.cwd(pid), _environ(pid)
    if positional is None or environ is None or not relayed.runnable(home, cwd, environ):
        return
    notify = bool(positional) and positional[0].lstrip().startswith("{")  # Codex's: no stdin read
    piped = None if notify else _piped_stdin(pid)
    stream: _socket.socket | None = None  # the envelope's connection, when it comes over TCP

    def answer(out: bytes, err: bytes, code: int) -> None:
        # "open": the envelope came whole from a stdin its harness never closed (no cat: the
        # shell has nothing to stop).
        ended = stream is None or _ended(stream)
        conn.settimeout(relay.REPLY_WAIT)
        status = b"%d %d %d" % (0 if code == 0 else 1, len(out), len(err))
        conn.sendall(status + (b"\n" if ended else b" open\n") + out + err)

    asked = False  # whether relayed.run asked for the envelope
    # What this hook opened, closed last to first however it ends. Not contextlib.ExitStack:
    # importing it (functools, collections) held a forked helper's first hook 2.5 ms.
    opened: list[Callable[[], object]] = []
    try:
        # `ready` first: the helper takes the hook's folder and environment while the shell
        # reads it and sends the envelope (relayed.run calls envelope() after).
        if notify or piped is not None:
            source: BinaryIO = io.BytesIO() if piped is None else open(piped, "rb", buffering=0)  # noqa: SIM115
            opened.append(source.close)
            conn.sendall(shells.served + b" ready -\n")

            def envelope() -> BinaryIO | None:
                nonlocal asked
                asked = True
                # No go: the shell gave up waiting and runs the hook itself, its stdin untouched.
                return source if _line(conn) == b"go" else None

        else:
            data = _listening(1)  # a one-off port for this hook's envelope
            opened.append(data.close)
            data.settimeout(WAIT)
            conn.sendall(shells.served + b" ready %d\n" % data.getsockname()[1])

            def envelope() -> BinaryIO | None:
                nonlocal asked, stream
                asked = True
                stream = accepted(data)  # a timeout: the shell gave up
                opened.append(stream.close)
                data.close()
                stream.settimeout(WAIT)
                if not _compare_digest(_line(stream, 64), shells.token):
                    return None  # not the shell's: a process that guessed the port
                stream.settimeout(None)  # the envelope's own bounds apply (receiver/stdin.py)
                # read(2) on the socket, as socket.makefile's reader does it
                reader = open(stream.fileno(), "rb", buffering=0, closefd=False)  # noqa: SIM115
                opened.append(reader.close)
                return reader

        ran = relayed.run(home, pid, cwd, args, environ, envelope, answer, origin)
        # Its process or folder gone: past `ready`, the shell waits for an answer, so it gets one.
        if not ran and not asked and envelope() is not None:
            answer(*UNRUNNABLE)
    finally:
        for close in reversed(opened):
            close()


def _hello(conn: _socket.socket) -> tuple[bytes, int, list[str]] | None:
    """(token, pid, arguments) from the shell's hello; None for anything else."""
    data = b""
    while True:
        fields = data.split(b"\0")[:-1]  # the complete ones
        if len(fields) >= 4:
            if fields[0] != PROTOCOL or not fields[2].isdigit() or not fields[3].isdigit():
                return None
            count = int(fields[3])
            if len(fields) >= 4 + count:
                argv = [os.fsdecode(a) for a in fields[4 : 4 + count]]
                return fields[1], int(fields[2]), argv
        chunk = conn.recv(1 << 16)
        if not chunk or len(data) + len(chunk) > HELLO_LIMIT:
            return None
        data += chunk


def _line(conn: _socket.socket, limit: int = 16) -> bytes:
    """A short line, read a byte at a time: what follows it is not this function's to take."""
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = conn.recv(1)
        if not chunk:
            break
        data += chunk
    return data.rstrip(b"\n")


def _ended(stream: _socket.socket) -> bool:
    """Whether the shell's cat has sent all of stdin: False when the hook took an object from a
    pipe the harness keeps open (receiver/stdin.py), where cat would wait on it for good."""
    import _socket

    stream.setblocking(False)
    try:
        return stream.recv(1, _socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False


def _piped_stdin(pid: int) -> int | None:
    """The shell's stdin opened anew when it is a pipe (Codex's, Python harnesses'): the helper
    then reads the envelope from the pipe itself, with no cat and no second connection. None for
    anything else, which the shell sends over a port: a unix socket (Node harnesses give those,
    and a socket cannot be opened through /proc), a file, a terminal, /dev/null."""
    import stat

    try:
        # Non-blocking: a pipe whose writer is gone opens at once all the same; no terminal
        # becomes this process's.
        fd = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)  # this open file description only: the pipe's others keep theirs
    return fd


def _owner(path: str) -> int | None:
    try:
        return os.stat(path).st_uid
    except OSError:
        return None


def _environ(pid: int) -> dict[str, str] | None:
    try:
        data = process.read(f"/proc/{pid}/environ", ENVIRON_LIMIT + 1)
    except OSError:
        return None
    if len(data) > ENVIRON_LIMIT:
        return None
    items = (os.fsdecode(item).partition("=") for item in data.split(b"\0") if item)
    return {name: value for name, _, value in items if name}  # "=x": no variable a shell exports
