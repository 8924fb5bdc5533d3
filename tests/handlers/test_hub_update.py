"""What the hook tells the hub for each event, in-process (SPEC §4's table): the status update per
event and local activity, the counts update, and the assistant reply.

The same table through real hook processes and a real hub is in handlers/test_hub_update_cli.py.
"""

from __future__ import annotations

import pytest

from sciontool_py.receiver.handlers.hub_update import count_update, event_update, reply_body, truncate


def update(name: str, activity: object = "working", waits: bool = False, **text: str) -> object:
    return event_update(name, activity, {"tool_name": "", "prompt": "", "message": "", **text}, waits)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("session-start", {}, {"phase": "running", "activity": "working", "message": "Session started"}),
        ("prompt-submit", {"prompt": "fix it"}, {"activity": "thinking", "message": "fix it"}),
        ("agent-start", {}, {"activity": "thinking", "message": "Processing"}),
        ("model-start", {"prompt": "p"}, {"activity": "thinking", "message": "p"}),
        (
            "tool-start",
            {"tool_name": "ls"},
            {"activity": "executing", "toolName": "ls", "message": "Executing: ls"},
        ),
        ("tool-start", {}, {"activity": "executing", "toolName": "", "message": "Executing tool"}),
        ("tool-end", {"tool_name": "ls"}, {"activity": "working", "message": "Ready"}),
        ("model-end", {}, {"activity": "working", "message": "Ready"}),
        ("agent-end", {}, {"activity": "working", "message": "Ready"}),
        ("notification", {"message": "allow?"}, {"activity": "waiting_for_input", "message": "allow?"}),
        ("notification", {}, {"activity": "waiting_for_input", "message": "Waiting on parent"}),
        ("response-complete", {"message": "shipped"}, {"activity": "completed", "taskSummary": "shipped"}),
        ("response-complete", {}, {"activity": "completed", "taskSummary": "Task completed"}),
        ("session-end", {}, {"phase": "stopped", "message": "Session ended"}),
    ],
)
def test_each_event_sends_scions_update(name: str, text: dict[str, str], expected: dict[str, object]) -> None:
    assert update(name, **text) == expected


@pytest.mark.parametrize("name", ["subagent-end", "pre-start", "post-start", "pre-stop", "compaction"])
def test_events_scion_does_not_report_send_nothing(name: str) -> None:
    assert update(name) is None


@pytest.mark.parametrize(
    "sticky", ["waiting_for_input", "blocked", "completed", "limits_exceeded", "crashed"]
)
def test_a_sticky_activity_holds_back_step_ends_and_model_start(sticky: str) -> None:
    for name in ("tool-end", "model-end", "agent-end", "model-start"):
        assert update(name, sticky) is None
    assert update("prompt-submit", sticky, prompt="again") == {"activity": "thinking", "message": "again"}


@pytest.mark.parametrize("done", ["completed", "limits_exceeded"])
def test_a_tool_after_the_task_is_wrap_up_not_news(done: str) -> None:
    assert update("tool-start", done, tool_name="git") is None
    assert update("tool-start", "blocked", tool_name="git") == {
        "activity": "executing",
        "toolName": "git",
        "message": "Executing: git",
    }


def test_an_input_tool_is_waiting_for_the_user() -> None:
    assert update("tool-start", waits=True, tool_name="AskUserQuestion") == {
        "activity": "waiting_for_input",
        "message": "Waiting on parent",
    }
    assert update("tool-start", waits=True, tool_name="ExitPlanMode") == {
        "activity": "waiting_for_input",
        "message": "Waiting for plan approval",
    }


def test_long_texts_are_cut_at_a_byte_count_as_go_cuts_them() -> None:
    assert update("prompt-submit", prompt="p" * 150) == {"activity": "thinking", "message": "p" * 97 + "..."}
    summary = update("response-complete", message="m" * 250)
    assert summary == {"activity": "completed", "taskSummary": "m" * 197 + "..."}
    assert truncate("é" * 60, 100) == "é" * 48 + "\ufffd..."  # 97 bytes: a split character is U+FFFD
    assert truncate("short", 100) == "short"


def test_the_counts_go_in_their_own_update() -> None:
    state = {"turn_count": 2, "model_call_count": 7, "max_turns": 9, "started_at": "t"}
    assert count_update(state) == {"currentTurns": 2, "currentModelCalls": 7}


def test_a_reply_is_sent_whole_up_to_64_kib() -> None:
    assert reply_body("done", False) == {
        "msg": "done",
        "type": "assistant-reply",
        "visibility": "verbose",
        "metadata": {"source": "hook"},
    }
    assert reply_body("done", True)["metadata"] == {"source": "hook", "has_thinking": "true"}
    msg = reply_body("é" * 40_000, False)["msg"]  # 80,000 bytes
    assert isinstance(msg, str) and msg.endswith("\n[truncated]")
    assert msg[: -len("\n[truncated]")] == "é" * 32_768  # cut at 64 KiB
