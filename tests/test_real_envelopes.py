"""What the real harnesses sent (tests/data/real-envelopes/), through the real `sciontool`.

Each captured session is replayed one `sciontool hook` process per envelope in a fresh HOME,
as the harness ran it: every call exits 0 with nothing on stderr, and agent-info.json follows
the agent. `sciontool normalize` on the captures carries what the harness sent. The last tests
replay the permission prompts seen in other runs (not captured), built from the captured lines.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import CAPTURES, SESSIONS, event_names, fixture_paths, lines
from conftest import FIXTURES, REPO, Agent

# agent-info.json after each envelope of a session: activity, toolName when executing, and
# "stopped" for the phase session-end sets (which removes the activity).
WORKING, THINKING, STOPPED = "working", "thinking", "stopped"
# PostToolBatch: the model is called next (the dialect's model_call_events); MessageDisplay is unmapped.
CLAUDE = [WORKING, THINKING, "executing {tool}", WORKING, THINKING, THINKING, WORKING, STOPPED]
EXPECTED: dict[str, list[str]] = {
    "bash.jsonl": [s.format(tool="Bash") for s in CLAUDE],
    "write.jsonl": [s.format(tool="Write") for s in CLAUDE],
    "headless-tool-call.jsonl": [
        WORKING,  # SessionStart
        THINKING,  # BeforeAgent
        THINKING,  # PreCompress (unmapped: no change)
        THINKING,  # BeforeModel
        THINKING,  # BeforeToolSelection (unmapped)
        WORKING,  # AfterModel
        "executing run_shell_command",  # BeforeTool
        WORKING,  # AfterTool
        WORKING,  # PreCompress
        THINKING,  # BeforeModel
        THINKING,  # BeforeToolSelection
        WORKING,  # AfterModel
        WORKING,  # AfterAgent
        STOPPED,  # SessionEnd
    ],
    "exec-tool-call.jsonl": [
        WORKING,  # SessionStart
        THINKING,  # UserPromptSubmit
        THINKING,  # PreModelRequest
        WORKING,  # PostModelRequest
        "executing Bash",  # PreToolUse
        THINKING,  # PostToolUse: its result goes to the model (PreModelRequest is no longer wired)
        THINKING,  # PreModelRequest (as an earlier install wired it)
        WORKING,  # PostModelRequest
        WORKING,  # Stop
        "completed",  # notify: agent-turn-complete
        STOPPED,  # SessionEnd
    ],
    "prompt-echo-hi.jsonl": [  # Copilot CLI: the event on the command line, the payload on stdin
        WORKING,  # sessionStart
        THINKING,  # userPromptSubmitted
        THINKING,  # userPromptTransformed (unmapped: no change)
        "executing bash",  # preToolUse
        "executing bash",  # permissionRequest (unmapped, fired even with --allow-all-tools)
        THINKING,  # postToolUse: its result goes to the model, called with no hook
        WORKING,  # agentStop
        STOPPED,  # sessionEnd
    ],
    "headless-echo-hi.jsonl": [  # Qwen Code
        "",  # InstructionsLoaded (unmapped: nothing written yet)
        WORKING,  # SessionStart
        WORKING,  # Notification auth_success (unmapped: it is no question to the user)
        THINKING,  # UserPromptSubmit
        "executing run_shell_command",  # PreToolUse
        WORKING,  # PostToolUse
        WORKING,  # PostToolBatch (unmapped)
        THINKING,  # UserPromptSubmit again, empty, as the tool result goes to the model
        THINKING,  # MessageDisplay (unmapped)
        WORKING,  # Stop (no SessionEnd under -p)
    ],
    "exec-echo-hi.jsonl": [  # Droid
        WORKING,  # SessionStart
        "executing Execute",  # PreToolUse
        THINKING,  # PostToolUse: the model is called next, with no hook
        WORKING,  # Stop
        STOPPED,  # SessionEnd
    ],
    "prompt-hello.jsonl": [  # Mistral Vibe: no session or prompt events
        "executing file_system.bash",  # pre_tool
        THINKING,  # post_tool: the model is called next, with no hook
        WORKING,  # post_agent (and nothing at the end of `vibe -p`)
    ],
    "chat-q-hello.jsonl": [  # Hermes Agent
        WORKING,  # on_session_start
        THINKING,  # pre_llm_call
        THINKING,  # pre_api_request
        WORKING,  # post_api_request
        "executing terminal",  # pre_tool_call
        WORKING,  # post_tool_call
        THINKING,  # pre_api_request
        WORKING,  # post_api_request
        WORKING,  # on_session_end: the turn's end
        STOPPED,  # on_session_finalize
    ],
    "print-hello.jsonl": [  # Auggie
        WORKING,  # SessionStart
        THINKING,  # PromptSubmit
        "executing launch-process",  # PreToolUse
        THINKING,  # PostToolUse: the model is called next, with no hook
        WORKING,  # Stop
        STOPPED,  # SessionEnd
    ],
}


def opencode_expected(envelopes: list[dict[str, Any]]) -> list[str]:
    """opencode's 89 envelopes: only the mapped ones move the status (the opencode dialect maps
    no model-start and no session-end, so it is never thinking and never stopped)."""
    moves = {"session.created": WORKING, "tool.execute.after": WORKING, "session.idle": WORKING}
    moves["tool.execute.before"] = "executing bash"
    moves["message.part.updated.step-finish"] = WORKING
    out, current = [], ""
    for envelope in envelopes:
        current = moves.get(envelope["hook_event_name"], current)
        out.append(current)
    return out


def state(agent: Agent) -> str:
    if not (agent.home / "agent-info.json").exists():
        return ""
    info = agent.info
    if info.get("phase") == "stopped":
        assert "activity" not in info
        return STOPPED
    activity = str(info.get("activity"))
    return f"{activity} {info['toolName']}" if "toolName" in info else activity


def hook(agent: Agent, dialect: str, line: str, event: str | None) -> subprocess.CompletedProcess[bytes]:
    """One call as the harness makes it: Codex's notify passes its JSON as the last argument,
    with stdin at /dev/null; Copilot names the event as an argument; every hook gets the
    envelope on stdin."""
    if event is not None:
        return agent.hook(line, event, f"--dialect={dialect}")
    if json.loads(line).get("type") == "agent-turn-complete":
        return subprocess.run(
            [sys.executable, "-m", "sciontool_py", "hook", f"--dialect={dialect}", line],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=agent.env,
            timeout=60,
        )
    return agent.hook(line, f"--dialect={dialect}")


@pytest.mark.parametrize(("capture", "session", "dialect"), SESSIONS, ids=[s[1] for s in SESSIONS])
def test_each_captured_session_replays_through_the_hook(
    agent: Agent, capture: str, session: str, dialect: str
) -> None:
    captured = lines(capture, session)
    expected = EXPECTED.get(session) or opencode_expected([json.loads(x) for x in captured])
    assert len(expected) == len(captured)
    names = event_names(capture, session) or [None] * len(captured)
    seen = []
    for line, event in zip(captured, names, strict=True):
        result = hook(agent, dialect, line, event)
        assert (result.returncode, result.stderr, result.stdout) == (0, b"", b""), line
        seen.append(state(agent))
    assert seen == expected
    assert len(agent.log_lines) == len(captured)  # one agent.log line per call


def test_each_distinct_captured_envelope_is_a_fixture_holding_it_unchanged() -> None:
    expected: set[Path] = set()
    for capture, session, dialect in SESSIONS:
        for line, path in fixture_paths(capture, session, dialect).items():
            assert path.exists(), f"{path.name} is missing: run python tests/capture_fixtures.py"
            envelope = json.loads(path.read_text(encoding="utf-8"))["envelope"]
            # The same keys in the same order with the same values: the line as captured.
            assert json.dumps(envelope) == json.dumps(json.loads(line)), path.name
            expected.add(path)
    captures = {capture for capture, _, _ in SESSIONS}
    made = {p for p in FIXTURES.glob("*/*.json") if any(p.name.startswith(f"{c}-") for c in captures)}
    assert made == expected  # no fixture left from a line that is no longer captured


def go_json(value: object) -> str:
    """Go's json.Marshal of a decoded JSON value, written independently of sciontool's encoder
    (enough for these captures: keys sorted, no spaces, HTML characters and U+2028/9 escaped)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


def carried(envelope: dict[str, Any], name: str) -> dict[str, object]:
    """What the harness sent that the event of this canonical name must carry, read from the
    envelope by the harness's own field names."""
    want: dict[str, object] = {}
    if name in ("tool-start", "tool-end") and isinstance(envelope.get("tool_input"), dict):
        want["tool_input"] = go_json(envelope["tool_input"])
    response = envelope.get("tool_response")
    if name == "tool-end" and response is not None:
        want["tool_output"] = response if isinstance(response, str) else go_json(response)
    request, reply = envelope.get("llm_request") or {}, envelope.get("llm_response") or {}
    if name in ("session-start", "model-start", "model-end"):
        model = envelope.get("model") or request.get("model")
        if model:
            want["model"] = model
    usage = reply.get("usageMetadata") or {}
    gemini_counts = {"input_tokens": "promptTokenCount", "output_tokens": "candidatesTokenCount"}
    want.update({field: usage[key] for field, key in gemini_counts.items() if usage.get(key)})
    tokens = envelope.get("token_usage") or {}
    codex_counts = {
        "input_tokens": "input_tokens",
        "output_tokens": "output_tokens",
        "cached_tokens": "cached_input_tokens",
        "cache_write_tokens": "cache_write_input_tokens",
        "reasoning_tokens": "reasoning_output_tokens",
    }
    want.update({field: tokens[key] for field, key in codex_counts.items() if tokens.get(key)})
    reply_text = envelope.get("prompt_response") or envelope.get("last_assistant_message")
    if name == "agent-end" and reply_text:
        want["assistant_text"] = reply_text
    return want


NAMED = [s for s in SESSIONS if event_names(s[0], s[1]) is None]  # normalize reads the name in the envelope


@pytest.mark.parametrize(("capture", "session", "dialect"), NAMED, ids=[s[1] for s in NAMED])
def test_normalize_carries_what_the_harness_sent(
    agent: Agent, capture: str, session: str, dialect: str
) -> None:
    text = (CAPTURES / capture / session).read_bytes()
    result = agent.run("normalize", f"--dialect={dialect}", stdin=text)
    assert (result.returncode, result.stderr) == (0, b"")
    events = [json.loads(line) for line in result.stdout.decode().splitlines()]
    envelopes = [json.loads(line) for line in text.decode().splitlines()]
    assert len(events) == len(envelopes)
    checked = 0
    for envelope, got in zip(envelopes, events, strict=True):
        want = carried(envelope, got["name"])
        assert {k: got["data"].get(k) for k in want} == want, envelope
        checked += len(want)
    assert checked  # every session carries something beyond the defaults


def captured(session: str, raw_name: str) -> dict[str, Any]:
    """The first envelope of a captured session with this raw event name."""
    capture = next(c for c, s, _ in SESSIONS if s == session)
    return next(e for e in map(json.loads, lines(capture, session)) if e.get("hook_event_name") == raw_name)


def walk(agent: Agent, dialect: list[str], steps: list[tuple[dict[str, Any], str]]) -> list[str]:
    seen = []
    for envelope, _ in steps:
        result = agent.hook(envelope, *dialect)
        assert (result.returncode, result.stderr) == (0, b"")
        seen.append(state(agent))
    return seen


def claude_permission_prompt(ending: dict[str, Any] | None = None) -> list[tuple[dict[str, Any], str]]:
    """Claude Code asking the user to allow Bash, as seen in runs with a permission prompt:
    PreToolUse, then PermissionRequest, then (about 6 s later) Notification permission_prompt;
    approved, the tool runs and ends (PostToolUse); Stop; Notification idle_prompt 60 s later."""
    pre, post, stop = (captured("bash.jsonl", n) for n in ("PreToolUse", "PostToolUse", "Stop"))
    common = {k: pre[k] for k in ("session_id", "transcript_path", "cwd")}
    permission = {
        **common,
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": pre["tool_input"],
        "permission_suggestions": [{"type": "addRules", "behavior": "allow", "destination": "localSettings"}],
    }
    asking = {
        **common,
        "hook_event_name": "Notification",
        "message": "Claude needs your permission to use Bash",
        "notification_type": "permission_prompt",
    }
    idle = {**asking, "message": "Claude is waiting for your input", "notification_type": "idle_prompt"}
    return [
        (pre, "executing Bash"),
        (permission, "waiting_for_input"),
        (asking, "waiting_for_input"),
        (ending or post, WORKING),
        (stop, WORKING),
        (idle, "waiting_for_input"),
    ]


def test_claude_after_a_permission_prompt_the_answered_tool_means_working_again(agent: Agent) -> None:
    steps = claude_permission_prompt()
    assert walk(agent, ["--dialect=claude"], steps) == [want for _, want in steps]
    assert agent.log_lines[1].endswith("[waiting_for_input] Notification received")  # PermissionRequest


def test_claude_a_tool_that_failed_after_the_prompt_also_means_working_again(agent: Agent) -> None:
    failed = {
        **captured("bash.jsonl", "PostToolUse"),
        "hook_event_name": "PostToolUseFailure",
        "error": "Command failed with exit code 1",
        "is_interrupt": False,
    }
    del failed["tool_response"]
    steps = claude_permission_prompt(failed)
    assert walk(agent, ["--dialect=claude"], steps) == [want for _, want in steps]
    assert "[ERROR] [working] Tool Bash failed: Command failed with exit code 1" in agent.log_lines[3]


def test_without_resumes_after_wait_the_answered_prompt_still_shows_waiting(
    agent: Agent, tmp_path: Path
) -> None:
    # The rule is the dialect's option and nothing else: Scion's sticky rule without it.
    text = (REPO / "dialects" / "claude" / "dialect.yaml").read_text()
    option = "  resumes_after_wait: [PostToolUse, PostToolUseFailure, PostToolBatch, PermissionDenied]\n"
    assert option in text
    plain = tmp_path / "claude.yaml"
    plain.write_text(text.replace(option, ""))
    steps = claude_permission_prompt()
    assert walk(agent, [f"--dialect-file={plain}"], steps) == [
        "executing Bash",
        "waiting_for_input",
        "waiting_for_input",
        "waiting_for_input",  # PostToolUse: the user answered, the status does not say so
        "waiting_for_input",
        "waiting_for_input",
    ]


def test_gemini_after_a_tool_permission_the_answered_tool_means_working_again(agent: Agent) -> None:
    before, after = (
        captured("headless-tool-call.jsonl", "BeforeTool"),
        captured("headless-tool-call.jsonl", "AfterTool"),
    )
    asking = {
        **{k: before[k] for k in ("session_id", "transcript_path", "cwd")},
        "hook_event_name": "Notification",
        "timestamp": "2026-11-30T03:41:04.500Z",
        "notification_type": "ToolPermission",
        "message": "Tool run_shell_command requires editing",
        "details": {"type": "exec", "title": "Confirm Shell Command", "command": "echo hello"},
    }
    steps = [
        (before, "executing run_shell_command"),
        (asking, "waiting_for_input"),
        (after, WORKING),
        (captured("headless-tool-call.jsonl", "AfterAgent"), WORKING),
    ]
    assert walk(agent, ["--dialect=gemini"], steps) == [want for _, want in steps]


def test_a_continued_hermes_session_runs_again_without_a_session_start(agent: Agent) -> None:
    """`hermes chat --continue` fires no on_session_start: the second run's pre_llm_call
    (resume_events) takes the session up again after the first run's on_session_finalize."""
    captured = lines("hermes-agent-0.19.0", "chat-q-hello.jsonl")
    for line in captured:
        hook(agent, "hermes", line, None)
    assert state(agent) == STOPPED
    seen = []
    for line in captured[1:]:  # the continued run, as `make e2e` resume saw it
        assert hook(agent, "hermes", line, None).returncode == 0
        seen.append((agent.info.get("phase"), state(agent)))
    assert seen[0] == ("running", THINKING)  # pre_llm_call
    assert all(phase == "running" for phase, _ in seen[:-1])
    assert seen[-1] == ("stopped", STOPPED)  # on_session_finalize
