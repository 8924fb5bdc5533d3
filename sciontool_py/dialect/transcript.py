"""An agent-end's assistant turn from a Claude-style JSONL transcript (best effort, never an error).

The turn is the trailing run of assistant entries: those after the last user entry. A
transcript gains a line per entry for the whole session (hundreds of megabytes), so it is read
from its end, back, a block at a time, and only as far as the turn reaches: at most TAIL bytes
and LINES lines whatever the file's size (a longer turn keeps its last part). A line that does
not end within TAIL bytes ends the reading, as a line too long for Scion's scanner ends its
scan (there what follows the line is lost, here what precedes it).

Transcript is the file as it is read: opened once without blocking on a FIFO, read with
pread at offsets (no file position), within one budget of bytes and lines. Reading the session's
token usage is to add its forward twin: the lines from the offset the last hook stopped at (kept
in the session's state) to the end, each with the offset after it, under the same budget.
"""

from __future__ import annotations

import os
import stat

from sciontool_py import gojson_bounded
from sciontool_py.assistant import AssistantContent, transcript_blocks
from sciontool_py.errors import JSONError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

TAIL = 4 << 20  # bytes read back from the end at most: a line, or a turn, longer is cut there
LINES = 10_000  # lines read back at most (a file of empty or tiny lines costs a step each)
_BLOCK = 64 << 10  # bytes of one read


def last_assistant_turn(path: str) -> AssistantContent | None:
    """The blocks of the trailing run of assistant entries; None when there are none."""
    transcript = Transcript.open(path)
    if transcript is None:
        return None
    entries: list[list[tuple[str, str]]] = []  # the turn's entries, last first
    try:
        for line in transcript.lines_back():
            entry = _entry(line)
            if entry is None:
                continue
            role, content = entry
            if role == "user":
                break
            if role == "assistant":
                entries.append(transcript_blocks(content))
    except OSError:
        return None
    finally:
        transcript.close()
    blocks = [block for entry in reversed(entries) for block in entry]
    return AssistantContent(blocks) if blocks else None


class Transcript:
    """A transcript file opened for reading, and what reading it may still cost."""

    __slots__ = ("fd", "size", "bytes_left", "lines_left")

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size  # when opened: a line the harness is still writing ends it
        self.bytes_left = TAIL
        self.lines_left = LINES

    @classmethod
    def open(cls, path: str) -> Transcript | None:
        """The regular file at path; None when there is none. The path comes from the envelope:
        a FIFO must not block the open, and /dev/zero, one endless line, is not read."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except (OSError, ValueError):  # ValueError: a NUL byte in the path, which no file can have
            return None
        try:
            info = os.fstat(fd)
        except OSError:
            info = None
        if info is None or not stat.S_ISREG(info.st_mode):
            os.close(fd)
            return None
        return cls(fd, info.st_size)

    def close(self) -> None:
        os.close(self.fd)

    def lines_back(self) -> Iterator[bytes]:
        """The file's non-empty lines without their line end (as Go's bufio.Scanner gives
        them), last first, while the budget lasts; the line the budget ends in is not given."""
        end = self.size
        pieces: list[bytes] = []  # of the line being read back, last first: it starts further back
        while end > 0 and self.bytes_left > 0:
            size = min(_BLOCK, end, self.bytes_left)
            end -= size
            block = os.pread(self.fd, size, end)
            if len(block) != size:  # the file shrank as it was read: no further
                return
            self.bytes_left -= size
            if b"\n" not in block:
                pieces.append(block)
                continue
            lines = block.split(b"\n")
            pieces.append(lines[-1])
            lines[-1] = b"".join(reversed(pieces))
            pieces = [lines[0]]  # the first starts further back
            for index in range(len(lines) - 1, 0, -1):
                if self.lines_left <= 0:
                    return
                self.lines_left -= 1
                line = lines[index].removesuffix(b"\r")
                if line:
                    yield line
        if end == 0 and self.lines_left > 0:  # the file's first line, whole
            line = b"".join(reversed(pieces)).removesuffix(b"\r")
            if line:
                yield line


def _entry(line: bytes) -> tuple[str, object] | None:
    """(type, or else message.role; message.content) of a line, as Go decodes it into a
    struct: a line whose fields have the wrong JSON types is skipped whole."""
    try:
        entry = gojson_bounded.loads(line)  # in memory linear in the line, whatever its shape
    except JSONError:
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
