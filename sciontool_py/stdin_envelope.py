"""One JSON envelope from a stream the harness controls, bounded in size and in time.

Scion's hook reads stdin to EOF.  A harness (or an agent posing as one) may
never close the pipe after the envelope, or may never stop writing: the
hook must neither wait forever nor grow without limit.  So the read stops
at the first of: EOF; a complete JSON object followed by a pause of the
writer (the pipe left open); `limit` bytes (refused); the deadline (what
arrived is used when it is a complete object, else refused).  `hook` and
`hook EVENT` both read their envelope through read_envelope.
"""

from __future__ import annotations

import os

from sciontool_py.errors import EventError

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from typing import BinaryIO

ENVELOPE_LIMIT = 128 << 20  # bytes; real envelopes stay far below (a 50 MB tool output passes)
ENVELOPE_DEADLINE = 10.0  # seconds for the whole read; a pipe carries 128 MiB in well under 1 s
_PAUSE = 0.05  # seconds without new bytes before a buffer ending in "}" is tried as a whole object
_CHUNK = 1 << 20
_S_IFMT, _S_IFREG = 0o170000, 0o100000


def read_envelope(
    stream: BinaryIO, limit: int = ENVELOPE_LIMIT, deadline: float = ENVELOPE_DEADLINE
) -> bytes:
    """The envelope's bytes from stream (b"" at once for a terminal); EventError past limit or deadline."""
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
    return _read_pipe(fd, limit, deadline)


def _refuse_past(data: bytes | bytearray, limit: int) -> None:
    if len(data) > limit:
        raise EventError(f"envelope is larger than {limit} bytes: refused (stdin read stopped there)")


def _read_file(fd: int, limit: int) -> bytes:
    data = bytearray()
    while len(data) <= limit and (chunk := os.read(fd, min(_CHUNK, limit + 1 - len(data)))):
        data += chunk
    return bytes(data)


def _read_pipe(fd: int, limit: int, deadline: float) -> bytes:
    import select
    import time

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    end = time.monotonic() + deadline
    data = bytearray()
    tried = -1  # the length of the buffer last tried as a whole object
    while True:
        left = end - time.monotonic()
        if left <= 0:
            if _complete_object(data):
                return bytes(data)
            raise EventError(
                f"stdin still open after {deadline:g} s without a complete JSON object "
                f"({len(data)} bytes read): refused"
            )
        if not poller.poll(int(min(left, _PAUSE) * 1000) + 1):
            # The writer paused: an object already whole is the envelope, whether or not
            # the pipe is ever closed.
            if len(data) != tried and data.rstrip().endswith(b"}"):
                tried = len(data)
                if _complete_object(data):
                    return bytes(data)
            continue
        chunk = os.read(fd, min(_CHUNK, limit + 1 - len(data)))
        if not chunk:
            return bytes(data)
        data += chunk
        _refuse_past(data, limit)


def _complete_object(data: bytearray) -> bool:
    from sciontool_py import gojson

    try:
        return isinstance(gojson.loads(gojson.decode_utf8(bytes(data))), dict)
    except gojson.JSONError:
        return False
