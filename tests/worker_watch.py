"""Run one real `sciontool hook` and watch the detached telemetry worker it starts, to its end.

The worker is started in a session of its own and outlives the hook, so it
is found as the hook's process tree leaves it: this process makes itself a
child subreaper (prctl), so the orphaned worker becomes its child.  While
the worker lives, its /proc status (VmHWM, VmRSS) and the names in its
environment are read; its end comes from wait4, with its peak RSS.  A
worker still alive `limit` seconds after the hook exited is killed (by pid:
a process this one adopted) and reported as killed, so a test that fails
leaves nothing running.

As a script: argv[1] is a JSON spec {argv, stdin, env, limit, count}; it
prints a JSON report.  Tests call `watch()`.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
SAMPLE_SECONDS = 0.02


class Worker:
    """One process the hook left behind, as watched."""

    def __init__(self, found: dict[str, object]) -> None:
        self.pid = int(found["pid"])  # type: ignore[call-overload]
        self.seconds = float(found["seconds"])  # type: ignore[arg-type]  # from the hook's exit to its end
        self.peak_kib = int(found["peak_kib"])  # type: ignore[call-overload]  # VmHWM and ru_maxrss, the larger
        self.environment: list[str] = list(found["environment"])  # type: ignore[call-overload]
        self.policy = int(found["policy"])  # type: ignore[call-overload]  # its scheduling policy
        self.killed = bool(found["killed"])
        self.status = int(found["status"])  # type: ignore[call-overload]


class Watched:
    def __init__(self, report: dict[str, object]) -> None:
        self.returncode = int(report["returncode"])  # type: ignore[call-overload]
        self.stdout = str(report["stdout"])
        self.stderr = str(report["stderr"])
        self.hook_seconds = float(report["hook_seconds"])  # type: ignore[arg-type]
        self.left_at_hook_exit = report["left_at_hook_exit"]
        self.workers = [Worker(w) for w in report["workers"]]  # type: ignore[attr-defined]

    @property
    def worker(self) -> Worker:
        """The one worker the hook started."""
        assert len(self.workers) == 1, [w.pid for w in self.workers]
        return self.workers[0]


def watch(
    envelope: dict[str, object],
    env: dict[str, str],
    limit: float = 60.0,
    count: Path | None = None,
    dialect: str = "claude",
) -> Watched:
    """Run the hook on envelope with env; count: a folder whose entries are counted the moment
    the hook exits."""
    spec = {
        "argv": [sys.executable, "-m", "sciontool_py", "hook", f"--dialect={dialect}"],
        "stdin": json.dumps(envelope),
        "env": env,
        "limit": limit,
        "count": str(count) if count else None,
    }
    done = subprocess.run(
        [sys.executable, __file__, json.dumps(spec)], capture_output=True, timeout=limit * 2 + 60
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return Watched(json.loads(done.stdout))


def _children() -> list[int]:
    """This process's children, adopted ones included: the kernel's list of each of its threads
    (a read per thread, where a scan of /proc reads every process's stat: 1.5 ms each sample)."""
    me = os.getpid()
    try:
        return [
            int(pid)
            for task in os.listdir(f"/proc/{me}/task")
            for pid in _read(f"/proc/{me}/task/{task}/children")
        ]
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN
        return _scanned_children(me)


def _read(path: str) -> list[str]:
    return Path(path).read_text().split()


def _scanned_children(me: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        if int(stat.rpartition(b")")[2].split()[1]) == me:
            found.append(int(name))
    return found


def _status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _environment(pid: int) -> list[str] | None:
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    return sorted(item.split(b"=", 1)[0].decode(errors="replace") for item in data.split(b"\0") if item)


def _policy(pid: int) -> int | None:
    try:
        return os.sched_getscheduler(pid)
    except OSError:
        return None  # ended meanwhile


def main(spec: dict[str, object]) -> dict[str, object]:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit(f"prctl: {os.strerror(ctypes.get_errno())}")
    limit = float(spec["limit"])  # type: ignore[arg-type]
    started = time.monotonic()
    hook = subprocess.Popen(
        spec["argv"],  # type: ignore[arg-type]
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=spec["env"],  # type: ignore[arg-type]
    )
    out, err = hook.communicate(str(spec["stdin"]).encode(), timeout=limit)
    hook_exit = time.monotonic()
    left = len(os.listdir(str(spec["count"]))) if spec["count"] else None
    seen: dict[int, dict[str, object]] = {}
    while True:
        for pid in _children():
            entry = seen.setdefault(pid, {"pid": pid, "environment": None, "hwm": 0, "killed": False})
            if entry["environment"] is None:
                entry["environment"] = _environment(pid)
            # Sampled to its end: it sets its own policy as its first step.
            if (policy := _policy(pid)) is not None:
                entry["policy"] = policy
            entry["hwm"] = max(int(entry["hwm"]), _status_kib(pid, "VmHWM"))  # type: ignore[call-overload]
            if time.monotonic() - hook_exit > limit and not entry["killed"]:
                os.kill(pid, signal.SIGKILL)
                entry["killed"] = True
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            entry = seen.setdefault(pid, {"pid": pid, "environment": None, "hwm": 0, "killed": False})
            entry.setdefault("policy", -1)  # ended before it was seen
            entry.update(
                seconds=time.monotonic() - hook_exit,
                status=status,
                peak_kib=max(int(entry.pop("hwm")), usage.ru_maxrss),  # type: ignore[call-overload]
            )
            entry["environment"] = entry["environment"] or []
            continue
        time.sleep(SAMPLE_SECONDS)
    return {
        "returncode": hook.returncode,
        "stdout": out.decode(errors="replace"),
        "stderr": err.decode(errors="replace"),
        "hook_seconds": hook_exit - started,
        "left_at_hook_exit": left,
        "workers": list(seen.values()),
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
