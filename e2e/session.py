"""One scenario's workspace and the ways a driver runs a harness in it: headless or in tmux.

A `Run` is a throwaway HOME and project; `Session` runs harness processes there, keeps when
each was alive, what the driver awaited from the human, and polls agent-info.json meanwhile.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from truth import Poller, Sample, Truth

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("E2E_CACHE", REPO / ".e2e-cache"))
SESSION_TIMEOUT = 300  # seconds one harness process may take
TAIL = 1.5  # seconds polled after the last exit: hooks the harness left running land
# The tmux driver waits on what the screen shows and on hook records, never on a fixed sleep; on a
# loaded machine (load average 20 and more) a TUI takes seconds to draw a key or to take an Enter.
WAIT = 150.0  # seconds a TUI may take to show what the driver waits for
TYPED = 30.0  # seconds typed text may take to show in the TUI's input
RETRY = 15.0  # seconds without effect before an answer's keys the TUI did not take are pressed again
ENTER_AGAIN = 5.0  # the same for an Enter (harmless on an empty prompt; Gemini CLI drops one after a turn)


@dataclass
class Run:
    name: str
    root: Path
    url: str
    home: Path = field(init=False)
    project: Path = field(init=False)
    calls: Path = field(init=False)
    marks: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.calls = self.root / "calls.jsonl"
        self.marks = self.project / ".marks"  # beside tool.sh: no harness asks to write there
        self.root.mkdir(parents=True)
        self.home.mkdir()
        self.project.mkdir()

    def env(self, bin_dir: Path | None = None, **extra: str) -> dict[str, str]:
        """The harness's environment; BIN_DIR (a harness's own venv or Node) comes right after the
        recorder on PATH."""
        recorder = self.root / "bin"
        recorder.mkdir(exist_ok=True)
        wrapper = recorder / "sciontool"
        wrapper.write_text(f"#!{sys.executable}\n" + (REPO / "e2e" / "hook_recorder.py").read_text())
        wrapper.chmod(0o755)
        node_bin = os.path.dirname(shutil.which("node") or "/usr/bin/node")
        return {
            "PATH": ":".join(
                str(p)
                for p in (
                    recorder,
                    bin_dir,
                    CACHE / "npm" / "node_modules" / ".bin",
                    node_bin,
                    "/usr/bin",
                    "/bin",
                )
                if p is not None
            ),
            "HOME": str(self.home),
            "TERM": "dumb",
            "E2E_SCIONTOOL": str(Path(sys.executable).parent / "sciontool"),
            "E2E_CALLS": str(self.calls),
            **extra,
        }

    def sciontool(self, *args: str) -> str:
        """The real CLI, as a user types it (with this run's HOME and sciontool on PATH: install
        then writes the bare name, which the harness's PATH finds as the recorder)."""
        real = Path(sys.executable).parent / "sciontool"
        env = {
            **os.environ,
            "HOME": str(self.home),
            "PATH": f"{real.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        proc = subprocess.run([str(real), *args], capture_output=True, text=True, env=env, timeout=60)
        if proc.returncode != 0:
            raise SystemExit(f"sciontool {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def records(self) -> list[dict[str, Any]]:
        if not self.calls.exists():
            return []
        return [json.loads(line) for line in self.calls.read_text().splitlines()]


class Session:
    """Runs harness processes of one scenario and collects the truth around them."""

    def __init__(self, run: Run, env: dict[str, str]) -> None:
        self.run = run
        self.env = env
        self.truth = Truth()
        self.procs: list[subprocess.CompletedProcess[str]] = []
        self.poller = Poller(run.home, run.marks)
        self.began = time.time()
        self.ended = self.began
        self.samples: list[Sample] = []
        self.tuis: list[Tmux] = []
        self.headless_runs: list[int] = []  # indexes in truth.alive
        self.launched: list[int] = []  # the pid of each harness process, as truth.alive lists them

    def __enter__(self) -> Session:
        self.poller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for tui in self.tuis:
            tui.close(timeout=0 if exc[0] else 30)
        self.settle()
        time.sleep(TAIL)
        self.ended = time.time()
        self.samples = self.poller.stop()

    def settle(self, timeout: float = 60.0) -> None:
        """Waits for the hook calls still in flight (a harness fires SessionEnd and exits without
        waiting for it; on a loaded machine the call takes seconds to land). A call the harness
        killed as it exited (Gemini CLI kills its third SessionEnd) left its mark: not waited for."""
        deadline = time.time() + timeout
        while time.time() < deadline and any(
            map(_alive, self.run.root.glob(self.run.calls.name + ".inflight.*"))
        ):
            time.sleep(0.05)

    def headless(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        began = time.time()
        child = subprocess.Popen(
            argv,
            cwd=self.run.project,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        try:
            stdout, stderr = child.communicate(timeout=SESSION_TIMEOUT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise
        finally:
            self.headless_runs.append(len(self.truth.alive))
            self.truth.alive.append((began, time.time()))
            self.launched.append(child.pid)
        proc = subprocess.CompletedProcess(argv, child.returncode, stdout, stderr)
        self.procs.append(proc)
        return proc

    def tmux(self, argv: list[str]) -> Tmux:
        tui = Tmux(self, argv)
        self.tuis.append(tui)
        return tui

    def window(self, began: float, why: str) -> None:
        """Excludes from BEGAN to the end of the harness's next hook call: it fired none between."""
        ends = sorted(r["t1"] for r in self.run.records() if r["t0"] >= began)
        self.truth.windows.append((began, ends[0] if ends else time.time(), why))


def _alive(mark: Path) -> bool:
    """Whether the hook recorder that left MARK (named by its pid) still runs."""
    try:
        os.kill(int(mark.name.rsplit(".", 1)[1]), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return True


class Tmux:
    """A harness's TUI in a detached tmux session of its own: keys in, screen out."""

    def __init__(self, session: Session, argv: list[str]) -> None:
        self.session = session
        self.name = f"e2e-{os.getpid()}-{session.run.name}-{int(time.time() * 1000) % 100000}"
        self.socket = str(session.run.root / "tmux.sock")
        env = {**session.env, "TERM": "xterm-256color"}
        command = " ".join(shlex.quote(a) for a in argv)
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        self.began = time.time()
        self.closed = False
        where = str(session.run.project)
        self._tmux(
            "new-session",
            "-d",
            "-s",
            self.name,
            "-x",
            "160",
            "-y",
            "50",
            "-c",
            where,
            f"env -i {exports} {command}",
        )
        # The pane's process leads its own process group (tmux starts it in a new session).
        self.pane = int(self._tmux("display-message", "-p", "-t", self.name, "#{pane_pid}").strip() or 0)

    def wait_exit(self, timeout: float) -> bool:
        deadline = time.time() + timeout
        while time.time() < deadline and not self.exited():
            time.sleep(0.05)
        return self.exited()

    def _end_group(self) -> None:
        """Ends the harness's process group: a TUI may ignore the SIGHUP of a closed pane."""
        try:
            if self.pane <= 1 or os.getpgid(self.pane) != self.pane:
                return
            os.killpg(self.pane, signal.SIGTERM)
            time.sleep(2)
            os.killpg(self.pane, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _tmux(self, *args: str) -> str:
        proc = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=30)
        return proc.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> float:
        self._tmux("send-keys", "-t", self.name, *keys)
        return time.time()

    def type(self, text: str) -> float:
        """Types TEXT, waits until the screen shows it (a loaded TUI drops or delays keys sent
        before it draws its input), presses Enter; the time of the Enter."""
        before = self.screen().count(text)
        self._tmux("send-keys", "-t", self.name, "-l", text)
        self.until(lambda: self.screen().count(text) > before, TYPED)
        return self.keys("Enter")

    def until(self, done: Callable[[], bool], timeout: float, again: tuple[str, ...] = ()) -> bool:
        """Polls DONE every 100 ms for TIMEOUT seconds; presses AGAIN (Enter) every ENTER_AGAIN
        seconds meanwhile (a key a loaded TUI did not take). False when DONE never held."""
        deadline = time.time() + timeout
        nudge = time.time() + ENTER_AGAIN
        while not done():
            if time.time() > deadline or self.exited():
                return done()
            if again and time.time() > nudge:
                print(f"  driver: {' '.join(again)} again, the TUI did not take it", flush=True)
                self.keys(*again)
                nudge = time.time() + ENTER_AGAIN
            time.sleep(0.1)
        return True

    def submit(self, text: str, done: Callable[[], bool] | None = None, timeout: float = WAIT) -> float:
        """Types TEXT and Enter, then presses Enter again until DONE holds (by default: a hook call
        started after the Enter, the prompt's own); a loaded TUI may take the text and drop its
        Enter, and Enter on an empty prompt does nothing. The first Enter's time; raises TimeoutError."""
        typed = self.type(text)
        if not self.until(done or self.hooked_since(typed), timeout, again=("Enter",)):
            raise TimeoutError(f"{text!r} was not taken; screen:\n{self.screen()}")
        return typed

    def hooked_since(self, t: float) -> Callable[[], bool]:
        """Whether a hook call started at T or later has been recorded: the harness took a step."""
        return lambda: any(r["t0"] >= t for r in self.session.run.records())

    def wait_for(self, text: str, timeout: float = WAIT) -> float:
        """The time TEXT showed on screen (polled every 100 ms); raises TimeoutError."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in self.screen():
                return time.time()
            if self.exited():
                break
            time.sleep(0.1)
        raise TimeoutError(f"{text!r} not on screen; screen:\n{self.screen()}")

    def wait_gone(self, text: str, timeout: float = WAIT) -> float:
        """The time TEXT left the screen; raises TimeoutError."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text not in self.screen() or self.exited():
                return time.time()
            time.sleep(0.1)
        raise TimeoutError(f"{text!r} still on screen")

    def exited(self) -> bool:
        alive = subprocess.run(
            ["tmux", "-S", self.socket, "has-session", "-t", self.name], capture_output=True
        )
        return alive.returncode != 0

    def quit(self, command: str) -> None:
        """Types the exit command and waits for the harness to exit (Enter again while it does not:
        a loaded TUI drops keys); finishing from then on. Killed by close() if it never exits."""
        typed = self.type(command)
        self.until(self.exited, WAIT, again=("Enter",))
        self.close()
        self.session.truth.finishing.append((typed, self.session.truth.alive[-1][1]))

    def close(self, timeout: float = 30.0) -> None:
        """Waits for the harness to exit (the driver has told it to), else kills its tmux session."""
        if self.closed:
            return
        self.closed = True
        if not self.wait_exit(timeout):
            self._end_group()
            self._tmux("kill-session", "-t", self.name)
        self.session.truth.alive.append((self.began, time.time()))
        self.session.launched.append(self.pane)
        self._tmux("kill-server")
