"""Processes as /proc tells them: who is the harness a hook runs under, and waiting for one to end.

A harness runs its hook through shells and wrappers (`sh -c`, `timeout`,
`flock FILE -c`, `nice`, a recorder named sciontool, ...). The harness is the
hook's nearest ancestor that is none of those, named by pid and start time so
a recycled pid is never taken for it. Nothing here signals a process.
"""

from __future__ import annotations

import os

# Shells (by the kernel's comm, which keeps 15 bytes of the program's name).
_SHELLS = frozenset(
    b"sh bash dash zsh ash busybox fish ksh ksh93 mksh pdksh lksh oksh tcsh csh yash posh rbash elvish nu "
    b"xonsh".split()
)
# Programs that run a command and wait for it: they exit with the hook, never are the harness.
_WRAPPERS = frozenset(
    b"timeout flock nice env stdbuf nohup ionice chrt taskset setsid time xargs unbuffer script sudo doas "
    b"runuser su chronic systemd-run prlimit setpriv cgexec uv uvx".split()
)
ENDED = (b"Z", b"X")  # /proc states of a process that has exited (a zombie, or dead)
MAX_DEPTH = 12  # shells and wrappers between a harness and its hook: one to three in practice
_MAX_CMDLINE = 64 << 10  # a wrapper names sciontool early; a harness's own argv may be long
_MAX_STAT = 4096  # a stat line: 52 numbers and a name of at most 64 bytes
_MAX_CHILDREN = 1 << 20  # a thread's children, as pids and spaces


def read(path: str, limit: int) -> bytes:
    """The first LIMIT bytes of a /proc file, through the bare descriptor: a hook's turn reads a
    dozen of them, and open()'s buffered file costs each one twice the reading."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks, left = [], limit
        while left > 0:  # /proc hands most files over in one read, but need not
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def stat(pid: int) -> tuple[bytes, bytes, int, int] | None:
    """(comm, state, ppid, start time) from /proc/PID/stat; None when PID is gone."""
    try:
        data = read(f"/proc/{pid}/stat", _MAX_STAT)
        close = data.rindex(b")")
        fields = data[close + 2 :].split()
        # fields 3, 4 and 22 of proc(5); comm may itself hold ")" or spaces.
        return data[data.index(b"(") + 1 : close], fields[0], int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def alive(process: list[int] | tuple[int, int]) -> bool:
    """Whether the process [pid, start time] still runs (a zombie has ended)."""
    found = stat(process[0])
    return found is not None and found[3] == process[1] and found[1] not in ENDED


def ancestors(pid: int | None = None) -> list[tuple[int, int, bytes]]:
    """(pid, start time, comm) of each ancestor from PID's parent (this process's by default) up,
    at most MAX_DEPTH of them, stopping before init or at one that has ended."""
    chain: list[tuple[int, int, bytes]] = []
    current = os.getppid() if pid is None else pid
    while len(chain) < MAX_DEPTH and current > 1:
        found = stat(current)
        if found is None or found[1] in ENDED:
            # An ended wrapper (a recorder killed while the helper serves its hook) names no
            # command line to tell it by, and its parent is whoever reaps it: the hook's
            # harness is as gone as when its own parent is init.
            break
        comm, _, ppid, start = found
        chain.append((current, start, comm))
        current = ppid
    return chain


def harness_index(chain: list[tuple[int, int, bytes]]) -> int:
    """The index in CHAIN (ancestors, nearest first) of the harness: the first that is neither a
    shell, a wrapper, nor a program running `sciontool ... hook`; -1 when none is."""
    for i, (pid, _, comm) in enumerate(chain):
        if _is_harness(pid, comm):
            return i
    return -1


def up_to_harness(pid: int) -> list[tuple[int, int, bytes]] | None:
    """(pid, start time, comm) of PID and of each ancestor up to its harness, which comes last
    (looked for from PID's parent, as harness_index does); None when there is none."""
    chain: list[tuple[int, int, bytes]] = []
    current = pid
    while len(chain) <= MAX_DEPTH and current > 1:
        found = stat(current)
        if found is None or found[1] in ENDED:
            return None
        comm, _, ppid, start = found
        chain.append((current, start, comm))
        if len(chain) > 1 and _is_harness(current, comm):
            return chain
        current = ppid
    return None


def runs_a_hook_stage(comm: bytes) -> bool:
    """Whether a process of this name may be a step of a hook: a shell, a wrapper, sciontool or a
    Python running it (a harness's other children, its servers and tools, are none of these)."""
    return comm in _SHELLS or comm in _WRAPPERS or comm.startswith((b"python", b"sciontool"))


def is_shell(name: bytes) -> bool:
    """Whether a program of this name (its comm, or its path's last part) is a shell."""
    return name in _SHELLS


def is_wrapper(name: bytes) -> bool:
    """Whether a program of this name runs a command it is handed and waits for it."""
    return name in _WRAPPERS


def _is_harness(pid: int, comm: bytes) -> bool:
    return comm not in _SHELLS and comm not in _WRAPPERS and not _runs_a_hook(pid)


def cmdline(pid: int) -> bytes:
    """PID's arguments, NUL-separated, their first _MAX_CMDLINE bytes (b"" when /proc will not say)."""
    try:
        return read(f"/proc/{pid}/cmdline", _MAX_CMDLINE)
    except OSError:
        return b""


def _runs_a_hook(pid: int) -> bool:
    """Whether PID's command line runs `sciontool ... hook|status` (a recorder, `uv run`): a wrapper
    of this hook that exits with it."""
    argv = cmdline(pid).split(b"\0")
    for i, arg in enumerate(argv):
        if arg.rpartition(b"/")[2] == b"sciontool":
            rest = argv[i + 1 :]
            return b"hook" in rest or b"status" in rest
    return False


def children(pid: int) -> list[int]:
    """PID's children, from each of its threads' children list (Linux 3.5 and newer)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            listed = read(f"/proc/{pid}/task/{task}/children", _MAX_CHILDREN)
            found += [int(child) for child in listed.split()]
        except (OSError, ValueError):
            continue
    return found


def descriptors() -> list[int]:
    """This process's open descriptors past stderr (the usual 3-255 where there is no /proc); the
    one the listing itself used is among them, closed by the time it returns."""
    try:
        return [fd for fd in map(int, os.listdir("/proc/self/fd")) if fd > 2]
    except OSError:
        return list(range(3, 256))


def cwd(pid: int) -> str:
    """The process's working folder ('' when /proc will not say)."""
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def open_pidfd(process: list[int] | tuple[int, int]) -> int | None:
    """A pidfd on the process [pid, start time], readable once it has exited; None when it has
    already ended (or its pid is another process's now); -1 where the kernel has no pidfds."""
    try:
        fd = os.pidfd_open(process[0])
    except ProcessLookupError:
        return None
    except (AttributeError, OSError):
        return -1 if alive(process) else None
    if not alive(process):  # checked once the pidfd holds the pid: it cannot be recycled now
        os.close(fd)
        return None
    return fd
