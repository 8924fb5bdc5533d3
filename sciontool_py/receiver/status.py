"""`sciontool status TYPE [MESSAGE...]`: sticky states an agent sets itself.

A status is an event like the hook's (name "status", the type as its raw
name) and goes through the same handlers: agent-info.json, the agent.log
line, the hub report.
"""

from __future__ import annotations

from sciontool_py.errors import SciontoolError
from sciontool_py.event import CanonicalEvent
from sciontool_py.receiver.hook import apply_event, log_failures
from sciontool_py.vocabulary import STATUS_EVENT, STATUS_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.log.writer import AgentLog


def report_status(status_type: str, message: str, log: AgentLog) -> None:
    if status_type not in STATUS_TYPES:
        raise SciontoolError(f"unknown status type {status_type!r}; valid types: {', '.join(STATUS_TYPES)}")
    message = message or STATUS_TYPES[status_type][1]
    event = CanonicalEvent(STATUS_EVENT, status_type, "", {"message": message}, {})
    # A state file that cannot be written is still logged and reported, then fails the call.
    failed = log_failures(log, apply_event(log, event, []).failures)
    if failed:
        raise SciontoolError(failed)
