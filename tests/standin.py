"""A stand-in harness: a real process that fires the real `sciontool hook` the way harnesses do
(through `sh -c`, or any wrapper), one envelope per line it reads, and can run a child harness
from inside a "tool" as orchestrators run `claude -p`. The tests kill it with SIGKILL, let it
exit, or run it under `sciontool run`: it is always their own child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from conftest import HANG_BOUND, Agent

from sciontool_py import fs
from sciontool_py.receiver.harness_exit import MODULE

# Reads lines: an envelope (JSON) goes to $HOOK on stdin, then "ok" is printed; "CHILD <json list>"
# runs a child stand-in with those envelopes from inside a tool (sh -c), then prints "ok";
# "EXIT <code>" exits with that code. EOF: exit 0.
SCRIPT = """\
import json, os, subprocess, sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith("EXIT "):
        sys.exit(int(line[5:]))
    if line.startswith("CHILD "):
        envelopes = "\\n".join(json.dumps(e) for e in json.loads(line[6:])) + "\\n"
        subprocess.run(["sh", "-c", f"{sys.executable} {sys.argv[0]}; :"], input=envelopes.encode(),
                       stdout=subprocess.DEVNULL, check=True)
    else:
        # The response (stdout) is the harness's to read; its exit code changes nothing here.
        subprocess.run(["sh", "-c", os.environ["HOOK"]], input=line.encode(), stdout=subprocess.DEVNULL)
    print("ok", flush=True)
"""


def hook_command(dialect: str, wrapper: str = "{hook}") -> str:
    """The shell command a harness's settings would hold: the real hook inside WRAPPER."""
    hook = f"{sys.executable} -m sciontool_py hook --dialect={dialect}"
    return wrapper.format(hook=hook)


class StandIn:
    """One stand-in harness process, driven line by line."""

    def __init__(
        self,
        agent: Agent,
        tmp_path: Path,
        dialect: str,
        wrapper: str = "{hook}",
        argv_prefix: list[str] | None = None,
        **env: str,
    ) -> None:
        script = tmp_path / "standin.py"
        script.write_text(SCRIPT)
        self.proc = subprocess.Popen(
            [*(argv_prefix or []), sys.executable, str(script)],
            env={**agent.env, "SCIONTOOL_EXIT_WATCH": "on", "HOOK": hook_command(dialect, wrapper), **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def send(self, *envelopes: dict[str, object]) -> None:
        for envelope in envelopes:
            self._line(json.dumps(envelope))

    def child(self, *envelopes: dict[str, object]) -> None:
        """A child harness started from inside a tool of this one, firing ENVELOPES, then exiting."""
        self._line("CHILD " + json.dumps(list(envelopes)))

    def _line(self, line: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "ok"

    def exit(self, code: int = 0) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"EXIT {code}\n")
        self.proc.stdin.flush()
        return self.proc.wait(timeout=60)

    def kill(self) -> None:
        self.proc.kill()  # our own child
        self.proc.wait(timeout=60)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def eventually(check: Callable[[], bool], bound: float = HANG_BOUND) -> bool:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def watchers(home: Path) -> list[int]:
    """The pids of the exit watchers started for HOME."""
    found: dict[int, bytes] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                line = Path(f"/proc/{name}/cmdline").read_bytes()
                argv = line.split(b"\0")
            except OSError:
                continue
            # Started, its arguments; left by a hook (server.adopt), its title in one.
            titled = any(a.endswith(b" --home " + os.fsencode(home)) for a in argv)
            standby = argv[0] == b"scion-standby"  # a shell that would exec the helper, not one yet
            if (
                any(MODULE.encode() in a for a in argv)
                and (os.fsencode(home) in argv or titled)
                and not standby
            ):
                found[int(name)] = line
    # A process a watcher is spawning (its standby, a telemetry worker) shows the watcher's own
    # command line until it execs (posix_spawn shares the memory): never a watcher itself.
    return [pid for pid, line in found.items() if found.get(_parent(pid)) != line]


def _parent(pid: int) -> int:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return 0
    return int(data[data.rindex(b")") + 2 :].split()[1])


def info(home: Path) -> dict[str, object]:
    """HOME's agent-info.json, read without its state lock as Scion's readers do."""
    try:
        value = json.loads((home / "agent-info.json").read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def records(home: Path, settle: bool = True) -> dict[str, dict[str, object]]:
    """Every agent record in HOME, by key; with settle, once no hook holds HOME's state lock (a
    relayed hook's record is written after its answer), as `sciontool agents` reads them."""
    if settle:
        fs.settled(str(home))
    folder = home / ".scion" / "agents"
    found = {}
    for path in folder.glob("*.json") if folder.is_dir() else ():
        try:
            found[path.stem] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return found


def record_of(home: Path, pid: int) -> dict[str, object]:
    """The record of the agent whose harness is PID."""
    [found] = [r for key, r in records(home).items() if key.startswith(f"p{pid}-")]
    return found


def holds(pid: int, path: Path) -> bool:
    """Whether PID has PATH open (a lock file; HOME, whose flock is the state lock)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            pass  # closed while we looked
    return False
