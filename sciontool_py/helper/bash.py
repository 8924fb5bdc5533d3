"""The helper's side of relay.bash: hooks a shell hands over on 127.0.0.1.

A hook that is a bash process, not a Python one, costs the harness a few
milliseconds instead of twenty (docs/performance.md). Bash reaches no unix
socket, only TCP, so outside Scion the helper also listens on a free port of
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
import time
from _operator import _compare_digest  # hmac.compare_digest's own: hmac loads OpenSSL (8 ms)

from sciontool_py import fs, process, turns
from sciontool_py.helper import client, relayed

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from typing import BinaryIO

ADDRESS = ".scion/relay"  # relative to HOME: port, helper pid and start, its token, the shell's
PROTOCOL = b"relay2"  # relay1 repeated the proof on the answer line
HELLO_LIMIT = 1 << 20  # bytes: a hook's arguments, far past any real command line
ENVIRON_LIMIT = 4 << 20  # bytes of /proc/PID/environ
HELLO_WAIT = 1.0  # seconds for the shell's hello: it sends it as soon as it connects
WAIT = 5.0  # seconds for the shell's next steps (its go, its envelope's connection: a fork)
# Connections a listener holds unaccepted: a burst of a harness's hooks (100 at once) must find
# room, as must a shell's envelope beside connections another user makes to that port.
BACKLOG = 4096
DATA_BACKLOG = 64
# The answer when the hook's folder went away after the check (or its process did).
UNRUNNABLE = (b"", b"sciontool hook: the resident helper could not enter the hook's folder\n", 1)
# sock_diag(7): the uid of the socket at a TCP connection's other end, asked of the kernel by the
# connection's two ends (one request, 10 us; /proc/net/tcp is read whole: 7 ms with 500 sockets).
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_AF_INET, _IPPROTO_TCP = 2, 6
_INET_DIAG_NOCOOKIE = b"\xff" * 8
_UID_AT = 16 + 64  # nlmsghdr, then inet_diag_msg's uid


class Shells:
    """The listening socket, and the tokens written beside its port."""

    def __init__(self, sock: _socket.socket, served: bytes, token: bytes) -> None:
        self.sock = sock
        self.served = served  # the helper's token: proves its `ready` (the answer follows on it)
        self.token = token  # the shell's: what proves the hello came from this user
        self.diag: _socket.socket | None = None  # the netlink socket that asks for peers' uids

    def peer_is_mine(self, conn: _socket.socket) -> bool:
        """Whether the process at CONN's other end (over 127.0.0.1) is this user's: asked of the
        kernel before a byte is read, as any user on the machine may connect to the port."""
        import _socket

        if self.diag is None:  # made in the helper's own process (adopt forks after listen)
            self.diag = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG)
        (here, port), (there, peer) = conn.getsockname(), conn.getpeername()
        # The socket whose own end is the peer's: its port and address, then ours.
        ends = peer.to_bytes(2, "big") + port.to_bytes(2, "big")
        ends += _socket.inet_aton(there).ljust(16, b"\0") + _socket.inet_aton(here).ljust(16, b"\0")
        request = bytes((_AF_INET, _IPPROTO_TCP, 0, 0)) + b"\xff" * 4 + ends + bytes(4) + _INET_DIAG_NOCOOKIE
        header = (16 + len(request)).to_bytes(4, "little") + _SOCK_DIAG_BY_FAMILY.to_bytes(2, "little")
        header += _NLM_F_REQUEST.to_bytes(2, "little") + bytes(8)
        try:
            self.diag.send(header + request)
            # The kernel answers within send(): waiting is never needed.
            reply = self.diag.recv(1024, _socket.MSG_DONTWAIT)
        except OSError:
            return False
        if len(reply) < _UID_AT + 4 or reply[4:6] != header[4:6]:
            return False  # an error: no such socket (the peer is gone)
        return int.from_bytes(reply[_UID_AT : _UID_AT + 4], "little") == os.geteuid()


def listen() -> Shells | None:
    """Listen on 127.0.0.1, with fresh tokens; None where it fails (the shells then run their
    hooks themselves). Tokens from os.urandom: `secrets` (and `socket`, _listening's reason)
    would cost a helper 17 ms before its first hook."""
    if not os.path.isdir(f"/proc/{os.getpid()}"):
        return None  # no /proc (macOS): no shell's folder and environment to run its hook in
    try:
        sock = _listening(BACKLOG)
    except OSError:
        return None
    return Shells(sock, os.urandom(16).hex().encode(), os.urandom(16).hex().encode())


def announce(home: str, shells: Shells, pid: int) -> bool:
    """Say in HOME's address file where SHELLS listen, and that PID (the helper) takes them, with
    its start time (a pid reused is not it); False, the socket closed, where the file cannot be
    written or PID is gone."""
    port = shells.sock.getsockname()[1]
    found = process.stat(pid)
    try:
        if found is None:
            raise OSError("the helper is gone")
        line = b"%d %d %d %s %s\n" % (port, pid, found[3], shells.served, shells.token)
        fs.write_atomic(home, ADDRESS, line, mode=0o600, sync=False)
    except OSError:
        shells.sock.close()
        return False
    return True


def _listening(backlog: int) -> _socket.socket:
    """A free port on 127.0.0.1, listening, non-blocking, through the C `_socket` module."""
    import _socket

    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def accepted(sock: _socket.socket) -> _socket.socket:
    """The next connection to SOCK, non-blocking, through the C module (as every socket of the
    helper's: the `socket` module would cost a helper 10 ms of imports before its first hook)."""
    import _socket

    fd, _ = sock._accept()  # type: ignore[attr-defined]
    conn = _socket.socket(fileno=fd)
    conn.setblocking(False)
    return conn


def withdraw(home: str, shells: Shells) -> None:
    """Remove the address file, then stop listening: a shell from now on runs its hook itself."""
    try:
        fs.remove(home, ADDRESS)
    except OSError:
        pass  # HOME unusable now: the next helper replaces the file, and the port is closed
    shells.sock.close()


def door(shells: Shells, home: str) -> turns.Door:
    """The shells' listening socket, for turns.in_order."""
    return shells.sock.fileno(), lambda: _arrive(shells, home)


def _arrive(shells: Shells, home: str) -> Shell | None:
    """The next shell's connection, when its peer is this user's; None for anything else."""
    try:
        conn = accepted(shells.sock)
    except OSError:
        return None  # it gave up meanwhile
    if shells.peer_is_mine(conn):
        return Shell(conn, shells, home)
    conn.close()  # another user's: not a byte read, nothing said
    return None


class Shell:
    """One shell's hook, from its hello to its answer (turns.Pending)."""

    def __init__(self, conn: _socket.socket, shells: Shells, home: str) -> None:

        self.conn, self.shells, self.home = conn, shells, home
        self.stage = turns.READING
        self.turn: turns.Turn | None = None
        self.queued_at = 0.0
        self.deadline = time.monotonic() + HELLO_WAIT
        self.got = b""  # the hello so far, then the envelope connection's proof so far
        self.pid, self.argv = 0, [""]
        self.data: _socket.socket | None = None  # the envelope's one-off port
        self.stream: _socket.socket | None = None  # the envelope's connection to it
        self.source: int | None = None  # the shell's stdin pipe, opened here (non-blocking)
        self.positional: list[str] = []
        self.arrival: relayed.Arrival | None = None  # its envelope, once the hook is committed
        self.cwd = ""
        self.environ: dict[str, str] = {}

    def fileno(self) -> int:
        if self.source is not None and self.stage == turns.COMMITTED:
            return self.source
        ahead = self.stream or (self.data if self.stage == turns.OFFERED else None) or self.conn
        return ahead.fileno()

    def advance(self) -> bool:
        try:
            if self.stage == turns.READING:
                return self._hello()
            if self.stage == turns.OFFERED and self.data is not None:
                return self._envelope()
            if self.stage == turns.OFFERED:
                word = _line(self.conn, 3)
                if word is None:
                    return True  # more to come
                if word == b"go":
                    self._commit()
                    return True
            if self.stage == turns.COMMITTED and self.arrival is not None:
                self.arrival.take(time.monotonic())
                self.deadline = self.arrival.due()
                return True
        except (OSError, ValueError):  # a timeout is an OSError
            pass  # the shell is gone, or sent what relay.bash never sends
        self.close()  # queued: a word before `ready`, or the shell gave up (it runs the hook)
        return False

    def _hello(self) -> bool:

        chunk = self.conn.recv(1 << 16)
        if not chunk or len(self.got) + len(chunk) > HELLO_LIMIT:
            raise ValueError("no hello")
        self.got += chunk
        hello = _parse_hello(self.got)
        if hello is None:
            return True  # more to come
        token, self.pid, self.argv = hello
        if not _compare_digest(token, self.shells.token) or "hook" not in self.argv:
            raise ValueError("not a hello of relay.bash's")
        if _owner(f"/proc/{self.pid}") != os.geteuid():
            raise ValueError("not this user's process")
        self.got = b""
        self.turn = turns.of(self.pid)
        self.stage, self.queued_at = turns.QUEUED, time.monotonic()
        self.deadline = self.queued_at + turns.TURN_WAIT + WAIT  # offered by then; a safety
        return True

    def _envelope(self) -> bool:
        """The envelope's connection: accepted (this user's only), then its proof."""
        assert self.data is not None
        if self.stream is None:
            stream = accepted(self.data)
            if self.shells.peer_is_mine(stream):
                self.stream = stream
            else:
                stream.close()  # another user's, who found the port: the shell's may still come
            return True
        proof = _line(self.stream, 64)
        if proof is None:
            return True  # more to come
        if not _compare_digest(proof, self.shells.token):
            raise ValueError("not the shell's")
        self._commit()
        return True

    def _commit(self) -> None:
        """The hook is the helper's: its envelope is read from here on as it comes (Arrival)."""
        self.stage, now = turns.COMMITTED, time.monotonic()
        payload = bool(self.positional)  # `hook EVENT_NAME`'s optional payload
        if self.source is not None:
            source = self.source
            self.arrival = relayed.Arrival(source, lambda n: os.read(source, n), payload, now)
        elif self.stream is not None:
            stream = self.stream
            self.arrival = relayed.Arrival(stream.fileno(), stream.recv, payload, now)
        if self.arrival is not None:
            self.deadline = self.arrival.due()

    def complete(self, now: float) -> bool:
        if self.arrival is None or self.arrival.complete(now):
            return True
        self.deadline = self.arrival.due()
        return False

    def offer(self) -> bool:
        """`ready` once the hook is one to run here: its arguments, folder and environment."""

        try:
            args = self.argv[self.argv.index("hook") + 1 :]
            positional = client.relayable(args)
            self.cwd, environ = process.cwd(self.pid), _environ(self.pid)
            if (
                positional is not None
                and environ is not None
                and relayed.runnable(self.home, self.cwd, environ)
            ):
                self.environ = environ
                notify = bool(positional) and positional[0].lstrip().startswith("{")  # Codex's
                # A pipe (Codex's, Python harnesses') is read here, with no cat and no second
                # connection; anything else comes over a port (a socket, as Node harnesses give
                # it, cannot be opened through /proc).
                piped = None if notify else relayed.pipe_reader(f"/proc/{self.pid}/fd/0")
                if notify or piped is not None:
                    self.source, self.positional = piped, positional
                    self.conn.sendall(self.shells.served + b" ready -\n")
                else:
                    self.positional = positional
                    self.data = _listening(DATA_BACKLOG)  # a one-off port for this hook's envelope
                    port = self.data.getsockname()[1]
                    self.conn.sendall(self.shells.served + b" ready %d\n" % port)
                self.stage, self.deadline = turns.OFFERED, time.monotonic() + turns.COMMIT_WAIT
                return True
        except (OSError, ValueError):
            pass  # the shell is gone
        self.close()
        return False

    def run(self) -> None:
        import io

        stream, conn, arrival = self.stream, self.conn, self.arrival

        def answer(out: bytes, err: bytes, code: int) -> None:
            # "open": the envelope came whole from a stdin its harness never closed (no cat: the
            # shell has nothing to stop).
            ended = stream is None or (arrival is not None and arrival.incoming.ended) or _ended(stream)
            conn.setblocking(True)
            conn.settimeout(WAIT)
            status = b"%d %d %d" % (0 if code == 0 else 1, len(out), len(err))
            conn.sendall(status + (b"\n" if ended else b" open\n") + out + err)

        def envelope() -> BinaryIO:
            # Read already: the hook reads it as it would have read its stdin, or its refusal.
            return io.BytesIO() if arrival is None else arrival.stdin()

        try:
            args = self.argv[self.argv.index("hook") + 1 :]
            # Its process or folder gone: the shell, committed, waits for an answer, so it gets one.
            if not relayed.run(
                self.home, self.pid, self.cwd, args, self.environ, envelope, answer, turns.origin(self.turn)
            ):
                answer(*UNRUNNABLE)
        except (OSError, ValueError):
            pass  # the shell is gone
        finally:
            self.close()

    def close(self) -> None:
        if self.source is not None:
            os.close(self.source)
            self.source = None
        for each in (self.stream, self.data, self.conn):
            if each is not None:
                each.close()


def _parse_hello(data: bytes) -> tuple[bytes, int, list[str]] | None:
    """(token, pid, arguments) from a whole hello; None while it is not whole; ValueError for
    what relay.bash never sends."""
    fields = data.split(b"\0")[:-1]  # the complete ones
    if len(fields) < 4:
        return None
    if fields[0] != PROTOCOL or not fields[2].isdigit() or not fields[3].isdigit():
        raise ValueError("not a relay2 hello")
    count = int(fields[3])
    if len(fields) < 4 + count:
        return None
    return fields[1], int(fields[2]), [os.fsdecode(a) for a in fields[4 : 4 + count]]


def _line(conn: _socket.socket, limit: int) -> bytes | None:
    """A short line from a non-blocking CONN, taken whole or not at all (None: not all here yet;
    ValueError: none within LIMIT bytes, or the end): what follows is not this function's."""
    import _socket

    ahead = conn.recv(limit + 1, _socket.MSG_PEEK)
    end = ahead.find(b"\n")
    if end < 0:
        if not ahead or len(ahead) > limit:
            raise ValueError("no line")
        return None
    return conn.recv(end + 1)[:-1]


def _ended(stream: _socket.socket) -> bool:
    """Whether the shell's cat has sent all of stdin: False when the hook took an object from a
    pipe the harness keeps open (receiver/stdin.py), where cat would wait on it for good."""
    import _socket

    stream.setblocking(False)
    try:
        return stream.recv(1, _socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False


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
