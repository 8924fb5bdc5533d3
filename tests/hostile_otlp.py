"""Hostile OTLP/HTTP receivers on 127.0.0.1: raw sockets, so an answer can be anything.

Each reads a whole request, then answers it its way: a status line one byte
at a time, a 200 whose body never ends, a reason phrase echoing the request
headers, a redirect.  Every connection is served by a daemon thread that
stops at close() or after SERVE_SECONDS, whichever comes first.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

SERVE_SECONDS = 90.0
CHUNK = b"\0" * (64 << 10)


class RawHttp:
    """Answers each request with answer(self, connection, head) (head: the request's lines)."""

    def __init__(self, answer: Callable[[RawHttp, socket.socket, list[str]], None]) -> None:
        self.answer = answer
        self.stop = threading.Event()
        self.sent = 0  # body bytes written, over every connection
        self.requests: list[list[str]] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.stop.set()
        self.sock.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(SERVE_SECONDS)
        try:
            head = _read_request(connection)
            self.requests.append(head)
            self.answer(self, connection, head)
        except OSError:
            pass  # the worker went away: what these servers wait for
        finally:
            connection.close()

    def until(self, started: float) -> bool:
        """Whether to keep answering: not closed, not past SERVE_SECONDS."""
        return not self.stop.is_set() and time.monotonic() - started < SERVE_SECONDS


def _read_request(connection: socket.socket) -> list[str]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            raise OSError("closed before a whole request")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        (int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), 0
    )
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return lines


def trickle(server: RawHttp, connection: socket.socket, head: list[str]) -> None:
    """A 200 status line and then headers, one byte every 0.1 s: each read is quick, the answer never whole."""
    started = time.monotonic()
    answer = b"HTTP/1.1 200 OK\r\n"
    while server.until(started):
        for byte in answer:
            connection.sendall(bytes([byte]))
            time.sleep(0.1)
        answer = b"X-Pad: slow\r\n"


def endless(server: RawHttp, connection: socket.socket, head: list[str]) -> None:
    """200 at once, then a body that never ends (no length, never closed)."""
    started = time.monotonic()
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n\r\n")
    while server.until(started):
        connection.sendall(CHUNK)
        server.sent += len(CHUNK)


def echo(server: RawHttp, connection: socket.socket, head: list[str]) -> None:
    """400 with every request header in the reason phrase."""
    reason = "; ".join(head[1:])
    connection.sendall(
        f"HTTP/1.1 400 {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode("latin-1")
    )


def redirect_to(target: str) -> Callable[[RawHttp, socket.socket, list[str]], None]:
    """308 (method and body kept) to the same path on target."""

    def answer(server: RawHttp, connection: socket.socket, head: list[str]) -> None:
        path = head[0].split(" ")[1]
        connection.sendall(
            f"HTTP/1.1 308 Permanent Redirect\r\nLocation: {target}{path}\r\n"
            "Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
        )

    return answer
