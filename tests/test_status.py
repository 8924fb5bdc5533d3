"""`sciontool status` in-process: the sticky activity, the agent.log line and the hub report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HubServer, log_entries, read_info

from sciontool_py.errors import SciontoolError
from sciontool_py.fs import home_dir
from sciontool_py.log.writer import AgentLog
from sciontool_py.receiver.status import report_status as report


def report_status(status_type: str, message: str) -> None:
    """status.report_status with the agent.log an entry point makes for HOME (mirrored on stderr)."""
    report(status_type, message, AgentLog(home_dir()))


@pytest.mark.parametrize(
    ("kind", "activity", "logged"),
    [
        ("ask_user", "waiting_for_input", "Agent requested input: Input requested"),
        ("blocked", "blocked", "Agent blocked: Agent is blocked"),
        ("task_completed", "completed", "Agent completed task: Task completed"),
        ("limits_exceeded", "limits_exceeded", "Agent limits exceeded: Agent limits exceeded"),
    ],
)
def test_each_type_sets_its_activity_with_a_default_message(
    home: Path, kind: str, activity: str, logged: str
) -> None:
    (home / "agent-info.json").write_text('{"activity": "executing", "toolName": "ls", "phase": "running"}')
    report_status(kind, "")
    assert read_info(home) == {"activity": activity, "phase": "running"}
    assert log_entries(home) == [("INFO", activity, logged)]


def test_the_message_is_logged_as_given(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report_status("blocked", "need an API key")
    assert log_entries(home) == [("INFO", "blocked", "Agent blocked: need an API key")]
    assert capsys.readouterr().err == "[sciontool] INFO: [blocked] Agent blocked: need an API key\n"


def test_a_status_replaces_another_sticky_one(home: Path) -> None:
    report_status("blocked", "")
    report_status("ask_user", "which branch?")
    assert read_info(home) == {"activity": "waiting_for_input"}


def test_an_unknown_type_lists_the_valid_ones_and_writes_nothing(home: Path) -> None:
    with pytest.raises(SciontoolError) as caught:
        report_status("done", "")
    assert (
        str(caught.value)
        == "unknown status type 'done'; valid types: ask_user, blocked, task_completed, limits_exceeded"
    )
    assert list(home.iterdir()) == []


def test_unwritable_agent_info_still_logs_then_fails(home: Path) -> None:
    (home / "agent-info.json").mkdir()
    with pytest.raises(SciontoolError) as caught:
        report_status("task_completed", "shipped")
    assert str(caught.value) == f"cannot update agent state: {home / 'agent-info.json'}: Is a directory"
    assert log_entries(home) == [
        ("INFO", "completed", "Agent completed task: shipped"),
        (
            "ERROR",
            None,
            f"Hook processing failed: cannot update agent state: {home / 'agent-info.json'}: Is a directory",
        ),
    ]


@pytest.fixture
def hub_env(home: Path, hub: HubServer, monkeypatch: pytest.MonkeyPatch) -> HubServer:
    monkeypatch.setenv("SCION_HUB_ENDPOINT", hub.url)
    monkeypatch.setenv("SCION_AGENT_ID", "agent-7")
    monkeypatch.setenv("SCION_AUTH_TOKEN", "tok-status")
    return hub


@pytest.mark.parametrize(
    ("kind", "message", "body"),
    [
        (
            "ask_user",
            "which one?",
            {"activity": "waiting_for_input", "status": "waiting_for_input", "message": "which one?"},
        ),
        ("blocked", "", {"activity": "blocked", "status": "blocked", "message": "Agent is blocked"}),
        (
            "task_completed",
            "shipped",
            {"activity": "completed", "status": "completed", "taskSummary": "shipped"},
        ),
    ],
)
def test_the_hub_is_told_when_configured(
    home: Path, hub_env: HubServer, kind: str, message: str, body: dict[str, str]
) -> None:
    report_status(kind, message)
    [request] = hub_env.requests
    assert request.path == "/api/v1/agents/agent-7/status"
    assert request.headers["X-Scion-Agent-Token"] == "tok-status"
    assert json.loads(request.body) == body
    assert [level for level, _, _ in log_entries(home)] == ["INFO"]


def test_a_hub_failure_is_logged_and_the_status_still_set(home: Path, hub_env: HubServer) -> None:
    hub_env.replies = [404]
    report_status("blocked", "")
    assert read_info(home) == {"activity": "blocked"}
    assert log_entries(home)[-1][0] == "ERROR"
    assert "tok-status" not in (home / "agent.log").read_text()


def test_no_hub_call_without_an_agent_id(
    home: Path, hub_env: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCION_AGENT_ID")
    report_status("blocked", "")
    assert hub_env.requests == [] and read_info(home) == {"activity": "blocked"}
