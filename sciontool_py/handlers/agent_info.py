"""agent-info.json: the phase and activity Scion shows for the agent."""

from __future__ import annotations

import os

from sciontool_py import gojson
from sciontool_py.handlers.files import read_json_object, write_atomic
from sciontool_py.vocabulary import (
    ACTIVITY_FOR_EVENT,
    NEW_WORK_EVENTS,
    PHASE_FOR_EVENT,
    STICKY_ACTIVITIES,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent


def path_in(home: str) -> str:
    return os.path.join(home, "agent-info.json")


def read(home: str) -> dict[str, object]:
    return read_json_object(path_in(home))


def write(home: str, info: dict[str, object]) -> None:
    # Go's MarshalIndent: two spaces, keys sorted, no trailing newline.
    write_atomic(path_in(home), gojson.dumps(info, indent="  "))


def set_activity(info: dict[str, object], activity: str, tool_name: str = "") -> None:
    if activity:
        info["activity"] = activity
    else:
        info.pop("activity", None)
    if activity == "executing" and tool_name:
        info["toolName"] = tool_name
    else:
        info.pop("toolName", None)
    info.pop("status", None)  # legacy keys Scion no longer reads
    info.pop("sessionStatus", None)


def apply_event(info: dict[str, object], event: CanonicalEvent, input_tools: list[str]) -> bool:
    """Update info for the event by Scion's rules; False when nothing changes."""
    name = event.name
    phase = PHASE_FOR_EVENT.get(name)
    if phase is not None:
        info["phase"] = phase
        set_activity(info, "working" if name == "post-start" else "")
        return True
    activity = ACTIVITY_FOR_EVENT.get(name)
    if activity is None:
        return False
    current = info.get("activity")
    sticky = current in STICKY_ACTIVITIES
    tool_name = event.text("tool_name")
    if name == "tool-start":
        if tool_name in input_tools:
            activity = "waiting_for_input"
        elif sticky and current != "waiting_for_input":
            return False
    elif sticky and name not in NEW_WORK_EVENTS and name != "notification":
        return False
    set_activity(info, activity, tool_name)
    return True
