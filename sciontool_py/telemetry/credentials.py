"""What the worker's exporters read besides the records: TLS files and header secrets, made safe.

The OTLP exporters open OTEL_EXPORTER_OTLP_*CERTIFICATE and *CLIENT_KEY
(requests and gRPC their default roots too) by path, with a plain open and
an unbounded read, at any time: a FIFO there blocks them for good, a link
to /dev/zero fills memory, and the agent can swap the file between a check
and their read.  So the worker reads each named file once itself (opened
O_NONBLOCK, a regular file only, at most MAX_FILE_BYTES) into an anonymous
in-memory file, and points the variable at that (/proc/self/fd/N): what
the exporters open is then what was checked.  The values of
OTEL_EXPORTER_OTLP_*HEADERS (a bearer token, an API key) and passwords in
the endpoint URLs are secrets that no log line may carry, whatever a
receiver echoes back.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping, MutableMapping
from urllib.parse import unquote, urlsplit

from sciontool_py import fs

MAX_FILE_BYTES = 1 << 20  # a CA bundle of every public root is about 200 KiB
_SIGNALS = ("", "TRACES_", "LOGS_", "METRICS_")
# The exporters' own, and what requests and gRPC read for their default roots.
FILE_VARIABLES = (
    *(
        f"OTEL_EXPORTER_OTLP_{signal}{kind}"
        for signal in _SIGNALS
        for kind in ("CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE")
    ),
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "SSL_CERT_FILE",
    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
)
_HEADER_VARIABLES = tuple(f"OTEL_EXPORTER_OTLP_{signal}HEADERS" for signal in _SIGNALS)
_ENDPOINT_VARIABLES = tuple(f"OTEL_EXPORTER_OTLP_{signal}ENDPOINT" for signal in _SIGNALS)


def pin_files(env: MutableMapping[str, str]) -> str:
    """Replace each TLS file variable's path with an in-memory copy of the file; '' when all
    were usable, else why one was not (nothing should be exported then)."""
    for name in FILE_VARIABLES:
        path = env.get(name, "")
        if not path:
            continue
        try:
            data = read_capped(path)
        except OSError as exc:
            return f"{name}={path}: {exc.strerror or exc}"
        env[name] = _in_memory(data, name)
    return ""


def read_capped(path: str) -> bytes:
    """A regular file's bytes, opened without blocking, at most MAX_FILE_BYTES (OSError past it)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (refused)", path)
        return fs.read_capped(fd, MAX_FILE_BYTES, path)
    finally:
        os.close(fd)


def _in_memory(data: bytes, name: str) -> str:
    """A path to a file holding data that nobody else can replace (kept open for the worker's life)."""
    fd = os.memfd_create(name.lower(), 0)  # no MFD_CLOEXEC: the path is /proc/self/fd of this fd
    os.write(fd, data)
    return f"/proc/self/fd/{fd}"


def secrets(env: Mapping[str, str]) -> list[str]:
    """The header values (and the credential after a scheme such as Bearer) and the endpoint
    passwords, longest first."""
    found: set[str] = set()
    for name in _HEADER_VARIABLES:
        for pair in env.get(name, "").split(","):
            value = pair.partition("=")[2].strip()
            for text in (value, unquote(value)):
                found.add(text)
                found.add(text.partition(" ")[2].strip())
    for name in _ENDPOINT_VARIABLES:
        try:
            password = urlsplit(env.get(name, "")).password or ""
        except ValueError:
            continue
        found.update((password, unquote(password)))
    return sorted((s for s in found if s), key=len, reverse=True)
