"""What the tool writes for people: one line per message, bounded, never blocking.

Values inside messages come from envelopes the model shapes: a newline or an
escape sequence in a tool name must not forge an agent.log line or repaint a
terminal, and a 200 MB value must not be copied into every line.  Stderr may
be a pipe nobody reads, closed, or /dev/full: writing to it never blocks
longer than asked and never fails the caller.
"""

from __future__ import annotations

import os
import sys

VALUE_LIMIT = 100  # bytes of a value kept in a log message, as Scion cuts the prompt
# A tool name is kept whole up to this in state files (agent-info.json, session-metrics.json):
# a longer one (a hostile envelope) would push a file past its 1 MiB cap and lose every other key.
TOOL_NAME_LIMIT = 1024
ERROR_LIMIT = 4096  # bytes of an error message; values quoted in it may be huge
SHORT_SECRET = 8  # a secret this short could match inside any word: withhold, do not redact
_PIPE_BUF = 4096  # a write this small never blocks once poll() says a pipe is writable
_S_IFMT, _S_IFREG = 0o170000, 0o100000
_ESCAPES = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)},
    **{c: f"\\u{c:04x}" for c in (*range(0x80, 0xA0), 0x2028, 0x2029)},
    0x09: "\\t",
    0x0A: "\\n",
    0x0D: "\\r",
}


def escape_controls(text: str) -> str:
    """text with control characters (C0, DEL, C1, U+2028/9) written as visible escapes."""
    if text.isprintable():  # the usual case, and no control character is printable
        return text
    return text.translate(_ESCAPES)


def cut(text: str, limit: int = VALUE_LIMIT) -> str:
    """The first limit bytes of text and "..." when it is longer (Go cuts bytes, so may a character be)."""
    head = text[: limit + 1]  # never encode more than this, however long text is
    data = head.encode("utf-8", "surrogatepass")
    if len(data) <= limit and len(head) == len(text):
        return text
    return data[:limit].decode("utf-8", "surrogateescape") + "..."


def redact(text: str, secrets: list[str]) -> str:
    """text without any of secrets (give them longest first), each as [redacted]; withheld whole
    when a short one is in it, since replacing that would mangle ordinary words."""
    for secret in secrets:
        if secret in text:
            if len(secret) < SHORT_SECRET:
                return "[withheld: it contains a credential]"
            text = text.replace(secret, "[redacted]")
    return text


def ensure_std_fds() -> None:
    """Put /dev/null on fds 0-2 where they are closed (`2>&-`).

    Otherwise the next file the tool opens takes the free number, and what
    is meant for stderr lands in it: a state file, a temp file.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd itself
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def flush_std() -> None:
    """Flush stdout and stderr before the process ends without the interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass  # closed by the harness: what it held could not be written anyway


RESPONSE_WAIT_SECONDS = 5.0  # for a stdout pipe that is full: harnesses read it as it comes


def write_stdout(text: str, wait: float) -> bool:
    """Write text to stdout, waiting at most wait seconds for a reader; False when some of it
    could not be written (a full pipe nobody reads, a closed stdout)."""
    stream = sys.stdout
    if stream is None:
        return False
    data = text.encode("utf-8", "surrogateescape")
    try:
        stream.flush()  # anything buffered goes first
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        _write_in_memory(stream, text, data)
        return True
    try:
        if os.fstat(fd).st_mode & _S_IFMT == _S_IFREG:
            while data:
                data = data[os.write(fd, data) :]
        else:
            data = _write_waiting(fd, data, wait)
    except OSError:
        return False
    return not data


def write_stderr(text: str, wait: float = 0.0) -> None:
    """Write text to stderr, waiting at most wait seconds for a full pipe; drop what does not fit.

    Never raises: with stderr closed, full or broken the text is lost and
    the caller goes on.
    """
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "backslashreplace")
    stream = sys.stderr
    try:
        fd = stream.fileno() if stream is not None else 2
    except (AttributeError, OSError, ValueError):
        _write_in_memory(stream, text, data)  # a test's or an embedding program's stream
        return
    try:
        if os.fstat(fd).st_mode & _S_IFMT == _S_IFREG:
            while data:  # a file takes what it is given
                data = data[os.write(fd, data) :]
        else:
            _write_waiting(fd, data, wait)
    except OSError:
        pass


def _write_in_memory(stream: object, text: str, data: bytes) -> None:
    # Nothing to block on; bytes where the stream takes them, so undecodable ones stay as they came.
    try:
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
        else:
            stream.write(text)  # type: ignore[attr-defined]
    except (OSError, ValueError):
        pass


def _write_waiting(fd: int, data: bytes, wait: float) -> bytes:
    # A pipe, socket or terminal: poll first, then write no more than fits without blocking.
    # O_NONBLOCK would do it, but the flag is shared with every process holding the pipe.
    import select
    import time

    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    deadline = time.monotonic() + wait
    failed = select.POLLERR | select.POLLHUP | select.POLLNVAL
    while data:
        ready = poller.poll(max(0, int((deadline - time.monotonic()) * 1000)))
        if not ready or ready[0][1] & failed:
            return data  # what was not written
        data = data[os.write(fd, data[:_PIPE_BUF]) :]
    return data
