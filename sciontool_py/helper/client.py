"""The hook's relay: hand the envelope to the HOME's helper, which runs the hook for it.

A harness waits for every hook it fires (Claude Code, Codex and Gemini CLI do,
tens of times a turn). Importing the receiver costs a hook process more than
everything else it does, so outside Scion the HOME's helper (which also
watches its agents' harnesses, receiver/harness_exit.py, and runs as long as an agent
does) keeps the receiver loaded and runs each hook's work for it. This module
(and wire.py) is all the hook process then loads: it sends the hook's arguments,
folder and environment over a unix socket, its stdin handed over with them
(SCM_RIGHTS) for the helper to read once the hook is its own, and writes back
what the helper answered (stdout, stderr, the exit status).

The socket has an abstract name (no file an agent could plant or replace),
made of the user id and HOME. Each side checks the other's user id
(SO_PEERCRED). When no helper answers (not started yet, dead, another user's
name, a refusal) the hook runs in its own process, as before: relaying is
never the reason a hook fails or differs. Inside Scion nothing is relayed.
"""

from __future__ import annotations

import _socket
import os
import sys

from sciontool_py.helper import wire

CONNECT_WAIT = 0.05  # seconds: a helper on this machine accepts at once
# A stopped or stuck helper costs a hook at most BOUND seconds in all: READY_WAIT for its `ready`
# (then the hook runs itself, its stdin untouched), the rest for its answer once told `go` (then
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


def relayable(args: list[str]) -> list[str] | None:
    """The positional arguments of `hook ARGS` when a helper may run it; None for what the hook
    process must run itself (help, an error the hook itself says, Scion's older status form).
    Asked by the helper, which has the parser loaded; the hook process only looks for help."""
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
    written here; None when no helper ran it and this process must, its stdin untouched (or, in
    the rare case the helper read it and then could not run the hook, Unrelayed's bytes)."""
    home = os.environ.get("HOME") or "/home/scion"
    if os.environ.pop(PASSED, None) is not None or not wanted(os.environ, home):
        return None  # popped: the hook's own children (a helper it leaves) never see it
    if "-h" in args or "--help" in args:
        return None  # help is this process's to print
    sock = connect(home)
    if sock is None:
        return None
    from time import monotonic

    began = monotonic()
    try:
        # Stdin goes to the helper as it is (SCM_RIGHTS), read there once the hook is the
        # helper's: not a byte of it is read here, nor its reader loaded. A terminal is read as
        # nothing, as the hook reads it.
        tty = os.isatty(0)
        env = [os.fsencode(f"{k}={v}") for k, v in os.environ.items()]
        request = wire.request(_cwd(), args, env, wire.TTY if tty else wire.HANDED)
        message = len(request).to_bytes(8, "big") + request
        handed = [] if tty else [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, (0).to_bytes(4, sys.byteorder))]
        try:
            sock.settimeout(READY_WAIT)
            sock.sendall(message[sock.sendmsg([message], handed) :])
            if sock.recv(1) != wire.READY:
                return None  # declined (help, an error the hook says, a folder gone), or gone
            sock.sendall(wire.GO)
        except (OSError, ValueError):
            return None  # not taken, or stuck before `ready`: the hook runs here, on its stdin
        # The hook is the helper's now: past here it never runs here, unless the helper says it ran
        # nothing (its folder went away meanwhile) and hands back what it read of stdin.
        try:
            sock.settimeout(max(BOUND - (monotonic() - began), 0.001))
            sock.shutdown(_socket.SHUT_WR)
            reply = wire.decode(wire.read_all(sock))
        except (OSError, ValueError):
            reply = []
    finally:
        sock.close()
    if len(reply) == 5 and reply[2] == wire.DECLINED:
        raise Unrelayed(reply[3], os.fsdecode(reply[4]))
    from sciontool_py.console import RESPONSE_WAIT_SECONDS, write_stderr, write_stdout

    if len(reply) != 3 or not reply[2].isdigit():
        write_stderr(NO_STATUS + "\n", 1.0)
        return 1
    code = int(reply[2])
    errors = reply[1].decode("utf-8", "surrogateescape")
    if reply[0] and not write_stdout(reply[0].decode("utf-8", "surrogateescape"), RESPONSE_WAIT_SECONDS):
        from sciontool_py.fastpath import error_line

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
    """The helper took the hook and read its stdin, then could not run it (its folder went away
    meanwhile): the hook runs here on DATA, what stdin held, or says ERROR, stdin's refusal."""

    def __init__(self, data: bytes, error: str) -> None:
        super().__init__("not relayed")
        self.data = data
        self.error = error
