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

import sys

POSITIONAL_LIMIT = 4 << 20  # bytes: a payload over this is dropped, not read on
POSITIONAL_WAIT = 1.0  # seconds from the first poll to a complete object


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
    from sciontool_py.errors import EventError
    from sciontool_py.stdin_envelope import read_envelope

    stdin = sys.stdin
    if stdin is None:
        return Ignored("no stdin")
    try:
        # The hook's own bounded reader, with this form's shorter waits: nothing may come.
        data = read_envelope(stdin.buffer, limit, deadline=wait, first_byte_wait=wait)
    except EventError as exc:
        return Ignored(str(exc))
    except (OSError, ValueError) as exc:
        return Ignored(f"stdin: {exc}")
    return _object(data)


def _object(data: bytes) -> dict[str, object] | Ignored:
    from sciontool_py.errors import JSONError
    from sciontool_py.gojson_bounded import first_value

    if not data.strip():
        return Ignored("stdin is empty")
    try:
        value = first_value(data)  # to Go's depth, in memory linear in its size whatever its shape
    except JSONError as exc:
        return Ignored(f"stdin: {exc}")
    if not isinstance(value, dict):
        return Ignored("stdin holds JSON that is not an object")
    return value
