"""agent-info.json: the phase and activity Scion shows for the agent."""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.console import TOOL_NAME_LIMIT, cut
from sciontool_py.fs import read_json_file, write_atomic
from sciontool_py.vocabulary import (
    ACTIVITY_FOR_EVENT,
    NEW_WORK_EVENTS,
    PHASE_FOR_EVENT,
    STATUS_EVENT,
    STATUS_TYPES,
    STICKY_ACTIVITIES,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent

FILE = "agent-info.json"


def read(home: str) -> dict[str, object]:
    # As in Scion, a damaged file counts as empty (the next write replaces it).
    return read_json_file(home, FILE)[0]


def write(home: str, info: dict[str, object]) -> None:
    # Go's MarshalIndent: two spaces, keys sorted, no trailing newline.
    write_atomic(home, FILE, gojson.dumps(info, indent="  "))


def set_activity(info: dict[str, object], activity: str, tool_name: str = "") -> None:
    if activity:
        info["activity"] = activity
    else:
        info.pop("activity", None)
    if activity == "executing" and tool_name:
        info["toolName"] = cut(tool_name, TOOL_NAME_LIMIT)
    else:
        info.pop("toolName", None)
    info.pop("status", None)  # legacy keys Scion no longer reads
    info.pop("sessionStatus", None)


def apply_event(
    info: dict[str, object],
    event: CanonicalEvent,
    input_tools: list[str] | tuple[str, ...],
    resumes_after_wait: list[str] | tuple[str, ...] = (),
) -> bool:
    """Update info for the event by Scion's rules; False when nothing changes.

    resumes_after_wait: raw event names (the dialect's option) that replace
    waiting_for_input with their own activity, as a tool-start does in Scion.
    """
    name = event.name
    if name == STATUS_EVENT:  # an explicit status replaces any activity, sticky ones too
        set_activity(info, STATUS_TYPES[event.raw_name][0])
        return True
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
    # The dialect says this event means the user answered: the agent waits no more.
    answered = current == "waiting_for_input" and event.raw_name in resumes_after_wait
    tool_name = event.text("tool_name")
    if name == "tool-start":
        if tool_name in input_tools:
            activity = "waiting_for_input"
        elif sticky and current != "waiting_for_input":
            return False
    elif sticky and not answered and name not in NEW_WORK_EVENTS and name != "notification":
        return False
    set_activity(info, activity, tool_name)
    return True
