"""Run a command fed from a file through a pipe, and read what it cost: its peak RSS and CPU
seconds from wait4. A fresh helper process starts it, so that the peak is the command's own
(a child forked from the test process would count the test's memory until it execs)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

# The helper: writes the file in chunks (pausing between them), then reports as JSON. A reader
# that stops reading (the command refused the envelope) ends the writing, not the helper.
_HELPER = r"""
import json, os, subprocess, sys, time
path, chunk, pause, argv = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
started = time.monotonic()
proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
out = err = b""
try:
    with open(path, "rb") as source:
        while block := source.read(chunk):
            proc.stdin.write(block)
            proc.stdin.flush()
            if pause:
                time.sleep(pause)
    proc.stdin.close()
except BrokenPipeError:
    pass
out, err = proc.stdout.read(), proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({
    "rss_mib": usage.ru_maxrss / 1024,
    "cpu": usage.ru_utime + usage.ru_stime,
    "wall": time.monotonic() - started,
    "code": os.waitstatus_to_exitcode(status),
    "stdout": out.decode(errors="replace"),
    "stderr": err.decode(errors="replace"),
}))
"""


class Measured:
    """What one run cost and said."""

    def __init__(self, report: Mapping[str, object]) -> None:
        self.rss_mib = float(report["rss_mib"])  # type: ignore[arg-type]
        self.cpu = float(report["cpu"])  # type: ignore[arg-type]
        self.wall = float(report["wall"])  # type: ignore[arg-type]
        self.code = int(report["code"])  # type: ignore[call-overload]
        self.stdout = str(report["stdout"])
        self.stderr = str(report["stderr"])

    def __repr__(self) -> str:
        return (
            f"<exit {self.code}, {self.rss_mib:.1f} MiB peak, {self.cpu:.2f} s CPU, "
            f"{self.wall:.2f} s, stderr {self.stderr[-300:]!r}>"
        )


def measured(
    argv: Sequence[str],
    stdin: Path,
    env: Mapping[str, str],
    chunk: int = 1 << 20,
    pause: float = 0.0,
    timeout: float = 120.0,
) -> Measured:
    """Run argv with stdin's bytes written to it chunk by chunk, pause seconds apart."""
    ran = subprocess.run(
        [sys.executable, "-c", _HELPER, str(stdin), str(chunk), str(pause), *argv],
        capture_output=True,
        env=dict(env),
        timeout=timeout,
        check=True,
    )
    return Measured(json.loads(ran.stdout))
