"""`sciontool normalize`: a stream of envelopes -> canonical events, no side effects.

Streams line by line. With orjson installed (the `fast` extra) lines are
parsed and events written by orjson, whose output is then made
byte-identical to Go's (HTML and U+2028/9 escapes); values it cannot write
the way Go does (floats, integers beyond 2^53) go through gojson. Per raw
event name the line's head and the keys that can fill its data are worked
out once; an envelope with none of those keys is written from a template.
"""

from __future__ import annotations

import sys

from sciontool_py import gojson
from sciontool_py.dialect.normalize import event_data, keys_that_fill_data, normalize, raw_event_name
from sciontool_py.errors import EventError
from sciontool_py.vocabulary import DATA_FIELD_ORDER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    from sciontool_py.dialect.spec import DialectSpec, Mapping

_FLUSH_EVERY = 512
_EXACT_INT = 2**53  # beyond this Go's float64 changes the digits
_RANK = {field: rank for rank, field in enumerate(DATA_FIELD_ORDER)}


def _go_safe(value: object) -> bool:
    """True when orjson writes value exactly as Go does: no floats, no huge ints."""
    kind = type(value)
    if kind is dict:
        items: object = value.values()  # type: ignore[attr-defined]
    elif kind is list:
        items = value
    else:
        items = (value,)
    for item in items:  # type: ignore[attr-defined]
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if -_EXACT_INT <= item <= _EXACT_INT:
                continue
            return False
        if (kind is dict or kind is list) and _go_safe(item):
            continue
        return False
    return True


def _html_escape(data: bytes) -> bytes:
    # Unconditional replaces: a `bytes` containment test costs more than a replace that finds nothing.
    data = data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
    if not data.isascii():
        data = data.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return data


class _Kind:
    """What is fixed for one raw event name of a dialect."""

    __slots__ = ("empty_line", "fill_keys", "head", "mapping", "name")

    def __init__(self, spec: DialectSpec, raw_name: str) -> None:
        self.mapping: Mapping | None = spec.mappings.get(raw_name)
        empty = normalize(spec, {spec.name_fields[0]: raw_name})
        self.name = empty.name
        self.empty_line = _html_escape(empty.to_json().encode()) + b"\n"  # data {}
        self.head = self.empty_line[: -len(b"{}}\n")]
        self.fill_keys = keys_that_fill_data(spec, raw_name)


class _Codec:
    """Parses lines and writes event lines for one dialect: orjson when installed, else gojson."""

    def __init__(self, spec: DialectSpec, include_raw: bool) -> None:
        self.spec = spec
        self.include_raw = include_raw
        self.kinds: dict[str, _Kind] = {}
        try:
            import orjson
        except ImportError:
            self.orjson = None
        else:
            self.orjson = orjson

    def loads(self, line: bytes) -> object:
        """Go's decoding of a line; raises ValueError (gojson's message) when it is not JSON."""
        return gojson.loads(line.decode("utf-8"))

    def fast_loads(self) -> Callable[[bytes], object]:
        """orjson.loads when installed: it raises ValueError where loads() must be asked,
        for the message or for what Go accepts and orjson does not (lone surrogates)."""
        loads: Callable[[bytes], object] = self.loads if self.orjson is None else self.orjson.loads
        return loads

    def writer(self) -> Callable[[object], bytes]:
        """The function that turns one decoded envelope into its output line."""
        spec = self.spec
        orjson = self.orjson
        if orjson is None or self.include_raw:

            def slow_line(payload: object) -> bytes:
                event = normalize(spec, payload)
                return (event.to_json(self.include_raw) + "\n").encode("utf-8", "surrogatepass")

            return slow_line

        dumps = orjson.dumps
        sort_keys = orjson.OPT_SORT_KEYS
        kinds = self.kinds
        rank = _RANK.__getitem__

        first_field = spec.name_fields[0]

        def encode(value: object) -> str:
            # Go's json.Marshal of an object payload, by orjson where that gives the same bytes.
            if not _go_safe(value):
                return gojson.dumps(value)
            out = dumps(value, option=sort_keys)
            text: str = out.decode()
            if "<" in text or ">" in text or "&" in text or not text.isascii():
                text = _html_escape(out).decode()
            return text

        def line(payload: object) -> bytes:
            if type(payload) is not dict:
                normalize(spec, payload)  # raises the error for a non-object
            raw_name = payload.get(first_field)  # type: ignore[attr-defined]
            if type(raw_name) is not str or not raw_name:
                raw_name = raw_event_name(spec, payload)  # type: ignore[arg-type]
            kind = kinds.get(raw_name)
            if kind is None:
                kind = kinds[raw_name] = _Kind(spec, raw_name)
            if kind.fill_keys.isdisjoint(payload):  # type: ignore[arg-type]
                return kind.empty_line
            data = event_data(spec, payload, kind.name, kind.mapping, encode)  # type: ignore[arg-type]
            if data.get("success") is False:
                del data["success"]  # Go leaves a false bool out
            # Go's struct order (two fields, the usual case, without a sort).
            if len(data) == 2:
                first, second = data
                if rank(first) > rank(second):
                    data = {second: data[second], first: data[first]}
            elif len(data) > 2:
                data = {f: data[f] for f in sorted(data, key=rank)}
            out: bytes = kind.head + dumps(data) + b"}\n"
            for value in data.values():
                if value.__class__ is str and (
                    "<" in value or ">" in value or "&" in value or not value.isascii()
                ):
                    return _html_escape(out)
            return out

        return line


_BLANK = object()


def _slow_line(codec: _Codec, line: bytes, stream: BinaryIO, where: str, first: bool) -> object:
    """A line the fast parser refused: blank, Go-valid after all, the start of one
    pretty-printed document (first line only), or an error naming where it is."""
    try:
        return codec.loads(line)
    except ValueError as exc:  # gojson.JSONError and UnicodeDecodeError
        if not line.strip():
            return _BLANK
        if first:
            try:
                return codec.loads(line + stream.read())
            except ValueError:
                pass
        reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise EventError(f"{where}: {reason}") from None


def normalize_stream(spec: DialectSpec, stream: BinaryIO, name: str, out: BinaryIO, include_raw: bool) -> int:
    """Write one canonical event line per envelope (JSONL, or one JSON document); returns the count."""
    codec = _Codec(spec, include_raw)
    fast_loads, line_of = codec.fast_loads(), codec.writer()
    pending: list[bytes] = []
    append = pending.append
    written = 0
    try:
        for number, line in enumerate(stream, 1):
            try:
                payload = fast_loads(line)
            except ValueError:
                payload = _slow_line(codec, line, stream, f"{name}:{number}", first=not written)
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
    """normalize_stream over each file, or stdin when there are none, to stdout."""
    out = sys.stdout.buffer
    if not files:
        normalize_stream(spec, sys.stdin.buffer, "<stdin>", out, include_raw)
    for path in files:
        try:
            stream = open(path, "rb")  # noqa: SIM115 - closed below; open errors are the user's
        except OSError as exc:
            raise EventError(f"{path}: {exc.strerror or exc}") from None
        with stream:
            normalize_stream(spec, stream, path, out, include_raw)
