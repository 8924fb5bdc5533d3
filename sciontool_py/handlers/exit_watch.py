"""Which harness process ends a session, for harnesses that exit without a session end.

`qwen -p` and `vibe -p` fire no hook when they exit, so agent-info.json would
say `working` for good. With the option, the hook records under the state lock
which process is the harness (its nearest ancestor that is neither a shell nor
a wrapper running `sciontool hook`, by pid and start time, so a recycled pid
is never taken for it) and, once it has answered, starts one detached watcher
per session and harness process (sciontool_py/harness_exit.py), which applies
a session-end once that process has exited, unless the session ended
meanwhile or another process took it up.
"""

from __future__ import annotations

import os

from sciontool_py.handlers import sessions

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent

_SHELLS = frozenset((b"sh", b"bash", b"dash", b"zsh", b"ash", b"busybox"))
_MAX_DEPTH = 8  # shells and wrappers between the harness and the hook: one or two in practice
_MAX_CMDLINE = 64 << 10  # a wrapper names sciontool early; a harness's prompt may be long


def process_stat(pid: int) -> tuple[bytes, bytes, int, int] | None:
    """(comm, state, ppid, start time) from /proc/PID/stat; None when PID is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as proc:
            data = proc.read()
        comm = data[data.index(b"(") + 1 : data.rindex(b")")]
        fields = data[data.rindex(b")") + 2 :].split()
        return comm, fields[0], int(fields[1]), int(fields[19])  # fields 3, 4 and 22 of proc(5)
    except (OSError, ValueError, IndexError):
        return None


def harness() -> list[int] | None:
    """[pid, start time] of the hook's nearest ancestor that is neither a shell nor a wrapper of
    the hook; None when the hook was orphaned (its parent is init) or /proc cannot say."""
    pid = os.getppid()
    for _ in range(_MAX_DEPTH):
        if pid <= 1:
            return None
        stat = process_stat(pid)
        if stat is None:
            return None
        comm, _, ppid, start = stat
        if comm not in _SHELLS and not _runs_the_hook(pid):
            return [pid, start]
        pid = ppid
    return None


def _runs_the_hook(pid: int) -> bool:
    """Whether PID's command line runs `sciontool ... hook`: a wrapper of this hook (a recorder,
    `timeout`, `uv run`), which exits with it, not the harness."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as proc:
            argv = proc.read(_MAX_CMDLINE).split(b"\0")
    except OSError:
        return False
    for i, arg in enumerate(argv):
        if arg.rpartition(b"/")[2] == b"sciontool":
            return b"hook" in argv[i + 1 :]
    return False


def claim(state: sessions.SessionState, event: CanonicalEvent) -> tuple[str, list[int]] | None:
    """Under the state lock: (session, harness) when this hook must start the session's watcher,
    recorded in STATE; None when one already watches this harness or nothing should."""
    session = sessions.key_text(event.text("session_id"))
    if event.name == "session-end" or state.has_ended(session):
        return None
    process = harness()
    if process is None or state.watched.get(session) == process:
        return None
    state.watch(session, process)  # a new process (a resume) replaces the last: its watcher stands down
    return session, process
