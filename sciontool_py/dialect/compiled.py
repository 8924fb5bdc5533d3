"""One raw event name's event line as a generated Python function, for `normalize`'s stream.

``event_data`` interprets a dialect's mapping for every envelope: it loops
over the envelope's keys, the mapping's field tuples and their kinds, sorts
the fields into struct order, and the codec writes them. A stream of
thousands of lines pays that per line, so for each raw event name
``compile_line`` writes the function the mapping amounts to (its keys and
rules as constants, the fields in struct order, each written as it is
read) and execs it once.

The function takes every envelope of its name. It writes those that carry
none of the keys it leaves to the general steps (``tool_response``, a
top-level ``file_path``, default fields the mapping does not read):
``slow_keys``; the others, and every agent-end of a dialect with options
(the assistant turn), go to ``general``: ``event_data``, the reference.
Tests compare the two. Envelopes with token counts take a second function
of the same source, so that the others pay one set lookup for them.
"""

from __future__ import annotations

from sciontool_py.dialect.normalize import (
    DEFAULT_KEYS,
    TOKEN_KEYS,
    TOKEN_NAMES,
    extract_tokens,
    keys_that_fill_data,
    token_count,
)
from sciontool_py.vocabulary import DATA_FIELD_ORDER, FIELD_KINDS, PAYLOAD_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from sciontool_py.codec import GoCodec
    from sciontool_py.dialect.spec import DialectSpec, Mapping

    Line = Callable[[dict[str, object]], bytes]

# Keys whose steps in event_data read more than one key, or the data built so far.
_GENERAL_KEYS = TOKEN_KEYS | {"tool_response", "file_path"}
_EXTRACTED = ("input_tokens", "output_tokens", "cached_tokens")  # what extract_tokens may set


def compile_line(
    spec: DialectSpec,
    raw_name: str,
    name: str,
    mapping: Mapping | None,
    head: bytes,
    codec: GoCodec,
    general: Line,
) -> tuple[frozenset[str], Line] | None:
    """(slow_keys, line): line(envelope) is the event line (head, data, newline) that
    event_data and the codec give, for any envelope of raw_name; it hands those with one of
    slow_keys to general. None when every envelope of this name takes the general steps."""
    if name == "agent-end" and spec.options:
        return None
    paths = mapping.fields if mapping is not None else {}
    handled = {path[0] for path in paths.values()} - _GENERAL_KEYS
    fill_keys = keys_that_fill_data(spec, raw_name)
    slow_keys = fill_keys - handled - TOKEN_KEYS
    source = "\n".join(
        [
            "def counted(envelope):  # one of the token keys is there",
            "    if not SLOW.isdisjoint(envelope):",
            "        return general(envelope)",
            *_body(paths, handled | TOKEN_KEYS, tokens=True),
            "",
            "def line(envelope):",
            "    if not SLOW_OR_TOKENS.isdisjoint(envelope):",
            "        return counted(envelope)",
            *_body(paths, handled, tokens=False),
        ]
    )
    namespace: dict[str, object] = {
        "SLOW": slow_keys,
        "SLOW_OR_TOKENS": fill_keys - handled,
        "TOP_TOKENS": TOKEN_KEYS - {"usage"},
        "general": general,
        "HEAD": head + b"{",
        "EMPTY": head + b"{}}\n",
        "QUOTE": b'"',
        "STRING": codec.strings,
        "payload": codec.payload_string_body,
        "token": token_count,
        "extract": extract_tokens,
    }
    # Our own source: keys and fields go in as repr() literals.
    exec(compile(source, f"<dialect {spec.name}: {raw_name}>", "exec"), namespace)
    return slow_keys, namespace["line"]  # type: ignore[return-value]


def _body(paths: dict[str, tuple[str, ...]], handled: set[str], tokens: bool) -> list[str]:
    """The statements that write the line, the fields in struct order; with tokens, the
    counts as the shared extraction takes them. A field one step sets is written where it is
    read; one that several steps may set, after the last of them."""
    body = ["    get = envelope.get", "    out = [HEAD]"]
    loaded: dict[str, str] = {}  # top-level key -> the local that holds it: each is read once
    for field in DATA_FIELD_ORDER:
        if tokens and field in _EXTRACTED[1:]:
            continue  # written with the first, below
        if tokens and field == _EXTRACTED[0]:
            body += _token_statements(paths, handled)
            continue
        steps = _steps(field, paths, handled)
        if len(steps) == 1:
            body += _direct(field, *steps[0], loaded)
        elif steps:
            body += ["    v = None", *(_writer(kind, path, loaded) for kind, path in steps), _emit(field)]
    if len(body) == 2:  # no field to write
        return ["    return EMPTY"]
    return [
        *body,
        "    if len(out) == 1:",
        "        return EMPTY",
        "    out[1] = out[1][1:]  # the first field's comma",
        "    out.append(b'}}\\n')",
        "    return b''.join(out)",
    ]


def _token_statements(paths: dict[str, tuple[str, ...]], handled: set[str]) -> list[str]:
    """Statements that write the three counts: Scion's shared extraction reads the counts the
    mapping left, on their own dict. Without the mapping's own, and with `usage` the only
    token key (how agents send them), its steps inline: the top level holds no count."""
    general = ["    counts = {}"]
    mapped = False
    for counted in _EXTRACTED:
        writers = _writers(counted, paths, handled)
        if writers:
            mapped = True
            general += ["    v = None", *writers, f"    if v is not None:\n        counts[{counted!r}] = v"]
    general += [
        "    extract(counts, envelope)",
        *(f"    v = counts.get({counted!r})\n{_emit(counted)}" for counted in _EXTRACTED),
    ]
    if mapped:
        return general
    fast = ["    usage = get('usage')", "    if type(usage) is dict and TOP_TOKENS.isdisjoint(envelope):"]
    for field, own, other in TOKEN_NAMES:
        fast += [f"        {line}" for line in _count(own)]
        fast += ["        if not v:", *(f"            {line}" for line in _count(other))]
        fast += [f"        if v:\n            out += ({_label(field)!r}, b'%d' % v)"]
    return [*fast, "    else:", *(f"    {line}" for line in "\n".join(general).split("\n"))]


def _count(key: str) -> list[str]:
    """Statements that set v to token_count of usage's key (0 when it is missing): an integer
    Go's float64 holds exactly is its own count."""
    return [
        f"x = usage.get({key!r})",
        "v = x if type(x) is int and 0 < x <= 9007199254740992 else 0 if x is None else token(x)",
    ]


def _steps(
    field: str, paths: dict[str, tuple[str, ...]], handled: set[str]
) -> list[tuple[str, tuple[str, ...]]]:
    """event_data's steps that may set field, in its order: (the rule's kind, the path read)."""
    steps: list[tuple[str, tuple[str, ...]]] = []
    path = paths.get(field)
    # The default step reads the key named as the field, unless the mapping reads that very
    # key for it: its rule then covers the default's (a non-empty string, a boolean).
    if field in DEFAULT_KEYS and field in handled and path != (field,):
        steps.append(("default success" if field == "success" else "string", (field,)))
    if path is not None and path[0] in handled:
        steps.append((FIELD_KINDS[field], path))
    if field == "file_path" and "tool_input" in handled:  # _file_path's part for tool_input
        steps.append(("string", ("tool_input", "file_path")))
    return steps


def _writers(field: str, paths: dict[str, tuple[str, ...]], handled: set[str]) -> list[str]:
    """The steps as statements that set v."""
    return [_writer(kind, path, None) for kind, path in _steps(field, paths, handled)]


def _load(path: tuple[str, ...], loaded: dict[str, str] | None) -> tuple[list[str], str]:
    """(statements, name): name holds the value at path after the statements. A top-level
    key already read is not read again (loaded: only for statements outside any branch)."""
    if loaded is None:
        lines, name = [f"    x = get({path[0]!r})"], "x"
    elif path[0] in loaded:
        lines, name = [], loaded[path[0]]
    else:
        name = loaded[path[0]] = f"k{len(loaded)}"
        lines = [f"    {name} = get({path[0]!r})"]
    if len(path) > 1:
        lines.append(f"    x = {name}.get({path[1]!r}) if type({name}) is dict else None")
        lines += [f"    x = x.get({key!r}) if type(x) is dict else None" for key in path[2:]]
        name = "x"
    return lines, name


def _writer(kind: str, path: tuple[str, ...], loaded: dict[str, str] | None) -> str:
    """Statements that set v when event_data's step for a field of this kind sets the field:
    to its value, or for a payload that is not a string, to the body of its JSON string."""
    lines, x = _load(path, loaded)
    if kind == "string":
        lines.append(f"    if type({x}) is str and {x}:\n        v = {x}")
    elif kind == "any":
        lines.append(f"    if type({x}) is str:\n        if {x}:\n            v = {x}")
        lines.append(f"    elif {x} is not None:\n        v = payload({x})")
    elif kind == "number":
        lines.append(f"    if {x} is not None:\n        x = token({x})\n        if x:\n            v = x")
    elif kind == "boolean":
        lines.append(f"    if type({x}) is bool:\n        v = {x}")
        lines.append(f"    elif type({x}) is str and {x}.casefold() == 'success':  # Copilot's resultType")
        lines.append("        v = True")
    else:  # the default step of success: a boolean only
        lines.append(f"    if type({x}) is bool:\n        v = {x}")
    return "\n".join(lines)


def _direct(field: str, kind: str, path: tuple[str, ...], loaded: dict[str, str]) -> list[str]:
    """The one step that may set field, writing it as _writer and _emit together would."""
    lines, x = _load(path, loaded)
    label = _label(field)
    if kind in ("boolean", "default success"):  # success: only true is written
        written = f"        out.append({label + b'true'!r})"
        lines += [f"    if {x} is True:", written]
        if kind == "boolean":
            lines += [f"    elif type({x}) is str and {x}.casefold() == 'success':", written]
    elif kind == "number":
        lines += [f"    if {x} is not None:", f"        x = token({x})", "        if x:"]
        lines.append(f"            out += ({label!r}, b'%d' % x)")
    elif kind == "any":
        lines += [
            f"    if type({x}) is str:",
            f"        if {x}:",
            f"            out += ({label!r}, STRING[{x}])",
        ]
        quoted = label + b'"'
        lines += [f"    elif {x} is not None:", f"        out += ({quoted!r}, payload({x}), QUOTE)"]
    else:
        lines += [f"    if type({x}) is str and {x}:", f"        out += ({label!r}, STRING[{x}])"]
    return lines


def _label(field: str) -> bytes:
    return f',"{field}":'.encode()  # field names are plain ASCII identifiers


def _emit(field: str) -> str:
    """Statements that append the field, when v is set, as the codec writes it in data."""
    label = _label(field)
    if field == "success":
        return f"    if v is True:  # a false success is left out\n        out.append({label + b'true'!r})"
    if FIELD_KINDS[field] == "number":
        return f"    if v is not None:\n        out += ({label!r}, b'%d' % v)"
    if field in PAYLOAD_FIELDS:  # v is a string, or the body of the JSON string of a value
        quoted = label + b'"'
        return (
            f"    if type(v) is str:\n        out += ({label!r}, STRING[v])\n"
            f"    elif v is not None:\n        out += ({quoted!r}, v, QUOTE)"
        )
    return f"    if v is not None:\n        out += ({label!r}, STRING[v])"
