"""What the hook tells the hub for each event, as the newest Scion does, event by event:
real hook processes against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest
from conftest import Agent

TOKEN = "tok-9c1e"


class Recorder(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, bytes]] = []

    def take(self) -> list[tuple[str, object]]:
        """The requests since the last take: (last path segment, decoded body)."""
        taken, self.requests = self.requests, []
        return [(path.rsplit("/", 1)[1], json.loads(body)) for path, body in taken]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Recorder

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.requests.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def hub(agent: Agent) -> Iterator[Recorder]:
    server = Recorder()
    # A short poll: shutdown() waits for the loop to notice, once per test.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    agent.env.update(
        SCION_HUB_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}",
        SCION_AGENT_ID="agent-7",
        SCION_AUTH_TOKEN=TOKEN,
    )
    yield server
    server.shutdown()
    server.server_close()


def status(**fields: object) -> tuple[str, object]:
    return "status", fields


Envelope = dict[str, object]


def send(
    agent: Agent, hub: Recorder, envelope: Envelope, dialect: str = "claude"
) -> list[tuple[str, object]]:
    result = agent.hook(envelope, f"--dialect={dialect}")
    assert (result.returncode, result.stderr) == (0, b""), result.stderr
    return hub.take()


BLOCKS = [
    {"type": "thinking", "thinking": "They asked for the build."},
    {"type": "text", "text": "The build is fixed."},
]
# (envelope, what the hub receives) in the order a Claude Code session sends them.
CLAUDE_SESSION: list[tuple[Envelope, list[tuple[str, object]]]] = [
    ({"hook_event_name": "SessionStart", "source": "startup"}, [
        status(phase="running", activity="working", status="working", message="Session started")
    ]),
    ({"hook_event_name": "UserPromptSubmit", "prompt": "fix the build"}, [
        status(activity="thinking", status="thinking", message="fix the build")
    ]),
    ({"hook_event_name": "PreToolUse", "tool_name": "Bash"}, [
        status(activity="executing", toolName="Bash", status="executing", message="Executing: Bash")
    ]),
    ({"hook_event_name": "PostToolUse", "tool_name": "Bash"}, [
        status(activity="working", status="working", message="Ready")
    ]),
    ({"hook_event_name": "PreToolUse", "tool_name": "ExitPlanMode"}, [
        status(activity="waiting_for_input", status="waiting_for_input", message="Waiting for plan approval")
    ]),
    # waiting_for_input is sticky: model calls and step ends are not reported over it...
    ({"hook_event_name": "BeforeModel"}, []),
    # ...but the plan's PostToolUse means the user answered (the dialect's resumes_after_wait).
    ({"hook_event_name": "PostToolUse", "tool_name": "ExitPlanMode"}, [
        status(activity="working", status="working", message="Ready")
    ]),
    ({"hook_event_name": "Notification"}, [
        status(activity="waiting_for_input", status="waiting_for_input", message="Waiting on parent")
    ]),
    ({"hook_event_name": "AfterModel"}, []),
    ({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion"}, [
        status(activity="waiting_for_input", status="waiting_for_input", message="Waiting on parent")
    ]),
    ({"hook_event_name": "PreToolUse", "tool_name": "Read"}, [
        status(activity="executing", toolName="Read", status="executing", message="Executing: Read")
    ]),
    # The batch ended (it closes the Read call too) and Claude Code calls the model next: the
    # dialect's model_call_events say thinking, where Scion says Ready after any step end.
    ({"hook_event_name": "PostToolBatch"}, [
        status(activity="thinking", status="thinking", message="Processing")
    ]),
    ({"hook_event_name": "Stop", "last_assistant_message": BLOCKS}, [
        ("outbound-message", {
            "msg": "The build is fixed.",
            "type": "assistant-reply",
            "visibility": "verbose",
            "metadata": {"has_thinking": "true", "source": "hook"},
        }),
        status(activity="working", status="working", message="Ready"),
    ]),
    ({"hook_event_name": "SessionEnd", "reason": "exit"}, [
        status(phase="stopped", status="stopped", message="Session ended")
    ]),
]  # fmt: skip


def test_a_claude_session_reports_what_scion_reports(agent: Agent, hub: Recorder) -> None:
    assert [send(agent, hub, envelope) for envelope, _ in CLAUDE_SESSION] == [
        sent for _, sent in CLAUDE_SESSION
    ]


def test_an_answered_permission_prompt_is_reported_as_working_again(agent: Agent, hub: Recorder) -> None:
    bash: Envelope = {"tool_name": "Bash", "tool_input": {"command": "rm -r build"}}
    waiting = status(activity="waiting_for_input", status="waiting_for_input", message="Waiting on parent")
    assert send(agent, hub, {"hook_event_name": "PreToolUse", **bash}) == [
        status(activity="executing", toolName="Bash", status="executing", message="Executing: Bash")
    ]
    assert send(agent, hub, {"hook_event_name": "PermissionRequest", **bash}) == [waiting]
    assert send(agent, hub, {"hook_event_name": "PostToolUse", **bash, "tool_response": {}}) == [
        status(activity="working", status="working", message="Ready")
    ]


def test_response_complete_sends_a_task_summary_and_later_tools_are_wrap_up(
    agent: Agent, hub: Recorder
) -> None:
    done: Envelope = {"type": "agent-turn-complete", "title": "Renamed the module"}
    assert send(agent, hub, done, "codex") == [
        status(activity="completed", status="completed", taskSummary="Renamed the module")
    ]
    assert send(agent, hub, {"type": "tool-start", "tool_name": "git"}, "codex") == []
    assert send(agent, hub, {"type": "notification", "message": "Approve?"}, "codex") == [
        status(activity="waiting_for_input", status="waiting_for_input", message="Approve?")
    ]


def test_a_long_prompt_is_cut_at_100_bytes_as_go_cuts_it(agent: Agent, hub: Recorder) -> None:
    [(_, body)] = send(agent, hub, {"hook_event_name": "UserPromptSubmit", "prompt": "é" * 150})
    # 97 bytes: 48 two-byte characters and half of one, which Go's encoder writes as U+FFFD.
    assert body == {"activity": "thinking", "status": "thinking", "message": "é" * 48 + "\ufffd..."}


def test_counts_go_in_their_own_update_and_limits_exceeded_is_left_to_scions_init(
    agent: Agent, hub: Recorder
) -> None:
    agent.env.update(SCION_MAX_TURNS="2", SCION_MAX_MODEL_CALLS="5")
    turn: Envelope = {"hook_event_name": "Stop"}
    ready = status(activity="working", status="working", message="Ready")
    assert send(agent, hub, turn) == [ready, status(currentTurns=1, currentModelCalls=0)]
    assert send(agent, hub, turn) == [ready, status(currentTurns=2, currentModelCalls=0)]
    assert agent.info["activity"] == "limits_exceeded"
    # limits_exceeded is sticky: the next turn end is not reported, its count is.
    assert send(agent, hub, turn) == [status(currentTurns=3, currentModelCalls=0)]
    assert send(agent, hub, {"hook_event_name": "PreToolUse", "tool_name": "Bash"}) == []


def test_skipped_updates_are_logged_at_debug_level(agent: Agent, hub: Recorder) -> None:
    agent.run("status", "blocked", "need a key")
    hub.take()
    agent.hook({"hook_event_name": "PostToolUse"}, SCION_LOG_LEVEL="debug")
    assert hub.take() == []
    # The hub's line, then (telemetry on, nothing listening) the telemetry's own DEBUG line.
    assert agent.log_lines[-2].endswith(
        "[sciontool] [DEBUG] Hub: no status update for tool-end (local activity blocked)"
    )


# --- Status true to the agent (dialects.md): the hub hears what agent-info.json says --------------


def test_a_model_end_while_a_call_runs_is_reported_as_executing(agent: Agent, hub: Recorder) -> None:
    start: Envelope = {
        "hook_event_name": "PreToolUse",
        "session_id": "s",
        "tool_name": "Bash",
        "tool_use_id": "c1",
    }
    executing = status(activity="executing", toolName="Bash", status="executing", message="Executing: Bash")
    assert send(agent, hub, start, "codex") == [executing]
    assert send(agent, hub, {"hook_event_name": "PostModelRequest", "session_id": "s"}, "codex") == [
        executing
    ]


def test_events_after_the_session_ended_and_another_threads_notify_tell_the_hub_nothing(
    agent: Agent, hub: Recorder
) -> None:
    send(agent, hub, {"hook_event_name": "SessionStart", "session_id": "s", "source": "startup"}, "codex")
    title: Envelope = {
        "type": "agent-turn-complete",
        "thread-id": "title-thread",
        "last-assistant-message": "Title",
    }
    assert send(agent, hub, title, "codex") == []
    send(agent, hub, {"hook_event_name": "SessionEnd", "session_id": "s"}, "codex")
    late: Envelope = {"type": "agent-turn-complete", "thread-id": "s", "last-assistant-message": "Done."}
    # (telemetry's session metrics, sent once the session ended, may arrive meanwhile)
    assert [kind for kind, _ in send(agent, hub, late, "codex") if kind != "metrics"] == []


def test_copilots_error_report_tells_the_hub_the_agent_still_works(agent: Agent, hub: Recorder) -> None:
    # errorOccurred (a model call Copilot CLI retries) is a notification in Scion's table: the hub
    # heard "waiting_for_input" with nobody asked anything. The agent goes on working.
    send(agent, hub, {"hook_event_name": "sessionStart", "sessionId": "s", "source": "new"}, "copilot")
    error: Envelope = {
        "hook_event_name": "errorOccurred",
        "sessionId": "s",
        "errorContext": "model_call",
        "recoverable": True,
        "error": {"message": "fake internal error", "name": "Error"},
    }
    assert send(agent, hub, error, "copilot") == [
        status(activity="working", status="working", message="Ready")
    ]


def test_geminis_failed_turn_sends_no_reply(agent: Agent, hub: Recorder) -> None:
    failed: Envelope = {
        "hook_event_name": "AfterAgent",
        "session_id": "s",
        "prompt_response": "[no response text]",
    }
    assert send(agent, hub, failed, "gemini") == [
        status(activity="working", status="working", message="Ready")
    ]
    answered: Envelope = {**failed, "prompt_response": "Hello."}
    assert [kind for kind, _ in send(agent, hub, answered, "gemini")] == ["outbound-message", "status"]
