"""YAML scalars as Go's yaml.v3 reads them (YAML 1.2), on top of PyYAML's safe loader.

PyYAML resolves plain scalars by YAML 1.1: `yes`, `on` and `off` are
booleans, `12:30` is 750 and `0o755` a string. Scion reads dialect.yaml with
yaml.v3, so the same file must mean what it means there:

- booleans: `true` / `false` as `true`, `True`, `TRUE` (and the same for false) only;
- null: empty, `~`, `null`, `Null`, `NULL`;
- integers (Go's strconv.ParseInt with base 0, after dropping `_`): `12`, `-3`,
  `+5`, `0x1F`, `0b101`, `0o755`, `0755`, `1_000`; beyond int64, up to uint64;
- floats: `[-+]?(.digits|digits[.digits])([eE][-+]?digits)?` (so `1e3`), and
  `.inf`, `-.inf`, `.nan` in three spellings; a value that overflows a float64
  stays a string, as it does in Go;
- timestamps: 4-digit-year dates (`2026-01-01`, with a time as in RFC 3339 or
  after a space); Go decodes them into a time.Time where a value may be anything;
- everything else is a string.

Quoted scalars are always strings. Explicit tags (`!!int 5`) must agree with
the text, as in yaml.v3.
"""

from __future__ import annotations

import math
import re
from types import MappingProxyType

import yaml

NULL_TAG = "tag:yaml.org,2002:null"
BOOL_TAG = "tag:yaml.org,2002:bool"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
STR_TAG = "tag:yaml.org,2002:str"
BINARY_TAG = "tag:yaml.org,2002:binary"
MERGE_TAG = "tag:yaml.org,2002:merge"

_SPECIAL: dict[str, tuple[str, object]] = {
    **{word: (BOOL_TAG, True) for word in ("true", "True", "TRUE")},
    **{word: (BOOL_TAG, False) for word in ("false", "False", "FALSE")},
    **{word: (NULL_TAG, None) for word in ("", "~", "null", "Null", "NULL")},
    **{word: (FLOAT_TAG, math.nan) for word in (".nan", ".NaN", ".NAN")},
    **{s + word: (FLOAT_TAG, math.inf) for word in (".inf", ".Inf", ".INF") for s in ("", "+")},
    **{"-" + word: (FLOAT_TAG, -math.inf) for word in (".inf", ".Inf", ".INF")},
}
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DIGITS = {2: frozenset("01"), 8: frozenset("01234567"), 10: frozenset("0123456789")}
_DIGITS[16] = _DIGITS[10] | frozenset("abcdefABCDEF")
_PREFIX_BASES = {"0x": 16, "0b": 2, "0o": 8}
# Go's time.Parse layouts yaml.v3 tries: RFC 3339 with T or t (1-2 digit fields), a space
# separated time without zone, a bare date.
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:(?:[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(?:Z|[+-]\d\d:\d\d))"
    r"|(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?))?"
)


class Timestamp(str):
    """A plain scalar yaml.v3 reads as a date: a string where Go wants one, a time.Time
    (which a JSON response cannot carry as written) where any value goes."""


def resolve_plain(text: str) -> tuple[str, object]:
    """(tag, value) of a plain scalar, as yaml.v3 resolves it."""
    if text in _SPECIAL:
        return _SPECIAL[text]
    if text == "<<":
        return MERGE_TAG, text
    first = text[0]
    if first in "+-0123456789":
        if first.isdigit() and _is_timestamp(text):
            return TIMESTAMP_TAG, Timestamp(text)
        plain = text.replace("_", "")
        number = _go_int(plain)
        if number is not None:
            return INT_TAG, number
        if _FLOAT.fullmatch(plain):
            value = float(plain)
            if not math.isinf(value):  # Go's ParseFloat fails on overflow: the text stays a string
                return FLOAT_TAG, value
    elif first == "." and _FLOAT.fullmatch(text):
        value = float(text)
        if not math.isinf(value):
            return FLOAT_TAG, value
    return STR_TAG, text


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), else ParseUint(text, 0, 64); None when neither reads it."""
    sign, body = "", text
    if body[:1] in ("+", "-"):
        sign, body = body[0], body[1:]
    prefix = body[:2].lower()
    if prefix in _PREFIX_BASES:
        base, digits = _PREFIX_BASES[prefix], body[2:]
    elif body.startswith("0") and len(body) > 1:
        base, digits = 8, body[1:]  # Go still reads YAML 1.1's 0755 as octal
    else:
        base, digits = 10, body
    if not digits or not _DIGITS[base].issuperset(digits):
        return None
    value = -int(digits, base) if sign == "-" else int(digits, base)
    if -(1 << 63) <= value < 1 << 63:
        return value
    if not sign and value < 1 << 64:  # ParseUint takes no sign
        return value
    return None


def _is_timestamp(text: str) -> bool:
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(match[i]) for i in (1, 2, 3))
    clock = [int(part) for part in match.groups()[3:] if part is not None]
    if not 1 <= month <= 12 or not 1 <= day <= _days_in(year, month):
        return False
    return not clock or (clock[0] < 24 and clock[1] < 60 and clock[2] < 60)


def _days_in(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with yaml.v3's scalar resolution, escapes and !!binary."""

    # yaml.v3 knows no `\/` escape (PyYAML and newer libyaml do): the file is refused there.
    ESCAPE_REPLACEMENTS = MappingProxyType(  # type: ignore[misc, assignment]  # typeshed: a Final dict
        {k: v for k, v in yaml.SafeLoader.ESCAPE_REPLACEMENTS.items() if k != "/"}
    )

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """PyYAML's merge (<<): merged pairs put first, in place; how many is remembered on the
        node (as `merged`), since a key written in the mapping wins over them in yaml.v3."""
        if not hasattr(node, "merged"):
            own = sum(1 for key_node, _ in node.value if key_node.tag != MERGE_TAG)
            super().flatten_mapping(node)
            node.merged = len(node.value) - own  # type: ignore[attr-defined]

    def construct_scalar(self, node: yaml.ScalarNode) -> str:  # type: ignore[override]
        # A \uD83D escape is a lone UTF-16 surrogate, which yaml.v3 (as libyaml) refuses, even
        # as half of a pair: the text could not be written as UTF-8 anyway.
        if not node.value.isascii() and any("\ud800" <= char <= "\udfff" for char in node.value):
            raise yaml.constructor.ConstructorError(
                None, None, "found invalid Unicode character escape code", node.start_mark
            )
        return super().construct_scalar(node)

    def resolve(self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return resolve_plain(value)[0]
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call, no-any-return]

    def scalar_as(self, node: yaml.ScalarNode, tag: str) -> object:
        """The value of a scalar under an (implicit or explicit) tag; an error when the text
        does not read as that tag, as yaml.v3 fails `!!int abc`."""
        found, value = resolve_plain(node.value)  # an explicit tag reads quoted text too
        if found == INT_TAG and tag == FLOAT_TAG:
            return float(value)  # type: ignore[arg-type]
        if found != tag:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot decode {node.value!r} as {tag.rsplit(':', 1)[1]}", node.start_mark
            )
        return value


def _construct(tag: str) -> object:
    def construct(loader: Yaml12Loader, node: yaml.ScalarNode) -> object:
        return loader.scalar_as(node, tag)

    return construct


def _construct_binary(loader: Yaml12Loader, node: yaml.ScalarNode) -> str:
    """The decoded bytes as a string, as yaml.v3 reads !!binary into a Go string (or any value)."""
    import base64
    import binascii

    from sciontool_py.gojson import decode_utf8

    text = loader.construct_scalar(node)
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise yaml.constructor.ConstructorError(
            None, None, f"!!binary value cannot be decoded: {text[:40]!r}", node.start_mark
        ) from None
    return decode_utf8(data)  # Go's encoder writes each byte that is not UTF-8 as U+FFFD


Yaml12Loader.add_constructor(BINARY_TAG, _construct_binary)
for _tag in (NULL_TAG, BOOL_TAG, INT_TAG, FLOAT_TAG, TIMESTAMP_TAG):
    Yaml12Loader.add_constructor(_tag, _construct(_tag))  # type: ignore[arg-type]
