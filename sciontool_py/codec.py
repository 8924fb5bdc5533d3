"""The JSON codec that canonical events are read and written with: Go's bytes, two engines.

``GoCodec`` is pure stdlib (gojson) and is the reference; ``OrjsonCodec``
gives the same bytes faster: orjson writes the value, with the numbers it
writes differently from Go (some floats, integers past 2^53) handed to it
as fragments that gojson formatted. ``normalize`` picks one
with ``default_codec()``; tests pass either explicitly and compare.
"""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.assistant import AssistantContent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any


class Strings(dict[str, bytes]):
    """text -> the bytes of its JSON string as event data writes it, through encode. The
    texts that repeat from line to line (tool names, paths, models) are kept: a subscript of
    this dict costs a fraction of a call. Long ones (prompts, messages) are not, and it stops
    growing at 1,024 entries."""

    __slots__ = ("_encode",)

    def __init__(self, encode: Callable[[str], bytes]) -> None:
        super().__init__()
        self._encode = encode

    def __missing__(self, text: str) -> bytes:
        out = self._encode(text)
        if len(text) <= 64 and len(self) < 1024:
            self[text] = out
        return out


class GoCodec:
    """gojson: Go's decoding and encoding, byte for byte, with the stdlib alone."""

    name = "gojson"

    def __init__(self) -> None:
        self.strings = Strings(self._string_json)
        # Set when a value marshal wrote held the integer 0, which the reader may have made of
        # a -0 (Go reads -0 as a float64 and writes -0): the stream then looks at the line
        # again with lost_minus_zero and clears it. gojson reads -0 as Go: never set here.
        self.wrote_zero = [False]

    def loads(self, data: bytes) -> object:
        """Decode one JSON document as Go does (a byte of bad UTF-8 is U+FFFD); JSONError
        when Go would refuse it."""
        return gojson.loads(gojson.decode_utf8(data), go_depth=True)

    def lost_minus_zero(self, line: bytes) -> object:
        """Truthy when loads may have read a -0 in line as 0 (never: gojson reads as Go).
        A search of the whole line: asked only after wrote_zero."""
        return False

    def marshal(self, value: object) -> str:
        """Go's json.Marshal of a decoded value: map keys sorted, HTML and U+2028/9 escaped."""
        return gojson.dumps(value)

    def marshal_bytes(self, value: object) -> bytes:
        """marshal, encoded (UTF-8)."""
        return gojson.dumps(value).encode()

    def marshal_plain(self, value: object) -> bytes:
        """marshal_bytes of a value that holds no float and no integer past 2^53 (gojson_bounded
        decodes runs without them so): a codec may then write its numbers without looking."""
        return self.marshal_bytes(value)

    def payload_text(self, value: object) -> object:
        """What event data holds for a payload field (tool_input, tool_output) whose value is
        not a string: the text of marshal(value), which fields() writes as a JSON string. Here
        the str itself; OrjsonCodec hands fields() that string already encoded."""
        return gojson.dumps(value)

    def _string_json(self, text: str) -> bytes:
        """Go's JSON of a string (a field of event data), what self.strings keeps."""
        return gojson.dumps(text).encode()

    def payload_string_body(self, value: object) -> bytes:
        """The JSON string that holds marshal(value), without its quotes: how event data
        writes a payload field whose value is not a string."""
        return gojson.dumps(gojson.dumps(value))[1:-1].encode()

    def fields(self, data: dict[str, object]) -> bytes:
        """A JSON object of strings, integers and booleans in data's own order (a Go struct),
        and of payload_text's values."""
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


def number_walker(
    fragment: Callable[[Any], object],
    go_float: Callable[[float], str | bytes] = gojson.format_float,
    wrote_zero: list[bool] | None = None,
) -> Callable[[Any], Any]:
    """walk(value): value itself when orjson writes it as Go does, else a copy in which each
    number orjson writes otherwise is fragment(Go's bytes): an integer past 2^53 (Go's float64
    rounds it), an integral float below 1e21 (orjson writes 100.0 and 1e+16, Go 100 and
    10000000000000000) and 1e-6 <= |x| < 1e-5 (orjson 2e-6, Go 0.000002). Every other float
    orjson writes as Go: the shortest digits that read back, in the same notation (a test
    compares them on float64s of every exponent). One walk whatever the values hold; the checks
    inline, in the order of how often a payload holds each type: it runs on every tool payload.
    The fragments of the floats that repeat (100.0, timeouts) are kept, up to 1,024. An
    integer 0 sets wrote_zero[0]: it may have been a -0 (see GoCodec.__init__)."""
    floats: dict[float, object] = {}
    zero = [False] if wrote_zero is None else wrote_zero
    go_json = gojson.GoJSON

    def walk(value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            items = value.items()
        elif kind is list:
            items = enumerate(value)
        else:
            return walk([value])[0]  # a number (or other scalar) at the top
        copy: Any = None
        for key, item in items:
            kind = type(item)
            if kind is str:
                continue
            if kind is float:
                if item % 1.0:  # no method call, and 0 exactly when item is integral
                    if item >= 1e-5 or item <= -1e-5 or -1e-6 < item < 1e-6:
                        continue
                elif item >= 1e21 or item <= -1e21:
                    continue
                new = floats.get(item)
                if new is None:
                    new = fragment(go_float(item))
                    if item and len(floats) < 1024:  # 0.0 and -0.0: equal keys, not equal bytes
                        floats[item] = new
            elif kind is int:
                if not item:
                    zero[0] = True
                    continue
                if -9007199254740992 <= item <= 9007199254740992:  # 2^53
                    continue
                new = fragment(gojson.format_float(float(item)))
            elif kind is dict or kind is list:
                new = walk(item)
                if new is item:
                    continue
            elif kind is go_json:  # Go's bytes already (gojson_bounded)
                new = fragment(item.data)
            else:  # bool, None
                continue
            if copy is None:
                copy = dict(value) if type(value) is dict else list(value)
            copy[key] = new
        return value if copy is None else copy

    return walk


class OrjsonCodec(GoCodec):
    """orjson, with Go's escapes added and Go's bytes for the numbers it writes otherwise."""

    name = "orjson"

    def __init__(self, orjson: ModuleType) -> None:
        # orjson.loads itself, not a method around it: it runs once per line. Its ValueError
        # does not always mean Go refuses the line (lone surrogate escapes): callers ask
        # GoCodec.loads before they report an error.
        self.loads = orjson.loads  # type: ignore[method-assign]
        # orjson also reads the integer literal -0 as 0 (Go: -0), so a line that wrote a 0
        # (wrote_zero) and may hold a -0 is read again by gojson. Not a -0 that goes on as a
        # float (-0.53, -0e1: orjson reads those as Go does), nor an exponent's as Python writes
        # it (1e-07). A -0 in a string only costs the slower reader (a -0 before a digit is no
        # number: a string, or a line orjson refuses). No lookbehind: a pattern that starts
        # with one loses the regex engine's literal prefix scan (3x slower). A regex: bytes'
        # find costs twice as much, and `in` also formats a TypeError per call; orjson (3.13)
        # has imported re already, and this codec only serves normalize.
        import re

        self.lost_minus_zero = re.compile(rb"-0(?![.eE0-9])").search  # type: ignore[method-assign,assignment]
        self._dumps = orjson.dumps
        self._sort_keys = orjson.OPT_SORT_KEYS
        self._fragment = orjson.Fragment  # already-encoded JSON, written as it is
        super().__init__()
        self._walk = number_walker(self._fragment, self._go_float, self.wrote_zero)

    def _go_float(self, value: float) -> str | bytes:
        """gojson.format_float, from orjson's digits where they are Go's: repr (its shortest
        digits) takes up to a microsecond on the float64 extremes, orjson a tenth of that."""
        text: bytes = self._dumps(value)
        if text.endswith(b".0"):  # integral in fixed notation (|x| < 1e16): Go writes no ".0"
            return text[:-2]
        # Where both write the exponent form, orjson (3.13) writes it as Go: 1e+21, 1e-7.
        if not 1e-6 <= abs(value) < 1e21 and (text.find(b"e+") != -1 or text.find(b"e-") != -1):
            return text
        return gojson.format_float(value)

    def marshal_bytes(self, value: object) -> bytes:
        # orjson writes the whole value; the few numbers it writes differently from Go go in
        # as fragments of Go's bytes, so a float costs a fragment, not the stdlib encoder.
        try:
            out: bytes = self._dumps(self._walk(value), option=self._sort_keys)
        except (TypeError, RecursionError):
            # orjson stops at 255 levels (its error is a TypeError), the walk near Python's
            # recursion limit; Go writes deeper values, and so does gojson. The walk may have
            # stopped before a zero.
            self.wrote_zero[0] = True
            return gojson.dumps(value).encode()
        # Go's escapes that orjson does not write: < > & and U+2028/9 (inline: normalize's
        # per-line path; _go_escapes elsewhere).
        out = out.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
        if not out.isascii():
            out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return out

    def marshal_plain(self, value: object) -> bytes:
        # orjson writes such integers as Go does: no number to hand it as Go's bytes.
        try:
            out: bytes = self._dumps(value, default=self._go_json, option=self._sort_keys)
        except (TypeError, RecursionError):  # 255 levels: as marshal_bytes
            return self.marshal_bytes(value)
        return _go_escapes(out)

    def _go_json(self, value: object) -> object:
        """orjson's default for what it cannot write: a GoJSON, as its bytes."""
        if type(value) is not gojson.GoJSON:
            raise TypeError
        return self._fragment(value.data)

    def marshal(self, value: object) -> str:
        return self.marshal_bytes(value).decode()

    def _string_json(self, text: str) -> bytes:
        out: bytes = self._dumps(text)
        out = out.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
        if not out.isascii():
            out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return out

    def payload_string_body(self, value: object) -> bytes:
        # marshal_bytes, then escaped into a string; here the quotes and backslashes first, so
        # Go's escapes go in already doubled (\\u003c) and that replace rarely copies.
        try:
            out: bytes = self._dumps(self._walk(value), option=self._sort_keys)
        except (TypeError, RecursionError):  # as in marshal_bytes
            self.wrote_zero[0] = True
            return GoCodec.payload_string_body(self, value)
        out = out.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
        out = out.replace(b"<", b"\\\\u003c").replace(b">", b"\\\\u003e").replace(b"&", b"\\\\u0026")
        if not out.isascii():
            out = out.replace(b"\xe2\x80\xa8", b"\\\\u2028").replace(b"\xe2\x80\xa9", b"\\\\u2029")
        return out

    def payload_text(self, value: object) -> object:
        # Go's json.Marshal of the string that holds marshal(value): nothing in it is left to
        # escape (no control character, < > &, U+2028/9 or bad UTF-8) but quotes and
        # backslashes. Written so on the bytes, the text is never decoded nor encoded again.
        text = self.marshal_bytes(value)
        return self._fragment(b'"%s"' % text.replace(b"\\", b"\\\\").replace(b'"', b'\\"'))

    def fields(self, data: dict[str, object]) -> bytes:
        content = data.get("assistant_content")
        if content is not None:  # the one struct (agent-end only), written by its own method
            data = {**data, "assistant_content": self._fragment(content.to_json(self.marshal))}  # type: ignore[attr-defined]
        # The escapes as in marshal_bytes, < > & unconditional: scanning the values first costs
        # more than replaces that find nothing. U+2028/9 can only be in a non-ASCII str value
        # (fragments are escaped already): looking for one there costs less than two searches
        # of a long payload's bytes.
        out: bytes = self._dumps(data)
        out = out.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
        if not out.isascii():
            for value in data.values():
                if type(value) is str and not value.isascii():
                    out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
                    break
        return out


def _go_escapes(out: bytes) -> bytes:
    """orjson's bytes with Go's escapes that orjson does not write: < > & and U+2028/9."""
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
