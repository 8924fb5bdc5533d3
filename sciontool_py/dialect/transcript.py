"""An agent-end's assistant turn from a Claude-style JSONL transcript (best effort, never an error)."""

from __future__ import annotations

import os
import stat

from sciontool_py import gojson
from sciontool_py.assistant import AssistantContent, transcript_blocks
from sciontool_py.errors import JSONError

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO

_MAX_LINE = 16 << 20  # Scion's scanner buffer: reading stops at a longer line


def last_assistant_turn(path: str) -> AssistantContent | None:
    """The blocks of the trailing run of assistant entries; None when there are none."""
    blocks: list[tuple[str, str]] = []
    try:
        # The path comes from the envelope: a FIFO must not block the open, and
        # only a regular file is read (/dev/zero would be one endless line).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        with os.fdopen(fd, "rb") as handle:
            for line in _lines(handle):
                entry = _entry(line)
                if entry is None:
                    continue
                role, content = entry
                if role == "user":
                    blocks = []
                elif role == "assistant":
                    blocks += transcript_blocks(content)
    except (OSError, ValueError):  # ValueError: a NUL byte in the path, which no file can have
        return None
    return AssistantContent(blocks) if blocks else None


def _lines(handle: BinaryIO) -> Iterator[bytes]:
    """Non-empty lines without their line end, as Go's bufio.Scanner gives them: a line too
    long for its buffer ends the scan."""
    while line := handle.readline(_MAX_LINE + 1):
        if len(line) > _MAX_LINE:
            return
        line = line.removesuffix(b"\n").removesuffix(b"\r")
        if line:
            yield line


def _entry(line: bytes) -> tuple[str, object] | None:
    """(type, or else message.role; message.content) of a line, as Go decodes it into a
    struct: a line whose fields have the wrong JSON types is skipped whole."""
    try:
        entry = gojson.loads(gojson.decode_utf8(line))
    except (JSONError, RecursionError):
        return None
    if type(entry) is not dict:
        return None
    kind, message = _field(entry, "type"), _field(entry, "message")
    if message is None:
        message = {}
    if (kind is not None and type(kind) is not str) or type(message) is not dict:
        return None
    role = _field(message, "role")
    if role is not None and type(role) is not str:
        return None
    return kind or role or "", _field(message, "content")


def _field(obj: dict[str, object], name: str) -> object:
    # Go matches struct fields case-insensitively, the last matching key winning.
    found: object = None
    for key, value in obj.items():
        if key.lower() == name:
            found = value
    return found
