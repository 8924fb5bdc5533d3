"""The JSON codec that canonical events are read and written with: Go's bytes, two engines.

``GoCodec`` is pure stdlib (gojson) and is the reference; ``OrjsonCodec``
gives the same bytes faster, leaving to gojson what orjson writes
differently from Go (floats, integers past 2^53). ``normalize`` picks one
with ``default_codec()``; tests pass either explicitly and compare.
"""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.assistant import AssistantContent

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from types import ModuleType

_EXACT_INT = 2**53  # beyond this Go's float64 changes the digits


class GoCodec:
    """gojson: Go's decoding and encoding, byte for byte, with the stdlib alone."""

    name = "gojson"

    def loads(self, data: bytes) -> object:
        """Decode one JSON document as Go does (a byte of bad UTF-8 is U+FFFD); JSONError
        when Go would refuse it."""
        return gojson.loads(gojson.decode_utf8(data), go_depth=True)

    def marshal(self, value: object) -> str:
        """Go's json.Marshal of a decoded value: map keys sorted, HTML and U+2028/9 escaped."""
        return gojson.dumps(value)

    def fields(self, data: dict[str, object]) -> bytes:
        """A JSON object of strings, integers and booleans in data's own order (a Go struct)."""
        body = ",".join(f"{gojson.dumps(key)}:{_scalar(value)}" for key, value in data.items())
        return ("{" + body + "}").encode()


def _scalar(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)  # token counts are int64 in Go
    if isinstance(value, AssistantContent):  # the one struct among the fields
        return value.to_json(gojson.dumps)
    return gojson.dumps(value)


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


def lost_minus_zero(codec: GoCodec, line: bytes) -> bool:
    """True when codec may have read a -0 in line as 0: orjson does, for the integer literal."""
    return codec is not GO and b"-0" in line


def go_escape(data: bytes) -> bytes:
    """Go's escapes that orjson does not write: < > & and U+2028/9."""
    # Unconditional replaces: a `bytes` containment test costs more than a replace that finds nothing.
    data = data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
    if not data.isascii():
        data = data.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return data


class OrjsonCodec(GoCodec):
    """orjson where it gives Go's bytes (after go_escape), gojson where it does not."""

    name = "orjson"

    def __init__(self, orjson: ModuleType) -> None:
        # orjson.loads itself, not a method around it: it runs once per line. Its ValueError
        # does not always mean Go refuses the line (lone surrogate escapes): callers ask
        # GoCodec.loads before they report an error.
        # orjson also reads the integer literal -0 as 0 (Go: -0): see lost_minus_zero.
        self.loads = orjson.loads  # type: ignore[method-assign]
        self._dumps = orjson.dumps
        self._sort_keys = orjson.OPT_SORT_KEYS

    def marshal(self, value: object) -> str:
        try:
            # orjson stops at 255 levels, _go_safe near Python's recursion limit; Go does not.
            out: bytes = self._dumps(value, option=self._sort_keys) if _go_safe(value) else b""
        except (TypeError, RecursionError):  # orjson.JSONEncodeError is a TypeError
            out = b""
        if not out:
            return gojson.dumps(value)
        text = out.decode()
        if "<" in text or ">" in text or "&" in text or not text.isascii():
            text = go_escape(out).decode()
        return text

    def fields(self, data: dict[str, object]) -> bytes:
        if "assistant_content" in data:  # a struct orjson cannot write (rare: agent-end only)
            return GoCodec.fields(self, data)
        # go_escape inlined (a call per line shows), and unconditional: scanning the values
        # first costs more than replaces that find nothing.
        out: bytes = self._dumps(data)
        out = out.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
        if not out.isascii():
            out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return out


GO = GoCodec()


def default_codec() -> GoCodec:
    """OrjsonCodec when orjson is installed (a regular dependency), else the stdlib GoCodec."""
    try:
        import orjson
    except ImportError:
        return GO
    return OrjsonCodec(orjson)
