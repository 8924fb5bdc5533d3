"""agent-sessions.json: what must outlive one hook process to say what the agent is doing.

Harnesses fire hooks concurrently and out of order, so one event alone cannot
tell whether a tool still runs or a session already ended. This small file
holds, for the dialects that ask for it (docs/dialects.md, "Status true to the
agent"): the agent's own session id, the tool calls each session has open, the
sessions that ended, and the newest event time each session's harness
stamped, and the harness process each watched session's exit watcher waits for
(exit_watch.py). It is read and written under the state lock, through the same
hardened file layer as agent-info.json, and bounded: at most MAX_SESSIONS
sessions with open calls (and as many stamped), MAX_OPEN calls each, MAX_ENDED
ended sessions, MAX_SESSIONS watched, MAX_KEY characters per id or name. Anything that is not what this
module writes (damaged, planted, too large, a symlink) reads as empty: the
worst it can cost is the status of the calls in flight, never the hook.
"""

from __future__ import annotations

from sciontool_py import gojson
from sciontool_py.errors import JSONError
from sciontool_py.fs import read_bytes, write_atomic

FILE = "agent-sessions.json"
MAX_BYTES = 64 << 10  # far above what the caps below allow
MAX_SESSIONS = 8
MAX_OPEN = 32
MAX_ENDED = 16
MAX_KEY = 256


class Call:
    """One open tool call: its key (the harness's call id, else tool name and input), its tool,
    and whether the agent waits for the user while it runs (an input tool)."""

    __slots__ = ("key", "tool", "waits")

    def __init__(self, key: str, tool: str, waits: bool) -> None:
        self.key = key
        self.tool = tool
        self.waits = waits


class SessionState:
    __slots__ = ("session", "open", "ended", "stamps", "watched", "tokens", "usage", "dirty")

    def __init__(self) -> None:
        self.session = ""  # the session the latest session-start named: this agent's
        self.open: dict[str, list[Call]] = {}  # session id -> open calls, oldest first
        self.ended: list[str] = []  # oldest first
        self.stamps: dict[str, float] = {}  # session id -> the harness's newest event time seen
        self.watched: dict[str, list[int]] = {}  # session id -> [pid, start time] of its harness
        # Token usage counted from the transcript, and where it was read to (handlers/usage.py).
        self.tokens: dict[str, object] = {}
        self.usage: dict[str, object] = {}
        self.dirty = False

    def stamp(self, session: str, value: float) -> float:
        """Keep VALUE if it is the session's newest; returns the newest before it (0: none)."""
        before = self.stamps.pop(session, 0.0)  # re-inserted last: the most recently used session
        self.stamps[session] = max(before, value)
        while len(self.stamps) > MAX_SESSIONS:
            del self.stamps[next(iter(self.stamps))]
        self.dirty = self.dirty or value > before
        return before

    def calls(self, session: str) -> list[Call]:
        return self.open.get(session, [])

    def start_call(self, session: str, call: Call) -> None:
        calls = self.open.pop(session, [])  # re-inserted last: the most recently used session
        calls = [c for c in calls if c.key != call.key] + [call]
        self.open[session] = calls[-MAX_OPEN:]
        while len(self.open) > MAX_SESSIONS:
            del self.open[next(iter(self.open))]
        self.dirty = True

    def end_call(self, session: str, key: str) -> bool:
        """Forget the call; False when it was not open."""
        calls = self.open.get(session)
        if not calls:
            return False
        kept = [c for c in calls if c.key != key]
        if len(kept) == len(calls):
            return False
        if kept:
            self.open[session] = kept
        else:
            del self.open[session]
        self.dirty = True
        return True

    def end_calls(self, session: str) -> None:
        if self.open.pop(session, None) is not None:
            self.dirty = True

    def has_ended(self, session: str) -> bool:
        return session in self.ended

    def end_session(self, session: str) -> None:
        self.end_calls(session)
        if session not in self.ended:
            self.ended = [*self.ended, session][-MAX_ENDED:]
            self.dirty = True

    def start_session(self, session: str) -> None:
        self.end_calls(session)
        self.rejoin(session)

    def rejoin(self, session: str) -> None:
        """The session is live again and this agent's; its open calls are kept."""
        if session in self.ended:
            self.ended = [s for s in self.ended if s != session]
            self.dirty = True
        if session and session != self.session:
            self.session = session
            self.dirty = True

    def watch(self, session: str, harness: list[int]) -> None:
        """Record the harness process whose exit ends SESSION (its watcher's claim)."""
        self.watched.pop(session, None)  # re-inserted last: the most recently used session
        self.watched[session] = harness
        while len(self.watched) > MAX_SESSIONS:
            del self.watched[next(iter(self.watched))]
        self.dirty = True

    def unwatch(self, session: str) -> None:
        if self.watched.pop(session, None) is not None:
            self.dirty = True

    def has_open_calls(self) -> bool:
        return bool(self.open)

    def to_value(self) -> dict[str, object]:
        return {
            "session": self.session,
            "open": {s: [[c.key, c.tool, c.waits] for c in calls] for s, calls in self.open.items()},
            "ended": self.ended,
            **({"stamps": self.stamps} if self.stamps else {}),
            **({"watched": self.watched} if self.watched else {}),
            **({"tokens": self.tokens} if self.tokens else {}),
            **({"usage": self.usage} if self.usage else {}),
        }

    def to_json(self) -> str:
        return gojson.dumps(self.to_value())


def key_text(value: str) -> str:
    return value[:MAX_KEY]


def _text(value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_KEY:
        raise ValueError
    return value


def _count(value: object) -> int:
    """A positive whole number (JSON numbers decode as floats)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1 or value != int(value):
        raise ValueError
    return int(value)


def _parse(data: bytes) -> SessionState:
    return from_value(gojson.loads(gojson.decode_utf8(data)))


def from_value(value: object) -> SessionState:
    """The state a to_value() gave; ValueError for anything else."""
    if not isinstance(value, dict):
        raise ValueError
    state = SessionState()
    state.session = _text(value.get("session", ""))
    ended = value.get("ended", [])
    opened = value.get("open", {})
    if not isinstance(ended, list) or not isinstance(opened, dict) or len(opened) > MAX_SESSIONS:
        raise ValueError
    state.ended = [_text(s) for s in ended[-MAX_ENDED:]]
    stamps = value.get("stamps", {})
    if not isinstance(stamps, dict) or len(stamps) > MAX_SESSIONS:
        raise ValueError
    for session, stamp in stamps.items():
        if isinstance(stamp, bool) or not isinstance(stamp, (int, float)):
            raise ValueError
        state.stamps[_text(session)] = float(stamp)
    watched = value.get("watched", {})
    if not isinstance(watched, dict) or len(watched) > MAX_SESSIONS:
        raise ValueError
    for session, harness in watched.items():
        if not isinstance(harness, list) or len(harness) != 2:
            raise ValueError
        state.watched[_text(session)] = [_count(n) for n in harness]
    tokens, usage = value.get("tokens", {}), value.get("usage", {})
    if not isinstance(tokens, dict) or not isinstance(usage, dict):
        raise ValueError
    state.tokens, state.usage = tokens, usage
    for session, calls in opened.items():
        if not isinstance(calls, list) or not calls:
            raise ValueError
        parsed = []
        for call in calls[-MAX_OPEN:]:
            if not isinstance(call, list) or len(call) != 3 or not isinstance(call[2], bool):
                raise ValueError
            parsed.append(Call(_text(call[0]), _text(call[1]), call[2]))
        state.open[_text(session)] = parsed
    return state


def read(home: str) -> SessionState:
    """The state in HOME; empty when the file is missing or is anything but what write() leaves."""
    try:
        data = read_bytes(home, FILE, MAX_BYTES)
        return SessionState() if data is None else _parse(data)
    except (OSError, ValueError, JSONError):
        return SessionState()


def of_record(value: dict[str, object]) -> SessionState:
    """The state an agent's record holds (registry.py); empty when it holds none or a damaged one."""
    try:
        return from_value(value) if value else SessionState()
    except ValueError:
        return SessionState()


def write(home: str, state: SessionState) -> None:
    # Not fsynced: after a crash the worst is an empty state (calls in flight forgotten),
    # and an fsync per tool call would cost the hook more than the rest of its work.
    write_atomic(home, FILE, state.to_json(), mode=0o600, sync=False)
    state.dirty = False
