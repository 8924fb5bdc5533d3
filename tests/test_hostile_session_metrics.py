"""Issue 21, items 9 and 10: session metrics with a hostile tool name and a slow hub, real hooks and a
real hub on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from conftest import Agent, HubRequest, HubServer
from telemetry.test_cli import hub_env, run_session, wait_idle, wait_until


class SlowHub(http.server.ThreadingHTTPServer):
    """A hub that takes 1.2 s over each answer."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _SlowHandler)
        self.requests: list[HubRequest] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def sessions(self) -> list[str]:
        return [
            json.loads(r.body)["session"]["id"] for r in list(self.requests) if r.path.endswith("/metrics")
        ]


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    server: SlowHub

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        time.sleep(1.2)
        self.server.requests.append(HubRequest(self.path, dict(self.headers.items()), body))
        try:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except OSError:
            pass

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def slow_hub() -> Iterator[SlowHub]:
    server = SlowHub()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(done.stdout)


def test_reports_the_budget_left_unattempted_are_kept_and_sent_later(agent: Agent, slow_hub: SlowHub) -> None:
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
    env = {**hub_env(slow_hub.url), "SCION_LOG_LEVEL": "debug"}
    tool = {"hook_event_name": "PreToolUse", "session_id": "x", "tool_name": "Bash"}
    # Each hook's worker has a 3 s budget: two or three of the six per worker. Hooks go on
    # arriving, as in a session, until every report has reached the hub.
    deadline = time.monotonic() + 90
    while sorted(set(slow_hub.sessions())) != [f"s{i}" for i in range(6)]:
        assert time.monotonic() < deadline, slow_hub.sessions()
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
