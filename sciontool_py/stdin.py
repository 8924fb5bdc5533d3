"""The payload on stdin beside a positional event name (`sciontool hook preToolUse`).

Copilot CLI names the event on the hook's command line and writes the payload
to stdin; an older harness config runs the same command with nothing on stdin
(a terminal, /dev/null, or a pipe nobody writes to). So this read is optional
and bounded, as in Scion: a complete JSON object is taken as soon as it has
arrived, without waiting for EOF; anything else (malformed, not an object,
too large, too late) gives None and the hook falls back to the synthetic
event. Whatever follows the object is ignored.
"""

from __future__ import annotations

import os
import sys

POSITIONAL_LIMIT = 4 << 20  # bytes: a payload over this is dropped, not read on
POSITIONAL_WAIT = 1.0  # seconds from the first poll to a complete object
_CHUNK = 1 << 16


class Ignored:
    """Why a payload was not used (for the debug log); falsy so callers can test it."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __bool__(self) -> bool:
        return False


def read_optional_object(
    limit: int = POSITIONAL_LIMIT, wait: float = POSITIONAL_WAIT
) -> dict[str, object] | Ignored:
    """The JSON object on stdin, or Ignored (with the reason) when there is none to take."""
    stdin = sys.stdin
    if stdin is None:
        return Ignored("no stdin")
    try:
        fd = stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return Ignored("no stdin")
    import stat

    if stat.S_ISCHR(mode):  # a terminal or /dev/null: nothing will come
        return Ignored("stdin is a device")
    data = _read_bounded(fd, limit, wait)
    return _object(data) if isinstance(data, bytes) else data


def _read_bounded(fd: int, limit: int, wait: float) -> bytes | dict[str, object] | Ignored:
    """Everything up to EOF, or the object as soon as it is complete, or why neither came."""
    import select
    import time

    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    deadline = time.monotonic() + wait
    data = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(max(1, int(remaining * 1000))):
            return Ignored(f"no complete JSON object on stdin within {wait:g} s")
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            continue
        except OSError as exc:
            return Ignored(f"stdin: {exc.strerror or exc}")
        if not chunk:  # EOF: what arrived is all there is
            return bytes(data)
        data += chunk
        if len(data) > limit:
            return Ignored(f"stdin payload over {limit} bytes")
        if chunk.rstrip()[-1:] == b"}":
            value = _object(bytes(data))
            if not isinstance(value, Ignored):
                return value


def _object(data: bytes) -> dict[str, object] | Ignored:
    from sciontool_py import gojson

    text = gojson.decode_utf8(data)
    if not text.strip():
        return Ignored("stdin is empty")
    try:
        value = gojson.first_value(text)
    except gojson.JSONError as exc:
        return Ignored(f"stdin: {exc}")
    if not isinstance(value, dict):
        return Ignored("stdin holds JSON that is not an object")
    return value
