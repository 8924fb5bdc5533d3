"""Stands first on PATH as `sciontool` in an e2e run: runs the real one and records the call.

One JSON line per call in $E2E_CALLS: arguments, stdin, exit status, stderr and
agent-info.json just after, so the runner can check every transition.
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
    proc = subprocess.run([real, *sys.argv[1:]], input=data, capture_output=True)
    sys.stdout.buffer.write(proc.stdout)
    info_path = os.path.join(os.environ["HOME"], "agent-info.json")
    try:
        with open(info_path, encoding="utf-8") as handle:
            info = json.load(handle)
    except (OSError, ValueError):
        info = None
    record = {
        "args": sys.argv[1:],
        "stdin": data.decode("utf-8", "replace"),
        "rc": proc.returncode,
        "stderr": proc.stderr.decode("utf-8", "replace"),
        "info": info,
    }
    with open(os.environ["E2E_CALLS"], "a", encoding="utf-8") as out:
        fcntl.flock(out, fcntl.LOCK_EX)  # harnesses may run two hooks at once
        out.write(json.dumps(record) + "\n")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
