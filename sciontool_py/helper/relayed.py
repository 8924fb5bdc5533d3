"""A relayed hook, run inside the helper as the hook's own process would have run it.

Both relays end here: the hook process's (client.py, over the HOME's unix
socket) and the shell's (relay.bash, bash.py). The hook runs in its
folder and environment, on the stdin it was given, its harness looked for
from its own parent; what it writes is kept for the relay to deliver, which
it does once the event's files are written and before the steps the harness
does not wait for (deferred.py).
"""

from __future__ import annotations

import io
import os
import sys

from sciontool_py import process
from sciontool_py.errors import EventError
from sciontool_py.helper import client
from sciontool_py.receiver import stdin

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    from sciontool_py.log.writer import AgentLog


def runnable(home: str, cwd: str, environ: dict[str, str]) -> bool:
    """Whether a hook in CWD and ENVIRON is one this helper runs as it would run."""
    return bool(cwd and environ.get("HOME", "/home/scion") == home and client.wanted(environ, home))


def run(
    home: str,
    client: int,
    cwd: str,
    args: list[str],
    environ: dict[str, str],
    stdin: Callable[[], BinaryIO | None],
    answer: Callable[[bytes, bytes, int], None],
    origin: int = 0,
) -> bool:
    """The relayed hook, as its own process (CLIENT) would have run it: ANSWER gets its stdout,
    stderr and exit status, then its deferred steps run; False (ANSWER not called) when it
    cannot be run so (CLIENT gone, a folder it cannot enter) or STDIN gives no stream. ANSWER
    is called once, when every file the event changes is written (deferred.py).

    STDIN is called once the hook's folder and environment are taken: a shell sends its
    envelope meanwhile (bash.py), so taking them costs its hook nothing. ORIGIN: where its
    harness is looked for (0: CLIENT's parent; the harness itself, as found when the hook came,
    for one that waited for its turn, turns.py)."""
    found = process.stat(client)
    if found is None or not runnable(home, cwd, environ):
        return False
    # A helper told to stop finishes the hook first: turns.in_order, which runs this, holds
    # SIGHUP, SIGINT and SIGTERM for as long as it serves.
    from sciontool_py import fastpath
    from sciontool_py.deferred import AnswerFirst

    saved_env, saved_streams = dict(os.environ), (sys.stdin, sys.stdout, sys.stderr)
    try:
        saved_cwd = os.getcwd()
        os.chdir(cwd)
    except OSError:
        return False
    out, err = io.BytesIO(), io.BytesIO()
    try:
        _become(environ)
        envelope = stdin()
        if envelope is None:
            return False
        sys.stdin = io.TextIOWrapper(envelope)
        sys.stdout = io.TextIOWrapper(out, write_through=True)
        sys.stderr = io.TextIOWrapper(err, write_through=True)
        start = origin or found[2]  # where its harness is looked for: by default its parent

        def hook(args: list[str], log: AgentLog) -> None:
            fastpath.hook_command(args, log, start, in_helper=True)

        with AnswerFirst():
            code = fastpath.guarded("hook", hook, args)
            answer(out.getvalue(), err.getvalue(), code)
        return True
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        _become(saved_env)
        try:
            os.chdir(saved_cwd)
        except OSError:
            os.chdir("/")


def _become(environ: dict[str, str]) -> None:
    """Make os.environ ENVIRON, setting only what differs: hooks of one harness share nearly all
    of it, and each putenv or unsetenv costs (0.4 ms a hook, of 2.2, for clear() and update())."""
    for key in [key for key in os.environ if key not in environ]:
        del os.environ[key]
    for key, value in environ.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


TAKEN = 8  # reads of at most 1 MiB each at one look: a large envelope lets other hooks in between


class Arrival:
    """A committed hook's envelope, read as its bytes come (never waited on: the helper serves
    other hooks meanwhile) from RECEIVE, a read of at most N bytes that never blocks
    (BlockingIOError: nothing yet), under the hook's own rules (stdin.Incoming): a payload's for
    `hook EVENT_NAME` (PAYLOAD), else the envelope's, within the relay's bound (its client
    waits no longer)."""

    def __init__(self, fd: int, receive: Callable[[int], bytes], payload: bool, now: float) -> None:
        limit, wait = (
            (stdin.POSITIONAL_LIMIT, stdin.POSITIONAL_WAIT)
            if payload
            else (stdin.ENVELOPE_LIMIT, client.BOUND)
        )
        self.fd, self.receive = fd, receive
        self.incoming = stdin.Incoming(limit, wait, wait, now)
        self.envelope: bytes | None = None  # once whole
        self.refused: EventError | None = None  # or why it was not taken
        self.take(now)  # usually all there already, as the hook commits

    def take(self, now: float) -> None:
        """What has come, up to TAKEN reads at once (an envelope in one piece, and its end, need
        no second look): as the hook commits, then whenever poll says more came."""
        for _ in range(TAKEN):
            try:
                chunk = self.receive(self.incoming.room())
            except BlockingIOError:
                return  # nothing more yet
            except OSError:
                chunk = b""  # the writer is gone: what came is all
            try:
                self.incoming.feed(chunk, now)
            except EventError as exc:
                self.refused = exc
                return
            if not chunk:
                return

    def complete(self, now: float) -> bool:
        """Whether the hook can run: its envelope whole, ended, refused or out of time."""
        if self.refused is not None or self.envelope is not None:
            return True
        try:
            self.envelope = self.incoming.envelope(now)
        except EventError as exc:
            self.refused = exc
            return True
        return self.envelope is not None

    def due(self) -> float:
        """When to look again if no byte comes (complete)."""
        return self.incoming.due()

    def stdin(self) -> BinaryIO:
        """The envelope as the hook reads its stdin: its bytes, or its refusal when read."""
        return io.BytesIO(self.envelope or b"") if self.refused is None else _Refused(self.refused)


class _Refused(io.BytesIO):
    """A stdin that says why the envelope was not taken (too large, incomplete in time) when read,
    as reading the hook's own stdin would have said it."""

    def __init__(self, error: EventError) -> None:
        super().__init__()
        self.error = error

    def read(self, size: int | None = -1) -> bytes:
        raise self.error

    read1 = read


def pipe_reader(path: str) -> int | None:
    """PATH (a descriptor under /proc) opened anew when it is a pipe: a descriptor of this
    process's own, non-blocking on this open file only (the harness's keeps its mode), never a
    terminal's controller. None for anything else, which a read could block on."""
    import stat

    try:
        # Non-blocking: a pipe whose writer is gone opens at once all the same.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd
