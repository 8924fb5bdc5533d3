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

from sciontool_py.errors import SciontoolError

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    import re


class JSONError(SciontoolError, ValueError):
    """The input is not JSON that Go's decoder would accept."""


def _number(text: str) -> float:
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
    parse_float = staticmethod(_number)
    parse_int = staticmethod(_number)
    parse_constant = staticmethod(_reject_constant)


_scan = _make_scanner(_Context())  # type: ignore[arg-type]  # typeshed wants a JSONDecoder
_surrogate_pattern: re.Pattern[str] | None = None


def _lone_surrogate() -> re.Pattern[str]:
    global _surrogate_pattern
    if _surrogate_pattern is None:
        import re

        _surrogate_pattern = re.compile("[\ud800-\udfff]")
    return _surrogate_pattern


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


def loads(text: str) -> object:
    """Decode like Go's ``json.Unmarshal`` into ``interface{}``."""
    try:
        value, end = _scan(text, _skip_ws(text, 0))
    except RecursionError:
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
    if "\\ud" in text or "\\uD" in text:
        # Go replaces an unpaired UTF-16 escape with U+FFFD while decoding.
        value = _replace_surrogates(value)
    return value


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


def _replace_surrogates(value: object) -> object:
    if isinstance(value, str):
        return _lone_surrogate().sub("\ufffd", value)
    if isinstance(value, dict):
        return {_lone_surrogate().sub("\ufffd", k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    return value


def format_float(value: float) -> str:
    """Format a float64 as Go's encoding/json does.

    Go writes the shortest digits that read back as the same float64 (repr
    finds the same ones): plain decimal for 1e-6 <= |x| < 1e21, otherwise
    exponent form without leading zeros in the exponent (1e-7, 1e+21).
    """
    if value != value or value in (float("inf"), float("-inf")):
        raise JSONError("NaN and infinite numbers have no JSON form")
    if value == 0:
        return "-0" if str(value)[0] == "-" else "0"
    sign = "-" if value < 0 else ""
    # repr writes "ddd.ddd" or "d.ddde-XX"; keep its significant digits and where the point falls.
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""  # repr's "100.0"
    all_digits = whole + frac
    significant = all_digits.lstrip("0")  # "0.00123" -> "123"
    # The decimal point follows the first `point` significant digits (point <= 0: zeros come first).
    point = len(whole) + int(exp_text or 0) - (len(all_digits) - len(significant))
    digits = significant.rstrip("0") or "0"
    if abs(value) < 1e-6 or abs(value) >= 1e21:
        exponent = point - 1
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exponent < 0 else '+'}{abs(exponent)}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


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
    else:
        raise JSONError(f"cannot encode a {type(value).__name__} as JSON")


def dumps(value: object, indent: str | None = None) -> str:
    """Encode as Go's ``json.Marshal`` (or ``json.MarshalIndent`` with indent) would."""
    out: list[str] = []
    try:
        _encode(value, out, indent, 0)
    except RecursionError:
        raise JSONError("value nested too deeply to encode") from None
    return "".join(out)
