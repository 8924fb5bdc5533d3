"""One scenario's workspace and the ways a driver runs a harness in it: headless or in tmux.

A `Run` is a throwaway HOME and project; `Session` runs harness processes there, keeps when
each was alive, what the driver awaited from the human, and polls agent-info.json and the
agents' records meanwhile. A scenario may run several agents at once (two sessions in one HOME,
a child harness started from a tool): each is an `Agent`, named as its prompts are tagged for
the fake model and as $E2E_AGENT tells its hook calls apart; the unnamed one is MAIN.
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
from typing import Any, ClassVar

from fake_model import FakeModel, Reply, Script, tag
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
MAIN = ""  # the agent of a scenario that runs one: its prompts carry no tag
SHELLS = frozenset(("sh", "bash", "dash"))  # what a harness runs its tools through


@dataclass
class Run:
    name: str
    root: Path
    url: str
    home: Path = field(init=False)
    project: Path = field(init=False)
    calls: Path = field(init=False)
    # The hooks run through the recorder, which then runs the shell relay as install would have
    # wired it (install itself writes no relay, or the relay would bypass the recorder).
    recorded: ClassVar[bool] = True
    marks: Path = field(init=False)
    tmp: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.calls = self.root / "calls.jsonl"
        self.marks = self.project / ".marks"  # beside tool.sh: no harness asks to write there
        # The harness's TMPDIR: Claude Code and opencode unpack their native libraries there
        # (5 to 14 MB a session), Claude Code and Gemini CLI keep a folder per shell and project.
        self.tmp = self.root / "tmp"
        self.root.mkdir(parents=True)
        self.home.mkdir()
        self.project.mkdir()
        self.tmp.mkdir()

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
            "TMPDIR": str(self.tmp),
            "TERM": "dumb",
            "E2E_SCIONTOOL": str(Path(sys.executable).parent / "sciontool"),
            "E2E_CALLS": str(self.calls),
            **extra,
        }

    def sciontool(self, *args: str) -> str:
        """The real CLI, as a user types it (with this run's HOME and sciontool on PATH: install
        then writes the bare name, which the harness's PATH finds as the recorder)."""
        real = Path(sys.executable).parent / "sciontool"
        if self.recorded and args[:2] == ("harness", "install"):
            args = (*args, "--no-relay")  # the recorder runs the relay itself, behind it
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
        # A hook call still appending its line has not ended: only whole lines are records.
        text = self.calls.read_text()
        return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


@dataclass
class Agent:
    """One agent of a scenario: what it did (its truth) and the processes it ran as."""

    name: str
    parent: str = ""  # the agent from whose tool it was started
    inside: str = ""  # that tool's id: the child runs while the tool does
    truth: Truth = field(default_factory=Truth)
    launched: list[int] = field(default_factory=list)  # the pid of each process, as truth.alive lists them
    headless_runs: list[int] = field(default_factory=list)  # indexes in truth.alive
    codes: dict[int, int] = field(default_factory=dict)  # a headless run's exit status, by that index

    @property
    def label(self) -> str:
        return self.name or "main"

    def prompt(self, text: str) -> str:
        """TEXT as this agent's prompt: tagged, so that the fake model answers from its script."""
        return f"{tag(self.name)}: {text}" if self.name else text


@dataclass
class Launched:
    """A harness process the driver started (headless)."""

    agent: Agent
    proc: subprocess.Popen[str]
    began: float
    killed: float | None = None  # when the driver sent it SIGKILL (its end, for the truth)


class Session:
    """Runs harness processes of one scenario and collects the truth around them."""

    def __init__(self, run: Run, env: dict[str, str], model: FakeModel) -> None:
        self.run = run
        self.env = env
        self.model = model  # the FakeModel: a driver loads its agents' scripts
        self.scripts: dict[str, Script] = {}
        self.agents: dict[str, Agent] = {MAIN: Agent(MAIN)}
        self.procs: list[subprocess.CompletedProcess[str]] = []
        self.poller = Poller(run.home, run.marks)
        self.began = time.time()
        self.ended = self.began
        self.samples: list[Sample] = []
        self.tuis: list[Tmux] = []
        self.launches: list[Launched] = []
        self.failures: list[str] = []  # what the driver checked and found wrong

    @property
    def truth(self) -> Truth:
        """The main agent's truth (a scenario's only agent, unless it names them)."""
        return self.agents[MAIN].truth

    def agent(self, name: str, parent: str = "", inside: str = "") -> Agent:
        if name not in self.agents:
            self.agents[name] = Agent(name, parent, inside)
        return self.agents[name]

    def load(self, replies: dict[str, tuple[Reply, ...]], latency: float = 0.6) -> None:
        """Each agent's script (by name; MAIN for the unnamed one) for the fake model."""
        self.scripts = {
            name: Script(list(r), marks=self.run.marks, tool=self.run.project / "tool.sh", latency=latency)
            for name, r in replies.items()
        }
        self.model.load(self.scripts)

    def __enter__(self) -> Session:
        self.poller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for tui in self.tuis:
            tui.close(timeout=0 if exc[0] else 30)
        self.release_all()
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

    def launch(self, argv: list[str], agent: str = MAIN) -> Launched:
        """Starts one harness process of AGENT (headless), without waiting for it."""
        env = {**self.env, "E2E_AGENT": agent} if agent else self.env
        began = time.time()
        child = subprocess.Popen(
            argv,
            cwd=self.run.project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        launched = Launched(self.agent(agent), child, began)
        self.launches.append(launched)
        return launched

    def wait(self, launched: Launched) -> subprocess.CompletedProcess[str]:
        child, agent = launched.proc, launched.agent
        try:
            stdout, stderr = child.communicate(timeout=SESSION_TIMEOUT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise
        finally:
            agent.codes[len(agent.truth.alive)] = child.returncode
            agent.headless_runs.append(len(agent.truth.alive))
            ended = time.time() if launched.killed is None else launched.killed
            agent.truth.alive.append((launched.began, ended))
            agent.launched.append(child.pid)
        proc = subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)
        self.procs.append(proc)
        return proc

    def headless(self, argv: list[str], agent: str = MAIN) -> subprocess.CompletedProcess[str]:
        return self.wait(self.launch(argv, agent))

    def tool_pid(self, ident: str, timeout: float = 90.0) -> int:
        """The pid of the scripted tool IDENT once it started (its start marker names it)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            marks = self.run.marks.read_text() if self.run.marks.exists() else ""
            for line in marks.splitlines():
                fields = line.split()
                if fields[:2] == ["start", ident] and len(fields) == 4:
                    return int(fields[3])
            time.sleep(0.05)
        raise TimeoutError(f"the scripted tool {ident} did not start")

    def harness_of(self, ident: str) -> int:
        """The harness process running the tool IDENT: the tool's nearest ancestor that is not a
        shell (as a person finds it in `ps`; a wrapper such as Codex's node launcher is above it).
        It must be a process this driver started, or one below it."""
        chain = _ancestors(self.tool_pid(ident))
        above = next((i for i, (_, comm) in enumerate(chain) if i and comm not in SHELLS), 0)
        ours = {a.proc.pid for a in self.launches} | {t.pane for t in self.tuis}
        if not above or not ours & {pid for pid, _ in chain[above:]}:
            raise TimeoutError(f"no harness process of this scenario runs the tool {ident}: {chain}")
        return chain[above][0]

    def kill(self, ident: str, whom: Launched | Tmux, signum: int = signal.SIGKILL) -> float:
        """Sends SIGNUM to the harness running the tool IDENT (of WHOM, a process this driver
        started); the time. SIGKILL is the harness's end there and then."""
        pid = self.harness_of(ident)
        os.kill(pid, signum)
        sent = time.time()
        if signum == signal.SIGKILL:
            whom.killed = sent
        return sent

    def release(self, ident: str) -> None:
        """Ends the held tool IDENT (e2e/tool.sh waits for this file)."""
        Path(f"{self.run.marks}.go.{ident}").touch()

    def release_all(self) -> None:
        """Every held tool ends: one whose harness was killed must not outlive the scenario."""
        marks = self.run.marks.read_text() if self.run.marks.exists() else ""
        for line in marks.splitlines():
            fields = line.split()
            if fields[0] == "start" and len(fields) >= 2:
                self.release(fields[1])

    def tmux(self, argv: list[str]) -> Tmux:
        tui = Tmux(self, argv)
        self.tuis.append(tui)
        return tui

    def window(self, began: float, why: str) -> None:
        """Excludes from BEGAN to the end of the harness's next hook call: it fired none between."""
        ends = sorted(r["t1"] for r in self.run.records() if r["t0"] >= began)
        self.truth.windows.append((began, ends[0] if ends else time.time(), why))


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _ancestors(pid: int) -> list[tuple[int, str]]:
    """(pid, comm) of PID and the processes above it, up to init."""
    chain = []
    while pid > 1 and len(chain) < 32:
        chain.append((pid, _comm(pid)))
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return chain


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
        self.killed: float | None = None  # when the driver sent the harness SIGKILL
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
        truth = self.session.truth
        truth.finishing.append((typed, truth.alive[-1][1]))

    def close(self, timeout: float = 30.0) -> None:
        """Waits for the harness to exit (the driver has told it to), else kills its tmux session."""
        if self.closed:
            return
        self.closed = True
        if not self.wait_exit(timeout):
            self._end_group()
            self._tmux("kill-session", "-t", self.name)
        main = self.session.agents[MAIN]
        main.truth.alive.append((self.began, time.time() if self.killed is None else self.killed))
        main.launched.append(self.pane)
        self._tmux("kill-server")
