"""What the newest Scion hook tells the hub for each canonical event, event by event, and
report_to_hub, which sends it.

The updates are pure functions of the event and the activity agent-info.json
holds once the status handler has applied it; `hub.client` carries them.
"""

from __future__ import annotations

from sciontool_py.console import TOOL_NAME_LIMIT, cut
from sciontool_py.gojson import decode_utf8
from sciontool_py.vocabulary import STATUS_EVENT, STATUS_TYPES, STICKY_ACTIVITIES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent
    from sciontool_py.log.writer import AgentLog
    from sciontool_py.receiver.handlers.agent_end import Outcome

REPLY_LIMIT = 64 * 1024  # bytes of assistant text the hub's message store takes
_STEP_ENDS = ("tool-end", "agent-end", "model-end")
_AFTER_THE_TASK = ("completed", "limits_exceeded")  # a tool-start then is wrap-up, not news


def truncate(text: str, limit: int) -> str:
    """Go's cut at a byte count: limit - 3 bytes and "...", a split character as U+FFFD."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return decode_utf8(data[: limit - 3]) + "..."


def event_update(
    event_name: str, local_activity: object, text: dict[str, str], waits_for_user: bool
) -> dict[str, object] | None:
    """The StatusUpdate fields for an event, or None when Scion sends none for it.

    text holds the event's tool_name, prompt and message; waits_for_user is a
    tool-start of one of the dialect's input_tools.
    """
    sticky = local_activity in STICKY_ACTIVITIES
    if event_name == "session-start":
        return {"phase": "running", "activity": "working", "message": "Session started"}
    if event_name in ("prompt-submit", "agent-start") or (event_name == "model-start" and not sticky):
        return {"activity": "thinking", "message": truncate(text["prompt"], 100) or "Processing"}
    if event_name == "tool-start":
        tool = text["tool_name"]
        if waits_for_user:
            waiting = "Waiting for plan approval" if tool == "ExitPlanMode" else "Waiting on parent"
            return {"activity": "waiting_for_input", "message": waiting}
        if local_activity in _AFTER_THE_TASK:
            return None
        message = f"Executing: {tool}" if tool else "Executing tool"
        return {"activity": "executing", "toolName": tool, "message": message}
    if event_name in _STEP_ENDS and not sticky:
        return {"activity": "working", "message": "Ready"}
    if event_name == "notification":
        message = truncate(text["message"], 100) or "Waiting on parent"
        return {"activity": "waiting_for_input", "message": message}
    if event_name == "response-complete":
        return {"activity": "completed", "taskSummary": truncate(text["message"], 200) or "Task completed"}
    if event_name == "session-end":
        return {"phase": "stopped", "message": "Session ended"}
    return None


def status_update(status_type: str, message: str) -> dict[str, object]:
    """The StatusUpdate fields of `sciontool status TYPE MESSAGE` (the message whole, as Scion sends it)."""
    key = "taskSummary" if status_type == "task_completed" else "message"
    return {"activity": STATUS_TYPES[status_type][0], key: message}


def as_local(update: dict[str, object], local: dict[str, object]) -> dict[str, object] | None:
    """The update saying the activity agent-info.json holds, when the dialect's rules beyond
    Scion's kept another one than the event's (a tool still open after a model-end, a
    compaction that kept the state); None when the event changed nothing to report."""
    if "activity" not in update or update["activity"] == local.get("activity"):
        return update
    activity = local.get("activity")
    if activity == "executing":
        tool = local.get("toolName") if isinstance(local.get("toolName"), str) else ""
        return {
            "activity": "executing",
            "toolName": tool,
            "message": f"Executing: {tool}" if tool else "Executing tool",
        }
    if activity in ("working", "thinking", "waiting_for_input"):
        return {
            "activity": activity,
            "message": "Ready"
            if activity == "working"
            else "Waiting on parent"
            if activity == "waiting_for_input"
            else "Processing",
        }
    return None


def count_update(state: dict[str, object]) -> dict[str, object]:
    """The separate update carrying the limit counts after an event was counted."""
    return {"currentTurns": state["turn_count"], "currentModelCalls": state["model_call_count"]}


def reply_body(text: str, has_thinking: bool) -> dict[str, object]:
    """The outbound-message body of an assistant reply (its text without thinking)."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > REPLY_LIMIT:
        text = decode_utf8(data[:REPLY_LIMIT]) + "\n[truncated]"
    metadata = {"source": "hook", **({"has_thinking": "true"} if has_thinking else {})}
    return {"msg": text, "type": "assistant-reply", "visibility": "verbose", "metadata": metadata}


def report_to_hub(
    home: str,
    log: AgentLog,
    event: CanonicalEvent,
    activity: object,
    waits_for_user: bool,
    counts: dict[str, object] | None,
    local: dict[str, object] | None = None,
) -> None:
    """The hub handler's requests, in Scion's order: the assistant reply, the event's status
    update, then (from the limits handler) the counts. The hook never reports
    limits_exceeded: Scion's init does, when it stops the agent. local: agent-info.json as
    the dialect's rules beyond Scion's left it (handlers/truth.py), which the update then says."""
    # Imported here: http.client costs more than the rest of the hook, and only a hub needs it.
    from sciontool_py.assistant import AssistantContent
    from sciontool_py.hub.client import Hub, status_body

    hub = Hub.from_env(home, log)
    if hub is None:
        return
    if event.name == STATUS_EVENT:
        body = status_body(status_update(event.raw_name, event.text("message")))
        hub.report(f"status {event.raw_name}", "status", body)
        return
    reply = event.text("assistant_text")
    if reply and event.name in ("agent-end", "session-end"):
        content = event.data.get("assistant_content")
        thinking = isinstance(content, AssistantContent) and content.has_thinking()
        body = reply_body(reply, thinking and event.name == "agent-end")
        hub.report(event.name, "outbound-message", body, retries=0)
    # Scion sends at most 200 bytes of these but the tool name; a hostile one is cut too.
    text = {f: cut(event.text(f), TOOL_NAME_LIMIT) for f in ("tool_name", "prompt", "message")}
    update = event_update(event.name, activity, text, waits_for_user)
    if update is not None and local is not None:
        update = as_local(update, local)
    if update is None:
        skipped = f"Hub: no status update for {event.name} (local activity {activity})"
        log.debug(skipped)
    else:
        hub.report(event.name, "status", status_body(update))
    if counts is not None:
        hub.report(event.name, "status", status_body(count_update(counts)))


def end_update(outcome: Outcome) -> dict[str, object]:
    """The final StatusUpdate of an agent whose harness is gone, as Scion's init sends it: a crash
    with its message and exit code, a limits stop, or a plain stop."""
    if outcome.crashed:
        update: dict[str, object] = {"phase": "error", "message": outcome.message}
    elif outcome.activity == "limits_exceeded":
        message = "Agent stopped: limits exceeded"
        update = {"phase": "stopped", "activity": "limits_exceeded", "message": message}
    else:
        update = {"phase": "stopped", "message": "Agent stopped"}
    if outcome.exit_code is not None:
        update["exitCode"] = outcome.exit_code
    return update


def report_end(home: str, log: AgentLog, outcome: Outcome) -> None:
    from sciontool_py.hub.client import Hub, status_body

    hub = Hub.from_env(home, log)
    if hub is not None:
        hub.report("session-end", "status", status_body(end_update(outcome)))
