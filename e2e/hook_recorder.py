"""Stands first on PATH as `sciontool` in an e2e run: runs the real one and records the call.

One JSON line per call in $E2E_CALLS: arguments, stdin, exit status, stderr, agent-info.json
just after and the agent.log lines the call wrote, so the runner can check every transition.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys


def main() -> int:
    data = sys.stdin.buffer.read()
    real = os.environ["E2E_SCIONTOOL"]
    log_path = os.path.join(os.environ["HOME"], "agent.log")
    with open(os.environ["E2E_CALLS"], "a", encoding="utf-8") as out:
        # Harnesses may run two hooks at once: one call at a time keeps each call's log lines apart.
        fcntl.flock(out, fcntl.LOCK_EX)
        logged = _size(log_path)
        proc = subprocess.run([real, *sys.argv[1:]], input=data, capture_output=True)
        sys.stdout.buffer.write(proc.stdout)
        out.write(json.dumps(_record(data, proc, log_path, logged)) + "\n")
    return proc.returncode


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
        "args": sys.argv[1:],
        "stdin": data.decode("utf-8", "replace"),
        "rc": proc.returncode,
        "stderr": proc.stderr.decode("utf-8", "replace"),
        "info": info,
        "log": log,
    }


if __name__ == "__main__":
    sys.exit(main())
