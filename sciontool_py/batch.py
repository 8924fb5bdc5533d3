"""`sciontool normalize`: a stream of envelopes -> canonical events, no side effects.

Streams line by line. With orjson installed (the `fast` extra) lines are
parsed and events written by orjson, whose output is then made
byte-identical to Go's (HTML and U+2028/9 escapes); values it cannot write
the way Go does (floats, integers beyond 2^53) go through gojson.
"""

from __future__ import annotations

import sys

from sciontool_py import gojson
from sciontool_py.dialect.normalize import keys_that_fill_data, normalize, normalize_named, raw_event_name
from sciontool_py.errors import EventError
from sciontool_py.vocabulary import DATA_FIELD_ORDER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

    from sciontool_py.dialect.spec import DialectSpec

_FLUSH_EVERY = 512
_EXACT_INT = 2**53  # beyond this Go's float64 changes the digits
_RANK = {field: rank for rank, field in enumerate(DATA_FIELD_ORDER)}


def _go_safe(value: object) -> bool:
    """True when orjson writes value exactly as Go does: no floats, no huge ints."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_EXACT_INT <= value <= _EXACT_INT  # type: ignore[operator]
    if kind is dict:
        return all(map(_go_safe, value.values()))  # type: ignore[attr-defined]
    if kind is list:
        return all(map(_go_safe, value))  # type: ignore[call-overload]
    return False


def _html_escape(data: bytes) -> bytes:
    if b"<" in data or b">" in data or b"&" in data:
        data = data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
    if not data.isascii() and (b"\xe2\x80\xa8" in data or b"\xe2\x80\xa9" in data):
        data = data.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return data


class _Codec:
    """Parses lines and writes event lines for one dialect: orjson when installed, else gojson."""

    def __init__(self, spec: DialectSpec, include_raw: bool) -> None:
        self.spec = spec
        self.include_raw = include_raw
        # raw event name -> (keys that can fill its data, its line when they are absent)
        self.kinds: dict[str, tuple[frozenset[str], bytes]] = {}
        try:
            import orjson
        except ImportError:
            self.orjson = None
        else:
            self.orjson = orjson

    def loads(self, line: bytes) -> object:
        if self.orjson is not None:
            try:
                return self.orjson.loads(line)
            except self.orjson.JSONDecodeError:
                pass  # gojson explains it, or accepts what Go accepts (lone surrogates)
        return gojson.loads(line.decode("utf-8"))

    def encode(self, value: object) -> str:
        """Go's json.Marshal of an object payload, by orjson where that gives the same bytes."""
        orjson = self.orjson
        if orjson is None or not _go_safe(value):
            return gojson.dumps(value)
        text: str = _html_escape(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).decode()
        return text

    def _kind(self, raw_name: str) -> tuple[frozenset[str], bytes]:
        kind = self.kinds.get(raw_name)
        if kind is None:
            empty = normalize(self.spec, {self.spec.name_fields[0]: raw_name})
            line = _html_escape(empty.to_json().encode()) + b"\n"
            kind = self.kinds[raw_name] = (keys_that_fill_data(self.spec, raw_name), line)
        return kind

    def line(self, payload: object) -> bytes:
        spec = self.spec
        if self.orjson is None or self.include_raw or type(payload) is not dict:
            event = normalize(spec, payload, self.encode)
            return (event.to_json(self.include_raw) + "\n").encode("utf-8", "surrogatepass")
        raw_name = raw_event_name(spec, payload)
        keys, empty_line = self._kind(raw_name)
        if keys.isdisjoint(payload):
            return empty_line  # nothing in the envelope can fill the data: skip the work
        data = normalize_named(spec, payload, raw_name, self.encode).data
        if len(data) > 1 or data.get("success") is False:
            # Struct order; Go leaves a false `success` out.
            data = {f: data[f] for f in sorted(data, key=_RANK.__getitem__) if data[f]}
        return empty_line[: -len(b"{}}\n")] + _html_escape(self.orjson.dumps(data)) + b"}\n"


def _whole_document(codec: _Codec, first_line: bytes, stream: BinaryIO) -> object:
    """The input read whole as one (pretty-printed) JSON document, or None if it is not one."""
    try:
        return codec.loads(first_line + stream.read())
    except (UnicodeDecodeError, gojson.JSONError):
        return None


def normalize_stream(spec: DialectSpec, stream: BinaryIO, name: str, out: BinaryIO, include_raw: bool) -> int:
    """Write one canonical event line per envelope (JSONL, or one JSON document); returns the count."""
    codec = _Codec(spec, include_raw)
    pending: list[bytes] = []
    written = 0
    try:
        for number, line in enumerate(stream, 1):
            try:
                payload = codec.loads(line)
            except (UnicodeDecodeError, gojson.JSONError) as exc:
                if not line.strip():
                    continue
                payload = _whole_document(codec, line, stream) if written == 0 else None
                if payload is None:
                    reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
                    raise EventError(f"{name}:{number}: {reason}") from None
            try:
                pending.append(codec.line(payload))
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
