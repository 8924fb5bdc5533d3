"""`sciontool normalize`'s engine: a stream of envelopes -> canonical event lines, no side effects.

Streams line by line through a codec (``sciontool_py.codec``): orjson by
default, the stdlib gojson where orjson is missing; both give Go's bytes.
Per raw event name, the line's head and the keys that can fill its data
are worked out once; an envelope with none of those keys is written from a
template.
"""

from __future__ import annotations

import sys

from sciontool_py.codec import GO, default_codec
from sciontool_py.dialect.compiled import compile_line
from sciontool_py.dialect.normalize import event_data, keys_that_fill_data, normalize, raw_event_name
from sciontool_py.errors import EventError
from sciontool_py.event import data_json, in_struct_order

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    from sciontool_py.codec import GoCodec
    from sciontool_py.dialect.spec import DialectSpec, Mapping

_FLUSH_EVERY = 512


class _Kind:
    """What is fixed for one raw event name of a dialect."""

    __slots__ = (
        "counted_line",
        "counted_slow_keys",
        "fill_keys",
        "head",
        "line",
        "mapping",
        "name",
        "slow_keys",
    )

    def __init__(self, spec: DialectSpec, raw_name: str, codec: GoCodec) -> None:
        self.mapping: Mapping | None = spec.mappings.get(raw_name)
        empty = normalize(spec, {spec.name_fields[0]: raw_name}, codec)
        self.name = empty.name
        self.head = empty.head(codec)
        self.fill_keys = keys_that_fill_data(spec, raw_name)
        # Envelopes without slow_keys: the compiled line, and with token counts its variant that
        # extracts them; else (event_data needed for all but the envelopes with none of the keys
        # that fill data) a template of the empty event.
        args = (spec, raw_name, self.name, self.mapping, self.head, codec)
        empty_line = self.head + b"{}}\n"
        template: tuple[frozenset[str], Callable[[dict[str, object]], bytes]]
        template = (self.fill_keys, lambda _envelope: empty_line)
        self.slow_keys, self.line = compile_line(*args) or template
        self.counted_slow_keys, self.counted_line = compile_line(*args, tokens=True) or template


def event_writer(spec: DialectSpec, include_raw: bool, codec: GoCodec) -> Callable[[object], bytes]:
    """The function that turns one decoded envelope into its event line (with the newline);
    it raises EventError when the envelope has no event. Locals bound once: it runs per line."""
    kinds: dict[str, _Kind] = {}
    first_field = spec.name_fields[0]
    fields = codec.fields

    def line(payload: object) -> bytes:
        if type(payload) is not dict:
            normalize(spec, payload)  # raises the error for a non-object
        raw_name = payload.get(first_field)  # type: ignore[attr-defined]
        if type(raw_name) is not str or not raw_name:
            raw_name = raw_event_name(spec, payload)  # type: ignore[arg-type]
        kind = kinds.get(raw_name)
        if kind is None:
            kind = kinds[raw_name] = _Kind(spec, raw_name, codec)
        if include_raw:
            data = event_data(spec, payload, kind.name, kind.mapping, codec)  # type: ignore[arg-type]
            return kind.head + data_json(codec, data, payload) + b"}\n"  # type: ignore[arg-type]
        if kind.slow_keys.isdisjoint(payload):  # type: ignore[arg-type]
            return kind.line(payload)  # type: ignore[arg-type]
        if kind.counted_slow_keys.isdisjoint(payload):  # type: ignore[arg-type]
            return kind.counted_line(payload)  # type: ignore[arg-type]
        data = event_data(spec, payload, kind.name, kind.mapping, codec)  # type: ignore[arg-type]
        return kind.head + fields(in_struct_order(data)) + b"}\n"

    return line


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
    loads, lost_minus_zero, line_of = (
        codec.loads,
        codec.lost_minus_zero,
        event_writer(spec, include_raw, codec),
    )
    pending: list[bytes] = []
    append = pending.append
    written = 0
    try:
        for number, line in enumerate(stream, 1):
            try:
                payload = GO.loads(line) if lost_minus_zero(line) else loads(line)
            except ValueError:
                payload = parse_refused_line(line, stream, f"{name}:{number}", first=not written)
                if payload is _BLANK:
                    continue
            try:
                append(line_of(payload))
            except EventError as exc:
                raise EventError(f"{name}:{number}: {exc}") from None
            written += 1
            if len(pending) >= _FLUSH_EVERY:
                out.write(b"".join(pending))
                pending.clear()
    finally:
        out.write(b"".join(pending))  # what came before a bad line is still printed
        out.flush()
    return written


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
