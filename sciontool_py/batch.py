"""`sciontool normalize`: a stream of envelopes -> canonical events, no side effects."""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.dialect.normalize import normalize
from sciontool_py.errors import EventError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO, TextIO

    from sciontool_py.dialect.spec import DialectSpec


def read_envelopes(stream: BinaryIO, name: str) -> Iterator[tuple[int, object]]:
    """(line number, decoded value) for a JSONL stream, or one (pretty-printed) JSON document.

    Streams line by line; only a first line that is not JSON on its own
    makes the whole input be read as a single document.
    """
    first = True
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            value = gojson.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, gojson.JSONError) as exc:
            if first:
                rest = stream.read()
                try:
                    yield number, gojson.loads((line + rest).decode("utf-8"))
                    return
                except (UnicodeDecodeError, gojson.JSONError):
                    pass
            reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
            raise EventError(f"{name}:{number}: {reason}") from None
        first = False
        yield number, value


def normalize_stream(spec: DialectSpec, stream: BinaryIO, name: str, out: TextIO, include_raw: bool) -> int:
    """Write one canonical event line per envelope; returns how many were written."""
    written = 0
    for number, payload in read_envelopes(stream, name):
        try:
            event = normalize(spec, payload)
        except EventError as exc:
            raise EventError(f"{name}:{number}: {exc}") from None
        out.write(event.to_json(include_raw))
        out.write("\n")
        written += 1
    return written
