"""`sciontool agents`: every agent of this HOME as a person reads it.

Scion's words are for programs: its `working` means Ready, which a person
reading the file takes for busy. Each agent's record (registry.py) becomes
one row in plain words (Ready, Thinking, Running Bash, Waiting for you, Done,
Crashed (exit 137), Stopped, Limits exceeded), with Scion's words kept beside
them in --json. Liveness comes from the process, not from time: an agent
whose harness is gone without an end said reads Gone.
"""

from __future__ import annotations

import os
import time

from sciontool_py import fs, process, registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

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
    """One agent as listed: its record, what it is doing in plain words, and whether it runs."""

    __slots__ = ("record", "state", "live")

    def __init__(self, record: registry.Record, state: str, live: bool) -> None:
        self.record = record
        self.state = state
        self.live = live

    @property
    def title(self) -> str:
        return self.record.name or self.record.harness or "agent"

    def to_json(self) -> dict[str, object]:
        record = self.record
        running = record.process
        value: dict[str, object] = {
            "key": record.key,
            "name": record.name,
            "harness": record.harness,
            "session": record.session,
            "pid": running[0] if running else None,
            "project": record.project,
            "state": self.state,
            "activity": record.info.get("activity", ""),
            "phase": record.info.get("phase", "running" if self.live else ""),
            "since": _rfc3339(record.since),
            "updated": _rfc3339(record.updated),
            "message": record.message,
            "live": self.live,
        }
        if record.parent:
            value["parent"] = record.parent
        if record.exit_code is not None:
            value["exitCode"] = record.exit_code
        if record.tokens:
            value["tokens"] = record.tokens  # Scion's contract: input without cache reads and writes
        detail = record.info.get("detail")
        if isinstance(detail, dict) and isinstance(detail.get("message"), str):
            value["detail"] = detail["message"]
        return value


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
    if not live:
        return "Gone"  # its harness exited and nothing said how (the exit watcher was off)
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
        live = not registry.ended(record) and _live(record)
        found.append(Row(record, words(record, live), live))
    found.sort(key=lambda r: (not r.live, -r.record.updated))
    return found


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


def fit(text: str, width: int, tail: bool = False) -> str:
    """TEXT on one line of at most WIDTH characters, cut with an ellipsis (at its start: tail)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    return "…" + text[len(text) - width + 1 :] if tail else text[: width - 1] + "…"


def table(found: Sequence[Row], width: int, now: float) -> list[str]:
    """The rows as lines of at most WIDTH characters: agent, state, since, project, last message."""
    if not found:
        return ["No agents in this HOME yet (agents appear with their first hook)."]
    name_w = min(14, max(5, *(len(r.title) for r in found)))
    state_w = min(18, max(5, *(len(r.state) for r in found)))
    project_w = 14
    head = (
        f"{'AGENT':<{name_w}}  {'STATE':<{state_w}}  {'SINCE':>5}  {'PROJECT':<{project_w}}  "
        f"{'TOKENS':>9}  MESSAGE"
    )
    lines = [head[:width]]
    for row in found:
        record = row.record
        project = fit(short_path(record.project), project_w, tail=True)
        line = (
            f"{fit(row.title, name_w):<{name_w}}  {fit(row.state, state_w):<{state_w}}  "
            f"{ago(record.since, now):>5}  {project:<{project_w}}  {tokens(record.tokens):>9}  "
        )
        lines.append(line + fit(record.message, max(0, width - len(line))))
    return lines
