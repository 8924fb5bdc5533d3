"""Scion's canonical event vocabulary: names, data fields and their types."""

from __future__ import annotations

# Events a harness reports, then the lifecycle events Scion itself sends.
HARNESS_EVENTS = (
    "session-start",
    "session-end",
    "agent-start",
    "agent-end",
    "tool-start",
    "tool-end",
    "prompt-submit",
    "response-complete",
    "notification",
    "model-start",
    "model-end",
    "subagent-end",
)
LIFECYCLE_EVENTS = ("pre-start", "post-start", "pre-stop")
EVENTS = HARNESS_EVENTS + LIFECYCLE_EVENTS

# Event data fields in Scion's struct order, which is also their JSON order.
STRING_FIELDS = (
    "prompt",
    "tool_name",
    "message",
    "reason",
    "source",
    "session_id",
)
PAYLOAD_FIELDS = ("tool_input", "tool_output")  # any JSON value, kept as a string
TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
DATA_FIELD_ORDER = (
    *STRING_FIELDS,
    *PAYLOAD_FIELDS,
    "file_path",
    *TOKEN_FIELDS,
    "model",
    "assistant_text",
    "assistant_content",  # {"blocks": [{"type", "text"}]}: filled by options.assistant_blocks
    "success",
    "error",
)
# Fields a dialect's `fields:` may target, with the JSON type each takes.
FIELD_KINDS: dict[str, str] = {
    **{name: "string" for name in STRING_FIELDS},
    **{name: "any" for name in PAYLOAD_FIELDS},
    **{name: "number" for name in TOKEN_FIELDS},
    "file_path": "string",
    "model": "string",
    "assistant_text": "string",
    "success": "boolean",
    "error": "string",
}

# Activities that only new work (or an explicit status) may replace (Scion's pkg/agent/state).
STICKY_ACTIVITIES = frozenset({"waiting_for_input", "blocked", "completed", "limits_exceeded", "crashed"})
NEW_WORK_EVENTS = frozenset({"prompt-submit", "agent-start", "session-start"})

# Canonical event -> activity it sets in agent-info.json.
ACTIVITY_FOR_EVENT = {
    "session-start": "working",
    "prompt-submit": "thinking",
    "agent-start": "thinking",
    "model-start": "thinking",
    "model-end": "working",
    "tool-start": "executing",
    "tool-end": "working",
    "agent-end": "working",
    "response-complete": "completed",
    "notification": "waiting_for_input",
}
# `sciontool status TYPE`: the event it puts through the hook's handlers (never a dialect's),
# and per type the activity it sets, its default message and its agent.log prefix.
STATUS_EVENT = "status"
STATUS_TYPES = {
    "ask_user": ("waiting_for_input", "Input requested", "Agent requested input"),
    "blocked": ("blocked", "Agent is blocked", "Agent blocked"),
    "task_completed": ("completed", "Task completed", "Agent completed task"),
    "limits_exceeded": ("limits_exceeded", "Agent limits exceeded", "Agent limits exceeded"),
}
# Lifecycle event -> phase.
PHASE_FOR_EVENT = {
    "pre-start": "starting",
    "post-start": "running",
    "pre-stop": "stopping",
    "session-end": "stopped",
}
