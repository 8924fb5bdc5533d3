"""JSON the way Scion's Go programs read and write it.

Go decodes every JSON number into a float64 and its encoder sorts object
keys, writes no spaces, escapes ``<`` ``>`` ``&`` and U+2028/U+2029, and
formats floats without a fraction when they are integral.  Matching that
byte for byte is what lets the same envelope produce the same event in
both programs.
"""

from __future__ import annotations

# CPython's C accelerator alone: the json package would add four modules and
# their regexes to every hook call.
from _json import encode_basestring as _encode_str
from _json import make_scanner as _make_scanner

from sciontool_py.errors import JSONError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterator


class GoJSON:
    """A container kept as the bytes Go's json.Marshal writes for it, not as Python objects:
    gojson_bounded returns one for a part of a large document too dense to hold. dumps writes
    it as it is; nothing looks into it."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def kind(self) -> str:
        return "an object" if self.data.startswith(b"{") else "an array"


def number(text: str) -> float:
    """A JSON number as Go reads it into interface{}: a float64; out of its range is an error."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise JSONError(f"number {text[:40]} is out of range")
    return value


def _reject_constant(name: str) -> float:
    raise JSONError(f"invalid JSON value {name}")


class _Context:
    """The settings the scanner reads: Go's number handling, strict strings."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = staticmethod(number)
    parse_int = staticmethod(number)
    parse_constant = staticmethod(_reject_constant)


class _PlainNumbers(_Context):
    """The builtin int and float, which the scanner calls without a Python frame: for text
    whose numbers they read as Go would (gojson_bounded checks that first)."""

    parse_float = float  # type: ignore[assignment]
    parse_int = int  # type: ignore[assignment]


# scan(text, index) -> (value, end): one value, as Go decodes it. Raises StopIteration,
# ValueError or SystemError on bad JSON, RecursionError past about 1,000 levels.
scan = _make_scanner(_Context())  # type: ignore[arg-type]  # typeshed wants a JSONDecoder
scan_plain = _make_scanner(_PlainNumbers())  # type: ignore[arg-type]


def _lone_surrogate() -> re.Pattern[str]:
    import re  # only here: the hook's usual path never needs it

    return re.compile("[\ud800-\udfff]")  # compiled once: re keeps its own cache


def _explain(text: str) -> str:
    """Why text is not JSON, in the words of the stdlib parser (error path only)."""
    import json

    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg}: line {exc.lineno} column {exc.colno}"
    except RecursionError:
        return "invalid JSON: nested too deeply"
    return "invalid JSON"


LARGE = 256 << 10  # bytes: a larger document is read by gojson_bounded, in memory linear in its size


def loads(text: str, go_depth: bool = False) -> object:
    """Decode like Go's ``json.Unmarshal`` into ``interface{}``.

    The C scanner stops near Python's recursion limit (about 1 000 levels);
    go_depth decodes deeper documents as Go does, up to its 10 000 levels,
    with a slower iterative parser (state files, capped at 1 MiB, ask for it).
    """
    if "\\ud" in text or "\\uD" in text:
        text = replace_surrogate_escapes(text)
    try:
        value, end = scan(text, _skip_ws(text, 0))
    except RecursionError:
        if go_depth:
            return _loads_deep(text)
        raise JSONError("invalid JSON: nested too deeply") from None
    except JSONError:
        raise
    except (StopIteration, ValueError, SystemError):
        # The bare C scanner reports a bad string as SystemError unless the
        # json package is loaded; ask the stdlib parser for the message.
        raise JSONError(_explain(text)) from None
    end = _skip_ws(text, end)
    if end != len(text):
        raise JSONError(_explain(text))
    return value


# Every byte but the quote and the brackets: all that the nesting of JSON depends on.
_NOT_NESTING = bytes(range(256)).translate(None, b'"[]{}')


def brackets(text: bytes, in_string: bool = False) -> tuple[bytes, bool]:
    """The brackets of JSON text outside its strings, in order, and whether text ends inside
    a string, for text starting inside one or not: passes in C, however many values text
    holds. text must not end in an odd run of backslashes (a cut escape)."""
    # Escaped backslashes, then escaped quotes, go: each quote left opens or closes a string.
    # Then quotes side by side go: what lay between them (nothing, or what separates two
    # strings) holds no bracket, so no bracket changes sides.
    shape = text.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_NESTING)
    shape = shape.replace(b'""', b"")
    if b'"' in shape:
        parts = shape.split(b'"')
        shape = b"".join(parts[1::2] if in_string else parts[::2])
        in_string ^= len(parts) % 2 == 0  # an odd number of quotes
    elif in_string:
        return b"", True
    return shape, in_string


def nesting(text: bytes, in_string: bool = False) -> tuple[int, bool]:
    """How far JSON text moves the nesting depth ([ and { outside strings +1, ] and } -1), and
    whether it ends inside a string (as brackets)."""
    shape, in_string = brackets(text, in_string)
    return shape.count(b"[") + shape.count(b"{") - shape.count(b"]") - shape.count(b"}"), in_string


def decode_utf8(data: bytes) -> str:
    """Bytes as Go's decoder reads them: each byte that is not part of valid UTF-8 becomes U+FFFD."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        import codecs

        try:
            codecs.lookup_error(_GO_REPLACE)
        except LookupError:
            codecs.register_error(_GO_REPLACE, _replace_one_byte)
        return data.decode("utf-8", _GO_REPLACE)


_GO_REPLACE = "sciontool-go-replace"


def _replace_one_byte(exc: UnicodeError) -> tuple[str, int]:
    # Python's "replace" gives one U+FFFD per malformed sequence; Go gives one per byte.
    return "\ufffd", exc.start + 1  # type: ignore[attr-defined]


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\n\r":
        pos += 1
    return pos


_escape_pattern: re.Pattern[str] | None = None


def replace_surrogate_escapes(text: str) -> str:
    """text with each unpaired UTF-16 escape written \\ufffd, as Go's decoder reads it.

    Done on the text, before decoding: keys that become equal then collide as Go's do
    (the last wins), and no walk over the decoded value limits its depth.  Left to
    right, an escaped backslash is consumed whole, so `\\\\ud800` (a backslash, then
    the letters) is left alone.
    """
    global _escape_pattern
    if _escape_pattern is None:
        import re

        pair = r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
        _escape_pattern = re.compile(rf"\\\\|{pair}|\\u[dD][89a-fA-F][0-9a-fA-F]{{2}}")

    def one(match: re.Match[str]) -> str:
        token = match.group()
        return token if len(token) != 6 else "\\ufffd"

    return _escape_pattern.sub(one, text)


def format_float(value: float) -> str:
    """Format a float64 as Go's encoding/json does.

    Go writes the shortest digits that read back as the same float64 (repr
    finds the same ones): plain decimal for 1e-6 <= |x| < 1e21 (and zero, -0
    kept), otherwise exponent form without leading zeros in the exponent
    (1e-7, 1e+21).
    """
    text = repr(value)  # the shortest digits; fixed notation for 1e-4 <= |x| < 1e16 and zero
    if "e" not in text:
        if "n" in text:
            raise JSONError("NaN and infinite numbers have no JSON form")  # inf, nan
        return text[:-2] if text.endswith(".0") else text  # Go writes no ".0"
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text)
    if exponent < -6 or exponent >= 21:  # |x| < 1e-6 or >= 1e21: Go's exponent form too
        return text.replace("e-0", "e-")  # repr's "1e-07" is Go's "1e-7"; "1e+21" as it is
    # Go's fixed notation where repr has an exponent: the digits, the point after `point` of them.
    sign = "-" if value < 0 else ""
    digits = mantissa.lstrip("-").replace(".", "")
    point = exponent + 1
    if point <= 0:  # 1e-6 <= |x| < 1e-4
        return f"{sign}0.{'0' * -point}{digits}"
    return sign + digits + "0" * (point - len(digits))  # 1e16 <= |x| < 1e21: integral


def _string(value: str) -> str:
    out = _encode_str(value)
    if "<" in out or ">" in out or "&" in out:
        out = out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    if "\u2028" in out or "\u2029" in out:
        out = out.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if not out.isascii():
        try:
            out.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: Go writes U+FFFD
            out = _lone_surrogate().sub("\ufffd", out)
    return out


def _encode(value: object, out: list[str], indent: str | None, depth: int) -> None:
    if isinstance(value, str):
        out.append(_string(value))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif isinstance(value, (int, float)):
        out.append(format_float(float(value)))
    elif isinstance(value, (dict, list, tuple)):
        is_dict = isinstance(value, dict)
        items = sorted(value) if is_dict else value
        if not items:
            out.append("{}" if is_dict else "[]")
            return
        out.append("{" if is_dict else "[")
        inner = "\n" + indent * (depth + 1) if indent is not None else ""
        for i, item in enumerate(items):
            if i:
                out.append(",")
            out.append(inner)
            if is_dict:
                out.append(_string(str(item)))
                out.append(": " if indent is not None else ":")
                item = value[item]
            _encode(item, out, indent, depth + 1)
        if indent is not None:
            out.append("\n" + indent * depth)
        out.append("}" if is_dict else "]")
    elif type(value) is GoJSON:
        out.append(value.data.decode())
    else:
        raise JSONError(f"cannot encode a {type(value).__name__} as JSON")


def dumps(value: object, indent: str | None = None) -> str:
    """Encode as Go's ``json.Marshal`` (or ``json.MarshalIndent`` with indent) would."""
    out: list[str] = []
    try:
        _encode(value, out, indent, 0)
    except RecursionError:
        out = []
        _encode_deep(value, out, indent)
    return "".join(out)


# Go's depth: documents a recursive Python decoder or encoder cannot reach.

GO_MAX_DEPTH = 10_000  # encoding/json's maxNestingDepth
_END = object()


def _encode_deep(value: object, out: list[str], indent: str | None) -> None:
    """_encode without recursion: one stack entry per open container, as deep as the value goes."""
    # (keys or items left, the object when it is one, whether its first item is still to come)
    stack: list[tuple[Iterator[object], dict[object, object] | None, list[bool]]] = []
    pending = value
    while True:
        if isinstance(pending, dict) and pending:
            out.append("{")
            stack.append((iter(sorted(pending)), pending, [True]))
        elif isinstance(pending, (list, tuple)) and pending:
            out.append("[")
            stack.append((iter(pending), None, [True]))
        else:
            _encode(pending, out, indent, len(stack))  # a scalar or an empty container
        while stack:
            items, mapping, first = stack[-1]
            item = next(items, _END)
            if item is _END:
                stack.pop()
                if indent is not None:
                    out.append("\n" + indent * len(stack))
                out.append("]" if mapping is None else "}")
                continue
            if not first[0]:
                out.append(",")
            first[0] = False
            if indent is not None:
                out.append("\n" + indent * len(stack))
            if mapping is not None:
                out.append(_string(str(item)))
                out.append(": " if indent is not None else ":")
                item = mapping[item]
            pending = item
            break
        else:
            return


def _loads_deep(text: str) -> object:
    """Decode without recursion, as Go does, refusing what is nested beyond GO_MAX_DEPTH."""
    from _json import scanstring

    n = len(text)
    # Each open container, with the key its next value goes under (an object's).
    stack: list[tuple[dict[str, object] | list[object], str]] = []
    pos = _skip_ws(text, 0)
    while True:
        char = text[pos] if pos < n else ""
        value: object
        if char == "{" or char == "[":
            if len(stack) >= GO_MAX_DEPTH:  # an empty container is a level too
                raise JSONError(f"invalid JSON: exceeded max depth of {GO_MAX_DEPTH}")
            pos = _skip_ws(text, pos + 1)
            closer = "}" if char == "{" else "]"
            if text.startswith(closer, pos):
                value, pos = ({} if char == "{" else []), pos + 1
            else:
                if char == "{":
                    key, pos = _deep_key(text, pos, scanstring)
                    stack.append(({}, key))
                else:
                    stack.append(([], ""))
                continue
        elif char == '"':
            value, pos = _deep_string(text, pos + 1, scanstring)
        elif text.startswith("true", pos):
            value, pos = True, pos + 4
        elif text.startswith("false", pos):
            value, pos = False, pos + 5
        elif text.startswith("null", pos):
            value, pos = None, pos + 4
        else:
            value, pos = _deep_number(text, pos)
        # A value is complete: store it, closing every container it completes.
        while stack:
            container, key = stack[-1]
            is_array = isinstance(container, list)
            if isinstance(container, list):
                container.append(value)
            else:
                container[key] = value
            pos = _skip_ws(text, pos)
            char = text[pos] if pos < n else ""
            if char == ",":
                pos = _skip_ws(text, pos + 1)
                if not is_array:
                    key, pos = _deep_key(text, pos, scanstring)
                    stack[-1] = (container, key)
                break
            if char != ("]" if is_array else "}"):
                raise JSONError(f"invalid JSON: unexpected {char!r} at character {pos}")
            stack.pop()
            value, pos = container, pos + 1
        else:
            if _skip_ws(text, pos) != n:
                raise JSONError(f"invalid JSON: extra data at character {pos}")
            return value


def _deep_string(text: str, pos: int, scanstring: Callable[..., tuple[str, int]]) -> tuple[str, int]:
    try:
        value, end = scanstring(text, pos, True)
    except ValueError as exc:
        raise JSONError(f"invalid JSON: {exc}") from None
    if not value.isascii():
        value = _lone_surrogate().sub("\ufffd", value)
    return value, end


def _deep_key(text: str, pos: int, scanstring: Callable[..., tuple[str, int]]) -> tuple[str, int]:
    if not text.startswith('"', pos):
        raise JSONError(f"invalid JSON: expected a key at character {pos}")
    key, pos = _deep_string(text, pos + 1, scanstring)
    pos = _skip_ws(text, pos)
    if not text.startswith(":", pos):
        raise JSONError(f"invalid JSON: expected ':' at character {pos}")
    return key, _skip_ws(text, pos + 1)


def _deep_number(text: str, pos: int) -> tuple[float, int]:
    """-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? at pos."""
    start = pos
    if text.startswith("-", pos):
        pos += 1
    if text.startswith("0", pos):
        pos += 1
    else:
        pos = _digits(text, pos, start)
    if text.startswith(".", pos):
        pos = _digits(text, pos + 1, start)
    if pos < len(text) and text[pos] in "eE":
        pos += 1
        if pos < len(text) and text[pos] in "+-":
            pos += 1
        pos = _digits(text, pos, start)
    return number(text[start:pos]), pos


def _digits(text: str, pos: int, start: int) -> int:
    end = pos
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    if end == pos:
        raise JSONError(f"invalid JSON: invalid value at character {start}")
    return end
