"""One raw event name's event line as a generated Python function, for `normalize`'s stream.

``event_data`` interprets a dialect's mapping for every envelope: it loops
over the envelope's keys, the mapping's field tuples and their kinds, sorts
the fields into struct order, and the codec writes them. A stream of
thousands of lines pays that per line, so for each raw event name
``compile_line`` writes the function the mapping amounts to (its keys and
rules as constants, the fields in struct order, each written as it is
read) and execs it once.

It covers the envelopes that carry none of the keys it leaves to the
general steps (token counts, ``tool_response``, a top-level ``file_path``,
default fields the mapping does not read): ``slow_keys``. An envelope with
one of them, and every agent-end of a dialect with options (the assistant
turn), goes through ``event_data``, the reference; tests compare the two.
"""

from __future__ import annotations

from sciontool_py.dialect.normalize import (
    DEFAULT_KEYS,
    TOKEN_KEYS,
    extract_tokens,
    keys_that_fill_data,
    token_count,
)
from sciontool_py.vocabulary import DATA_FIELD_ORDER, FIELD_KINDS, PAYLOAD_FIELDS

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Callable

    from sciontool_py.codec import GoCodec
    from sciontool_py.dialect.spec import DialectSpec, Mapping

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
    tokens: bool = False,
) -> tuple[frozenset[str], Callable[[dict[str, object]], bytes]] | None:
    """(slow_keys, line): line(envelope) is the event line (head, data, newline) that
    event_data and the codec give, for an envelope without any of slow_keys; None when
    every envelope of this name takes the general steps. With tokens, line also takes the
    token counts (a call more per line: the stream asks for it only when they are there)."""
    if name == "agent-end" and spec.options:
        return None
    paths = mapping.fields if mapping is not None else {}
    handled = {path[0] for path in paths.values()} - _GENERAL_KEYS
    if tokens:
        handled |= TOKEN_KEYS
    body = []
    for field in DATA_FIELD_ORDER:
        if tokens and field in _EXTRACTED[1:]:
            continue  # written with the first, below
        if tokens and field == _EXTRACTED[0]:
            # Scion's shared extraction reads the counts the mapping left: on their own dict.
            body.append("    counts = {}")
            for counted in _EXTRACTED:
                writers = _writers(counted, paths, handled)
                if writers:
                    body += [
                        "    v = None",
                        *writers,
                        f"    if v is not None:\n        counts[{counted!r}] = v",
                    ]
            body.append("    extract(counts, envelope)  # nothing without token keys")
            body += [f"    v = counts.get({counted!r})\n{_emit(counted)}" for counted in _EXTRACTED]
            continue
        writers = _writers(field, paths, handled)
        if writers:
            body += ["    v = None", *writers, _emit(field)]
    source = "\n".join(
        [
            "def line(envelope):",
            "    get = envelope.get",
            "    out = [HEAD]",
            *body,
            "    if len(out) == 1:",
            "        return EMPTY",
            "    out[1] = out[1][1:]  # the first field's comma",
            "    out.append(b'}}\\n')",
            "    return b''.join(out)",
        ]
    )
    namespace: dict[str, object] = {
        "HEAD": head + b"{",
        "EMPTY": head + b"{}}\n",
        "QUOTE": b'"',
        "string": codec.string_json,
        "payload": codec.payload_string_body,
        "token": token_count,
    }
    if tokens:
        namespace["extract"] = extract_tokens
    # Our own source: keys and fields go in as repr() literals.
    exec(compile(source, f"<dialect {spec.name}: {raw_name}>", "exec"), namespace)
    return keys_that_fill_data(spec, raw_name) - handled, namespace["line"]  # type: ignore[return-value]


def _writers(field: str, paths: dict[str, tuple[str, ...]], handled: set[str]) -> list[str]:
    """event_data's steps that may set field, in its order, as statements that set v."""
    writers = []
    path = paths.get(field)
    # The default step reads the key named as the field, unless the mapping reads that very
    # key for it: its rule then covers the default's (a non-empty string, a boolean).
    if field in DEFAULT_KEYS and field in handled and path != (field,):
        writers.append(_writer("default success" if field == "success" else "string", (field,)))
    if path is not None and path[0] in handled:
        writers.append(_writer(FIELD_KINDS[field], path))
    if field == "file_path" and "tool_input" in handled:  # _file_path's part for tool_input
        writers.append(_writer("string", ("tool_input", "file_path")))
    return writers


def _writer(kind: str, path: tuple[str, ...]) -> str:
    """Statements that set v when event_data's step for a field of this kind sets the field:
    to its value, or for a payload that is not a string, to the body of its JSON string."""
    lines = [f"    x = get({path[0]!r})"]
    lines += [f"    x = x.get({key!r}) if type(x) is dict else None" for key in path[1:]]
    if kind == "string":
        lines.append("    if type(x) is str and x:\n        v = x")
    elif kind == "any":
        lines.append("    if type(x) is str:\n        if x:\n            v = x")
        lines.append("    elif x is not None:\n        v = payload(x)")
    elif kind == "number":
        lines.append("    if x is not None:\n        x = token(x)\n        if x:\n            v = x")
    elif kind == "boolean":
        lines.append("    if type(x) is bool:\n        v = x")
        lines.append("    elif type(x) is str and x.casefold() == 'success':  # Copilot's resultType")
        lines.append("        v = True")
    else:  # the default step of success: a boolean only
        lines.append("    if type(x) is bool:\n        v = x")
    return "\n".join(lines)


def _emit(field: str) -> str:
    """Statements that append the field, when v is set, as the codec writes it in data."""
    label = f',"{field}":'.encode()  # field names are plain ASCII identifiers
    if field == "success":
        return f"    if v is True:  # a false success is left out\n        out.append({label + b'true'!r})"
    if FIELD_KINDS[field] == "number":
        return f"    if v is not None:\n        out += ({label!r}, b'%d' % v)"
    if field in PAYLOAD_FIELDS:  # v is a string, or the body of the JSON string of a value
        quoted = label + b'"'
        return (
            f"    if type(v) is str:\n        out += ({label!r}, string(v))\n"
            f"    elif v is not None:\n        out += ({quoted!r}, v, QUOTE)"
        )
    return f"    if v is not None:\n        out += ({label!r}, string(v))"
