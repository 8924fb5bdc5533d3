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
A hook in its own process waits for it (wait); the resident helper, which runs
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

    # A hook taken from a listening socket: its turn (None: it waits for none), what serves it.
    Waiting = tuple["Turn | None", Callable[[], None]]

Spawn = tuple[int, int]  # (pid, start time) of the harness's child that runs a hook
TURN_WAIT = 3.0  # seconds a hook waits for the earlier ones: each takes a few ms to 0.1 s
POLL = 0.002  # seconds between two looks at the harness's children
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


def in_order(listening: int, take: Callable[[], Waiting | None], served: Served) -> None:
    """Serve the hook TAKE takes from LISTENING, and each that comes while one waits for its
    turn, in their harnesses' order: each once every earlier hook of its harness is served or
    has ended, or TURN_WAIT after the first was taken."""
    import select
    import time

    first = take()
    if first is None:
        return
    waiting = [first]
    deadline = time.monotonic() + TURN_WAIT
    poller = select.poll()
    poller.register(listening, select.POLLIN)
    while waiting:
        # Started first, first (the same tick: the lower pid); one waiting for none, at once.
        waiting.sort(key=lambda hook: (hook[0].spawn[1], hook[0].spawn[0]) if hook[0] else (0, 0))
        late = time.monotonic() >= deadline
        head = next((h for h in waiting if late or h[0] is None or not h[0].earlier(served)), None)
        if head is None:  # each waits for one that has not come yet
            if poller.poll(POLL * 1000):
                came = take()
                if came is not None:
                    waiting.append(came)
            continue
        waiting.remove(head)
        turn, serve = head
        if late and turn is not None:
            for spawn in turn.earlier(served):
                served.add(spawn)  # waited for once: no later hook waits for it again
        serve()
        if turn is not None:
            served.add(turn.spawn)


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
    """Return once the earlier hooks of this process's harness have ended, or TURN_WAIT has
    passed: where its harness is looked for then (origin)."""
    turn = of(os.getpid())
    if turn is None or not turn.earlier():
        return origin(turn)
    import time

    deadline = time.monotonic() + TURN_WAIT
    while time.monotonic() < deadline:
        time.sleep(POLL)
        if not turn.earlier():
            break
    return origin(turn)


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
