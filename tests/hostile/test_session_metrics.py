"""Issue 21, items 9 and 10: session metrics with a hostile tool name and a slow hub, real hooks and a
real hub on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from conftest import Agent, HubServer
from telemetry.test_cli import hub_env, run_session, wait_idle, wait_until


def sessions(hub: HubServer) -> list[str]:
    """The session ids of the metrics reports the hub received."""
    return [json.loads(r.body)["session"]["id"] for r in list(hub.requests) if r.path.endswith("/metrics")]


def dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(done.stdout)


def test_reports_the_budget_left_unattempted_are_kept_and_sent_later(agent: Agent, hub: HubServer) -> None:
    hub.delay = 1.2  # each answer takes 1.2 s
    state = agent.home / ".scion" / "session-metrics.json"
    state.parent.mkdir()
    pid = dead_pid()  # claimed by a sender that died: the next hook's worker takes them over
    pending = [
        {
            "summary": {"SessionID": f"s{i}", "AgentID": "agent-7", "TurnCount": i, "ToolCalls": {}},
            "claim_pid": pid,
            "claimed_at": "2026-01-01T00:00:00Z",
        }
        for i in range(6)
    ]
    state.write_text(json.dumps({"version": 1, "closed": False, "pending": pending}))
    env = {**hub_env(hub.url), "SCION_LOG_LEVEL": "debug"}
    tool = {"hook_event_name": "PreToolUse", "session_id": "x", "tool_name": "Bash"}
    # Each hook's worker has a 3 s budget: two or three of the six per worker. Hooks go on
    # arriving, as in a session, until every report has reached the hub.
    deadline = time.monotonic() + 90
    while sorted(set(sessions(hub))) != [f"s{i}" for i in range(6)]:
        assert time.monotonic() < deadline, sessions(hub)
        run_session(agent, env, [tool])
        wait_until(
            lambda: (
                not state.exists()
                or all(
                    p.get("claim_pid") != pid
                    for p in json.loads(state.read_text() or "{}").get("pending", [])
                )
            )
        )
        time.sleep(1.0)
    wait_idle(agent.home, 60)
    assert "reports kept: time budget spent" in (agent.home / "agent.log").read_text()


def test_a_2_mb_tool_name_is_cut_and_the_session_keeps_its_counts(agent: Agent, hub: HubServer) -> None:
    env = hub_env(hub.url)
    huge = "T" * (2 << 20)
    events: list[dict[str, object]] = [
        {"hook_event_name": "SessionStart", "session_id": "s1"},
        {"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": huge},
        {"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Bash"},
    ]
    run_session(agent, env, events)
    state = agent.home / ".scion" / "session-metrics.json"
    assert state.stat().st_size < 16 * 1024
    tools = json.loads(state.read_text())["aggregator"]["tool_calls"]
    assert tools == {
        "T" * 1024 + "...": {"calls": 1, "success": 1, "error": 0},
        "Bash": {"calls": 1, "success": 1, "error": 0},
    }
    assert "starting over" not in (agent.home / "agent.log").read_text()
