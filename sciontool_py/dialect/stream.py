"""`sciontool normalize`'s engine: a stream of envelopes -> canonical event lines, no side effects.

Streams line by line through a codec (``sciontool_py.codec``): orjson by
default, the stdlib gojson where orjson is missing; both give Go's bytes.
Per raw event name, the function that writes its line is made once
(``sciontool_py.dialect.compiled``).
"""

from __future__ import annotations

import sys

from sciontool_py.codec import GO, default_codec
from sciontool_py.dialect.compiled import compile_line
from sciontool_py.dialect.normalize import event_data, normalize, raw_event_name
from sciontool_py.errors import EventError
from sciontool_py.event import data_json, in_struct_order

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    from sciontool_py.codec import GoCodec
    from sciontool_py.dialect.spec import DialectSpec

_FLUSH_EVERY = 512


def _line_of(
    spec: DialectSpec, raw_name: str, include_raw: bool, codec: GoCodec
) -> Callable[[object], bytes]:
    """The function that writes the event line of every envelope of raw_name: the compiled
    one, or the general steps (event_data) when none is, and for --include-raw."""
    mapping = spec.mappings.get(raw_name)
    empty = normalize(spec, {spec.name_fields[0]: raw_name}, codec)
    name, head = empty.name, empty.head(codec)

    def general(envelope: dict[str, object]) -> bytes:
        data = event_data(spec, envelope, name, mapping, codec)
        if include_raw:
            return head + data_json(codec, data, envelope) + b"}\n"
        return head + codec.fields(in_struct_order(data)) + b"}\n"

    made = None if include_raw else compile_line(spec, raw_name, name, mapping, head, codec, general)
    return general if made is None else made[1]  # type: ignore[return-value]


class Writers:
    """The function that writes the event line of each raw event name, made when the name
    first comes: by_name[envelope[first_field]] for an envelope named there (one lookup per
    line), else find(envelope)."""

    __slots__ = ("_codec", "_found", "_include_raw", "_spec", "by_name", "first_field")

    def __init__(self, spec: DialectSpec, include_raw: bool, codec: GoCodec) -> None:
        self._spec, self._include_raw, self._codec = spec, include_raw, codec
        self.first_field = spec.name_fields[0]
        self.by_name: dict[object, Callable[[object], bytes]] = {}
        self._found: dict[str, Callable[[object], bytes]] = {}  # by the name raw_event_name finds

    def find(self, payload: object) -> Callable[[object], bytes]:
        """The function for payload, made if its name is new; EventError when it has none."""
        spec = self._spec
        if type(payload) is not dict:
            normalize(spec, payload)  # raises the error for a non-object
        raw_name = payload.get(self.first_field)  # type: ignore[attr-defined]
        if type(raw_name) is str and raw_name:
            known = self.by_name
        else:  # named in another field, or in none (an error)
            raw_name = raw_event_name(spec, payload)  # type: ignore[arg-type]
            known = self._found  # type: ignore[assignment]
        write = known.get(raw_name)
        if write is None:
            write = known[raw_name] = _line_of(spec, raw_name, self._include_raw, self._codec)
        return write


_BLANK = object()


def parse_refused_line(line: bytes, stream: BinaryIO, where: str, first: bool) -> object:
    """Decode a line the codec's parser refused: blank, Go-valid after all (orjson refuses
    lone surrogate escapes and invalid UTF-8, which Go reads as U+FFFD), the start of one
    pretty-printed document (first line only), or an EventError naming where it is."""
    try:
        return GO.loads(line)
    except ValueError as exc:  # JSONError
        if not line.strip():
            return _BLANK
        if first:
            try:
                return GO.loads(line + stream.read())
            except ValueError:
                pass
        raise EventError(f"{where}: {exc}") from None


def normalize_stream(
    spec: DialectSpec,
    stream: BinaryIO,
    name: str,
    out: BinaryIO,
    include_raw: bool,
    codec: GoCodec | None = None,
) -> int:
    """Write one canonical event line per envelope (JSONL, or one JSON document); returns the count."""
    codec = codec or default_codec()
    loads, lost_minus_zero, wrote_zero = codec.loads, codec.lost_minus_zero, codec.wrote_zero
    writers = Writers(spec, include_raw, codec)
    by_name, find, first_field = writers.by_name, writers.find, writers.first_field
    pending: list[bytes] = []
    append = pending.append
    number = blanks = 0
    try:
        for number, line in enumerate(stream, 1):
            try:
                payload = loads(line)
            except ValueError:
                first = number - blanks == 1
                payload = parse_refused_line(line, stream, f"{name}:{number}", first)
                if payload is _BLANK:
                    blanks += 1
                    continue
                line = b""  # read as Go reads it: nothing for lost_minus_zero to find below
            try:
                try:
                    write = by_name[payload[first_field]]  # type: ignore[index]
                except (KeyError, TypeError):  # not an object, a name not seen yet, a list as name
                    write = find(payload)
                event = write(payload)
                if wrote_zero[0]:  # orjson reads -0 as 0, Go as -0: only a line that wrote 0 asks
                    wrote_zero[0] = False
                    if lost_minus_zero(line):
                        event = write(GO.loads(line))
                append(event)
            except EventError as exc:
                raise EventError(f"{name}:{number}: {exc}") from None
            if not number % _FLUSH_EVERY:
                out.write(b"".join(pending))
                pending.clear()
    finally:
        out.write(b"".join(pending))  # what came before a bad line is still printed
        out.flush()
    return number - blanks


def normalize_files(spec: DialectSpec, files: list[str], include_raw: bool) -> None:
    """normalize_stream over each file (`-` or none: stdin), to stdout."""
    out = sys.stdout.buffer
    codec = default_codec()
    for path in files or ["-"]:
        if path == "-":
            normalize_stream(spec, sys.stdin.buffer, "<stdin>", out, include_raw, codec)
            continue
        try:
            stream = open(path, "rb")  # noqa: SIM115 - closed below; open errors are the user's
        except OSError as exc:
            raise EventError(f"{path}: {exc.strerror or exc}") from None
        with stream:
            normalize_stream(spec, stream, path, out, include_raw, codec)
