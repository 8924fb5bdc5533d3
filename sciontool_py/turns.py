"""A hook's turn: after every earlier hook its harness started and did not wait for.

Claude Code runs a hook marked `"async": true` without waiting for it (`harness
install` marks every event but five, docs/harnesses.md), so
two of its hooks can run at once and the later can reach the state first: a
tool's end before its start leaves the agent executing. A harness starts each
hook as a child process of its own (`sh -c COMMAND`), in the order of the
events, each running `sciontool hook` with the same arguments (through a shell,
the relay, then sciontool itself, its command line changing as each execs the
next). So a hook's turn comes once no earlier child of its harness running a
hook with its arguments still runs: every earlier event has been applied then.
A hook in its own process waits for it (wait); the helper, which runs
relayed hooks one at a time, serves a waiting hook once its earlier ones are
served (in_order).

Bounded: a hook that waited TURN_WAIT goes ahead, out of order rather than
never. A harness that waits for every hook has no earlier child running, and a
hook run by hand (its parent a terminal's shell) is no hook child of a harness.
"""

from __future__ import annotations

import os

from sciontool_py import process

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Container
    from typing import Protocol

    class Pending(Protocol):
        """A client's connection on its way to a served hook (in_order)."""

        stage: int  # READING, QUEUED, OFFERED or COMMITTED
        turn: Turn | None  # known from QUEUED on; None: it waits for no other hook
        queued_at: float  # time.monotonic() when it was QUEUED
        deadline: float  # time.monotonic() past which it is closed; COMMITTED: looked at again

        def fileno(self) -> int:
            """What to poll: readable, its stage can move on (or its client is gone)."""

        def advance(self) -> bool:
            """Read what came; False once it is closed (a client gone, or a word no relay says)."""

        def offer(self) -> bool:
            """Say `ready`: its turn came. False once it is closed (it will not be run)."""

        def complete(self, now: float) -> bool:
            """Whether the hook, COMMITTED, can run: all it reads is here (or never will be)."""

        def run(self) -> None:
            """Run the hook its client committed and answer; closes it."""

        def close(self) -> None:
            """Let it go unserved: its client runs the hook itself."""

    # A listening socket's fd, and what takes its next connection (None: refused, or none came).
    Door = tuple[int, Callable[[], "Pending | None"]]

Spawn = tuple[int, int]  # (pid, start time) of the harness's child that runs a hook
TURN_WAIT = 3.0  # seconds a hook waits for the earlier ones while none ends: each takes a few ms to 0.1 s
TURN_LIMIT = 25.0  # seconds it waits in all, under the 30 s a harness may give a hook
POLL = 0.002  # seconds between two looks at the harness's children
COMMIT_WAIT = 1.0  # seconds for a client's `go` once told `ready`: it says it at once
LOOK_AGAIN = 0.1  # seconds between two looks at whether the hooks before it are at work
RESCAN = 0.25  # seconds between two readings of the harness's children while none ends
DONE_KEPT = 256  # hook children remembered as served: far more than one harness runs at once


class Turn:
    """The hook's place among its harness's children: SPAWN, the child it runs under."""

    def __init__(self, spawn: Spawn, harness: int, arguments: bytes) -> None:
        self.spawn = spawn
        self.harness = harness
        self.arguments = arguments  # the hook's, after `sciontool hook`

    def earlier(self, done: Container[Spawn] = ()) -> list[Spawn]:
        """The earlier hook children of the harness still running and not in DONE."""
        found = []
        for pid in process.children(self.harness):
            if pid == self.spawn[0]:
                continue
            seen = process.stat(pid)
            if seen is None or seen[1] in process.ENDED or not process.runs_a_hook_stage(seen[0]):
                continue
            spawn = (pid, seen[3])
            # Started before (the same clock tick: the lower pid, as pids are handed out in order).
            before = (seen[3], pid) < (self.spawn[1], self.spawn[0])
            if not before or spawn in done:
                continue
            # Empty while it execs (`sh -c '...; exec sciontool hook'`): the next look reads it.
            listed = process.cmdline(pid)
            if not listed or _arguments(listed) == self.arguments:
                found.append(spawn)
        return found


class Served:
    """The hook children whose hooks a helper ran, oldest first, the last DONE_KEPT of them: such
    a child may still be exiting when the next hook's turn is looked at."""

    def __init__(self) -> None:
        self.spawns: dict[Spawn, None] = {}

    def __contains__(self, spawn: object) -> bool:
        return spawn in self.spawns

    def add(self, spawn: Spawn) -> None:
        self.spawns[spawn] = None
        if len(self.spawns) > DONE_KEPT:
            del self.spawns[next(iter(self.spawns))]


# A hook's way through the helper (Pending.stage): its request read, its turn awaited, `ready`
# sent (the client may still run it itself), the client's word that it is the helper's.
READING, QUEUED, OFFERED, COMMITTED = range(4)
STOPS = frozenset((1, 2, 15))  # SIGHUP, SIGINT, SIGTERM (Linux's numbers: only Linux relays)


def in_order(doors: list[Door], served: Served) -> None:
    """Take the hooks that come through DOORS and serve them, each in its harness's order: once
    every earlier hook of its harness is served or has ended, or TURN_WAIT after it was queued.
    Every connection is read here as its bytes come, never waited on, so a client that stalls
    mid-request holds no other hook (another user's is refused before a byte is read, by its
    door); only the hooks' runs (Pending.run) are one at a time. Returns once no connection is
    left.

    The helper's stop signals wait meanwhile: once one is pending, no connection is taken, those
    not offered yet are closed (their clients run their hooks themselves) and those offered are
    finished or given up; the signal is taken on return (server.leave_on_stop)."""
    import _signal  # type: ignore[import-not-found]  # the C module: `signal` imports enum (4 ms)
    import select
    import time

    held = _signal.pthread_sigmask(_signal.SIG_BLOCK, STOPS)
    try:
        listening = dict(doors)
        pending: list[Pending] = []
        poller = select.poll()
        for fd in listening:
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(0):
            _arrive(listening[fd], pending)
        while pending:
            now = time.monotonic()
            stopping = not STOPS.isdisjoint(_signal.sigpending())
            for hook in [
                h
                for h in pending
                if h.stage < COMMITTED and (h.deadline <= now or (stopping and h.stage < OFFERED))
            ]:
                hook.close()  # its client is stuck, gone or too late, or this helper stops
                pending.remove(hook)
            # Started first, first (the same tick: the lower pid); one waiting for none, at once.
            pending.sort(key=_started)
            # A committed hook whose envelope is still on its way holds no other (its own bounds).
            committed = next((h for h in pending if h.stage == COMMITTED and h.complete(now)), None)
            if committed is not None:
                pending.remove(committed)
                committed.run()
                if committed.turn is not None:
                    served.add(committed.turn.spawn)
                continue
            # What a queued hook waits for: a pidfd on the newest earlier hook of its harness (-1:
            # the kernel has none, look again after POLL; -2: it ended, look again at once).
            blockers: list[int] = []
            waiting: set[int] = set()  # harnesses one of whose hooks waits: their later ones do too
            # Offered side by side: a client stopped after its `ready` holds no other hook.
            for hook in [h for h in pending if h.stage == QUEUED]:
                if hook.turn is not None and hook.turn.harness in waiting:
                    continue
                late = now >= hook.queued_at + TURN_WAIT
                earlier = [] if hook.turn is None else hook.turn.earlier(served)
                if late or not earlier:
                    for spawn in earlier:
                        served.add(spawn)  # waited for once: no later hook waits for it again
                    if not hook.offer():
                        pending.remove(hook)
                elif hook.turn is not None:
                    waiting.add(hook.turn.harness)
                    blocker = process.open_pidfd(max(earlier, key=lambda spawn: (spawn[1], spawn[0])))
                    blockers.append(-2 if blocker is None else blocker)
            if not pending:
                _close_all(blockers)
                break
            poller = select.poll()
            by_fd = {hook.fileno(): hook for hook in pending}
            for fd in by_fd:
                poller.register(fd, select.POLLIN)
            if not stopping:
                for fd in listening:
                    poller.register(fd, select.POLLIN)
            for blocker in blockers:
                if blocker >= 0:
                    poller.register(blocker, select.POLLIN)
            wait = min(h.deadline for h in pending) - time.monotonic()
            if blockers:  # a queued hook's earlier one may also turn out to run no hook
                wait = min(wait, 0.0 if -2 in blockers else POLL if -1 in blockers else LOOK_AGAIN)
            try:
                for fd, _ in poller.poll(max(0.0, wait) * 1000 + 1):
                    if fd in listening:
                        _arrive(listening[fd], pending)
                    elif fd in by_fd and not by_fd[fd].advance():
                        pending.remove(by_fd[fd])
            finally:
                _close_all(blockers)
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, held)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        if fd >= 0:
            os.close(fd)


def _arrive(arrive: Callable[[], Pending | None], pending: list[Pending]) -> None:
    hook = arrive()
    if hook is not None:
        pending.append(hook)


def _started(hook: Pending) -> tuple[int, int]:
    return (hook.turn.spawn[1], hook.turn.spawn[0]) if hook.turn is not None else (0, 0)


def of(pid: int) -> Turn | None:
    """The turn of the hook process PID (or one of its descendants); None when it runs under no
    harness as a hook."""
    chain = process.up_to_harness(pid)
    if chain is None:
        return None
    spawn_pid, start, _ = chain[-2]
    arguments = _arguments(process.cmdline(spawn_pid))
    if arguments is None:
        return None  # not started as a hook (a terminal's shell, where it was typed)
    return Turn((spawn_pid, start), chain[-1][0], arguments)


def origin(turn: Turn | None) -> int:
    """Where a hook's harness is looked for once it has had its turn: the harness found before it
    waited, which a shell between the two killed meanwhile (an interrupt) cannot hide; 0 (its
    parent) for a hook with no turn."""
    return 0 if turn is None else turn.harness


def wait() -> int:
    """Return once the earlier hooks of this process's harness have ended; or once TURN_WAIT has
    passed in which none ended and no hook's work landed (the records folder, registry.progress:
    a burst of a hundred goes on in its order, one stuck hook holds the rest TURN_WAIT); or
    TURN_LIMIT in all: where its harness is looked for then (origin)."""
    turn = of(os.getpid())
    left = [] if turn is None else turn.earlier()
    if turn is None or not left:
        return origin(turn)
    import time

    from sciontool_py import fs, registry

    progress = registry.progress(fs.home_dir())
    mark = progress()
    now = time.monotonic()
    stall, limit, rescan = now + TURN_WAIT, now + TURN_LIMIT, now + RESCAN
    while left and now < min(stall, limit):
        # The newest earlier hook: it ends after the ones before it, each in its own turn.
        newest = max(left, key=lambda spawn: (spawn[1], spawn[0]))
        ended = _ends(newest, min(stall, limit, now + LOOK_AGAIN) - now)
        now = time.monotonic()
        seen = progress()
        if ended or seen != mark:
            mark, stall = seen, now + TURN_WAIT
        if ended or now >= rescan:  # a child mid-exec may turn out to run no hook
            left, rescan = turn.earlier(), now + RESCAN
    return origin(turn)


def _ends(spawn: Spawn, seconds: float) -> bool:
    """Whether SPAWN exits within SECONDS, waited for on a pidfd (no CPU spent looking)."""
    import select

    fd = process.open_pidfd(spawn)
    if fd is None:
        return True
    if fd < 0:  # no pidfds here: look again after a while
        import time

        time.sleep(min(max(seconds, 0.0), POLL))
        return not process.alive(spawn)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(max(seconds, 0.0) * 1000))
    finally:
        os.close(fd)


def _arguments(cmdline: bytes) -> bytes | None:
    """The options of the hook the process runs as its own command (None when it runs none): its
    program is sciontool (`sciontool hook ...`, `python -m sciontool_py hook ...`), the shell relay
    handed it (`bash relay.bash PROGRAM hook ...`), or a shell runs it as one of its line's
    commands (`sh -c 'sleep 1; exec sciontool hook ...'`). A process that only names it, a tool
    (`grep "sciontool hook"`, `sh -c 'echo sciontool hook'`, an editor of a file of that name) or
    a script handed the hook as its arguments (opencode's exit watcher, `sh -c SCRIPT sh PROGRAM
    hook ...`, lives as long as opencode), is no hook to wait for."""
    argv = cmdline.split(b"\0")
    if argv and not argv[-1]:
        argv.pop()  # the NUL that ends the last argument
    return _hook_options(argv, 0)


MAX_NESTED = 4  # shell lines inside shell lines (`sh -c "timeout 9 bash -c '...'"`) looked into


def _hook_options(argv: list[bytes], depth: int) -> bytes | None:
    """The options after `hook` when ARGV is a command that runs it; DEPTH: the shell lines it is
    in."""
    if not argv:
        return None
    program = argv[0].rpartition(b"/")[2]
    if program.startswith(b"sciontool"):
        rest = argv[1:]
    elif program.startswith(b"python"):
        rest = _python_run(argv[1:])
    elif process.is_shell(program):
        operands = [n for n, word in enumerate(argv[1:], 1) if not word.startswith(b"-")]
        first = operands[0] if operands else len(argv)
        if any(b"c" in word[1:] and not word.startswith(b"--") for word in argv[1:first]):
            return _line_hook(argv[first], depth + 1) if first < len(argv) else None
        script = argv[first].rpartition(b"/")[2] if first < len(argv) else b""
        return _hook_options(argv[first + 1 :], depth) if script == b"relay.bash" else None
    elif process.is_wrapper(program):
        # `timeout 30 nice flock LOCK sh -c LINE`: the first program it is handed decides (a
        # shell line handed with -c: flock's, su's).
        for at, word in enumerate(argv[1:], 1):
            if word == b"-c" and at + 1 < len(argv):
                return _line_hook(argv[at + 1], depth + 1)
            name = word.rpartition(b"/")[2]
            if name.startswith((b"sciontool", b"python")) or process.is_shell(name):
                return _hook_options(argv[at:], depth)
        return None
    else:
        return None
    if not rest or rest[0] != b"hook":
        return None
    # Its options: a payload handed as an argument (Codex's notify, fired just before the
    # SessionEnd hook) is none.
    flags = []
    for word in rest[1:]:
        if not word.startswith(b"-"):
            break
        flags.append(word)
    return b" ".join(flags)


def _python_run(argv: list[bytes]) -> list[bytes]:
    """What follows the script or module a Python runs, when it is sciontool's; [] otherwise."""
    at = 0
    while at < len(argv) and argv[at].startswith(b"-") and argv[at] != b"-m":
        at += 2 if argv[at] in (b"-X", b"-W") else 1  # the two options that take a value apart
    if at + 1 < len(argv) and argv[at] == b"-m" and argv[at + 1] in (b"sciontool_py", b"sciontool"):
        return argv[at + 2 :]
    if at < len(argv) and argv[at].rpartition(b"/")[2].startswith(b"sciontool"):
        return argv[at + 1 :]
    return []


MAX_LINE = 8192  # bytes of a shell line read: a harness's hook command is one or two hundred


def _line_hook(line: bytes, depth: int) -> bytes | None:
    """The options of the hook a shell line runs as one of its commands, as harnesses write it:
    `sciontool hook ...`, `... ; exec sciontool hook ...`, `A=1 sciontool hook ...`, `. relay.bash
    sciontool hook ... || exec bash relay.bash ...` (the relay read into the harness's bash)."""
    if len(line) > MAX_LINE or depth > MAX_NESTED:
        return None
    for words in _commands(line):
        while words and (words[0] == b"exec" or (b"=" in words[0] and not words[0].startswith(b"="))):
            words = words[1:]  # `exec`, and the variables the command is given
        if words and words[0] in (b".", b"source") and words[1:2] and words[1].endswith(b"relay.bash"):
            words = words[2:]
        found = _hook_options(words, depth)
        if found is not None:
            return found
    return None


def _commands(line: bytes) -> list[list[bytes]]:
    """The simple commands of a shell line, each as its words (quotes taken off): split at
    ; & | && || and newlines outside quotes. Enough for the lines harnesses write; anything the
    shell would expand is kept as written."""
    commands: list[list[bytes]] = [[]]
    word = bytearray()
    quote = 0
    started = False  # a word is under way (even an empty one: '')
    escaped = False
    for byte in line:
        if escaped:
            word.append(byte)
            escaped = False
        elif quote:
            if byte == quote:
                quote = 0
            elif byte == 0x5C and quote == 0x22:  # a backslash inside double quotes
                escaped = True
            else:
                word.append(byte)
        elif byte in (0x27, 0x22):  # ' and "
            quote, started = byte, True
        elif byte == 0x5C:
            escaped = started = True
        elif byte in _BREAKS or byte in _SPACE:
            if started:
                commands[-1].append(bytes(word))
                word.clear()
                started = False
            if byte in _BREAKS and commands[-1]:
                commands.append([])
        else:
            word.append(byte)
            started = True
    if started:
        commands[-1].append(bytes(word))
    return [words for words in commands if words]


_BREAKS = frozenset(b";&|\n()")
_SPACE = frozenset(b" \t")
