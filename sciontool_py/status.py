"""`sciontool status TYPE [MESSAGE...]`: sticky states an agent sets itself."""

from __future__ import annotations

from sciontool_py.console import cut
from sciontool_py.errors import SciontoolError
from sciontool_py.fs import StateLock, failure, home_dir
from sciontool_py.handlers import agent_info
from sciontool_py.log import writer

# type -> (activity, default message, log prefix)
STATUS_TYPES = {
    "ask_user": ("waiting_for_input", "Input requested", "Agent requested input"),
    "blocked": ("blocked", "Agent is blocked", "Agent blocked"),
    "task_completed": ("completed", "Task completed", "Agent completed task"),
    "limits_exceeded": ("limits_exceeded", "Agent limits exceeded", "Agent limits exceeded"),
}


def report_status(status_type: str, message: str) -> None:
    if status_type not in STATUS_TYPES:
        raise SciontoolError(f"unknown status type {status_type!r}; valid types: {', '.join(STATUS_TYPES)}")
    activity, default, prefix = STATUS_TYPES[status_type]
    message = message or default
    from sciontool_py.hook import hub_configured, log_failures

    home = home_dir()
    failures: list[str] = []
    with StateLock(home) as lock:
        if lock.given_up:
            writer.write_line(home, "", lock.given_up, level="WARN")
        info = agent_info.read(home)
        agent_info.set_activity(info, activity)
        try:
            agent_info.write(home, info)
        except OSError as exc:
            failures.append(failure(exc))  # still logged and reported below, as in Scion
        writer.write_line(home, activity, f"{prefix}: {cut(message)}")
    if hub_configured():
        from sciontool_py.hub.client import Hub, status_body

        hub = Hub.from_env(home)
        if hub is not None:
            key = "taskSummary" if status_type == "task_completed" else "message"
            body = status_body({"activity": activity, key: message})
            hub.report(home, f"status {status_type}", "status", body)
    message = log_failures(home, failures)
    if message:
        raise SciontoolError(message)
