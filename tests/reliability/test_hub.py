"""The hub client against a real HTTP server on 127.0.0.1: what it sends, how it retries,
how long it may hold the agent, and that the token never leaks into anything it writes."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest
from conftest import HANG_BOUND, TIMED, Agent, HubServer

pytestmark = TIMED

TOKEN = "tok-3f9a1c7e5b2d4680"
TOOL_START = {"hook_event_name": "tool-start", "tool_name": "grep", "tool_input": {"q": "x"}}
BUDGET = HANG_BOUND  # the hub's 3 s budget shows in the attempts and the error line; this is the hang bound


@pytest.fixture
def hub_agent(agent: Agent) -> Agent:
    (agent.home / ".scion").mkdir()
    (agent.home / ".scion" / "scion-token").write_text(TOKEN + "\n")
    agent.env["SCION_AGENT_ID"] = "agent-7"
    return agent


def run_hook(agent: Agent, endpoint: str) -> tuple[str, float]:
    started = time.monotonic()
    result = agent.hook(TOOL_START, "--dialect=core-agent", SCION_HUB_ENDPOINT=endpoint)
    elapsed = time.monotonic() - started
    assert (result.returncode, result.stdout) == (0, b"")  # a hub failure never fails the hook
    stderr = result.stderr.decode()
    assert TOKEN not in stderr
    assert_token_written_nowhere(agent.home)
    assert agent.info["activity"] == "executing"
    return stderr, elapsed


def assert_token_written_nowhere(home: Path) -> None:
    token_file = home / ".scion" / "scion-token"
    for path in home.rglob("*"):
        if path.is_file() and path != token_file:
            assert TOKEN.encode() not in path.read_bytes(), path


def hub_errors(agent: Agent) -> list[str]:
    """The ERROR lines, elapsed_ms=N made elapsed_ms=* (Scion's line: `hub status update failed event=E ...`)."""
    lines = [line.split(" [sciontool] ", 1)[1] for line in agent.log_lines if "[ERROR]" in line]
    return [re.sub(r"elapsed_ms=\d+ ", "elapsed_ms=* ", line) for line in lines]


FAILED = "[ERROR] hub status update failed event=tool-start elapsed_ms=* error="


def test_tool_start_posts_scions_status_body_with_the_token_header(hub_agent: Agent, hub: HubServer) -> None:
    run_hook(hub_agent, hub.url + "/")
    [request] = hub.requests
    assert request.path == "/api/v1/agents/agent-7/status"
    assert request.headers["X-Scion-Agent-Token"] == TOKEN
    assert request.headers["Content-Type"] == "application/json"
    # Scion's StatusUpdate field order, empty fields left out.
    assert (
        request.body
        == b'{"activity":"executing","toolName":"grep","status":"executing","message":"Executing: grep"}'
    )
    assert hub_errors(hub_agent) == []


def test_the_environment_token_is_used_without_a_token_file(agent: Agent, hub: HubServer) -> None:
    agent.env.update(SCION_AGENT_ID="agent-7", SCION_AUTH_TOKEN=TOKEN)
    run_hook(agent, hub.url)
    [request] = hub.requests
    assert request.headers["X-Scion-Agent-Token"] == TOKEN


def test_5xx_is_retried_with_backoff_until_it_succeeds(hub_agent: Agent, hub: HubServer) -> None:
    hub.replies = [503, 502, 200]
    run_hook(hub_agent, hub.url)
    assert len(hub.requests) == 3
    gaps = [b.at - a.at for a, b in zip(hub.requests, hub.requests[1:], strict=False)]
    assert gaps[0] > 0.45 and gaps[1] > 0.95, gaps  # 0.5 s, then 1 s (a loaded machine only adds)
    assert hub_errors(hub_agent) == []


@pytest.mark.slow
def test_5xx_forever_is_given_up_within_the_budget_and_logged(hub_agent: Agent, hub: HubServer) -> None:
    hub.replies = [500]
    stderr, elapsed = run_hook(hub_agent, hub.url)
    assert elapsed < BUDGET, elapsed
    assert len(hub.requests) == 3  # at 0, 0.5 and 1.5 s; the next would start past the 3 s budget
    assert hub_errors(hub_agent) == [
        FAILED + "gave up after 3 attempts within the time budget of 3s: hub returned error 500: "
        '{"error": "no", "token": "[redacted]"}'
    ]
    assert stderr == ""  # quiet, as Scion's hook: the failure is in agent.log


def test_4xx_is_not_retried_and_the_echoed_token_is_redacted(hub_agent: Agent, hub: HubServer) -> None:
    hub.replies = [403]
    stderr, _ = run_hook(hub_agent, hub.url)
    assert len(hub.requests) == 1
    [error] = hub_errors(hub_agent)
    assert error == FAILED + 'hub returned error 403: {"error": "no", "token": "[redacted]"}'
    assert stderr == ""


@pytest.mark.slow
def test_connection_refused_is_bounded_and_logged(hub_agent: Agent) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    _, elapsed = run_hook(hub_agent, f"http://127.0.0.1:{port}")
    assert elapsed < BUDGET, elapsed
    [error] = hub_errors(hub_agent)
    assert error.startswith(FAILED)
    assert "Connection refused" in error or "time budget" in error


@pytest.mark.slow
def test_a_hub_that_never_answers_is_abandoned_within_the_budget(hub_agent: Agent) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the kernel; nobody ever reads or answers
        _, elapsed = run_hook(hub_agent, f"http://127.0.0.1:{silent.getsockname()[1]}")
    assert 2.5 < elapsed < BUDGET, elapsed
    [error] = hub_errors(hub_agent)
    assert error.startswith(FAILED)
    assert "timed out" in error or "time budget" in error
