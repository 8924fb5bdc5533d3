"""An agent's whole life in `make e2e`, beyond what one session's hooks say (issue 29).

- kill-tool: headless; SIGKILL to the harness while its tool runs. Right: `error` within
  REACTION s of the kill (the exit watcher).
- exit-unsaid: headless; the harness's quit signal while its tool runs, and it exits. Right:
  `stopped` if it fired its end hook, else `error` within REACTION s (a non-zero exit, mid-turn).
- two-sessions: two headless sessions at once in one HOME; alpha's tool runs while bravo
  starts, works and ends. Right: each agent's record its own, both `stopped`.
- nested: the parent's tool runs the harness's headless mode, as orchestrators run `claude -p`.
  Right: the child a new agent, the parent never flipped by it, both `stopped`.
- run: `sciontool run --name e2e-run -- HEADLESS`. Right: `run` exits 0; `stopped`, exitCode 0
  and the name in `sciontool agents --json`.
- run-kill: the same, SIGKILL to the harness mid-tool. Right: `run` exits with the harness's
  code N; `error`, exitCode N, "Agent crashed with exit code N".
- agents-watch: the TUI in tmux, `sciontool agents --watch` in a second one, 80 columns. Right:
  the view shows Running X, Waiting for you, Ready (or Done) and Crashed at those moments.

The harness killed is the process that runs the tool (its nearest ancestor that is not a
shell, as a person finds it in `ps`), never a wrapper above it. Held tools (e2e/tool.sh) run
until the driver releases them, so no scenario depends on how fast a loaded machine is.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time

from fake_model import FINAL, Call, Reply
from harness import Drive, Harness, Scenario, answer_human, open_tui
from session import Session
from truth import REACTION

RUN_NAME = "e2e-run"
WATCH_WAIT = 20.0  # seconds `agents --watch` may take to show a change (it redraws every 0.5 s)


def _await_reaction() -> None:
    """Polled on past an end the harness did not say: the exit watcher's reaction is measured."""
    time.sleep(REACTION + 1.0)


def kill_tool(session: Session, harness: Harness) -> None:
    launched = session.launch(harness.headless("run a long tool", False))
    killed = session.kill("k1", launched)
    session.truth.ends.append((killed, "error"))
    session.wait(launched)
    _await_reaction()


def exit_unsaid(session: Session, harness: Harness) -> None:
    """The quit signal mid-tool: the harness exits as it does. From the signal it is finishing
    (`stopped` is right, as after a typed exit command); its end, as for every headless run
    (agents.py), is `stopped` if it fired its end hook, else `error` (a non-zero exit)."""
    launched = session.launch(harness.headless("run a long tool", False))
    sent = session.kill("u1", launched, harness.quit_signal)
    try:
        launched.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        session.failures.append(f"{harness.name} did not exit within 30 s of signal {harness.quit_signal}")
        session.release("u1")
    done = session.wait(launched)
    exited = session.truth.alive[-1][1]
    session.truth.finishing.append((sent, exited))
    took = exited - sent
    print(
        f"  {harness.name}: signal {harness.quit_signal} mid-tool, exit {done.returncode} {took:.1f} s later"
    )
    _await_reaction()


def two_sessions(session: Session, harness: Harness) -> None:
    alpha, bravo = session.agent("alpha"), session.agent("bravo")
    session.load(
        {
            "alpha": (Reply(calls=(Call("a1", hold=True),)),),
            "bravo": (Reply(calls=(Call("b1", 1.0),)), Reply(calls=(Call("b2", 0.5),))),
        }
    )
    first = session.launch(harness.headless(alpha.prompt("run a long tool"), False), "alpha")
    session.tool_pid("a1")
    session.headless(harness.headless(bravo.prompt("run two tools"), False), "bravo")
    time.sleep(2.0)  # alpha's tool goes on after bravo ended: bravo's end is not alpha's
    session.release("a1")
    session.wait(first)


def nested(session: Session, harness: Harness) -> None:
    parent = session.agent("parent")
    child = session.agent("child", parent="parent", inside="n1")
    # The child gets the environment the e2e gives the harness, and no more: a harness marks its
    # tools' environment (Claude Code's CLAUDECODE refuses a nested session; Codex drops *KEY*).
    env = {**session.env, "E2E_AGENT": "child"}
    command = (
        "env",
        "-i",
        *(f"{k}={v}" for k, v in env.items()),
        *harness.headless(child.prompt("run a tool"), False),
    )
    session.load(
        {
            "parent": (Reply(calls=(Call("n1", run=command),)),),
            "child": (Reply(calls=(Call("c1", 1.0),)),),
        }
    )
    session.headless(harness.headless(parent.prompt("run a child agent"), False), "parent")


def under_run(kill: bool) -> Drive:
    def drive(session: Session, harness: Harness) -> None:
        argv = [
            session.env["E2E_SCIONTOOL"],
            "run",
            "--name",
            RUN_NAME,
            "--",
            *harness.headless("run a tool", False),
        ]
        launched = session.launch(argv)
        if kill:
            session.truth.ends.append((session.kill("r1", launched), "error"))
        done = session.wait(launched)
        session.settle()
        listed = [
            a for a in json.loads(session.run.sciontool("agents", "--json")) if a.get("name") == RUN_NAME
        ]
        if len(listed) != 1:
            session.failures.append(f"`sciontool agents --json` lists {len(listed)} agents named {RUN_NAME}")
            return
        agent, code = listed[0], done.returncode
        # A clean exit after the harness's own session end changes nothing but the hub's last word.
        want: dict[str, object] = {"phase": "stopped", "state": "Stopped"}
        if kill:
            want = {"phase": "error", "exitCode": code, "detail": f"Agent crashed with exit code {code}"}
            if code == 0:
                session.failures.append("`sciontool run` exited 0 for a harness killed with SIGKILL")
        elif code != 0:
            session.failures.append(f"`sciontool run` exited {code}: {done.stderr.strip()[-300:]}")
        for key, value in want.items():
            if agent.get(key) != value:
                session.failures.append(f"agents --json {key}: {agent.get(key)!r}, expected {value!r}")
        state, exit_code = agent.get("state"), agent.get("exitCode")
        print(f"  sciontool run exited {code}; agents --json: {state!r}, exitCode {exit_code}", flush=True)
        if kill:
            _await_reaction()

    return drive


class View:
    """`sciontool agents --watch` in a tmux session of its own, 80 columns wide, beside the TUI."""

    def __init__(self, session: Session, title: str) -> None:
        self.session = session
        self.title = title  # the agent's row starts with it (the harness's name)
        self.socket = str(session.run.root / "tmux.sock")
        self.name = f"view-{session.run.name}"
        env = {
            "HOME": str(session.run.home),
            "PATH": session.env["PATH"],
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
        }
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command = f"env -i {exports} {shlex.quote(session.env['E2E_SCIONTOOL'])} agents --watch"
        self._tmux("new-session", "-d", "-s", self.name, "-x", "80", "-y", "24", command)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=30)
        return done.stdout

    def row(self) -> str:
        """The agent's line on the view's screen ('' when it is not listed)."""
        lines = self._tmux("capture-pane", "-p", "-t", self.name).splitlines()
        return next((line for line in lines if line.startswith(self.title)), "")

    def expect(self, *states: str, since: float) -> None:
        """The agent's row shows one of STATES within WATCH_WAIT seconds (a failure if not); how
        long after SINCE (the moment it became true) is printed."""
        deadline = time.time() + WATCH_WAIT
        while time.time() < deadline:
            row = self.row()
            if any(state in row for state in states):
                took = time.time() - since
                print(f"  agents --watch: {row.rstrip()!r} {took:.1f} s after the change", flush=True)
                return
            time.sleep(0.2)
        screen = self._tmux("capture-pane", "-p", "-t", self.name)
        shown = " or ".join(states)
        self.session.failures.append(f"agents --watch never showed {shown}; its screen:\n{screen}")

    def close(self) -> None:
        self._tmux("send-keys", "-t", self.name, "q")
        deadline = time.time() + 10
        while (
            time.time() < deadline
            and not subprocess.run(
                ["tmux", "-S", self.socket, "has-session", "-t", self.name], capture_output=True
            ).returncode
        ):
            time.sleep(0.1)
        self._tmux("kill-session", "-t", self.name)


def agents_watch(session: Session, harness: Harness) -> None:
    tui = harness.tui
    assert tui is not None and tui.question is not None
    tool = next(str(info["toolName"]) for _, info in harness.expected if "toolName" in info)
    # The view's state column is at most 18 wide (agents_view.table), cut with an ellipsis.
    running = f"Running {tool}"[:17]
    screen = open_tui(session, tui.trusted, tui, "run a tool, then ask me")
    view = View(session, harness.name)
    session.tool_pid("w1")
    view.expect(running, since=time.time())
    asked = lambda: view.expect("Waiting for you", since=time.time())  # noqa: E731
    answer_human(session, screen, tui.question, tui.answer, by_hook=True, meanwhile=asked)
    # The turn is over: Ready, or Done where the harness says its task completed (Codex's notify).
    view.expect("Ready", "Done", since=screen.wait_for(FINAL))
    screen.submit("now a long tool")
    session.tool_pid("w2")
    view.expect(running, since=time.time())
    killed = session.kill("w2", screen)
    session.truth.ends.append((killed, "error"))
    view.expect("Crashed", since=killed)
    view.close()
    screen.close()
    _await_reaction()


def scenarios(harness: Harness, tmux: bool) -> list[Scenario]:
    if not harness.lifecycle:
        return []
    held = (Reply(calls=(Call("k1", hold=True),)),)
    out = [
        Scenario("kill-tool", held, kill_tool),
        Scenario("exit-unsaid", (Reply(calls=(Call("u1", hold=True),)),), exit_unsaid),
        Scenario("two-sessions", (), two_sessions),
        Scenario("nested", (), nested),
        Scenario("run", (Reply(calls=(Call("r1", 0.5),)),), under_run(kill=False)),
        Scenario("run-kill", (Reply(calls=(Call("r1", hold=True),)),), under_run(kill=True)),
    ]
    if tmux and harness.tui is not None and harness.tui.question is not None:
        replies = (
            Reply(calls=(Call("w1", 6.0),)),
            Reply(ask=True),
            Reply(),
            Reply(calls=(Call("w2", hold=True),)),
        )
        out.append(Scenario("agents-watch", replies, agents_watch))
    return out
