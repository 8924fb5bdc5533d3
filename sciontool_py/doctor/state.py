"""Whether the hook can write its state: a real file written, synced and removed in HOME (and in
~/.scion when it is there), under a name of its own, so no file of the agent's is touched."""

from __future__ import annotations

import errno
import os

from sciontool_py.doctor.check import Check, failed, passed

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def check(home: str) -> Check:
    folders = [home]
    scion = os.path.join(home, ".scion")
    if os.path.isdir(scion) and not os.path.islink(scion):
        folders.append(scion)
    for folder in folders:
        problem = _write_in(folder)
        if problem is not None:
            if problem.errno in (errno.ENOSPC, errno.EDQUOT):
                fix = "free space on its disk (the hook cannot keep the agent's status meanwhile)"
            else:
                fix = f"make {folder} a folder this user can write (the hook keeps agent-info.json there)"
            return failed("state folder", f"{folder} is not writable: {problem.strerror or problem}", fix)
    return passed(
        "state folder", f"{' and '.join(folders)} writable (a temp file written, synced and removed)"
    )


def _write_in(folder: str) -> OSError | None:
    path = os.path.join(folder, f".sciontool-doctor-{os.urandom(6).hex()}")
    try:
        fd = os.open(path, _CREATE, 0o600)
    except OSError as exc:
        return exc
    try:
        os.write(fd, b"sciontool doctor: a write test, removed at once\n")
        os.fsync(fd)  # a full disk may say so only here
    except OSError as exc:
        return exc
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass  # removed by someone else already
    return None
