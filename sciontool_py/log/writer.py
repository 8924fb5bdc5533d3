"""agent.log: one line per call, in the format Scion's tools write, mirrored to stderr."""

from __future__ import annotations

import os
import time

from sciontool_py.console import escape_controls, write_stderr
from sciontool_py.fs import SCION_HOME, append, shared_tmp
from sciontool_py.log import level as log_level

_quiet = False  # hook and status: no mirror on stderr, which the harness captures
# Folders whose agent.log failed in this process: as in Scion (whose logger switches its path to
# /tmp/agent.log for good), later lines go straight to the fallback and the warning is not repeated.
_fell_back: set[str] = set()


def log_folder(home: str) -> str:
    # Scion writes to /home/scion/agent.log whenever that folder exists.
    return SCION_HOME if os.path.isdir(SCION_HOME) else home


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
    out, and mirror it to stderr unless quiet.

    One call is one line: control characters in the message are escaped.
    agent.log is used only when it is a single-link regular file reached
    without a symlink, else /tmp/agent.log under the same rule, else the line
    is dropped; stderr is written without waiting. Never raises.
    """
    if not log_level.enabled(level, tag):
        return
    tag_part = f" [{escape_controls(tag)}]" if tag else ""
    message = escape_controls(message)
    stamp = timestamp(time.time_ns())
    line = _encode(f"{stamp} [sciontool] [{level}]{tag_part} {message}\n")
    folder = log_folder(home)
    if folder in _fell_back:
        try:
            append(shared_tmp(), "agent.log", line)
        except OSError:
            pass  # as below: with /tmp/agent.log unusable too, the line is dropped
    else:
        _append_or_fall_back(folder, stamp, line)
    if not _quiet:
        write_stderr(f"[sciontool] {level}:{tag_part} {message}\n")


def _append_or_fall_back(folder: str, stamp: str, line: bytes) -> None:
    try:
        append(folder, "agent.log", line)
    except OSError as exc:
        _fell_back.add(folder)
        fallback = shared_tmp()
        warning = escape_controls(
            f"[sciontool] WARNING: Failed to write to {os.path.join(folder, 'agent.log')}: "
            f"{exc.strerror or exc}. Falling back to {os.path.join(fallback, 'agent.log')}."
        )
        write_stderr(warning + "\n")
        try:
            append(fallback, "agent.log", _encode(f"{stamp} {warning}\n") + line)
        except OSError:
            pass  # as in Scion: with /tmp/agent.log unusable too, the line is dropped
