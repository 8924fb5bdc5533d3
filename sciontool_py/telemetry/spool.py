"""The spool: events waiting for the drainer, one small file each, under $HOME/.scion/telemetry/.

A hook adds a record with the hardened layer's exclusive temp file and
rename (not fsynced: a crash may lose telemetry, never state), so the
drainer sees a whole record or none; a hook killed mid-write leaves only a
hidden temp file, which the drainer removes once it is a minute old.
Names start with the event's time in nanoseconds, so sorting them is the
order the events happened in.  The folder itself is the drainer's lock
(flock): whoever holds it drains, and at most one process does.  At most
MAX_RECORDS wait; past that the oldest are dropped.
"""

from __future__ import annotations

import fcntl
import os

from sciontool_py.fs import ensure_folder, open_folder, read_bytes, remove, write_atomic

FOLDER = ".scion/telemetry"
MAX_RECORDS = 1000
STALE_TEMP_SECONDS = 60.0
_SUFFIX = ".json"


def open_locked_or_not(home: str, create: bool) -> tuple[int, bool]:
    """The spool folder's descriptor and whether this call took the drainer lock on it (False:
    a drainer is running). Without create, a missing folder is (-1, True): no drainer can run
    without one, and nothing is created before it is needed."""
    if create:
        ensure_folder(home, ".scion")
        ensure_folder(home, FOLDER)
    try:
        fd = open_folder(home, FOLDER)
    except FileNotFoundError:
        if create:
            raise
        return -1, True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return fd, False
    except OSError:
        os.close(fd)
        raise
    return fd, True


def add(home: str, time_ns: int, data: bytes) -> None:
    name = f"{time_ns:020d}-{os.getpid()}-{os.urandom(4).hex()}{_SUFFIX}"
    write_atomic(home, f"{FOLDER}/{name}", data, mode=0o600, sync=False)


def waiting(folder_fd: int) -> list[str]:
    """The records' names, oldest first."""
    return sorted(n for n in os.listdir(folder_fd) if n.endswith(_SUFFIX) and not n.startswith("."))


def trim(home: str, folder_fd: int) -> list[str]:
    """Drop the oldest records past MAX_RECORDS; the names dropped."""
    names = waiting(folder_fd)
    dropped = names[: max(0, len(names) - MAX_RECORDS)]
    for name in dropped:
        remove(home, f"{FOLDER}/{name}")
    return dropped


def read(home: str, name: str) -> bytes | None:
    return read_bytes(home, f"{FOLDER}/{name}", private=True)


def discard(home: str, name: str) -> None:
    remove(home, f"{FOLDER}/{name}")


def sweep_temp_files(home: str, folder_fd: int, now: float) -> None:
    """Remove what hooks killed mid-write left (hidden temp files older than a minute)."""
    for name in os.listdir(folder_fd):
        if name.startswith(".") and name.endswith(".tmp"):
            try:
                if now - os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS:
                    os.unlink(name, dir_fd=folder_fd)
            except OSError:
                continue
