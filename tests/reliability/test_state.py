"""Damaged or unwritable state: the hook repairs what it can, never crashes, and
fails (exit 1, never 2) only where Scion does: when agent-info.json cannot be written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import Agent

SCIONTOOL = Path(sys.executable).with_name("sciontool")


def probe() -> tuple[dict[str, object], str]:
    """A tool-start envelope whose tool name is unique, to find its line in the fallback agent.log."""
    tool = f"probe-{uuid.uuid4().hex}"
    return {"hook_event_name": "tool-start", "tool_name": tool}, f"[executing] Running tool: {tool}"


def assert_no_traceback(result: subprocess.CompletedProcess[bytes]) -> None:
    assert result.returncode in (0, 1)
    assert b"Traceback" not in result.stderr and b"internal error" not in result.stderr


@pytest.mark.parametrize(
    "damage",
    [b'{"phase": "running", "activ', b"", b"[1, 2]", b"\xff\xfe garbage", b'{"a": 1}{"b": 2}'],
    ids=["truncated", "empty", "not-an-object", "not-utf8", "two-objects"],
)
def test_corrupt_agent_info_is_treated_as_empty_and_rewritten(agent: Agent, damage: bytes) -> None:
    (agent.home / "agent-info.json").write_bytes(damage)
    result = agent.hook({"hook_event_name": "tool-start", "tool_name": "ls"}, "--dialect=core-agent")
    assert_no_traceback(result)
    assert result.returncode == 0
    assert agent.info == {"activity": "executing", "toolName": "ls"}  # Scion: corrupt content is replaced


@pytest.mark.parametrize(
    "damage",
    [b'{"turn_count": 4, "model_call_co', b"not json", b'"a string"'],
    ids=["truncated", "garbage", "not-an-object"],
)
def test_damaged_limits_file_is_logged_and_counting_restarts(agent: Agent, damage: bytes) -> None:
    (agent.home / "agent-limits.json").write_bytes(damage)
    result = agent.hook({"hook_event_name": "agent-end"}, "--dialect=core-agent", SCION_MAX_TURNS="5")
    assert_no_traceback(result)
    assert result.returncode == 0
    line, error = agent.log_lines  # limits are counted after the event is logged, as in Scion
    assert " [sciontool] [ERROR] Failed to read agent-limits.json: parsing " in error
    assert error.endswith("; counting from 0")
    assert line.endswith("[working] Agent turn completed")
    assert json.loads((agent.home / "agent-limits.json").read_text())["turn_count"] == 1
    # Repaired: the next call reads it without complaint.
    agent.hook({"hook_event_name": "agent-end"}, "--dialect=core-agent", SCION_MAX_TURNS="5")
    assert len(agent.log_lines) == 3
    assert json.loads((agent.home / "agent-limits.json").read_text())["turn_count"] == 2


def test_limits_file_that_cannot_be_written_is_logged_and_the_limit_still_enforced(agent: Agent) -> None:
    (agent.home / "agent-limits.json").mkdir()
    result = agent.hook({"hook_event_name": "agent-end"}, "--dialect=core-agent", SCION_MAX_TURNS="1")
    assert_no_traceback(result)
    assert result.returncode == 0  # Scion: limits problems are logged, never fatal
    messages = [line.split(" [sciontool] ", 1)[1] for line in agent.log_lines]
    assert messages[0] == "[INFO] [working] Agent turn completed"
    assert messages[1].startswith("[ERROR] Failed to read agent-limits.json: reading ")
    assert messages[2].startswith("[ERROR] Failed to write agent-limits.json: ")
    assert messages[3] == "[INFO] [LIMITS_EXCEEDED] Agent stopped: max_turns of 1 exceeded (completed 1)"
    assert agent.info["activity"] == "limits_exceeded"


def test_agent_info_that_cannot_be_written_fails_the_call_but_loses_nothing_else(agent: Agent) -> None:
    (agent.home / "agent-info.json").mkdir()
    result = agent.hook(
        {"hook_event_name": "agent-start", "prompt": "fix it"}, "--dialect=core-agent", SCION_MAX_TURNS="9"
    )
    assert_no_traceback(result)
    assert result.returncode == 1
    last = result.stderr.decode().splitlines()[-1]
    assert (
        last == f"sciontool hook: cannot update agent state: {agent.home / 'agent-info.json'}: Is a directory"
    )
    # The other handlers still ran: the log line, prompt.md, and the failure logged as Scion does.
    messages = [line.split(" [sciontool] ", 1)[1] for line in agent.log_lines]
    assert messages == [
        "[INFO] [thinking] Agent turn started",
        f"[ERROR] Hook processing failed: cannot update agent state: {agent.home / 'agent-info.json'}: Is a directory",
    ]
    assert (agent.home / "prompt.md").read_text() == "fix it"
    # .scion: the agent's own record, outside Scion (docs/receiver.md, "Several agents in one HOME").
    assert sorted(p.name for p in agent.home.iterdir()) == [
        ".scion",
        "agent-info.json",
        "agent.log",
        "prompt.md",
    ]


def test_status_that_cannot_write_agent_info_still_logs_and_exits_1(agent: Agent) -> None:
    (agent.home / "agent-info.json").mkdir()
    result = agent.run("status", "blocked", "need a key")
    assert_no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines()[-1].startswith("sciontool status: cannot update agent state: ")
    assert agent.log_lines[0].endswith("[blocked] Agent blocked: need a key")


def test_unwritable_agent_log_falls_back_to_tmp(agent: Agent, fallback_dir: Path) -> None:
    (agent.home / "agent.log").mkdir()
    envelope, line = probe()
    result = agent.hook(envelope, "--dialect=core-agent")
    assert_no_traceback(result)
    assert result.returncode == 0  # Scion: the log falls back, the hook goes on
    assert (
        f"Failed to write to {agent.home / 'agent.log'}: Is a directory. Falling back to {fallback_dir / 'agent.log'}."
        in (result.stderr.decode())
    )
    assert line in (fallback_dir / "agent.log").read_text(errors="replace")
    assert agent.info["activity"] == "executing"


def test_home_that_is_not_a_folder_is_one_error_and_the_event_is_still_logged(
    tmp_path: Path, fallback_dir: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    agent = Agent(blocker / "home", tmp_path / "cache")
    envelope, line = probe()
    result = agent.hook(envelope, "--dialect=core-agent")
    assert_no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines()[-1] == (
        f"sciontool hook: cannot update agent state: {blocker / 'home' / 'agent-info.json'}: Not a directory"
    )
    assert line in (fallback_dir / "agent.log").read_text(errors="replace")


def test_read_only_home_changes_nothing_and_is_one_error(agent: Agent, fallback_dir: Path) -> None:
    # Root ignores file modes, so make HOME a read-only bind mount in a private mount namespace.
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs unshare(1) for a private read-only mount")
    seeded = b'{\n  "activity": "working",\n  "keep": true\n}'
    (agent.home / "agent-info.json").write_bytes(seeded)
    envelope, line = probe()
    remount = 'mount --bind "$HOME" "$HOME" && mount -o remount,ro,bind "$HOME" && exec "$0" "$@"'
    result = subprocess.run(
        [unshare, "-m", "sh", "-c", remount, str(SCIONTOOL), "hook", "--dialect=core-agent"],
        input=json.dumps(envelope).encode(),
        capture_output=True,
        env=agent.env,
        timeout=60,
    )
    if b"mount" in result.stderr and b"sciontool" not in result.stderr:
        pytest.skip(f"no private read-only mount here: {result.stderr.decode().strip()}")
    assert_no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines()[-1] == (
        f"sciontool hook: cannot update agent state: {agent.home / 'agent-info.json'}: Read-only file system"
    )
    assert (agent.home / "agent-info.json").read_bytes() == seeded
    assert sorted(p.name for p in agent.home.iterdir()) == ["agent-info.json"]  # no temp file either
    assert line in (fallback_dir / "agent.log").read_text(errors="replace")
