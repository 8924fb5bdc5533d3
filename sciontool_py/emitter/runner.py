"""Run one hook command: `/bin/sh -c` with the envelope on stdin, bounded in time and output.

Unlike core-agent (whose timeout kills only `/bin/sh`), the command runs in
a session of its own and a timeout kills the whole process group, so a
`sleep` inside the command cannot outlive it; background processes that
keep the output pipe open are killed at the deadline too rather than
holding the agent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO

OUTPUT_LIMIT = 4096  # bytes of combined stdout+stderr kept for the failure report (the last ones)
_CHUNK = 65536
_REAP_GRACE = 1.0  # seconds to wait for the output pipe to close once the group is killed


@dataclass(frozen=True)
class Outcome:
    """What a command did: ``error`` is None on success; ``output`` is its last OUTPUT_LIMIT bytes."""

    error: str | None
    output: bytes = b""
    truncated: bool = False


class _Tail:
    """Drains a stream, keeping only its last ``limit`` bytes so memory stays bounded."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._data = bytearray()
        self._lock = threading.Lock()
        self.truncated = False

    def drain(self, stream: IO[bytes]) -> None:
        try:
            while chunk := stream.read1(_CHUNK):  # type: ignore[attr-defined]
                with self._lock:
                    self._data += chunk
                    if len(self._data) > self._limit:
                        del self._data[: len(self._data) - self._limit]
                        self.truncated = True
        except (OSError, ValueError):
            pass  # pipe closed under us: keep what was read

    def value(self) -> bytes:
        with self._lock:
            return bytes(self._data)


def _session_we_started(pid: int) -> int | None:
    """``pid`` if it is our own unreaped child leading a session of its own, else None.

    Checked once, right after the spawn: only then is the pid known to be ours.
    A stand-in Popen (tests) reports any pid, and killpg on a pid we did not
    start could take down init's group or another program's; so the group is
    killed only when the kernel confirms we created it.
    """
    if pid <= 1 or pid == os.getpid() or pid == os.getpgrp():
        return None
    try:
        # Raises ChildProcessError unless pid is our child; WNOWAIT leaves it unreaped.
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if os.getsid(pid) != pid:
            return None
    except OSError:
        return None
    return pid


def _kill_group(proc: subprocess.Popen[bytes], group: int | None) -> None:
    if group is not None:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.kill()
    except OSError:
        pass


def _exit_error(returncode: int) -> str | None:
    if returncode == 0:
        return None
    if returncode < 0:  # Go's wording for a command ended by a signal
        name = signal.strsignal(-returncode) or f"signal {-returncode}"
        return f"signal: {name[0].lower()}{name[1:]}"
    return f"exit status {returncode}"


def run(command: str, stdin: bytes, timeout: float, env: dict[str, str]) -> Outcome:
    """Run ``command`` to completion or ``timeout`` seconds; never raises for the command's failures."""
    deadline = time.monotonic() + timeout
    # A file rather than a pipe for stdin: no writer thread, no deadlock or
    # broken pipe when the command does not read it.
    try:
        with tempfile.TemporaryFile() as envelope:
            envelope.write(stdin)
            envelope.seek(0)
            try:
                proc = subprocess.Popen(
                    ["/bin/sh", "-c", command],
                    stdin=envelope,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            except OSError as exc:
                return Outcome(f"cannot start /bin/sh: {exc.strerror or exc}")
            except ValueError as exc:  # a NUL byte in the command cannot be passed to exec
                return Outcome(f"cannot start /bin/sh: {exc}")
            return _wait(proc, _session_we_started(proc.pid), timeout, deadline)
    except OSError as exc:  # no room for the temporary file
        return Outcome(f"cannot stage the envelope for stdin: {exc.strerror or exc}")


def _wait(proc: subprocess.Popen[bytes], group: int | None, timeout: float, deadline: float) -> Outcome:
    assert proc.stdout is not None  # stdout=PIPE
    tail = _Tail(OUTPUT_LIMIT)
    reader = threading.Thread(target=tail.drain, args=(proc.stdout,), daemon=True)
    reader.start()
    try:
        error = _exit_error(proc.wait(timeout=max(0.0, deadline - time.monotonic())))
    except subprocess.TimeoutExpired:
        _kill_group(proc, group)
        proc.wait()
        error = f"timed out after {timeout:g}s; killed it and every process it started"
    # Processes the command left in the background may still hold the output pipe.
    reader.join(max(0.0, deadline - time.monotonic()))
    if reader.is_alive():
        _kill_group(proc, group)
        reader.join(_REAP_GRACE)
        if error is None and reader.is_alive():
            error = "a process that left its process group holds its output open; stopped waiting"
        elif error is None:
            error = f"its output was still open at the {timeout:g}s deadline; killed its background processes"
    if not reader.is_alive():
        # Otherwise a process outside the group still holds the pipe; the
        # daemon reader ends when it lets go.
        proc.stdout.close()
    return Outcome(error, tail.value(), tail.truncated)
