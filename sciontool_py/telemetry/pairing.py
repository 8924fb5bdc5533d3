"""Open spans across hook processes: a start waits here for its end.

Scion's hook sees one event per process, so its tool, model and turn
starts are never ended and no span has a duration.  The drainer keeps
each start it exports (its name, ids, time and attributes) in
$HOME/.scion/telemetry-spans.json until the matching end comes, then
exports one span from the start's time to the end's.  Only the drainer
(one at a time: it holds the spool lock) reads and writes it, through the
hardened file layer (0600, no symlink followed, 1 MiB read cap).  Bounded:
at most MAX_OPEN starts (the oldest dropped), none older than TTL_NS.  An
entry that could not become a span (an id that is not hex, a time out of
range: the agent can write the file) is dropped when the file is read, and
the file rewritten without it.
"""

from __future__ import annotations

import json

from sciontool_py.fs import ensure_folder, failure, read_bytes, write_atomic

FILE = ".scion/telemetry-spans.json"
VERSION = 1
INT64_MAX = (1 << 63) - 1  # OTLP's times and counts are 64-bit
MAX_OPEN = 32  # starts of 8 KiB attribute values each stay well inside the 1 MiB read cap
TTL_NS = 3600 * 1_000_000_000  # a start an hour old is not ended by anything any more


class OpenSpans:
    """The open starts, oldest first; `changed` says whether to save."""

    def __init__(self, home: str) -> None:
        self.home = home
        state, self.problem = _read(home)
        found = state.get("open") if state.get("version") == VERSION else None
        self.entries: list[dict[str, object]] = (
            [e for e in found if _valid(e)] if isinstance(found, list) else []
        )
        self.changed = isinstance(found, list) and len(self.entries) != len(found)
        self.dropped: list[dict[str, object]] = []

    def open(self, entry: dict[str, object]) -> None:
        """Keep a start (keys: key, name, trace_id, span_id, start_ns, attributes)."""
        self.entries.append(entry)
        self.changed = True
        if len(self.entries) > MAX_OPEN:
            self.dropped += self.entries[:-MAX_OPEN]
            self.entries = self.entries[-MAX_OPEN:]

    def close(self, key: str, now_ns: int) -> dict[str, object] | None:
        """The oldest open start of key (parallel calls of one tool end in the order they began),
        taken out; None when there is none (or it expired)."""
        self.expire(now_ns)
        for index, entry in enumerate(self.entries):
            if entry["key"] == key:
                self.changed = True
                return self.entries.pop(index)
        return None

    def expire(self, now_ns: int) -> None:
        fresh = [e for e in self.entries if now_ns - _start(e) <= TTL_NS]
        if len(fresh) != len(self.entries):
            self.dropped += [e for e in self.entries if now_ns - _start(e) > TTL_NS]
            self.entries = fresh
            self.changed = True

    def save(self) -> None:
        if self.changed:
            ensure_folder(self.home, ".scion")
            data = json.dumps({"version": VERSION, "open": self.entries}, separators=(",", ":"))
            write_atomic(self.home, FILE, data, 0o600, sync=False)
            self.changed = False


def _read(home: str) -> tuple[dict[str, object], str]:
    """The file's object and why it was not usable ('' when it was, or is missing). The json
    package, not gojson: nanosecond times need integers, which Go's float64 would round."""
    try:
        data = read_bytes(home, FILE, private=True)
        found = json.loads(data) if data is not None else {}
    except OSError as exc:
        return {}, failure(exc)
    except ValueError as exc:
        return {}, f"{FILE}: {exc}"
    except RecursionError:  # the json package recurses: past about 1,000 levels the file is damaged
        return {}, f"{FILE}: nested too deeply"
    return (found, "") if isinstance(found, dict) else ({}, f"{FILE}: not a JSON object")


def _start(entry: dict[str, object]) -> int:
    value = entry["start_ns"]
    return value if type(value) is int else 0


def clean(text: str) -> str:
    """text with each lone surrogate (which UTF-8, and so protobuf, refuses) as U+FFFD, as Go
    decodes one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


def _valid(entry: object) -> bool:
    if not isinstance(entry, dict):
        return False
    start = entry.get("start_ns")
    attributes = entry.get("attributes")
    return (
        _text(entry.get("key"))
        and _text(entry.get("name"))
        and _hex_id(entry.get("trace_id"), 32)
        and _hex_id(entry.get("span_id"), 16)
        and type(start) is int
        and 0 <= start <= INT64_MAX
        and isinstance(attributes, dict)
        and all(_text(key) and _attribute(value) for key, value in attributes.items())
    )


def _text(value: object) -> bool:
    return isinstance(value, str) and clean(value) is value


def _hex_id(value: object, digits: int) -> bool:
    """An OTLP id as its hex digits: that many, not all zero."""
    return (
        isinstance(value, str)
        and len(value) == digits
        and value.isascii()
        and not value.strip("0123456789abcdefABCDEF")
        and bool(value.strip("0"))
    )


def _attribute(value: object) -> bool:
    return _text(value) or (type(value) is int and abs(value) <= INT64_MAX)
