"""Several agents in one HOME, and `sciontool agents`: stand-in harnesses (tests/standin.py) at once
in one HOME, one started from inside another's tool; the list, its JSON, the live view in tmux
at 80 columns, and the alerts it runs, counted."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Agent
from standin import StandIn, eventually, hook_command, info, record_of, records

from sciontool_py import agents_watch, registry


def claude(name: str, session: str = "s1", **fields: object) -> dict[str, object]:
    return {"hook_event_name": name, "session_id": session, **fields}


@pytest.fixture
def harnesses(agent: Agent, tmp_path: Path) -> Iterator[list[StandIn]]:
    started: list[StandIn] = []
    yield started
    for harness in started:
        harness.close()


def start(
    harnesses: list[StandIn], agent: Agent, tmp_path: Path, dialect: str = "claude", **env: str
) -> StandIn:
    folder = tmp_path / f"h{len(harnesses)}"
    folder.mkdir()
    harness = StandIn(agent, folder, dialect, **env)
    harnesses.append(harness)
    return harness


def run_late(agent: Agent, tmp_path: Path, dialect: str, *envelopes: dict[str, object]) -> None:
    """The envelopes' hooks, one after another, with their harness gone: `( ... ) &` in a shell
    that exits at once, so the hooks' parent is a shell whose parent is init."""
    done = tmp_path / "late-hooks-done"
    hooks = []
    for n, envelope in enumerate(envelopes):
        (tmp_path / f"late-{n}").write_text(json.dumps(envelope))
        hooks.append(f"{hook_command(dialect)} < {tmp_path / f'late-{n}'}")
    subprocess.run(["sh", "-c", f"({' && '.join(hooks)}; touch {done}) &"], env=agent.env, check=True)
    assert eventually(done.exists)


def agents_json(agent: Agent) -> list[dict[str, object]]:
    done = agent.run("agents", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert isinstance(found, list)
    return found


def test_two_sessions_in_one_home_never_change_each_others_state(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    a = start(harnesses, agent, tmp_path)
    b = start(harnesses, agent, tmp_path)
    a.send(claude("SessionStart", "A", source="startup"), claude("UserPromptSubmit", "A", prompt="build"))
    a.send(claude("PreToolUse", "A", tool_name="Bash", tool_use_id="a1"))
    b.send(claude("SessionStart", "B", source="startup"), claude("UserPromptSubmit", "B", prompt="test"))
    b.send(
        claude("PreToolUse", "B", tool_name="Read", tool_use_id="b1"),
        claude("PostToolUse", "B", tool_name="Read", tool_use_id="b1"),
    )
    assert record_of(agent.home, a.proc.pid)["info"] == {
        "activity": "executing",
        "phase": "running",
        "toolName": "Bash",
    }
    b.send(claude("Stop", "B"), claude("SessionEnd", "B", reason="exit"))
    # B ended: A still runs Bash, in its own record and in agent-info.json (the live one shown).
    assert record_of(agent.home, a.proc.pid)["info"]["activity"] == "executing"  # type: ignore[index]
    assert record_of(agent.home, b.proc.pid)["info"] == {"phase": "stopped"}
    assert info(agent.home) == {"activity": "executing", "phase": "running", "toolName": "Bash"}
    by_session = {row["session"]: row for row in agents_json(agent)}
    assert by_session["A"]["state"] == "Running Bash" and by_session["A"]["activity"] == "executing"
    assert by_session["B"]["state"] == "Stopped" and by_session["B"]["phase"] == "stopped"
    assert by_session["A"]["pid"] == a.proc.pid and by_session["A"]["project"]
    for row in by_session.values():
        assert {"harness", "session", "pid", "project", "activity", "phase", "since", "message"} <= set(row)


def test_a_child_session_inside_a_tool_is_a_new_agent_never_the_parent(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    parent = start(harnesses, agent, tmp_path)
    parent.send(
        claude("SessionStart", "P", source="startup"), claude("UserPromptSubmit", "P", prompt="orchestrate")
    )
    parent.send(claude("PreToolUse", "P", tool_name="Bash", tool_use_id="p1"))
    before = info(agent.home)
    # `claude -p` run from the parent's Bash: its whole session, start to end.
    parent.child(
        claude("SessionStart", "C", source="startup"),
        claude("UserPromptSubmit", "C", prompt="sub-task"),
        claude("Stop", "C"),
        claude("SessionEnd", "C", reason="exit"),
    )
    assert info(agent.home) == before == {"activity": "executing", "phase": "running", "toolName": "Bash"}
    found = records(agent.home)
    [child] = [r for r in found.values() if r.get("session") == "C"]
    [parent_key] = [k for k, r in found.items() if r.get("session") == "P"]
    assert child["parent"] == parent_key and child["info"] == {"phase": "stopped"}
    assert found[parent_key]["info"]["activity"] == "executing"  # type: ignore[index]


def test_a_hook_still_running_when_its_harness_died_is_that_agents_not_a_new_one(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    # A harness killed while one of its hooks runs (Codex's PostModelRequest beside PreToolUse),
    # or opencode's exit hand-off: the hook finds no harness above it. It was a second agent,
    # keyed by its session, whose status then showed in agent-info.json (working, for good).
    a = start(harnesses, agent, tmp_path)
    a.send(claude("SessionStart", "A", source="startup"), claude("UserPromptSubmit", "A", prompt="build"))
    a.send(claude("PreToolUse", "A", tool_name="Bash", tool_use_id="a1"))
    a.kill()
    assert eventually(lambda: info(agent.home).get("phase") == "error")
    run_late(agent, tmp_path, "claude", claude("PostToolUse", "A", tool_name="Bash", tool_use_id="a1"))
    [key] = records(agent.home)
    assert key == f"p{a.proc.pid}-{key.rpartition('-')[2]}"
    assert record_of(agent.home, a.proc.pid)["info"] == info(agent.home)
    assert info(agent.home)["phase"] == "error"  # the late PostToolUse of an ended session changes nothing


def test_a_turns_end_that_runs_after_the_harness_exited_revises_the_guessed_crash(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    # opencode exits 0.4 s after its turn ends, and its bridge hands the turn's end over as it
    # exits: the watcher saw a turn under way (a crash), then the turn's end ran.
    a = start(harnesses, agent, tmp_path)
    a.send(claude("SessionStart", "A", source="startup"), claude("UserPromptSubmit", "A", prompt="build"))
    assert a.exit(0) == 0
    assert eventually(lambda: info(agent.home).get("phase") == "error")
    run_late(agent, tmp_path, "claude", claude("Stop", "A"), claude("SessionEnd", "A"))
    assert info(agent.home) == {"phase": "stopped"}
    [row] = agents_json(agent)
    assert row["state"] == "Stopped" and "detail" not in row
    assert row["message"] == "Session ended (reason: the turn's end ran after the harness exited)"
    assert sum("the turn's end ran after the harness exited" in line for line in agent.log_lines) == 1


def failed_turn(session: str) -> list[dict[str, object]]:
    """An opencode turn of SESSION whose model call fails (an API error), its idle not yet said."""
    return [
        claude("message.updated.user", session, prompt="build"),
        claude("chat.params", session, model="m"),
        claude("session.error", session, error="APIError: 400 bad request"),
    ]


def test_a_late_turns_end_leaves_the_crash_when_the_turns_model_call_failed(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    # opencode exits 1 after an API error, and its bridge still hands the idle session over as it
    # exits (make e2e opencode api-error): the late turn's end is no clean exit.
    a = start(harnesses, agent, tmp_path, "opencode")
    a.send(*failed_turn("A"))
    assert a.exit(1) == 1
    assert eventually(lambda: info(agent.home).get("phase") == "error")
    run_late(agent, tmp_path, "opencode", claude("session.idle", "A"))
    assert info(agent.home)["phase"] == "error"
    [row] = agents_json(agent)
    assert row["message"] == "Agent exited mid-turn without a session end"
    assert not any("the turn's end ran after the harness exited" in line for line in agent.log_lines)


def test_a_harness_gone_after_the_user_aborted_its_model_call_reads_stopped(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    # opencode's interrupt ends the call "Aborted" (make e2e opencode interrupt): no failed call.
    a = start(harnesses, agent, tmp_path, "opencode")
    a.send(
        claude("message.updated.user", "A", prompt="build"),
        claude("chat.params", "A", model="m"),
        claude("session.error", "A", error="Aborted"),
        claude("session.idle", "A"),
    )
    assert a.exit(0) == 0
    # The end's agent.log line is written just before its status: wait for the status.
    assert eventually(lambda: info(agent.home).get("phase") == "stopped")
    assert any("Session ended (reason: the harness exited" in line for line in agent.log_lines)


def test_a_harness_gone_after_its_turn_ended_on_a_failed_model_call_reads_crashed(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    # The same opencode api-error when the turn's end lands before the exit (a faster hook): it
    # was a race between the bridge's idle and opencode's exit 1, and the crash is the same.
    a = start(harnesses, agent, tmp_path, "opencode")
    a.send(*failed_turn("A"), claude("session.idle", "A"))
    assert info(agent.home).get("phase") != "error"  # the turn ended: not said before the exit
    assert a.exit(1) == 1
    assert eventually(lambda: info(agent.home).get("phase") == "error")
    [row] = agents_json(agent)
    assert row["message"] == "Agent exited after a failed model call without a session end"
    # A later turn that ends well clears it: a harness gone after that one stopped.
    b = start(harnesses, agent, tmp_path, "opencode")
    b.send(
        *failed_turn("B"),
        claude("message.updated.user", "B", prompt="again"),
        claude("chat.params", "B", model="m"),
        claude("session.idle", "B"),
    )
    assert b.exit(0) == 0
    assert eventually(
        lambda: sum("Session ended (reason: the harness exited" in line for line in agent.log_lines) == 1
    )


def test_a_late_session_end_alone_leaves_the_crash_of_a_harness_killed_mid_tool(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    # opencode SIGTERMed mid-tool: its bridge says a session end for the instance it disposes of.
    a = start(harnesses, agent, tmp_path)
    a.send(claude("UserPromptSubmit", "A", prompt="build"), claude("PreToolUse", "A", tool_name="Bash"))
    a.kill()
    assert eventually(lambda: info(agent.home).get("phase") == "error")
    run_late(agent, tmp_path, "claude", claude("SessionEnd", "A"))
    assert info(agent.home)["phase"] == "error"
    [row] = agents_json(agent)
    assert row["message"] == "Agent exited during a tool call (Bash) without a session end"


def test_the_list_says_in_plain_words_what_each_agent_does_at_80_columns(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    a = start(harnesses, agent, tmp_path)
    b = start(harnesses, agent, tmp_path)
    a.send(claude("UserPromptSubmit", "A", prompt="x" * 300))
    b.send(claude("Stop", "B"))
    done = agent.run("agents", COLUMNS="80")
    assert done.returncode == 0
    lines = done.stdout.decode().splitlines()
    assert lines[0].split() == ["AGENT", "STATE", "SINCE", "PROJECT", "TOKENS", "MESSAGE"]
    assert all(len(line) <= 80 for line in lines), lines
    states = {line.split()[1] for line in lines[1:]}
    assert states == {"Thinking", "Ready"}  # Scion's thinking and working, as a person reads them
    assert any("User prompt: xxx" in line and line.endswith("…") for line in lines)


def test_a_harness_killed_mid_tool_with_no_watcher_reads_crashed_and_nothing_is_written(
    agent: Agent, tmp_path: Path
) -> None:
    # With the helper killed (here: never started), it read "executing" for good.
    harness = StandIn(agent, tmp_path, "claude", SCIONTOOL_EXIT_WATCH="off")  # nobody says its end
    harness.send(claude("PreToolUse", tool_name="Bash", tool_use_id="t1"))
    harness.kill()
    folder = agent.home / ".scion" / "agents"
    before = {path: path.read_bytes() for path in [*folder.iterdir(), agent.home / "agent-info.json"]}
    [row] = agents_json(agent)
    assert row["state"] == "Crashed" and row["live"] is False and row["guessed"] is True
    assert row["phase"] == "error" and row["activity"] == ""
    assert row["message"] == "Agent exited during a tool call (Bash) without a session end"
    done = agent.run("agents", COLUMNS="100")
    assert "Crashed" in done.stdout.decode() and "executing" not in done.stdout.decode()
    assert {path: path.read_bytes() for path in before} == before  # the view writes nothing


def test_a_harness_gone_between_turns_with_no_watcher_reads_stopped(agent: Agent, tmp_path: Path) -> None:
    harness = StandIn(agent, tmp_path, "claude", SCIONTOOL_EXIT_WATCH="off")
    harness.send(claude("UserPromptSubmit", prompt="hi"), claude("Stop"))
    harness.kill()
    [row] = agents_json(agent)
    assert row["state"] == "Stopped" and row["phase"] == "stopped" and row["guessed"] is True


def test_notify_runs_once_per_change_that_needs_a_person(tmp_path: Path) -> None:
    def row(state: str, since: float) -> agents_watch.Row:
        record = registry.Record("p1-1")
        record.since = since
        return agents_watch.Row(record, state, True)

    alerts = tmp_path / "alerts"
    alerts.mkdir()
    notifier = agents_watch.Notifier(f"cat > {alerts}/$$.json")  # a real command, run by sh, one file each
    for state, since in (
        ("Waiting for you", 1),  # true when the view started: not news
        ("Thinking", 2),
        ("Thinking", 2),
        ("Running Bash", 3),
        ("Waiting for you", 4),
        ("Waiting for you", 4),  # the same change, looked at again
        ("Ready", 5),  # from waiting: the user answered, not a finished turn
        ("Thinking", 6),
        ("Ready", 7),
        ("Crashed (exit 137)", 8),
    ):
        notifier.observe([row(state, since)])
    while notifier.queue or notifier.running:
        for proc in notifier.running:
            proc.wait(timeout=30)
        notifier.pump()
    sent = [json.loads(path.read_text()) for path in alerts.iterdir()]
    assert sorted(s["alert"] for s in sent) == ["crashed", "finished", "waiting"]  # run at once: any order
    assert notifier.sent == 3 and notifier.dropped == 0


def tmux(socket: Path, *args: str) -> str:
    done = subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True, timeout=30)
    return done.stdout


def test_watch_in_tmux_at_80_columns_redraws_live_and_alerts(
    agent: Agent, tmp_path: Path, harnesses: list[StandIn]
) -> None:
    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed")
    alerts = tmp_path / "alerts.jsonl"
    notify = f"cat >> {alerts}; echo >> {alerts}"
    a = start(harnesses, agent, tmp_path)
    a.send(claude("SessionStart", "A", source="startup"))
    socket = tmp_path / "tmux.sock"
    env = " ".join(f"{k}='{v}'" for k, v in agent.env.items() if k in ("HOME", "PATH", "SCIONTOOL_CACHE_DIR"))
    view = f'env {env} TERM=xterm {sys.executable} -m sciontool_py agents --watch --notify "{notify}"; echo view-ended; sleep 60'
    tmux(socket, "new-session", "-d", "-x", "80", "-y", "24", view)
    try:
        screen = lambda: tmux(socket, "capture-pane", "-p")  # noqa: E731
        assert eventually(lambda: "Ready" in screen()), screen()
        a.send(
            claude("UserPromptSubmit", "A", prompt="hello"),
            claude("PreToolUse", "A", tool_name="Bash", tool_use_id="t1"),
        )
        assert eventually(lambda: "Running Bash" in screen()), screen()
        lines = screen().splitlines()
        assert all(len(line) <= 80 for line in lines)
        assert lines[0].startswith("sciontool agents: 1 in ")
        a.send(claude("PostToolUse", "A", tool_name="Bash", tool_use_id="t1"), claude("Stop", "A"))
        assert eventually(lambda: "alerts sent 1" in screen()), screen()
        a.send(claude("PreToolUse", "A", tool_name="AskUserQuestion", tool_use_id="t2"))
        assert eventually(lambda: "Waiting for you" in screen() and "alerts sent 2" in screen()), screen()
        a.kill()  # mid-turn: the exit watcher says it crashed
        assert eventually(lambda: "Crashed" in screen() and "alerts sent 3" in screen()), screen()
        time.sleep(1.5)  # more redraws: no alert twice
        assert "alerts sent 3" in screen()
        tmux(socket, "send-keys", "q")
        assert eventually(lambda: "view-ended" in screen()), screen()
        assert "sciontool agents:" not in screen()  # the alternate screen is gone: the terminal is given back
    finally:
        tmux(socket, "kill-server")
    sent = [json.loads(line) for line in alerts.read_text().splitlines() if line.strip()]
    assert [s["alert"] for s in sent] == ["finished", "waiting", "crashed"]
    assert all(s["session"] == "A" for s in sent)
    assert {"harness", "session", "pid", "project", "activity", "phase", "since", "message"} <= set(sent[0])


def test_an_orphaned_hook_of_a_known_session_is_that_sessions_agent(agent: Agent, tmp_path: Path) -> None:
    # opencode's bridge leaves a helper behind that fires the instance's end after opencode is
    # gone: that hook's only ancestor is init, and its session names the agent.
    harness = StandIn(agent, tmp_path, "claude", SCIONTOOL_EXIT_WATCH="off")
    try:
        harness.send(claude("UserPromptSubmit", "S", prompt="hi"), claude("Stop", "S"))
    finally:
        harness.close()
    envelope = json.dumps(claude("SessionEnd", "S", reason="exit"))
    # setsid + a parent that exits at once: the hook is reparented to init before it runs.
    script = f"sleep 0.3; echo '{envelope}' | {sys.executable} -m sciontool_py hook --dialect=claude"
    subprocess.run(["setsid", "-f", "sh", "-c", script], env=agent.env, check=True)
    assert eventually(lambda: info(agent.home).get("phase") == "stopped")
    [(key, record)] = records(agent.home).items()
    assert key.startswith("p") and record["info"] == {"phase": "stopped"}
