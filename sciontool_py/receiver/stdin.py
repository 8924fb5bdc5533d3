"""What the harness writes on the hook's stdin, read bounded in size and in time.

Scion's hook reads stdin to EOF.  A harness (or an agent posing as one) may
never close the pipe after the envelope, or may never stop writing: the
hook must neither wait forever nor grow without limit.  So the read stops
at the first of: EOF; a complete JSON object followed by a pause of the
writer (the pipe left open); `limit` bytes (refused); the deadline, counted
from the first byte (what arrived is used when it is a complete object,
else refused); no byte at all within first_byte_wait (an empty stdin).

Whether the bytes so far make one object is followed as they come (_Shape),
never by decoding them: a writer pausing after every chunk of a huge envelope
would otherwise have it decoded again at every pause.

`hook` reads its envelope with read_stdin. `hook EVENT_NAME` (Copilot CLI's
form) reads its payload with read_optional_object: an older harness config
runs the same command with nothing on stdin (a terminal, /dev/null, or a pipe
nobody writes to), so that read is optional, with shorter waits, as in Scion:
anything but a complete JSON object (malformed, not an object, too large, too
late) is Ignored and the hook falls back to the synthetic event.
"""

from __future__ import annotations

import os
import sys

from sciontool_py.errors import EventError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

ENVELOPE_LIMIT = 128 << 20  # bytes; real envelopes stay far below (a 50 MB tool output passes)
ENVELOPE_DEADLINE = 10.0  # seconds from the first byte; a pipe carries 128 MiB in well under 1 s
FIRST_BYTE_WAIT = 300.0  # seconds for a first byte: a busy harness may write late
_PAUSE = 0.05  # seconds without new bytes before a buffer ending in "}" is tried as a whole object
_CHUNK = 1 << 20
_S_IFMT, _S_IFREG = 0o170000, 0o100000


def read_envelope(
    stream: BinaryIO,
    limit: int = ENVELOPE_LIMIT,
    deadline: float = ENVELOPE_DEADLINE,
    first_byte_wait: float = FIRST_BYTE_WAIT,
) -> bytes:
    """The envelope's bytes from stream: b"" for a terminal, or when no byte came within
    first_byte_wait seconds (an empty stdin); EventError past limit, or when what came is no
    whole object deadline seconds after its first byte."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream: nothing to wait on
        data = stream.read(limit + 1)
        _refuse_past(data, limit)
        return data
    if os.isatty(fd):
        return b""
    if os.fstat(fd).st_mode & _S_IFMT == _S_IFREG:
        data = _read_file(fd, limit)
        _refuse_past(data, limit)
        return data
    return _read_pipe(fd, limit, deadline, first_byte_wait)


def read_stdin() -> bytes:
    """Stdin's envelope, bounded in size and time; nothing when it is a terminal (Scion treats
    that as a no-op)."""
    stdin = sys.stdin
    if stdin is None or stdin.isatty():
        return b""
    return read_envelope(stdin.buffer)


def _refuse_past(data: bytes | bytearray, limit: int) -> None:
    if len(data) > limit:
        raise EventError(f"envelope is larger than {limit} bytes: refused (stdin read stopped there)")


def _read_file(fd: int, limit: int) -> bytes:
    data = bytearray()
    while len(data) <= limit and (chunk := os.read(fd, min(_CHUNK, limit + 1 - len(data)))):
        data += chunk
    return bytes(data)


def _read_pipe(fd: int, limit: int, deadline: float, first_byte_wait: float) -> bytes:
    import select
    import time

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    incoming = Incoming(limit, deadline, first_byte_wait, time.monotonic())
    while True:
        now = time.monotonic()
        envelope = incoming.envelope(now)
        if envelope is not None:
            return envelope
        if poller.poll(int(max(incoming.due() - now, 0.0) * 1000) + 1):
            incoming.feed(os.read(fd, incoming.room()), time.monotonic())


class Incoming:
    """An envelope as it arrives, under read_envelope's bounds for a pipe: fed as its bytes come,
    by a reader that waits on it (_read_pipe) or on many at once (the helper's shell relay)."""

    __slots__ = ("limit", "deadline", "data", "shape", "end", "last", "tried", "ended")

    def __init__(self, limit: int, deadline: float, first_byte_wait: float, now: float) -> None:
        self.limit, self.deadline = limit, deadline
        self.data = bytearray()
        self.shape = _Shape()
        self.end = now + first_byte_wait  # until the first byte, then deadline after it
        self.last = now  # when the last bytes came
        self.tried = False  # whether the bytes so far were tried as a whole object at a pause
        self.ended = False  # the writer closed its end

    def room(self) -> int:
        """How much the next read may take: past the limit by one byte, which refuses it."""
        return min(_CHUNK, self.limit + 1 - len(self.data))

    def feed(self, chunk: bytes, now: float) -> None:
        """CHUNK read at NOW (b"": the end); EventError once past the limit."""
        if not chunk:
            self.ended = True
            return
        if not self.data:
            self.end = now + self.deadline
        self.data += chunk
        self.last, self.tried = now, False
        _refuse_past(self.data, self.limit)

    def due(self) -> float:
        """When to look again (envelope) if no byte comes: the writer's pause, or the end."""
        return self.end if self.tried else min(self.end, self.last + _PAUSE)

    def envelope(self, now: float) -> bytes | None:
        """The envelope once it is here: at the end of the stream; an object already whole when
        the writer pauses, whether or not it ever closes the pipe; at the end of the time, what
        came if it is whole (b"" when nothing came). None until then; EventError for what came
        and is no whole object in time."""
        if self.ended:
            return bytes(self.data)
        if now >= self.end:
            if not self.data:
                return b""  # nothing came: read as an empty stdin
            if _whole(self.shape, self.data):
                return bytes(self.data)
            raise EventError(
                f"stdin still open {self.deadline:g} s after its first byte without a complete JSON "
                f"object ({len(self.data)} bytes read): refused"
            )
        if not self.tried and now >= self.last + _PAUSE:
            self.tried = True
            if _whole(self.shape, self.data):
                return bytes(self.data)
        return None


def _whole(shape: _Shape, data: bytearray) -> bool:
    """Whether data is one whole object, counting what shape has not counted yet: only when the
    writer pauses, so a harness that closes the pipe after the envelope never pays for it."""
    with memoryview(data) as view:
        for start in range(shape.counted, len(data), _CHUNK):
            shape.feed(bytes(view[start : start + _CHUNK]))
    shape.counted = len(data)
    return shape.whole_object()


_SPACE = b" \t\n\r"


class _Shape:
    """Whether a stream's bytes so far are one JSON object (then whitespace), followed chunk by
    chunk (gojson.nesting: passes in C). Not a validation: bytes it takes for a whole object
    may still be refused by the decoder."""

    __slots__ = ("depth", "in_string", "carry", "first", "last", "counted")

    def __init__(self) -> None:
        self.counted = 0  # bytes of the stream fed so far
        self.depth = 0
        self.in_string = False
        self.carry = b""  # a backslash escaping the next chunk's first byte
        self.first = b""  # the first byte that is not whitespace
        self.last = b""  # the last such byte

    def whole_object(self) -> bool:
        return self.first == b"{" and self.last == b"}" and not self.depth and not self.in_string

    def feed(self, chunk: bytes) -> None:
        from sciontool_py.gojson import nesting

        if not self.first:
            self.first = chunk.lstrip(_SPACE)[:1]
        self.last = chunk.rstrip(_SPACE)[-1:] or self.last
        data = self.carry + chunk
        odd = (len(data) - len(data.rstrip(b"\\"))) % 2
        self.carry = data[-1:] if odd else b""  # it escapes the next chunk's first byte
        depth, self.in_string = nesting(data[:-1] if odd else data, self.in_string)
        self.depth += depth


# `hook EVENT_NAME`'s payload

POSITIONAL_LIMIT = 4 << 20  # bytes: a payload over this is dropped, not read on
POSITIONAL_WAIT = 1.0  # seconds from the first poll to a complete object


class Ignored:
    """Why a payload was not used (for the debug log); falsy so callers can test it."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __bool__(self) -> bool:
        return False


def read_payload() -> bytes:
    """`hook EVENT_NAME`'s payload as read, with this form's shorter waits (nothing may come):
    b"" without one; EventError, OSError or ValueError when it cannot be taken."""
    stdin = sys.stdin
    if stdin is None:
        return b""
    return read_envelope(stdin.buffer, POSITIONAL_LIMIT, POSITIONAL_WAIT, POSITIONAL_WAIT)


def read_optional_object() -> dict[str, object] | Ignored:
    """The JSON object on stdin, or Ignored (with the reason) when there is none to take."""
    from sciontool_py.errors import EventError

    try:
        data = read_payload()
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
