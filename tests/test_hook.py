"""`sciontool hook` in-process: envelope bytes through the dialect and every handler, in Scion's
order, with one handler's failure costing none of the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, HubServer, event, log_entries, read_info

from sciontool_py.errors import DialectError, EventError, SciontoolError
from sciontool_py.fs import home_dir
from sciontool_py.log.writer import AgentLog
from sciontool_py.receiver import hook as hook_module
from sciontool_py.receiver.handlers import limits
from sciontool_py.receiver.hook import apply_event, parse_envelope


def run_hook(
    dialect: str | None, dialect_file: str | None, data: bytes, event_name: str | None = None
) -> hook_module.Answer:
    """hook.run_hook with the agent.log an entry point makes for HOME."""
    return hook_module.run_hook(dialect, dialect_file, data, AgentLog(home_dir()), event_name)


def hook(envelope: dict[str, object], dialect: str = "core-agent") -> str:
    answer = run_hook(dialect, None, json.dumps(envelope).encode())
    assert answer.failure == ""
    return answer.response


@pytest.fixture
def trigger(fallback_dir: Path) -> Path:
    return fallback_dir / limits.TRIGGER_NAME


def test_an_envelope_updates_agent_info_and_the_log(home: Path) -> None:
    assert hook({"hook_event_name": "tool-start", "tool_name": "read_file", "tool_input": {"p": 1}}) == ""
    assert read_info(home) == {"activity": "executing", "toolName": "read_file"}
    assert log_entries(home) == [("INFO", "executing", "Running tool: read_file")]


def test_empty_stdin_is_a_no_op(home: Path) -> None:
    answer = run_hook("core-agent", None, b"")
    assert (answer.event, answer.response, answer.failure) == (None, "", "")
    assert list(home.iterdir()) == []


def test_the_dialects_declared_response_is_returned_for_its_raw_event(home: Path) -> None:
    dialect = str(FIXTURES / "nested-paths" / "dialect.yaml")
    out = run_hook(None, dialect, b'{"kind": "call.begin", "call": {"tool": {"name": "ls"}}}').response
    assert out == '{"decision":"allow","reason":"observed by sciontool"}\n'
    assert run_hook(None, dialect, b'{"kind": "call.finish"}').response == ""
    assert read_info(home) == {"activity": "working"}


def test_the_dialects_input_tools_mean_waiting_for_the_user(home: Path) -> None:
    hook({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion"}, "claude")
    assert read_info(home) == {"activity": "waiting_for_input"}


def test_the_first_prompt_is_saved(home: Path) -> None:
    hook({"hook_event_name": "UserPromptSubmit", "prompt": "fix it"}, "claude")
    hook({"hook_event_name": "UserPromptSubmit", "prompt": "again"}, "claude")
    assert (home / "prompt.md").read_text() == "fix it"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff{}", "envelope: invalid JSON"),  # the byte reads as U+FFFD, as in Go
        (b"  \n", "envelope is blank: expected one JSON object"),
        (b"{nope", "envelope: invalid JSON"),
    ],
)
def test_bad_bytes_are_one_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(EventError) as caught:
        parse_envelope(data)
    assert str(caught.value).startswith(message)


def test_the_event_option_names_an_envelope_that_carries_no_name(home: Path) -> None:
    envelope = b'{"tool_name": "shell", "arguments": {"command": "ls"}}'
    answer = run_hook("agentino", None, envelope, event_name="PreToolUse")
    assert answer.event is not None and (answer.event.raw_name, answer.event.name) == (
        "PreToolUse",
        "tool-start",
    )
    named = run_hook("claude", None, b'{"hook_event_name": "Stop"}', event_name="PreToolUse")
    assert named.event is not None and named.event.raw_name == "Stop"  # the envelope's name wins


def test_a_byte_that_is_not_utf8_is_read_as_go_reads_it(home: Path) -> None:
    run_hook("core-agent", None, b'{"hook_event_name": "tool-start", "tool_name": "caf\xe9"}')
    assert read_info(home) == {"activity": "executing", "toolName": "caf\ufffd"}  # the event is not lost


def test_bad_input_changes_nothing(home: Path) -> None:
    (home / "agent-info.json").write_text('{"activity": "idle"}')
    with pytest.raises(SciontoolError):
        run_hook("core-agent", None, b"[1, 2]")
    with pytest.raises(DialectError):
        run_hook("nope", None, b'{"hook_event_name": "x"}')
    assert sorted(p.name for p in home.iterdir()) == ["agent-info.json"]
    assert (home / "agent-info.json").read_text() == '{"activity": "idle"}'


def test_an_event_that_changes_no_activity_writes_no_agent_info(home: Path) -> None:
    assert apply_event(AgentLog(str(home)), event("compaction"), []).failures == []
    assert log_entries(home) == [("INFO", "working", "Event: compaction")]
    assert not (home / "agent-info.json").exists()


def test_unwritable_agent_info_is_a_failure_but_the_other_handlers_run(home: Path) -> None:
    (home / "agent-info.json").mkdir()
    failures = apply_event(AgentLog(str(home)), event("agent-start", prompt="fix it"), []).failures
    assert failures == [f"{home / 'agent-info.json'}: Is a directory"]
    assert log_entries(home) == [("INFO", "thinking", "Agent turn started")]
    assert (home / "prompt.md").read_text() == "fix it"


def test_run_hook_logs_the_failure_and_answers_it_in_one_line(home: Path) -> None:
    (home / "agent-info.json").mkdir()
    answer = run_hook("core-agent", None, b'{"hook_event_name": "model-start"}')
    assert answer.failure == f"cannot update agent state: {home / 'agent-info.json'}: Is a directory"
    assert answer.event is not None and answer.event.name == "model-start"
    assert log_entries(home)[-1] == (
        "ERROR",
        None,
        f"Hook processing failed: cannot update agent state: {home / 'agent-info.json'}: Is a directory",
    )


def test_limits_are_counted_after_the_event_is_logged(
    home: Path, monkeypatch: pytest.MonkeyPatch, trigger: Path
) -> None:
    monkeypatch.setenv("SCION_MAX_TURNS", "2")
    hook({"hook_event_name": "agent-end"})
    assert read_info(home) == {"activity": "working"} and not trigger.exists()
    hook({"hook_event_name": "agent-end"})
    assert read_info(home) == {"activity": "limits_exceeded"}
    assert log_entries(home)[-2:] == [
        ("INFO", "working", "Agent turn completed"),
        ("INFO", "LIMITS_EXCEEDED", "Agent stopped: max_turns of 2 exceeded (completed 2)"),
    ]
    assert trigger.read_text() == "max_turns of 2 exceeded (completed 2)"
    hook({"hook_event_name": "model-start"})
    assert read_info(home) == {"activity": "limits_exceeded"}  # sticky


def test_no_limits_file_without_limits(home: Path) -> None:
    hook({"hook_event_name": "agent-end"})
    assert not (home / "agent-limits.json").exists()


@pytest.fixture
def hub_env(home: Path, hub: HubServer, monkeypatch: pytest.MonkeyPatch) -> HubServer:
    (home / ".scion").mkdir()
    (home / ".scion" / "scion-token").write_text("tok-hook\n")
    monkeypatch.setenv("SCION_HUB_ENDPOINT", hub.url)
    monkeypatch.setenv("SCION_AGENT_ID", "agent-7")
    return hub


def test_the_hub_gets_the_status_after_the_files_are_written(home: Path, hub_env: HubServer) -> None:
    hook({"hook_event_name": "tool-start", "tool_name": "grep"})
    [request] = hub_env.requests
    assert request.path == "/api/v1/agents/agent-7/status"
    assert (
        request.body
        == b'{"activity":"executing","toolName":"grep","status":"executing","message":"Executing: grep"}'
    )


def test_the_hub_gets_the_counts_in_their_own_update_when_limits_are_set(
    home: Path, hub_env: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCION_MAX_MODEL_CALLS", "10")
    hook({"hook_event_name": "model-end"})
    assert [json.loads(r.body) for r in hub_env.requests] == [
        {"activity": "working", "status": "working", "message": "Ready"},
        {"currentTurns": 0, "currentModelCalls": 1},
    ]
    hook({"hook_event_name": "tool-start", "tool_name": "ls"})  # not counted: no counts update
    assert len(hub_env.requests) == 3


def test_an_agent_reply_is_sent_to_the_hub_before_the_status(home: Path, hub_env: HubServer) -> None:
    hook({"hook_event_name": "Stop", "last_assistant_message": "All done."}, "claude")
    assert [r.path.rsplit("/", 1)[1] for r in hub_env.requests] == ["outbound-message", "status"]
    assert json.loads(hub_env.requests[0].body) == {
        "msg": "All done.",
        "type": "assistant-reply",
        "visibility": "verbose",
        "metadata": {"source": "hook"},
    }


def test_a_failed_reply_is_not_retried_and_the_status_still_sent(home: Path, hub_env: HubServer) -> None:
    hub_env.replies = [500, 200]
    hook({"hook_event_name": "Stop", "last_assistant_message": "All done."}, "claude")
    assert [r.path.rsplit("/", 1)[1] for r in hub_env.requests] == ["outbound-message", "status"]
    [error] = [message for level, _, message in log_entries(home) if level == "ERROR"]
    assert error.startswith("hub outbound message failed event=agent-end elapsed_ms=")
    assert "error=request failed after 1 attempts: hub returned error 500" in error
    assert "tok-hook" not in error


def test_no_hub_call_without_a_token(home: Path, hub: HubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCION_HUB_URL", hub.url)
    monkeypatch.setenv("SCION_AGENT_ID", "agent-7")
    hook({"hook_event_name": "tool-start", "tool_name": "grep"})
    assert hub.requests == [] and read_info(home)["activity"] == "executing"
