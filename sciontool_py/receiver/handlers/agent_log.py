"""The agent.log line of each event: its tag and message, as Scion's hook writes them."""

from __future__ import annotations

from sciontool_py.console import cut
from sciontool_py.vocabulary import STATUS_EVENT, STATUS_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent

_TAGS = {
    "session-start": "starting",
    "pre-start": "starting",
    "prompt-submit": "thinking",
    "agent-start": "thinking",
    "model-start": "thinking",
    "tool-start": "executing",
    "notification": "waiting_for_input",
    "response-complete": "completed",
    "session-end": "stopped",
    "pre-stop": "stopping",
}
_FIXED = {
    "agent-start": "Agent turn started",
    "agent-end": "Agent turn completed",
    "model-start": "LLM call started",
    "model-end": "LLM call completed",
    "pre-start": "Container initializing",
    "post-start": "Container ready",
    "pre-stop": "Container shutting down (received termination signal)",
}
# event -> (message with the field, field, message without it)
_WITH_FIELD = {
    "session-start": ("Session started (source: {})", "source", "Session started"),
    "session-end": ("Session ended (reason: {})", "reason", "Session ended"),
    "tool-start": ("Running tool: {}", "tool_name", "Tool execution started"),
    "tool-end": ("Tool {} completed", "tool_name", "Tool execution completed"),
    "notification": ("Notification: {}", "message", "Notification received"),
    "response-complete": ("Agent completed task: {}", "message", "Agent completed task"),
}


# A step that failed (the event carries an error, or a tool-end says success: false).
_FAILED = {
    "agent-end": ("Agent turn failed", ""),
    "model-end": ("LLM call failed", ""),
    "tool-end": ("Tool execution failed", "Tool {} failed"),
    "response-complete": ("Agent task failed", ""),
}


def _failed(event: CanonicalEvent) -> bool:
    if event.name not in _FAILED:
        return False
    return bool(event.text("error")) or (event.name == "tool-end" and event.data.get("success") is False)


def level_of(event: CanonicalEvent) -> str:
    """ERROR for a step that failed, so that errors reach agent.log as errors; else INFO."""
    return "ERROR" if _failed(event) else "INFO"


def describe(event: CanonicalEvent) -> tuple[str, str]:
    """The (tag, message) of an event's log line."""
    name = event.name
    if name == STATUS_EVENT:
        activity, _, prefix = STATUS_TYPES[event.raw_name]
        return activity, f"{prefix}: {cut(event.text('message'))}"
    tag = _TAGS.get(name, "working")
    if _failed(event):
        bare, template = _FAILED[name]
        tool = event.text("tool_name")
        message = template.format(cut(tool)) if template and tool else bare
        error = event.text("error")
        return tag, f"{message}: {cut(error)}" if error else message
    if name in _FIXED:
        return tag, _FIXED[name]
    if name in _WITH_FIELD:
        template, field, bare = _WITH_FIELD[name]
        value = event.text(field)
        return tag, template.format(cut(value)) if value else bare
    if name == "prompt-submit":
        prompt = event.text("prompt")
        if not prompt:
            return tag, "User prompt submitted"
        return tag, "User prompt: " + cut(prompt)
    return tag, f"Event: {cut(event.raw_name)}"
