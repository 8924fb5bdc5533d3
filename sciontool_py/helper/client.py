"""The hook's relay: hand the envelope to the HOME's helper, which runs the hook for it.

A harness waits for every hook it fires (Claude Code, Codex and Gemini CLI do,
tens of times a turn). Importing the receiver costs a hook process more than
everything else it does, so outside Scion the HOME's helper (which also
watches its agents' harnesses, receiver/harness_exit.py, and runs as long as an agent
does) keeps the receiver loaded and runs each hook's work for it. This module
is all the hook process then loads: it reads the envelope exactly as the hook
would (receiver/stdin.py's bounds), sends it with the hook's arguments, folder
and environment over a unix socket, and writes back what the helper answered
(stdout, stderr, the exit status).

The socket has an abstract name (no file an agent could plant or replace),
made of the user id and HOME. Each side checks the other's user id
(SO_PEERCRED). When no helper answers (not started yet, dead, another user's
name, a refusal) the hook runs in its own process, as before: relaying is
never the reason a hook fails or differs. Inside Scion nothing is relayed.
"""

from __future__ import annotations

import _socket
import os

from sciontool_py.helper import wire

CONNECT_WAIT = 0.05  # seconds: a helper on this machine accepts at once
# A stopped or stuck helper costs a hook at most BOUND seconds in all: READY_WAIT for its `ready`
# (then the hook runs itself, on the bytes it read), the rest for its answer once told `go` (then
# the hook is the helper's: it is never run twice). relay.bash keeps the same two bounds.
READY_WAIT = 2.0
BOUND = 5.0
# Set by relay.bash for the hook it runs itself because the helper did not take it: not asked again.
PASSED = "SCIONTOOL_HELPER_PASSED"
NO_STATUS = (
    "sciontool hook: the resident helper took the hook but gave no exit status (it stopped, or took over 5 s)"
)
_OFF = ("off", "0", "false", "no")
_HEADER = 12  # three 4-byte lengths: stdout, stderr, and the exit status's own field


def wanted(env: dict[str, str] | os._Environ[str], home: str) -> bool:
    """Whether a hook in this environment hands its work to a helper: outside Scion, with the
    exit watcher (the helper) on."""
    if env.get("SCION_AGENT_ID") or os.path.normpath(home) == "/home/scion":
        return False
    return env.get("SCIONTOOL_EXIT_WATCH", "").strip().lower() not in _OFF


def connect(home: str) -> _socket.socket | None:
    """A connection to HOME's helper, checked to be this user's; None when there is none."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_WAIT)
        sock.connect(wire.address(home))
        if wire.peer_uid(sock) == os.geteuid():
            return sock
    except OSError:
        pass
    sock.close()
    return None


def stdin_of(positional: list[str]) -> bytes:
    """What this hook reads on stdin (its positional arguments say which form it is), with the
    bounds the hook itself uses."""
    from sciontool_py.errors import EventError
    from sciontool_py.receiver.stdin import read_payload, read_stdin

    if positional and positional[0].lstrip().startswith("{"):
        return b""  # Codex's notify: the envelope is the argument; stdin is not read
    if not positional:
        return read_stdin()
    try:
        return read_payload()  # `hook EVENT_NAME` (Copilot CLI): an optional payload
    except (EventError, OSError, ValueError):
        return b""  # no payload to take: the event name alone, as the hook does


def relayable(args: list[str]) -> list[str] | None:
    """The positional arguments of `hook ARGS` when a helper may run it; None for what this
    process must run itself (help, an error the hook itself says, Scion's older status form)."""
    from sciontool_py.errors import SciontoolError
    from sciontool_py.fastpath import HOOK_USAGE, HelpRequested, parse_args

    try:
        _, positional = parse_args(args, HOOK_USAGE, valued=("--event",))
    except (HelpRequested, SciontoolError):
        return None
    if positional[:1] in (["ask_user"], ["task_completed"]) or len(positional) > 1:
        return None  # Scion's older status form (rare), or too many arguments: run here
    return positional


def relay(args: list[str]) -> int | None:
    """`sciontool hook ARGS` run by HOME's helper: its exit status, with its stdout and stderr
    written here; None when no helper ran it (the caller runs the hook itself, and finds stdin
    unread, or the bytes in the second element of the failure it raised)."""
    home = os.environ.get("HOME") or "/home/scion"
    if os.environ.pop(PASSED, None) is not None or not wanted(os.environ, home):
        return None  # popped: the hook's own children (a helper it leaves) never see it
    positional = relayable(args)
    if positional is None:
        return None
    sock = connect(home)
    if sock is None:
        return None
    from time import monotonic

    began = monotonic()
    try:
        try:
            data = stdin_of(positional)
        except Exception as exc:  # a refused envelope (too large, too late): the hook says it
            raise Unrelayed(b"", exc) from None
        cwd = _cwd()
        env = [os.fsencode(f"{k}={v}") for k, v in os.environ.items()]
        request = wire.request(cwd, args, env, data)
        try:
            # Counted from here, not from stdin: a harness may write the envelope late.
            began = monotonic()
            sock.settimeout(READY_WAIT)
            sock.sendall(len(request).to_bytes(8, "big") + request)
            if sock.recv(1) != wire.READY:
                raise OSError("not taken")  # declined, gone, or stuck: the hook runs here
            sock.sendall(wire.GO)
        except (OSError, ValueError):
            raise Unrelayed(data, None) from None
        # The hook is the helper's now: past here it never runs here, unless the helper says it ran
        # nothing (its folder went away meanwhile).
        try:
            sock.settimeout(max(BOUND - (monotonic() - began), 0.001))
            sock.shutdown(_socket.SHUT_WR)
            reply = wire.decode(wire.read_all(sock))
        except (OSError, ValueError):
            reply = []
    finally:
        sock.close()
    if reply == [b"", b"", b"declined"]:
        raise Unrelayed(data, None)
    if len(reply) != 3 or not reply[2].isdigit():
        from sciontool_py.fastpath import error_line

        error_line(NO_STATUS)
        return 1
    from sciontool_py.console import write_stderr, write_stdout
    from sciontool_py.fastpath import RESPONSE_WAIT_SECONDS, error_line

    code = int(reply[2])
    errors = reply[1].decode("utf-8", "surrogateescape")
    if reply[0] and not write_stdout(reply[0].decode("utf-8", "surrogateescape"), RESPONSE_WAIT_SECONDS):
        # One line, as the hook would say both: what it could not write, then the response.
        undelivered = f"stdout not read within {RESPONSE_WAIT_SECONDS:g} s: the response was not delivered"
        said = errors.rstrip("\n")
        errors = ""
        error_line(f"{said}; {undelivered}" if said else f"sciontool hook: {undelivered}")
        code = 1
    if errors:
        write_stderr(errors, 1.0)
    return code


def claim_helper(args: list[str]) -> tuple[str, int] | None:
    """HOME and its watcher lock, for the helper a hook process that runs its hook `hook ARGS`
    itself leaves behind once done (server.adopt): where a helper is wanted and none holds the
    lock. Taken before the hook's work (its own ensure() then starts none) and let go with the
    process, should it die first. Not for what runs no hook (`hook --help`, an unknown option):
    taking the lock would write HOME's .scion folder and lock file."""
    home = os.environ.get("HOME") or "/home/scion"
    if not wanted(os.environ, home) or relayable(args) is None:
        return None
    from sciontool_py.receiver import harness_exit

    held = harness_exit.take_lock(home)
    return None if held is None else (home, held)


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return ""  # removed under the harness: the helper declines, the hook runs here


class Unrelayed(Exception):
    """The helper did not run the hook after stdin was read: the hook runs here on DATA (what
    stdin held), or reports ERROR (stdin's own refusal) as it would have."""

    def __init__(self, data: bytes, error: BaseException | None) -> None:
        super().__init__("not relayed")
        self.data = data
        self.error = error
