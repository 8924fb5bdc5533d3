"""The helper's wire format on its unix socket: one module for both ends, the hook's relay
(client.py) and the helper (server.py), so the two never drift apart.

The socket's abstract name is made of the user id and HOME (no file an agent could plant or
replace). A request is length-prefixed parts (4 bytes each, big-endian) behind an 8-byte
length: `hook2`, the hook's folder, its arguments, its environment and HANDED (its stdin, handed
over with the first bytes as SCM_RIGHTS) or TTY. The helper answers READY once the hook's turn has
come, the client GO (from then on the hook is the helper's, which reads its stdin), and the
helper the hook's stdout, stderr and exit status, as three parts; or DECLINED, what it read of
stdin and stdin's refusal, when it could not run the hook after all.
"""

from __future__ import annotations

import _socket
import os
import sys

READY, GO = b"r", b"g"
REQUEST = b"hook2"  # hook1 carried stdin's bytes
# What a request says of the hook's stdin: handed over with it (SCM_RIGHTS), or a terminal.
HANDED, TTY = b"fd", b"tty"
DECLINED = b"declined"


def address(home: str) -> bytes:
    """The helper's abstract socket name for HOME (and this user)."""
    digest = 0xCBF29CE484222325  # FNV-1a, 64 bits: cheap, and no hash module to import
    for byte in os.fsencode(home):
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"\0sciontool-py-{os.geteuid()}-{digest:016x}".encode()


def peer_uid(sock: _socket.socket) -> int:
    """The user id of the process at the other end (SO_PEERCRED: pid, uid, gid)."""
    cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(cred[4:8], sys.byteorder)


def peer_pid(sock: _socket.socket) -> int:
    cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(cred[0:4], sys.byteorder)


def encode(parts: list[bytes]) -> bytes:
    """Length-prefixed parts (4 bytes each, big-endian), as decode() reads them."""
    return b"".join(len(part).to_bytes(4, "big") + part for part in parts)


def decode(data: bytes) -> list[bytes]:
    parts, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        parts.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    if at != len(data):
        raise ValueError("a relayed message cut short")
    return parts


def read_all(sock: _socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def request(cwd: str, args: list[str], env: list[bytes], stdin: bytes) -> bytes:
    """A hook's request, as unpack() reads it; STDIN: HANDED or TTY."""
    return encode([REQUEST, os.fsencode(cwd), encode([os.fsencode(a) for a in args]), encode(env), stdin])


def unpack(request: list[bytes]) -> tuple[str, list[str], dict[str, str], bytes] | None:
    """A relayed request's folder, hook arguments, environment and what it says of stdin; None
    for what no relay sends."""
    if len(request) != 5 or request[0] != REQUEST or request[4] not in (HANDED, TTY):
        return None
    env = decode(request[3])
    environ = dict(os.fsdecode(item).partition("=")[::2] for item in env)
    args = [os.fsdecode(a) for a in decode(request[2])]
    return os.fsdecode(request[1]), args, environ, request[4]
