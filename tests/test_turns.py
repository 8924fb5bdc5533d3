"""A harness that does not wait for its hooks (Claude Code's "async"), with real processes: each
hook is a `sh -c` child of the harness, started in the order of the events, and the earlier one
may reach sciontool last. The later waits for its turn, in its own process and in the resident
helper (through the shell relay), so the files say the events in the order they happened; a
stuck earlier hook holds the later one back for turns.TURN_WAIT at most."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_BOUND, Agent
from helper.test_bash import GONE, SHELL, address
from helper.test_client import HOOK, SESSION, claude, helper_runs, log_messages
from standin import eventually, info, records

from sciontool_py import turns

PRE, POST = SESSION[2], SESSION[3]
RAN, DONE = "[executing] Running tool: Bash", "[working] Tool Bash completed"


def said(agent: Agent) -> list[str]:
    """agent.log's messages, without their time and level."""
    return [line.split("] ", 2)[-1] for line in log_messages(agent)]


def script(argv: list[str]) -> list[str]:
    """A hook as Claude Code starts one, `sh -c 'COMMAND'`, its program after $DELAY seconds."""
    return ["sh", "-c", f'sleep "$DELAY"; exec {shlex.join(argv)}']


class Unwaited:
    """A harness that starts each hook as `sh -c 'COMMAND'` after DELAY seconds (the same command
    line for every event, as a harness's hooks have) and waits for none until told."""

    SCRIPT = """\
import json, os, subprocess, sys
started = []
for line in sys.stdin:
    order = json.loads(line)
    if order == "wait":
        done = [p.wait() for p in started]
        started.clear()
        print(json.dumps(done), flush=True)
        continue
    if order == "kill":
        for p in started:
            p.kill()
            p.wait()
        continue
    argv, data, delay = order
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "DELAY": str(delay)},
    )
    proc.stdin.write(data.encode())
    proc.stdin.close()
    started.append(proc)
    print(proc.pid, flush=True)
"""

    def __init__(self, agent: Agent, tmp_path: Path, prefix: list[str], **env: str) -> None:
        self.prefix = prefix
        script = tmp_path / "unwaited.py"
        script.write_text(self.SCRIPT)
        self.proc = subprocess.Popen(
            [sys.executable, str(script)],
            env={**agent.env, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=agent.home,
        )

    def say(self, order: object) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(order) + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline() if order != "kill" else ""

    def fire(self, envelope: dict[str, object], delay: float = 0.0) -> int:
        """Start the hook for ENVELOPE, its program after DELAY seconds; its shell's pid."""
        return self.start(script([*self.prefix, "--dialect=claude"]), envelope, delay)

    def start(self, argv: list[str], envelope: dict[str, object], delay: float = 0.0) -> int:
        return int(self.say([argv, json.dumps(envelope), delay]))

    def wait(self) -> list[int]:
        return list(json.loads(self.say("wait")))

    def close(self) -> None:
        self.say("kill")
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()


@pytest.fixture
def alone(agent: Agent, tmp_path: Path) -> Iterator[Unwaited]:
    """Every hook in its own process: no resident helper."""
    harness = Unwaited(agent, tmp_path, HOOK, SCIONTOOL_EXIT_WATCH="off")
    try:
        yield harness
    finally:
        harness.close()


@pytest.fixture(params=["shell relay", "unix relay"])
def relayed(agent: Agent, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Unwaited]:
    """The first hook in its own process starts the resident; each later one goes to it through
    relay.bash to a program that cannot start (so it ran only if the helper ran it), or from a
    Python hook process over the HOME's unix socket."""
    harness = Unwaited(agent, tmp_path, HOOK, SCIONTOOL_EXIT_WATCH="on")
    try:
        harness.fire(SESSION[0])
        assert harness.wait() == [0]
        assert eventually(lambda: helper_runs(agent) and len(address(agent)) == 5)
        if request.param == "shell relay":
            harness.prefix = [*SHELL, *GONE]
        yield harness
    finally:
        harness.close()


def test_a_tools_end_that_comes_first_waits_for_its_start_in_its_own_process(
    agent: Agent, alone: Unwaited
) -> None:
    alone.fire(SESSION[0])
    alone.fire(PRE, delay=0.5)  # its sciontool starts after the next event's
    alone.fire(POST)
    assert alone.wait() == [0, 0, 0]
    assert said(agent)[-2:] == [RAN, DONE]
    assert info(agent.home)["activity"] == "working"  # not left executing a finished tool


def test_the_helper_serves_relayed_hooks_in_the_order_their_harness_started_them(
    agent: Agent, relayed: Unwaited
) -> None:
    relayed.fire(claude("UserPromptSubmit", prompt="list the files"), delay=0.6)
    relayed.fire(PRE, delay=0.3)
    relayed.fire(POST)
    relayed.fire(SESSION[4])
    assert relayed.wait() == [0, 0, 0, 0]  # through the shell each relayed: GONE cannot start
    assert said(agent)[1:] == [
        "[thinking] User prompt: list the files",
        RAN,
        DONE,
        "[working] Tool execution completed",  # PostToolBatch
    ]
    assert info(agent.home)["activity"] == "thinking"


def test_a_stuck_earlier_hook_holds_the_next_back_for_the_bound_and_no_longer(
    agent: Agent, alone: Unwaited
) -> None:
    alone.fire(SESSION[0])
    assert alone.wait() == [0]
    alone.fire(PRE, delay=HANG_BOUND * 3)  # its sciontool starts long after this test's end
    began = time.monotonic()
    alone.fire(POST)
    assert eventually(lambda: said(agent)[-1:] == [DONE])
    assert time.monotonic() - began >= turns.TURN_WAIT  # it waited its bound for the stuck one
    assert RAN not in said(agent)  # which is still stuck (the fixture ends it)


def test_only_an_earlier_child_running_the_same_hook_is_waited_for(agent: Agent) -> None:
    """The turn as /proc tells it, this test's process the harness: a child started earlier that
    runs the hook with other arguments, one handed the hook as a script's arguments (opencode's
    exit watcher, alive as long as opencode), or one that has ended, is none to wait for; one
    handed its payload as an argument (Codex's notify, just before SessionEnd) is."""
    hook = [*HOOK, "--dialect=claude"]
    env = {**agent.env, "DELAY": "60"}
    started = [
        subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)
        for argv in (
            script([*HOOK, "--dialect=codex"]),
            ["sh", "-c", 'sleep "$DELAY"', "sh", *hook],  # the watcher's form
            script(hook),  # the one to wait for
            script([*hook, json.dumps({"type": "agent-turn-complete"})]),  # and this one
        )
    ]
    try:
        ended = subprocess.Popen(script(hook), env={**env, "DELAY": "0"}, stdin=subprocess.DEVNULL)
        ended.wait(timeout=HANG_BOUND)
        later = subprocess.Popen(script(hook), env=env, stdin=subprocess.DEVNULL)
        started.append(later)
        assert eventually(
            lambda: all(Path(f"/proc/{p.pid}/cmdline").read_bytes()[:3] == b"sh\0" for p in started)
        )
        turn = turns.of(later.pid)
        assert turn is not None
        assert [pid for pid, _ in turn.earlier()] == [started[2].pid, started[3].pid]
        assert turns.of(started[1].pid) is None  # not a hook: no turn of its own either
    finally:
        for proc in started:
            proc.kill()
            proc.wait()


def waiting(shell: int) -> bool:
    """Whether SHELL's hook waits for its turn (in poll, on the earlier hook's pidfd): the only
    wait of a hook before its work."""
    try:
        (child,) = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        python = Path(f"/proc/{child}/comm").read_text().startswith("python")
        return python and Path(f"/proc/{child}/wchan").read_text().startswith("poll_schedule_timeout")
    except (OSError, ValueError):
        return False


def test_a_hook_whose_shell_is_killed_while_it_waits_is_still_its_harness_agents(
    agent: Agent, alone: Unwaited
) -> None:
    """A harness that stops a hook's shell (an interrupt) leaves the hook to init: after its turn
    it is still the agent of the harness found before it waited, never a second agent."""
    alone.fire(SESSION[0])
    assert alone.wait() == [0]
    (key,) = records(agent.home)
    hook = shlex.join([*HOOK, "--dialect=claude"])
    kept = ["sh", "-c", f'sleep "$DELAY"; {hook}; true']  # the shell stays the hook's parent
    alone.start(kept, PRE, delay=HANG_BOUND * 3)  # an earlier hook, stuck
    shell = alone.start(kept, POST)
    assert eventually(lambda: waiting(shell))
    os.kill(shell, signal.SIGKILL)  # its hook, waiting for its turn, goes on under init
    assert eventually(lambda: said(agent)[-1:] == [DONE])
    assert list(records(agent.home)) == [key]
    assert info(agent.home)["activity"] == "working"


TOOLS = [  # tools a harness runs that only name the hook: none is an earlier hook
    ["sh", "-c", 'echo sciontool hook --dialect=claude && sleep "$DELAY"; true'],  # sh stays
    ["sh", "-c", 'sleep "$DELAY" || grep "sciontool hook --dialect=claude" /dev/null'],
    [sys.executable, "-c", "import os, time; time.sleep(int(os.environ['DELAY']))", "sciontool", "hook"],
]


def test_a_tool_that_names_the_hook_is_never_waited_for(agent: Agent) -> None:
    """/proc as it stands, this test's process the harness: tools started before the hook that
    merely mention `sciontool hook` are no earlier hooks."""
    env = {**agent.env, "DELAY": "60"}
    started = [subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL) for argv in TOOLS]
    try:
        later = subprocess.Popen(script([*HOOK, "--dialect=claude"]), env=env, stdin=subprocess.DEVNULL)
        started.append(later)
        assert eventually(lambda: Path(f"/proc/{later.pid}/cmdline").read_bytes()[:3] == b"sh\0")
        turn = turns.of(later.pid)
        assert turn is not None and turn.arguments == b"--dialect=claude"
        assert turn.earlier() == []
    finally:
        for proc in started:
            proc.kill()
            proc.wait()


def test_hooks_beside_a_running_tool_that_names_the_hook_do_not_wait_their_bound(
    agent: Agent, alone: Unwaited
) -> None:
    # Each hook in its own process waited turns.TURN_WAIT for such a tool, every time.
    for argv in TOOLS:
        alone.start(argv, {}, delay=HANG_BOUND * 3)  # still running when the hooks run
    began = time.monotonic()
    alone.fire(SESSION[0])
    alone.fire(PRE)
    alone.fire(POST)
    assert eventually(lambda: said(agent)[-2:] == [RAN, DONE])
    # Three hooks: they waited 3 * TURN_WAIT before; the bound leaves room for a loaded machine.
    assert time.monotonic() - began < 2 * turns.TURN_WAIT
