"""`sciontool agents`: every agent of this HOME as a person reads it.

Scion's words are for programs: its `working` means Ready, which a person
reading the file takes for busy. Each agent's record (registry.py) becomes
one row in plain words (Ready, Thinking, Running Bash, Waiting for you, Done,
Crashed (exit 137), Stopped, Limits exceeded), with Scion's words kept beside
them in --json. Liveness comes from the process, not from time: an agent
whose harness is gone without an end said reads as the exit watcher would
say it (Crashed mid-turn or mid-tool, else Stopped), guessed and not written.

The screen is the user's: nothing an agent controls (a tool name, a message,
a project folder, a session id) reaches it as a control character (C0, DEL,
C1, a format character such as a bidi override or a lone surrogate: each
shows as "?"), and widths are terminal columns (East Asian wide 2, combining
0), so each line fits the terminal's width.
"""

from __future__ import annotations

import os
import time
import unicodedata

from sciontool_py import fs, process, registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from sciontool_py.receiver.handlers.agent_end import Outcome

_WORDS = {
    "thinking": "Thinking",
    "waiting_for_input": "Waiting for you",
    "blocked": "Blocked",
    "completed": "Done",
    "limits_exceeded": "Limits exceeded",
    "stalled": "Stalled",
    "offline": "Offline",
    "crashed": "Crashed",
}


class Row:
    """One agent as listed: its record, what it is doing in plain words, whether it runs, and
    the end the exit watcher would say of a harness gone unsaid (guessed: nothing written)."""

    __slots__ = ("record", "state", "live", "guessed")

    def __init__(
        self, record: registry.Record, state: str, live: bool, guessed: Outcome | None = None
    ) -> None:
        self.record = record
        self.state = state
        self.live = live
        self.guessed = guessed

    @property
    def title(self) -> str:
        return self.record.name or self.record.harness or "agent"

    def to_json(self) -> dict[str, object]:
        record = self.record
        running = record.process
        info = record.info
        message = record.message
        if self.guessed is not None:  # what the watcher would write: phase, activity, detail
            info = {"phase": self.guessed.phase}
            if self.guessed.message:
                info["detail"] = {"message": self.guessed.message}
            message = self.guessed.line
        value: dict[str, object] = {
            "key": record.key,
            "name": record.name,
            "harness": record.harness,
            "session": record.session,
            "pid": running[0] if running else None,
            "project": record.project,
            "state": self.state,
            "activity": info.get("activity", ""),
            "phase": info.get("phase", "running" if self.live else ""),
            "since": _rfc3339(record.since),
            "updated": _rfc3339(record.updated),
            "message": message,
            "live": self.live,
        }
        if self.guessed is not None:
            value["guessed"] = True
        if record.parent:
            value["parent"] = record.parent
        if record.exit_code is not None:
            value["exitCode"] = record.exit_code
        if record.resumed:
            value["resumed"] = record.resumed  # how its session's previous process ended
        if record.tokens:
            value["tokens"] = record.tokens  # Scion's contract: input without cache reads and writes
        detail = info.get("detail")
        if isinstance(detail, dict) and isinstance(detail.get("message"), str):
            value["detail"] = detail["message"]
        return value


def dumps(value: object, indent: int | None = None) -> str:
    """JSON with every control character escaped: the stdlib's leaves DEL as it is."""
    import json

    return json.dumps(value, indent=indent).replace("\x7f", "\\u007f")


def words(record: registry.Record, live: bool) -> str:
    """What the agent is doing, as a person says it."""
    info = record.info
    phase, activity = info.get("phase"), info.get("activity")
    if phase == "error":
        return f"Crashed (exit {record.exit_code})" if record.exit_code is not None else "Crashed"
    if activity == "limits_exceeded":
        return "Limits exceeded"
    if phase == "stopped":
        return "Stopped"
    if activity == "executing":
        tool = info.get("toolName")
        return f"Running {tool}" if isinstance(tool, str) and tool else "Running a tool"
    if activity == "working" or activity is None:
        return "Working" if record.turn else "Ready"  # Scion's working: Ready between turns
    return _WORDS.get(str(activity), str(activity).replace("_", " ").capitalize())


def _live(record: registry.Record) -> bool:
    running = record.process
    return running is None or process.alive(running)


def rows(home: str) -> list[Row]:
    """Every agent of HOME: the ones that run first, then the most recent."""
    found = []
    fs.settled(home)
    for record in registry.records(home):
        ended = registry.ended(record)
        live = not ended and _live(record)
        if ended or live:
            found.append(Row(record, words(record, live), live))
            continue
        guessed = _guess(home, record)
        found.append(Row(record, "Crashed" if guessed.crashed else "Stopped", False, guessed))
    found.sort(key=lambda r: (not r.live, -r.record.updated))
    return found


def _guess(home: str, record: registry.Record) -> Outcome:
    """The end the helper says of an agent whose harness is gone (it was off, or killed too): a
    crash when a turn or a call was under way, else a stop."""
    from sciontool_py.receiver import harness_exit

    return harness_exit.guess(home, record)


def _rfc3339(stamp: float) -> str:
    if not stamp:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def ago(stamp: float, now: float) -> str:
    """'5s', '3m', '2h', '4d': how long since STAMP."""
    if not stamp:
        return "-"
    seconds = max(0, int(now - stamp))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def short_path(path: str) -> str:
    """A project folder as a person writes it: ~ for HOME."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home) :]
    return path


def tokens(counts: dict[str, object]) -> str:
    """'12k/830': the tokens in (with cache reads and writes) and out, '-' before any."""

    def number(name: str) -> int:
        value = counts.get(name)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    taken = number("input") + number("cache_read") + number("cache_write")
    if not taken and not number("output"):
        return "-"
    return f"{short(taken)}/{short(number('output'))}"


def short(n: int) -> str:
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n / size:.1f}".rstrip("0").rstrip(".") + unit
    return str(n)


def clean(text: str) -> str:
    """TEXT safe on a terminal, on one line: whitespace runs as one space, each control or format
    character (an escape sequence's ESC, a bidi override, a lone surrogate) as "?"."""
    text = " ".join(text.split())
    if text.isprintable():
        return text  # the usual case: no character to look at
    return "".join(c if c.isprintable() or c == " " else "?" for c in text)


def width_of(char: str) -> int:
    """The terminal columns of one printable character: East Asian wide or full 2, combining 0."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def columns(text: str) -> int:
    if text.isascii():
        return len(text)
    return sum(map(width_of, text))


def fit(text: str, width: int, tail: bool = False) -> str:
    """TEXT cleaned, on one line of at most WIDTH columns, cut with an ellipsis (at its start:
    tail)."""
    return cut(clean(text), width, tail)


def cut(text: str, width: int, tail: bool = False) -> str:
    """TEXT (clean already) in at most WIDTH columns, cut with an ellipsis (at its start: tail)."""
    if columns(text) <= width:
        return text
    if width <= 0:
        return ""
    kept, used = [], 1  # the ellipsis's column
    for char in reversed(text) if tail else text:
        used += width_of(char)
        if used > width:
            break
        kept.append(char)
    return "…" + "".join(reversed(kept)) if tail else "".join(kept) + "…"


def pad(text: str, width: int, tail: bool = False) -> str:
    """TEXT fit to WIDTH columns, then spaces up to them."""
    text = fit(text, width, tail)
    return text + " " * (width - columns(text))


def table(found: Sequence[Row], width: int, now: float) -> list[str]:
    """The rows as lines of at most WIDTH columns: agent, state, since, project, last message."""
    if not found:
        return ["No agents in this HOME yet (agents appear with their first hook)."[:width]]
    name_w = min(14, max(5, *(columns(clean(r.title)) for r in found)))
    state_w = min(18, max(5, *(columns(clean(r.state)) for r in found)))
    project_w = 14
    head = (
        f"{'AGENT':<{name_w}}  {'STATE':<{state_w}}  {'SINCE':>5}  {'PROJECT':<{project_w}}  "
        f"{'TOKENS':>9}  MESSAGE"
    )
    lines = [head[:width]]
    for row in found:
        record = row.record
        message = row.guessed.line if row.guessed is not None else record.message
        line = (
            f"{pad(row.title, name_w)}  {pad(row.state, state_w)}  "
            f"{ago(record.since, now):>5}  {pad(short_path(record.project), project_w, tail=True)}  "
            f"{tokens(record.tokens):>9}  "
        )
        line = cut(line, width)  # a terminal too narrow for the columns before the message
        lines.append(line + fit(message, max(0, width - columns(line))))
    return lines
