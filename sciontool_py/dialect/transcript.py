"""Assistant text from a Claude-style JSONL transcript (best effort, never an error)."""

from __future__ import annotations

import json
import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO

_MAX_LINE = 16 << 20  # Scion's scanner buffer: longer lines are skipped
_SKIP_CHUNK = 1 << 16


def last_assistant_text(path: str) -> str:
    """Text blocks of the trailing run of assistant entries, joined and trimmed."""
    blocks: list[str] = []
    try:
        # The path comes from the envelope: a FIFO must not block the open, and
        # only a regular file is read (/dev/zero would be one endless line).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return ""
        with os.fdopen(fd, "rb") as handle:
            for line in _lines(handle):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(entry, dict):
                    continue
                message = entry.get("message")
                message = message if isinstance(message, dict) else {}
                role = entry.get("type") or message.get("role")
                if role == "user":
                    blocks = []
                elif role == "assistant":
                    blocks.extend(_text_blocks(message.get("content")))
    except OSError:
        return ""
    return "".join(blocks).strip()


def _lines(handle: BinaryIO) -> Iterator[bytes]:
    """The file's lines, skipping those longer than _MAX_LINE without holding them in memory."""
    while line := handle.readline(_MAX_LINE + 1):
        if len(line) <= _MAX_LINE:
            yield line
            continue
        while line and not line.endswith(b"\n"):
            line = handle.readline(_SKIP_CHUNK)


def _text_blocks(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
