"""`sciontool hook EVENT` with the payload on stdin, as Copilot CLI runs it: real processes, real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import Agent

COPILOT_PRE = '{"sessionId":"s","toolName":"bash","toolArgs":"{\\"command\\":\\"ls\\"}"}'


def test_the_issue_example_writes_executing_bash(agent: Agent) -> None:
    result = agent.hook(COPILOT_PRE, "preToolUse", "--dialect=copilot")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert agent.info == {"activity": "executing", "toolName": "bash"}


def test_the_payload_reaches_every_mapped_field(agent: Agent) -> None:
    payload = {
        "sessionId": "copilot-session-42",
        "toolName": "bash",
        "toolArgs": {"command": "ls"},
        "toolResult": {"resultType": "Success", "textResultForLlm": "README.md"},
    }
    assert agent.hook(payload, "postToolUse", "--dialect=copilot").returncode == 0
    assert agent.info["activity"] == "thinking"  # the tool's result goes to the model next
    assert agent.log_lines[-1].endswith("[working] Tool bash completed")


def test_the_positional_name_wins_over_the_payloads(agent: Agent) -> None:
    envelope = {"hook_event_name": "sessionEnd", "toolName": "bash"}
    assert agent.hook(envelope, "preToolUse", "--dialect=copilot").returncode == 0
    assert agent.info == {"activity": "executing", "toolName": "bash"}


@pytest.mark.parametrize(
    "stdin",
    [b"", b" \n ", b"{not json", b"[1,2]", b'"text"', b"null", b"42", b'{"toolName": "bash"'],
    ids=["empty", "blank", "malformed", "array", "string", "null", "number", "cut short"],
)
def test_anything_but_an_object_falls_back_to_the_synthetic_event(agent: Agent, stdin: bytes) -> None:
    result = agent.hook(stdin, "agentStop", "--dialect=copilot")
    assert (result.returncode, result.stderr) == (0, b"")
    assert agent.info["activity"] == "working"
    assert agent.log_lines[-1].endswith("[working] Agent turn completed")


def test_what_follows_the_object_is_ignored(agent: Agent) -> None:
    result = agent.hook(COPILOT_PRE.encode() + b" junk", "preToolUse", "--dialect=copilot")
    assert result.returncode == 0
    assert agent.info["toolName"] == "bash"


def test_an_oversized_payload_is_dropped(agent: Agent) -> None:
    from sciontool_py.receiver.stdin import POSITIONAL_LIMIT

    big = json.dumps({"toolName": "bash", "toolArgs": "x" * POSITIONAL_LIMIT}).encode()
    result = agent.hook(big, "preToolUse", "--dialect=copilot")
    assert (result.returncode, result.stderr) == (0, b"")
    assert agent.info == {"activity": "executing"}  # the synthetic event: no tool name


def test_a_complete_object_is_taken_without_waiting_for_eof(agent: Agent) -> None:
    proc = agent.start_hook("preToolUse", "--dialect=copilot")
    assert proc.stdin is not None
    proc.stdin.write(COPILOT_PRE.encode())
    proc.stdin.flush()  # and the pipe stays open
    try:
        assert proc.wait(timeout=60) == 0
    finally:
        proc.stdin.close()
    assert agent.info == {"activity": "executing", "toolName": "bash"}


def test_a_pipe_nobody_writes_to_gives_up_and_uses_the_name(agent: Agent) -> None:
    proc = agent.start_hook("preToolUse", "--dialect=copilot")
    assert proc.stdin is not None
    try:
        assert proc.wait(timeout=60) == 0  # gave up on its own: the pipe is still open
    finally:
        proc.stdin.close()
    assert agent.info == {"activity": "executing"}


def test_a_payload_arriving_too_late_is_not_used(agent: Agent) -> None:
    from sciontool_py.receiver.stdin import POSITIONAL_WAIT

    proc = agent.start_hook("preToolUse", "--dialect=copilot")
    assert proc.stdin is not None
    proc.stdin.write(b'{"toolName": "ba')
    proc.stdin.flush()
    began = time.monotonic()
    assert proc.wait(timeout=60) == 0
    assert time.monotonic() - began >= POSITIONAL_WAIT / 2  # it waited for the rest, then gave up
    try:
        proc.stdin.write(b'sh"}')
        proc.stdin.close()
    except BrokenPipeError:
        pass
    assert agent.info == {"activity": "executing"}


def test_stdin_at_dev_null_is_not_waited_for(agent: Agent) -> None:
    with open(os.devnull, "rb") as null:
        result = subprocess.run(
            [sys.executable, "-m", "sciontool_py", "hook", "sessionStart", "--dialect=copilot"],
            stdin=null,
            capture_output=True,
            env=agent.env,
            timeout=60,
        )
    assert (result.returncode, result.stderr) == (0, b"")
    assert agent.info["activity"] == "working"


def test_a_json_argument_is_still_the_envelope_itself(agent: Agent) -> None:
    # Codex's notify: the JSON is the last argument, stdin is not read.
    envelope = json.dumps({"type": "agent-turn-complete", "title": "done"})
    result = agent.run("hook", "--dialect=codex", envelope, stdin=b'{"type": "notification"}')
    assert result.returncode == 0
    assert agent.info["activity"] == "completed"
