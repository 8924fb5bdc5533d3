"""Stands first on PATH as `sciontool` in an e2e run: runs the real one and records the call.

One JSON line per call in $E2E_CALLS: arguments, stdin, start and end times, exit status,
stderr, agent-info.json once it is written, the agent.log lines the call wrote, the pids above it and
the agent the scenario launched it under ($E2E_AGENT). With E2E_SERIAL
set, one call at a time (so each call's log lines are its own, as the transition checks need);
otherwise calls overlap as the harness fires them, as they do in production.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time


def main() -> int:
    # In flight until recorded: the driver waits for these before it reads the final state.
    flight = f"{os.environ['E2E_CALLS']}.inflight.{os.getpid()}"
    open(flight, "w").close()
    try:
        return record()
    finally:
        os.unlink(flight)


def record() -> int:
    data = sys.stdin.buffer.read()
    real = [*_relay(), os.environ["E2E_SCIONTOOL"]]
    log_path = os.path.join(os.environ["HOME"], "agent.log")
    with open(os.environ["E2E_CALLS"], "a", encoding="utf-8") as out:
        if os.environ.get("E2E_SERIAL"):
            from sciontool_py import turns

            turns.wait()  # a hook its harness did not wait for takes the lock after the earlier
            fcntl.flock(out, fcntl.LOCK_EX)
        logged = _size(log_path)
        began = time.time()
        proc = subprocess.run([*real, *sys.argv[1:]], input=data, capture_output=True)
        ended = time.time()
        # The resident helper may answer before it writes (deferred.go_on); it holds HOME's
        # state lock until it has, so what the call wrote is read once the lock is free.
        from sciontool_py import fs

        fs.settled(os.environ["HOME"])
        record = _record(data, proc, log_path, logged)
        record.update(t0=began, t1=ended)
        sys.stdout.buffer.write(proc.stdout)
        fcntl.flock(out, fcntl.LOCK_EX)  # one whole line at a time
        out.write(json.dumps(record) + "\n")
    return proc.returncode


def _relay() -> list[str]:
    """The shell relay, as `harness install` puts it before sciontool in a shell hook."""
    import shlex

    from sciontool_py.harness.program import relay_prefix

    return shlex.split(relay_prefix()) if sys.argv[1:2] == ["hook"] else []


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _record(
    data: bytes, proc: subprocess.CompletedProcess[bytes], log_path: str, logged: int
) -> dict[str, object]:
    info_path = os.path.join(os.environ["HOME"], "agent-info.json")
    try:
        with open(info_path, encoding="utf-8") as handle:
            info = json.load(handle)
    except (OSError, ValueError):
        info = None
    try:
        with open(log_path, "rb") as handle:
            handle.seek(logged)
            log = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        log = []
    return {
        "agent": os.environ.get("E2E_AGENT", ""),  # the scenario's name for the agent that ran it
        "ancestors": _ancestors(),
        "args": sys.argv[1:],
        "stdin": data.decode("utf-8", "replace"),
        "rc": proc.returncode,
        "stderr": proc.stderr.decode("utf-8", "replace"),
        "info": info,
        "log": log,
    }


def _ancestors() -> list[int]:
    """The pids above this call, nearest first: which harness process fired it (a hook left to
    run after its harness exited, as opencode's exit hand-off, has none of them)."""
    pids = []
    pid = os.getppid()
    while pid > 1 and len(pids) < 16:
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


if __name__ == "__main__":
    sys.exit(main())
