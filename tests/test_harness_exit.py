"""The harness exit watcher (dialect option watch_harness_exit), with real processes: a stand-in
harness (a Python process) runs the real `sciontool hook` through `sh -c`, as Qwen Code and
Vibe do, then exits without a session end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import HANG_BOUND, REPO, Agent, log_entries

from sciontool_py import harness_exit
from sciontool_py.handlers.exit_watch import process_stat
from sciontool_py.harness_exit import MODULE, REASON
from sciontool_py.log.writer import AgentLog

# Runs each envelope of argv through the hook command (in $HOOK) under a shell; with --stay, then
# waits for its stdin to close before exiting (a harness still running).
HARNESS = """\
import os, subprocess, sys
envelopes = [a for a in sys.argv[1:] if a != "--stay"]
for envelope in envelopes:
    subprocess.run(["sh", "-c", os.environ["HOOK"] + "; :"], input=envelope.encode(), check=True)
if "--stay" in sys.argv:
    print("ready", flush=True)
    sys.stdin.read()
"""
WATCHER = "import sys\nfrom sciontool_py.harness_exit import main\nsys.exit(main(sys.argv[1:]))"


def envelope(name: str, session: str = "s1", **fields: object) -> str:
    return json.dumps({"hook_event_name": name, "session_id": session, **fields})


# A wrapper of the hook named sciontool (as make e2e's recorder, `timeout`, `uv run`): it exits
# with the hook, so it is not the harness.
WRAPPER = "import subprocess, sys\nsys.exit(subprocess.run([sys.executable, '-m', 'sciontool_py', *sys.argv[1:]]).returncode)"


def harness(
    agent: Agent,
    tmp_path: Path,
    *args: str,
    dialect: str = "qwen-code",
    wrapped: bool = False,
    dialect_file: Path | None = None,
) -> subprocess.Popen[bytes]:
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    which = f"--dialect-file={dialect_file}" if dialect_file else f"--dialect={dialect}"
    hook = f"{sys.executable} -m sciontool_py hook {which}"
    if wrapped:
        (tmp_path / "sciontool").write_text(WRAPPER)
        hook = f"{sys.executable} {tmp_path / 'sciontool'} hook {which}"
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        env={**agent.env, "HOOK": hook},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


def watchers(home: Path) -> list[int]:
    """The pids of the exit watchers started for HOME."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(MODULE.encode() in a for a in argv) and os.fsencode(home) in argv:
                found.append(int(name))
    return found


def eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + HANG_BOUND
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def phase(agent: Agent) -> object:
    try:
        return agent.info.get("phase")
    except (OSError, ValueError):
        return None


def ended_lines(agent: Agent) -> list[str]:
    # A DEBUG line may quote the line it did not write ("not logged: Session ended ...").
    return [line for line in agent.log_lines if "Session ended" in line and "[DEBUG]" not in line]


def test_a_harness_that_exits_without_a_session_end_reads_stopped(agent: Agent, tmp_path: Path) -> None:
    run = harness(agent, tmp_path, envelope("SessionStart", source="startup"), envelope("Stop"))
    assert run.wait(timeout=60) == 0
    assert eventually(lambda: phase(agent) == "stopped"), agent.log_lines
    assert eventually(lambda: not watchers(agent.home))
    assert ended_lines(agent) == [line for line in agent.log_lines if REASON in line]
    assert len(ended_lines(agent)) == 1
    assert json.loads((agent.home / "agent-sessions.json").read_text())["ended"] == ["s1"]


def test_a_wrapper_of_the_hook_is_not_taken_for_the_harness(agent: Agent, tmp_path: Path) -> None:
    tool = {"tool_name": "run_shell_command", "tool_use_id": "t1", "tool_input": {"command": "ls"}}
    run = harness(
        agent,
        tmp_path,
        envelope("SessionStart", source="startup"),
        envelope("PreToolUse", **tool),
        "--stay",
        wrapped=True,
    )
    assert run.stdout is not None and run.stdin is not None
    assert run.stdout.readline() == b"ready\n"
    assert eventually(lambda: len(watchers(agent.home)) == 1)
    time.sleep(0.5)  # the wrappers are gone: a watcher of one of them would have ended the session
    assert phase(agent) == "running"
    state = json.loads((agent.home / "agent-sessions.json").read_text())
    assert state["watched"]["s1"][0] == run.pid
    run.stdin.close()
    assert run.wait(timeout=60) == 0
    assert eventually(lambda: phase(agent) == "stopped")


def test_vibe_which_fires_no_session_event_at_all_reads_stopped(agent: Agent, tmp_path: Path) -> None:
    start = envelope("pre_tool", tool_name="bash", tool_call_id="c1", tool_input={"command": "ls"})
    end = envelope("post_tool", tool_name="bash", tool_call_id="c1", tool_status="success")
    run = harness(agent, tmp_path, start, end, envelope("post_agent"), dialect="mistral-vibe")
    assert run.wait(timeout=60) == 0
    assert eventually(lambda: phase(agent) == "stopped"), agent.log_lines
    assert eventually(lambda: not watchers(agent.home))  # its agent.log line follows the state
    assert len(ended_lines(agent)) == 1


def test_a_session_end_the_harness_fired_is_said_once(agent: Agent, tmp_path: Path) -> None:
    run = harness(
        agent, tmp_path, envelope("SessionStart", source="startup"), envelope("Stop"), envelope("SessionEnd")
    )
    assert run.wait(timeout=60) == 0
    assert eventually(lambda: not watchers(agent.home))
    assert phase(agent) == "stopped"
    assert len(ended_lines(agent)) == 1
    assert not [line for line in agent.log_lines if REASON in line]


def test_one_watcher_per_session_which_ends_with_its_harness(agent: Agent, tmp_path: Path) -> None:
    tool = {"tool_name": "run_shell_command", "tool_use_id": "t1", "tool_input": {"command": "ls"}}
    run = harness(
        agent,
        tmp_path,
        envelope("SessionStart", source="startup"),
        envelope("UserPromptSubmit", prompt="hi"),
        envelope("PreToolUse", **tool),
        envelope("PostToolUse", **tool),
        envelope("Stop"),
        "--stay",
    )
    assert run.stdout is not None and run.stdin is not None
    assert run.stdout.readline() == b"ready\n"
    assert eventually(lambda: len(watchers(agent.home)) == 1)
    assert len(watchers(agent.home)) == 1  # five hooks of one session, one watcher
    assert phase(agent) == "running"  # the harness lives: nothing said for it
    run.stdin.close()
    assert run.wait(timeout=60) == 0
    assert eventually(lambda: not watchers(agent.home))  # gone with its harness
    assert phase(agent) == "stopped"


def test_a_resumed_session_in_a_new_process_is_watched_again(agent: Agent, tmp_path: Path) -> None:
    for source in ("startup", "resume"):
        run = harness(agent, tmp_path, envelope("SessionStart", source=source), envelope("Stop"))
        assert run.wait(timeout=60) == 0
        assert eventually(lambda: not watchers(agent.home))
        assert phase(agent) == "stopped"
    assert len([line for line in agent.log_lines if REASON in line]) == 2


def run_watcher(agent: Agent, pid: int, start: int) -> subprocess.CompletedProcess[bytes]:
    args = ["--home", str(agent.home), "--session", "s1", "--pid", str(pid), "--start", str(start)]
    return subprocess.run(
        [sys.executable, "-c", WATCHER, *args, "--dialect", "qwen-code"],
        env=agent.env,
        capture_output=True,
        timeout=HANG_BOUND,
    )


def plant(agent: Agent, watched: list[int]) -> None:
    (agent.home / "agent-info.json").write_text('{"activity": "working", "phase": "running"}')
    state = {"ended": [], "open": {}, "session": "s1", "watched": {"s1": watched}}
    (agent.home / "agent-sessions.json").write_text(json.dumps(state))


def test_a_recycled_pid_is_not_waited_for(agent: Agent) -> None:
    # This process, under a start time it does not have: the watched harness is gone and its pid
    # reused. The watcher must not wait for the live process that now has the pid.
    stat = process_stat(os.getpid())
    assert stat is not None
    recycled = [os.getpid(), stat[3] + 1]
    plant(agent, recycled)
    done = run_watcher(agent, *recycled)
    assert done.returncode == 0, done.stderr
    assert phase(agent) == "stopped"
    assert len(ended_lines(agent)) == 1


def test_a_watcher_whose_session_another_process_took_stands_down(agent: Agent) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    stat = process_stat(os.getpid())
    assert stat is not None
    plant(agent, [os.getpid(), stat[3]])  # the session's harness is now another process
    agent.env["SCION_LOG_LEVEL"] = "debug"
    done = run_watcher(agent, gone.pid, 1)
    assert done.returncode == 0, done.stderr
    assert phase(agent) == "running"
    assert not ended_lines(agent)
    # Only the reason, at DEBUG: the session is not over, and the log does not say it is.
    [line] = agent.log_lines
    assert "[DEBUG]" in line and "the session is another process's now (or ended)" in line


def test_a_hook_run_straight_from_a_program_watches_that_program(agent: Agent) -> None:
    # No shell between: the program itself (here the test's process) is the harness. Its watcher
    # says nothing while it lives.
    assert agent.hook(envelope("SessionStart", source="startup"), "--dialect=qwen-code").returncode == 0
    stat = process_stat(os.getpid())
    assert stat is not None
    state = json.loads((agent.home / "agent-sessions.json").read_text())
    assert state["watched"] == {"s1": [os.getpid(), stat[3]]}
    assert eventually(lambda: len(watchers(agent.home)) == 1)
    assert agent.hook(envelope("Stop"), "--dialect=qwen-code").returncode == 0
    time.sleep(0.5)
    assert len(watchers(agent.home)) == 1
    assert phase(agent) == "running"
    for pid in watchers(agent.home):  # ours: it would otherwise wait for the suite's end
        os.kill(pid, 15)


def test_a_dialect_file_of_the_users_own_is_watched_too(agent: Agent, tmp_path: Path) -> None:
    # `hook --dialect-file=PATH` with watch_harness_exit: the watcher loads the same file.
    mine = tmp_path / "mine" / "dialect.yaml"
    mine.parent.mkdir()
    shutil.copy(REPO / "dialects" / "qwen-code" / "dialect.yaml", mine)
    run = harness(agent, tmp_path, envelope("SessionStart", source="startup"), dialect_file=mine)
    assert run.wait(timeout=60) == 0
    assert eventually(lambda: phase(agent) == "stopped"), agent.log_lines
    assert eventually(lambda: not watchers(agent.home))
    assert len(ended_lines(agent)) == 1


def test_a_watcher_whose_dialect_is_gone_at_the_exit_changes_nothing(agent: Agent, tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    plant(agent, [gone.pid, 1])
    args = ["--home", str(agent.home), "--session", "s1", "--pid", str(gone.pid), "--start", "1"]
    done = subprocess.run(
        [sys.executable, "-c", WATCHER, *args, "--dialect-file", str(tmp_path / "removed.yaml")],
        env=agent.env,
        capture_output=True,
        timeout=HANG_BOUND,
    )
    assert done.returncode == 1 and done.stderr == b""
    assert phase(agent) == "running"
    assert not ended_lines(agent)


def test_a_watcher_that_cannot_start_is_a_debug_line_and_nothing_else(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A session id with a NUL (from the harness's envelope) cannot be an argument; an interpreter
    # removed under the hook (a venv rebuilt) cannot be started. The hook goes on either way.
    monkeypatch.setenv("SCION_LOG_LEVEL", "debug")
    log = AgentLog(str(home), quiet=True)
    harness_exit.start(log, "s\x001", [os.getpid(), 1], "qwen-code", None)
    monkeypatch.setattr(sys, "executable", str(home / "removed" / "python3"))
    harness_exit.start(log, "s1", [os.getpid(), 1], None, str(home / "dialect.yaml"))
    assert [(level, message) for level, _, message in log_entries(home)] == [
        ("DEBUG", "Harness exit watch not started: embedded null byte"),
        (
            "DEBUG",
            f"Harness exit watch not started: [Errno 2] No such file or directory: '{home}/removed/python3'",
        ),
    ]
    assert not watchers(home)


def test_a_harness_that_exited_but_is_not_yet_reaped_is_not_waited_for() -> None:
    child = subprocess.Popen(["true"])
    try:
        assert eventually(lambda: (process_stat(child.pid) or (b"", b""))[1] == b"Z")
        stat = process_stat(child.pid)
        assert stat is not None
        started = time.monotonic()
        harness_exit.wait_for_exit(child.pid, stat[3])  # a zombie: exited, whatever its parent does
        assert time.monotonic() - started < HANG_BOUND
    finally:
        child.wait()
    harness_exit.wait_for_exit(child.pid, stat[3])  # reaped: no such process at all


def test_the_wait_lasts_as_long_as_the_harness_runs() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        stat = process_stat(child.pid)
        assert stat is not None
        waiter = threading.Thread(target=harness_exit.wait_for_exit, args=(child.pid, stat[3]), daemon=True)
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive()  # the harness still runs
        assert child.stdin is not None
        child.stdin.close()  # now it exits
        waiter.join(HANG_BOUND)
        assert not waiter.is_alive()
    finally:
        if child.poll() is None:  # a failed assertion above: our own child, which would block the wait
            child.kill()
        child.wait()
