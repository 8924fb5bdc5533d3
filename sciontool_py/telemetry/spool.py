"""The spool: events waiting for the drainer, one small file each, under $HOME/.scion/telemetry/.

A hook adds a record with the hardened layer's exclusive temp file and
rename (not fsynced: a crash may lose telemetry, never state), so the
drainer sees a whole record or none; a hook killed mid-write leaves only a
hidden temp file, which the drainer removes once it is a minute old.
Names start with the event's time in nanoseconds, so sorting them is the
order the events happened in.  The folder itself is the drainer's lock
(flock): whoever holds it drains, and at most one process does.  At most
MAX_RECORDS wait; past that the drainer drops the oldest (the hook only
adds: a spool of 100,000 records costs it nothing).

The agent can put anything at a record's name: a folder, a symlink, a
FIFO, a file of another user, or one too large.  The drainer moves such an
entry aside once, into the hidden folder SET_ASIDE, which keeps the newest
MAX_SET_ASIDE (for a person to look at); it is never read again.
"""

from __future__ import annotations

import fcntl
import os

from sciontool_py.fs import ensure_folder, open_folder, read_bytes, remove, write_atomic

FOLDER = ".scion/telemetry"
MAX_RECORDS = 1000
STALE_TEMP_SECONDS = 60.0
SET_ASIDE = ".set-aside"
MAX_SET_ASIDE = 32
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
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


def trim(folder_fd: int, names: list[str]) -> tuple[list[str], list[str]]:
    """Drop the oldest of names (the records waiting) past MAX_RECORDS: (the names dropped, the
    names kept)."""
    over = max(0, len(names) - MAX_RECORDS)
    for name in names[:over]:
        try:
            os.unlink(name, dir_fd=folder_fd)
        except FileNotFoundError:
            pass
        except OSError:  # a folder at the name
            set_aside(folder_fd, name)
    return names[:over], names[over:]


def read(home: str, name: str) -> bytes | None:
    return read_bytes(home, f"{FOLDER}/{name}", private=True)


def discard(home: str, name: str) -> None:
    remove(home, f"{FOLDER}/{name}")


def set_aside(folder_fd: int, name: str) -> None:
    """Move an entry that cannot be read out of the spool, into SET_ASIDE; past MAX_SET_ASIDE
    the oldest there are deleted. Where SET_ASIDE is not a folder of ours, the entry is deleted.
    Never raises: an entry that can be neither moved nor deleted is one the spool cannot hold."""
    try:
        os.mkdir(SET_ASIDE, 0o700, dir_fd=folder_fd)
    except OSError:
        pass  # there already (or the name is taken: the open below says so)
    try:
        aside = os.open(SET_ASIDE, _FOLDER, dir_fd=folder_fd)
    except OSError:
        _delete(folder_fd, name)
        return
    try:
        os.rename(name, name, src_dir_fd=folder_fd, dst_dir_fd=aside)
    except FileNotFoundError:
        pass
    except OSError:  # a folder of the same name set aside before, say
        _delete(folder_fd, name)
    try:
        for old in sorted(os.listdir(aside))[:-MAX_SET_ASIDE]:
            _delete(aside, old)
    except OSError:
        pass
    finally:
        os.close(aside)


def _delete(folder_fd: int, name: str, depth: int = 8) -> None:
    """Remove name from the folder, a folder's contents too (through descriptors: a link inside
    is removed, never followed), at most depth levels down; what cannot be removed stays."""
    try:
        os.unlink(name, dir_fd=folder_fd)
        return
    except IsADirectoryError:
        pass
    except OSError:
        return
    if depth > 0:
        try:
            inner = os.open(name, _FOLDER, dir_fd=folder_fd)
        except OSError:
            return
        try:
            for child in os.listdir(inner):
                _delete(inner, child, depth - 1)
        finally:
            os.close(inner)
    try:
        os.rmdir(name, dir_fd=folder_fd)
    except OSError:
        pass


def sweep_temp_files(home: str, folder_fd: int, now: float) -> None:
    """Remove what hooks killed mid-write left (hidden temp files older than a minute)."""
    for name in os.listdir(folder_fd):
        if name.startswith(".") and name.endswith(".tmp"):
            try:
                if now - os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS:
                    os.unlink(name, dir_fd=folder_fd)
            except OSError:
                continue
