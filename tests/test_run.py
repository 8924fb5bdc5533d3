"""`sciontool run -- COMMAND`: Scion's init duties for a harness outside PID 1, with real processes:
stand-in harnesses (tests/standin.py) as its child, killed, stopped, timed out; a hub on
127.0.0.1; a terminal in tmux."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_BOUND, Agent, HubServer
from standin import StandIn, eventually, info, records

RUN = [sys.executable, "-m", "sciontool_py", "run"]


def claude(name: str, **fields: object) -> dict[str, object]:
    return {"hook_event_name": name, "session_id": "s1", **fields}


def under_run(agent: Agent, tmp_path: Path, *options: str, **env: str) -> StandIn:
    return StandIn(agent, tmp_path, "claude", argv_prefix=[*RUN, *options, "--"], **env)


def harness_of(run: StandIn) -> int:
    """The pid of the harness `run` started (its only child)."""
    children: list[str] = []

    def found() -> bool:
        children[:] = Path(f"/proc/{run.proc.pid}/task/{run.proc.pid}/children").read_text().split()
        return len(children) == 1

    assert eventually(found)
    return int(children[0])


def test_a_clean_exit_is_stopped_and_the_hooks_inside_are_this_agents(agent: Agent, tmp_path: Path) -> None:
    run = under_run(agent, tmp_path, "--name", "reviewer")
    try:
        run.send(claude("SessionStart", source="startup"), claude("UserPromptSubmit", prompt="hi"))
        harness = harness_of(run)
        [(key, record)] = records(agent.home).items()
        assert key.startswith(f"p{harness}-")
        assert record["name"] == "reviewer" and record["run"][0] == run.proc.pid  # type: ignore[index]
        assert run.exit(0) == 0
    finally:
        run.close()
    status = info(agent.home)
    assert status["phase"] == "stopped" and "detail" not in status
    assert records(agent.home)[key]["exitCode"] == 0


@pytest.mark.parametrize(("how", "code"), [("exit 3", 3), ("SIGKILL", 137)])
def test_a_crash_is_phase_error_with_scions_message_and_run_exits_with_its_code(
    agent: Agent, tmp_path: Path, how: str, code: int
) -> None:
    run = under_run(agent, tmp_path)
    try:
        run.send(claude("PreToolUse", tool_name="Bash", tool_use_id="t1"))
        if how == "SIGKILL":
            os.kill(harness_of(run), signal.SIGKILL)  # run's child, started by this test
            assert run.proc.wait(timeout=HANG_BOUND) == code
        else:
            assert run.exit(3) == code
    finally:
        run.close()
    status = info(agent.home)
    assert status == {"detail": {"message": f"Agent crashed with exit code {code}"}, "phase": "error"}
    [record] = records(agent.home).values()
    assert record["exitCode"] == code
    assert agent.log_lines[-1].endswith(f"[ERROR] [error] Agent crashed with exit code {code}")


def test_sigterm_to_run_is_a_requested_stop_passed_to_the_harness(agent: Agent, tmp_path: Path) -> None:
    run = under_run(agent, tmp_path)
    try:
        run.send(claude("PreToolUse", tool_name="Bash", tool_use_id="t1"))
        harness = harness_of(run)
        run.proc.send_signal(signal.SIGTERM)  # our own child
        assert run.proc.wait(timeout=HANG_BOUND) == 128 + signal.SIGTERM  # the harness died of it
        assert not Path(f"/proc/{harness}").exists()
    finally:
        run.close()
    assert info(agent.home)["phase"] == "stopped"


def test_max_duration_stops_the_harness_then_kills_it_after_the_grace(agent: Agent, tmp_path: Path) -> None:
    # A harness that ignores SIGTERM: after SCION_GRACE_PERIOD, SIGKILL.
    stubborn = tmp_path / "stubborn.py"
    stubborn.write_text(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)\n"
    )
    env = {**agent.env, "SCION_MAX_DURATION": "1s", "SCION_GRACE_PERIOD": "500ms"}
    started = time.monotonic()
    done = subprocess.run([*RUN, "--", sys.executable, str(stubborn)], env=env, timeout=HANG_BOUND * 3)
    assert done.returncode == 10
    assert time.monotonic() - started >= 1.5  # the limit, then the grace
    status = info(agent.home)
    assert status["phase"] == "stopped" and status["activity"] == "limits_exceeded"
    lines = agent.log_lines
    assert any("[LIMITS_EXCEEDED] Agent stopped: max_duration of 1s exceeded" in line for line in lines)


def test_a_child_harness_inside_a_tool_is_not_runs_agent(agent: Agent, tmp_path: Path) -> None:
    run = under_run(agent, tmp_path)
    try:
        run.send(
            claude("UserPromptSubmit", prompt="orchestrate"),
            claude("PreToolUse", tool_name="Bash", tool_use_id="t1"),
        )
        run.child(claude("UserPromptSubmit", prompt="sub"), claude("Stop"))  # `claude -p` from inside Bash
        assert run.exit(5) == 5
    finally:
        run.close()
    found = records(agent.home)
    [parent] = [r for r in found.values() if "run" in r]
    [child] = [r for r in found.values() if "parent" in r]
    assert parent["info"]["phase"] == "error"  # type: ignore[index]
    assert child["info"].get("phase") != "error" and "exitCode" not in child  # type: ignore[union-attr]


def test_bad_usage_is_one_line_and_exit_1(agent: Agent) -> None:
    for args, message in (
        ([], "sciontool run: no command to run (usage: sciontool run [--name NAME] -- COMMAND [ARG...])"),
        (["--", str(agent.home / "no-such-harness")], "sciontool run: cannot run "),
        (["--bogus", "--", "true"], "sciontool run: unknown option --bogus"),
    ):
        done = agent.run("run", *args)
        assert done.returncode == 1
        [line] = done.stderr.decode().splitlines()
        assert line.startswith(message)


def test_with_a_hub_it_beats_reports_each_change_and_the_exit_code(
    agent: Agent, tmp_path: Path, hub: HubServer
) -> None:
    env = {"SCION_HUB_ENDPOINT": hub.url, "SCION_AGENT_ID": "agent-1", "SCION_AUTH_TOKEN": "tok"}
    run = under_run(agent, tmp_path, **env)
    try:
        assert eventually(lambda: any(b'"heartbeat":true' in r.body for r in hub.requests))
        run.send(claude("PreToolUse", tool_name="Bash", tool_use_id="t1"))
        assert eventually(
            lambda: any(
                b'"activity":"executing"' in r.body and b"Executing" not in r.body for r in hub.requests
            )
        )
        assert run.exit(7) == 7
    finally:
        run.close()
    last = json.loads(hub.requests[-1].body)
    assert last == {
        "phase": "error",
        "status": "error",
        "message": "Agent crashed with exit code 7",
        "exitCode": 7,
    }
    assert info(agent.home)["phase"] == "error"


TUI = """\
import os, signal, sys, termios, tty
signal.signal(signal.SIGWINCH, lambda *a: print(f"\\r\\nsize {os.get_terminal_size().columns}", flush=True))
signal.signal(signal.SIGINT, lambda *a: print("\\r\\ngot ctrl-c", flush=True))
tty.setraw(0)
print("ready", flush=True)
while (key := os.read(0, 1)) != b"q":
    print(f"\\r\\nkey {key.decode()}", flush=True)
termios.tcsetattr(0, termios.TCSADRAIN, termios.tcgetattr(0))
sys.exit(4)
"""


def test_a_tui_under_run_gets_the_keys_the_resize_and_ctrl_c(agent: Agent, tmp_path: Path) -> None:
    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed")
    script = tmp_path / "tui.py"
    script.write_text(TUI.replace("tty.setraw(0)", "tty.setcbreak(0)"))  # cbreak: Ctrl-C stays a signal
    socket = str(tmp_path / "tmux.sock")
    tmux = ["tmux", "-S", socket]
    env = {**agent.env, "TERM": "xterm"}
    command = " ".join([*RUN, "--", sys.executable, str(script)]) + f"; echo exit=$? > {tmp_path / 'rc'}"
    subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "24", command], env=env, check=True)
    try:
        screen = lambda: subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout  # noqa: E731
        assert eventually(lambda: "ready" in screen())
        subprocess.run([*tmux, "send-keys", "x"], check=True)
        assert eventually(lambda: "key x" in screen())
        subprocess.run([*tmux, "send-keys", "C-c"], check=True)
        assert eventually(lambda: "got ctrl-c" in screen())  # the harness's, not run's: run goes on
        subprocess.run([*tmux, "resize-window", "-x", "100"], check=True)
        assert eventually(lambda: "size 100" in screen())
        lines = [line for line in screen().splitlines() if line.strip()]
        assert lines == ["ready", "key x", "got ctrl-c", "size 100"]  # run adds nothing to the screen
        subprocess.run([*tmux, "send-keys", "q"], check=True)
        assert eventually(lambda: (tmp_path / "rc").exists())
        assert (tmp_path / "rc").read_text().strip() == "exit=4"
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)
    assert info(agent.home)["detail"] == {"message": "Agent crashed with exit code 4"}
