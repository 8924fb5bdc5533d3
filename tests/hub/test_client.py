"""The hub client in-process against a real HTTP server on 127.0.0.1: what the hub receives, what
is retried, what is logged, and that the token goes nowhere but the header.

The real budget (3 s) and backoff (0.5 s, 1 s) are proven through the CLI in
reliability/test_hub.py; here they are shortened so each case takes milliseconds.
"""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import pytest
from conftest import HANG_BOUND, HubServer, log_entries

from sciontool_py.hub.client import Hub, HubError, status_body
from sciontool_py.log.writer import AgentLog
from sciontool_py.receiver.handlers.hub_update import event_update

TOKEN = "tok-5d1e9a7c3b"


QUICK: dict[str, float] = {"budget": 1.0, "first_backoff": 0.02}


@pytest.fixture
def log(home: Path) -> AgentLog:
    return AgentLog(str(home))  # mirrored on stderr: no token may reach it either


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: nothing listens there


def test_configured_only_with_an_endpoint_an_agent_and_a_token(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Hub.from_env(str(home), AgentLog(str(home))) is None
    monkeypatch.setenv("SCION_HUB_ENDPOINT", "http://hub.example/")
    monkeypatch.setenv("SCION_AGENT_ID", "agent-7")
    assert Hub.from_env(str(home), AgentLog(str(home))) is None  # no token anywhere
    monkeypatch.setenv("SCION_AUTH_TOKEN", "from-env")
    found = Hub.from_env(str(home), AgentLog(str(home)))
    assert found is not None
    assert (found.endpoint, found.agent_id, found.token) == ("http://hub.example/", "agent-7", "from-env")


def test_the_token_file_wins_over_the_environment_and_scion_hub_url_also_works(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / ".scion").mkdir()
    (home / ".scion" / "scion-token").write_text(f"  {TOKEN}\n")
    monkeypatch.setenv("SCION_HUB_URL", "http://hub.example")
    monkeypatch.setenv("SCION_AGENT_ID", "a")
    monkeypatch.setenv("SCION_AUTH_TOKEN", "from-env")
    found = Hub.from_env(str(home), AgentLog(str(home)))
    assert found is not None and found.token == TOKEN
    (home / ".scion" / "scion-token").write_text("\n")  # an empty file falls back to the environment
    assert Hub.from_env(str(home), AgentLog(str(home))).token == "from-env"  # type: ignore[union-attr]
    (home / ".scion" / "scion-token").write_bytes(b"\xff\xfe")  # unreadable as text: the same
    assert Hub.from_env(str(home), AgentLog(str(home))).token == "from-env"  # type: ignore[union-attr]


def test_a_post_sends_the_body_in_field_order_with_the_token_header(hub: HubServer, log: AgentLog) -> None:
    Hub(hub.url + "/", "agent-7", TOKEN, log).post(
        "status", {"status": "x", "activity": "executing", "n": 2.0}
    )
    [request] = hub.requests
    assert request.path == "/api/v1/agents/agent-7/status"
    assert request.headers["X-Scion-Agent-Token"] == TOKEN
    assert request.headers["Content-Type"] == "application/json"
    assert request.body == b'{"status":"x","activity":"executing","n":2}'  # struct order, not sorted


def test_5xx_is_retried_until_it_succeeds(hub: HubServer, log: AgentLog) -> None:
    hub.replies = [503, 500, 200]
    Hub(hub.url, "a", TOKEN, log, **QUICK).post("status", {"activity": "idle"})
    assert len(hub.requests) == 3
    assert {r.body for r in hub.requests} == {b'{"activity":"idle"}'}


def test_5xx_more_often_than_the_retries_is_given_up(hub: HubServer, log: AgentLog) -> None:
    hub.replies = [502]
    with pytest.raises(HubError) as caught:
        Hub(hub.url, "a", TOKEN, log, **QUICK).post("status", {}, retries=2)
    assert len(hub.requests) == 3
    assert str(caught.value).startswith("request failed after 3 attempts: hub returned error 502: ")


def test_no_retry_when_asked_for_none(hub: HubServer, log: AgentLog) -> None:
    hub.replies = [500]
    with pytest.raises(HubError):
        Hub(hub.url, "a", TOKEN, log, **QUICK).post("outbound-message", {}, retries=0)
    assert len(hub.requests) == 1


def test_4xx_is_not_retried(hub: HubServer, log: AgentLog) -> None:
    hub.replies = [401, 200]
    with pytest.raises(HubError) as caught:
        Hub(hub.url, "a", TOKEN, log, **QUICK).post("status", {})
    assert len(hub.requests) == 1
    assert str(caught.value) == 'hub returned error 401: {"error": "no", "token": "[redacted]"}'


def test_the_budget_bounds_all_attempts(hub: HubServer, log: AgentLog) -> None:
    hub.replies = [500]
    started = time.monotonic()
    with pytest.raises(HubError) as caught:
        Hub(hub.url, "a", TOKEN, log, budget=0.5, first_backoff=0.3).post("status", {}, retries=10)
    assert time.monotonic() - started < HANG_BOUND  # without the budget: 0.3 s doubling 10 times
    # At 0 and 0.3 s; the next would start past the budget (a slow machine may fit only one).
    attempts = len(hub.requests)
    assert attempts in (1, 2)
    assert str(caught.value).startswith(
        f"gave up after {attempts} attempts within the time budget of 0.5s: hub returned error 500: "
    )


def test_a_refused_connection_is_an_error_not_a_crash(log: AgentLog) -> None:
    with pytest.raises(HubError) as caught:
        Hub(f"http://127.0.0.1:{closed_port()}", "a", TOKEN, log, **QUICK).post("status", {}, retries=1)
    assert "Connection refused" in str(caught.value) or "time budget" in str(caught.value)


def test_a_bad_endpoint_is_an_error_not_a_crash(log: AgentLog) -> None:
    with pytest.raises(HubError):
        Hub("not a url", "a", TOKEN, log, **QUICK).post("status", {}, retries=0)


def test_report_logs_a_failure_with_the_token_redacted(
    home: Path, hub: HubServer, log: AgentLog, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.replies = [403]
    Hub(hub.url, "a", TOKEN, log, **QUICK).report("tool-start", "status", {"activity": "idle"})
    [(level, tag, message)] = log_entries(home)
    assert (level, tag) == ("ERROR", None)
    assert re.fullmatch(
        r"hub status update failed event=tool-start elapsed_ms=\d+ error=hub returned error 403: "
        r'\{"error": "no", "token": "\[redacted\]"\}',
        message,
    )
    assert TOKEN not in capsys.readouterr().err
    assert TOKEN not in (home / "agent.log").read_text()


def test_report_logs_nothing_on_success(home: Path, hub: HubServer, log: AgentLog) -> None:
    Hub(hub.url, "a", TOKEN, log).report("tool-start", "status", {"activity": "idle"})
    assert len(hub.requests) == 1 and log_entries(home) == []


@pytest.mark.parametrize(
    ("fields", "body"),
    [
        (
            {"activity": "executing", "toolName": "ls", "message": "Executing: ls"},
            {"activity": "executing", "toolName": "ls", "status": "executing", "message": "Executing: ls"},
        ),
        (
            {"phase": "stopped", "activity": None, "message": "Session ended"},
            {"phase": "stopped", "status": "stopped", "message": "Session ended"},
        ),
        (
            {"phase": "running", "activity": "idle"},
            {"phase": "running", "activity": "idle", "status": "idle"},
        ),
        ({"activity": "", "toolName": None, "message": "Ready"}, {"message": "Ready"}),
        (
            {"taskSummary": "done", "activity": "completed", "currentTurns": 2, "startedAt": "t"},
            {
                "activity": "completed",
                "status": "completed",
                "taskSummary": "done",
                "currentTurns": 2,
                "startedAt": "t",
            },
        ),
    ],
)
def test_status_body_in_scions_order_without_empty_fields(
    fields: dict[str, object], body: dict[str, object]
) -> None:
    got = status_body(fields)
    assert got == body and list(got) == list(body)


def test_a_report_body_is_json_the_hub_can_read(hub: HubServer, log: AgentLog) -> None:
    update = event_update(
        "tool-start", "executing", {"tool_name": "<ls>", "prompt": "", "message": ""}, False
    )
    assert update is not None
    Hub(hub.url, "a", TOKEN, log).post("status", status_body(update))
    assert json.loads(hub.requests[0].body) == {
        "activity": "executing",
        "toolName": "<ls>",
        "status": "executing",
        "message": "Executing: <ls>",
    }
