"""The resident helper's side of relay.bash: hooks a shell hands over on 127.0.0.1.

A hook that is a bash process, not a Python one, costs the harness about
2 ms instead of 20 (docs/performance.md). Bash reaches no unix socket, only
TCP, so outside Scion the resident also listens on a free port of 127.0.0.1
and writes it in $HOME/.scion/relay (mode 0600, replaced atomically, removed
when it stops), with its pid and two fresh tokens. The shell proves it read
that file by sending one token; the helper answers with the other only to a
shell that did, so no process that cannot read the file learns either, and a
listener that took a dead helper's port cannot pass for it.

The envelope and the answer never cross the socket: the helper opens the
shell's stdin, stdout and stderr through /proc/PID/fd (as only this user and
root may) and reads and writes them as the hook process would have. A turn:

    shell:  relay1 NUL TOKEN NUL PID NUL N NUL ARG NUL ... (N arguments)
    helper: SERVED ready LF       it will run the hook (otherwise it closes)
    shell:  go LF                 the shell still waits: the envelope is the helper's
    helper: SERVED STATUS LF      the answer is written; the shell exits STATUS

Until `go`, the shell can still run the hook itself with stdin untouched,
and does whenever the helper closes, declines or is slow to answer.
"""

from __future__ import annotations

import os
import stat
import sys

from sciontool_py import fs, relay, relayed

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket

ADDRESS = ".scion/relay"  # relative to HOME: port, helper pid, the helper's token, the shell's
PROTOCOL = b"relay1"
HELLO_LIMIT = 1 << 20  # bytes: a hook's arguments, far past any real command line
HELLO_WAIT = 1.0  # seconds for the shell's hello and its go: it sends each at once
STDIN_WAIT = 0.2  # seconds for a first byte (or the end) of the envelope before declining
ENVIRON_LIMIT = 4 << 20  # bytes of /proc/PID/environ


class Shells:
    """The listening socket, and the tokens written beside its port."""

    def __init__(self, sock: socket.socket, served: bytes, token: bytes) -> None:
        self.sock = sock
        self.served = served  # the helper's token: what proves the answer is its own
        self.token = token  # the shell's: what proves the hello came from this user


def listen(home: str) -> Shells | None:
    """Listen on 127.0.0.1 and say where in HOME's address file; None where either fails
    (the shells then run their hooks themselves)."""
    import secrets
    import socket

    if not os.path.isdir(f"/proc/{os.getpid()}/fd"):
        return None  # no /proc (macOS): nothing a shell hands over could be opened
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        sock.setblocking(False)
        served, token = secrets.token_hex(16), secrets.token_hex(16)
        port = sock.getsockname()[1]
        fs.write_atomic(home, ADDRESS, f"{port} {os.getpid()} {served} {token}\n", mode=0o600, sync=False)
    except OSError:
        sock.close()
        return None
    return Shells(sock, served.encode(), token.encode())


def withdraw(home: str, shells: Shells) -> None:
    """Remove the address file, then stop listening: a shell from now on runs its hook itself."""
    try:
        fs.remove(home, ADDRESS)
    except OSError:
        pass  # HOME unusable now: the next helper replaces the file, and the port is closed
    shells.sock.close()


def serve(shells: Shells, home: str) -> None:
    """Take one shell's hook: run it and answer, or close before `ready` (the shell runs it)."""
    import socket

    try:
        fd, _ = shells.sock._accept()  # type: ignore[attr-defined]
    except OSError:
        return  # it gave up meanwhile
    opened: list[int] = []
    try:
        with socket.socket(fileno=fd) as conn:
            conn.setblocking(True)
            conn.settimeout(HELLO_WAIT)
            _serve(conn, shells, home, opened)
    except (OSError, ValueError):
        return  # the shell is gone, or sent what relay.bash never sends
    finally:
        for each in opened:
            os.close(each)


def _serve(conn: socket.socket, shells: Shells, home: str, opened: list[int]) -> None:
    import hmac

    hello = _hello(conn)
    if hello is None or not hmac.compare_digest(hello[0], shells.token):
        return
    pid, argv = hello[1], hello[2]
    if "hook" not in argv or _owner(f"/proc/{pid}") != os.geteuid():
        return
    args = argv[argv.index("hook") + 1 :]
    positional = relay.relayable(args)
    cwd, environ = _cwd(pid), _environ(pid)
    if positional is None or environ is None or not relayed.runnable(home, pid, cwd, environ):
        return
    out, err = _open(pid, 1, os.O_WRONLY), _open(pid, 2, os.O_WRONLY)
    opened += [fd for fd in (out, err) if fd is not None]
    stdin = None
    if not positional or not positional[0].lstrip().startswith("{"):  # Codex's notify reads none
        stdin = _open(pid, 0, os.O_RDONLY)
        if stdin is not None:
            opened.append(stdin)
        if stdin is None or not _ready(stdin):
            return
    if out is None or err is None:
        return
    conn.sendall(shells.served + b" ready\n")
    if _line(conn) != b"go":
        return  # the shell gave up waiting and runs the hook itself: its stdin is its own
    import io

    if stdin is None:
        given: io.BufferedIOBase = io.BytesIO()
    else:
        opened.remove(stdin)
        given = open(stdin, "rb")  # noqa: SIM115  # closed with the hook's stdin below
    with given:
        ran = relayed.run(home, pid, cwd, args, environ, given)  # type: ignore[arg-type]
    if ran is None:  # its folder went away after the check
        ran = (b"", b"sciontool hook: the resident helper could not enter the hook's folder\n", 1)
    saved = sys.stdout, sys.stderr
    try:
        sys.stdout = open(out, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(err, "w", closefd=False)  # noqa: SIM115
        code = relay.deliver(*ran)
    finally:
        sys.stdout, sys.stderr = saved
    for each in (out, err):
        opened.remove(each)
        os.close(each)  # the harness sees the end of stdout before the status
    conn.settimeout(relay.REPLY_WAIT)
    conn.sendall(shells.served + (b" 0\n" if code == 0 else b" 1\n"))


def _hello(conn: socket.socket) -> tuple[bytes, int, list[str]] | None:
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


def _line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n") and len(data) < 16:
        chunk = conn.recv(16 - len(data))
        if not chunk:
            break
        data += chunk
    return data.rstrip(b"\n")


def _owner(path: str) -> int | None:
    try:
        return os.stat(path).st_uid
    except OSError:
        return None


def _cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def _environ(pid: int) -> dict[str, str] | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read(ENVIRON_LIMIT + 1)
    except OSError:
        return None
    if len(data) > ENVIRON_LIMIT:
        return None
    items = (os.fsdecode(item).partition("=") for item in data.split(b"\0") if item)
    return {name: value for name, _, value in items}


def _open(pid: int, number: int, flags: int) -> int | None:
    """The shell's stream NUMBER, opened anew: a pipe or a terminal (or /dev/null); None for
    anything else (a file's offset, a socket), which the shell's own hook then handles."""
    path = f"/proc/{pid}/fd/{number}"
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISFIFO(mode):
            return os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
        if stat.S_ISCHR(mode):
            return os.open(path, flags | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        pass
    return None


def _ready(fd: int) -> bool:
    """Whether the envelope has begun (or the pipe ended) within STDIN_WAIT: a harness writes it
    at once, and this helper must not wait on a writer that does not."""
    import select

    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(int(STDIN_WAIT * 1000)))
