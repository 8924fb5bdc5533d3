"""agent.log: one line per event, in the format Scion's tools write."""

from __future__ import annotations

import os
import sys
import time

from sciontool_py.handlers import log_level
from sciontool_py.handlers.files import SCION_HOME

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from sciontool_py.event import CanonicalEvent

FALLBACK_LOG = "/tmp/agent.log"
_quiet = False  # hook and status: no mirror on stderr, which the harness captures
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


def log_path(home: str) -> str:
    # Scion writes to /home/scion/agent.log whenever that folder exists.
    folder = SCION_HOME if os.path.isdir(SCION_HOME) else home
    return os.path.join(folder, "agent.log")


def describe(event: CanonicalEvent) -> tuple[str, str]:
    """The (tag, message) of an event's log line."""
    name = event.name
    tag = _TAGS.get(name, "working")
    if name in _FIXED:
        return tag, _FIXED[name]
    if name in _WITH_FIELD:
        template, field, bare = _WITH_FIELD[name]
        value = event.text(field)
        return tag, template.format(value) if value else bare
    if name == "prompt-submit":
        prompt = event.text("prompt")
        if not prompt:
            return tag, "User prompt submitted"
        return tag, "User prompt: " + _truncate_bytes(prompt, 100)
    return tag, f"Event: {event.raw_name}"


def _truncate_bytes(text: str, limit: int) -> str:
    # Go cuts at a byte count, which can split a character; keep the bytes.
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "surrogateescape") + "..."


def _encode(line: str) -> bytes:
    return line.encode("utf-8", "surrogateescape")


def set_quiet(quiet: bool) -> None:
    """Stop (or restart) mirroring lines to stderr, as Scion's hook and status do."""
    global _quiet
    _quiet = quiet


def timestamp(ns: int) -> str:
    """UTC RFC 3339 with nanoseconds, trailing zeros trimmed (Go's time.RFC3339Nano)."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    if fraction:
        stamp += "." + f"{fraction:09d}".rstrip("0")
    return stamp + "Z"


def write_line(home: str, tag: str, message: str, level: str = "INFO") -> None:
    """Append one line at level (INFO, WARN, ERROR, DEBUG) unless SCION_LOG_LEVEL filters it
    out, and mirror it to stderr unless quiet."""
    if not log_level.enabled(level, tag):
        return
    tag_part = f" [{tag}]" if tag else ""
    stamp = timestamp(time.time_ns())
    line = _encode(f"{stamp} [sciontool] [{level}]{tag_part} {message}\n")
    path = log_path(home)
    try:
        _append(path, line)
    except OSError as exc:
        warning = (
            f"[sciontool] WARNING: Failed to write to {path}: {exc.strerror or exc}. "
            f"Falling back to {FALLBACK_LOG}."
        )
        sys.stderr.write(warning + "\n")
        try:
            _append(FALLBACK_LOG, _encode(f"{stamp} {warning}\n") + line)
        except OSError:
            pass  # as in Scion: with /tmp unwritable too, the line is dropped
    if not _quiet:
        sys.stderr.buffer.write(_encode(f"[sciontool] {level}:{tag_part} {message}\n"))
        sys.stderr.flush()


def _append(path: str, data: bytes) -> None:
    # One write() of an O_APPEND file: lines from concurrent hooks never interleave.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
