"""Session metrics as Scion's hook keeps them: one session's counts across hooks, and the hub report.

The counts live in $HOME/.scion/session-metrics.json, the file Scion's own
hook and init daemon use: the same keys (Go's), version 1, written 0600
through a temp file, fsync and rename, read at most 1 MiB, unknown
top-level keys kept, every read-modify-write under an exclusive flock of
the sibling `.lock` file polled every 10 ms for at most 2 s.  Every hook
counts its event there (exact however many run at once); session-end turns
the counts into a pending report `{summary, claim_pid, claimed_at}`.  A
report is sent by the process that claimed it; one whose claimer died, or
claimed it more than a minute ago, is abandoned and the next hook hands it
to a new worker.  A file that cannot be read or parsed starts over; every
problem is a DEBUG line in agent.log, never the hook's failure.
"""

from __future__ import annotations

import os
import time

from sciontool_py import gojson, process
from sciontool_py.console import TOOL_NAME_LIMIT, cut
from sciontool_py.fs import FileLock, ensure_folder, failure, read_json_file, remove, write_atomic
from sciontool_py.log.writer import timestamp
from sciontool_py.telemetry.settings import SPAN_NAMES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from sciontool_py.event import CanonicalEvent
    from sciontool_py.log.writer import AgentLog

FILE = ".scion/session-metrics.json"
LOCK = FILE + ".lock"
VERSION = 1
MAX_PENDING = 16
CLAIM_TTL_NS = 60 * 1_000_000_000
ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time, as it marshals it
_COUNTS = (
    "turn_count",
    "api_call_count",
    "tokens_input",
    "tokens_output",
    "tokens_cached",
    "tokens_reasoning",
)
_SESSION_EVENTS = ("tool-end", "model-end", "agent-end", "session-end")  # they carry the session's id
_MODEL_TOKENS = (
    ("tokens_input", "input_tokens"),
    ("tokens_output", "output_tokens"),
    ("tokens_cached", "cached_tokens"),
    ("tokens_reasoning", "reasoning_tokens"),
)


def debug(log: AgentLog, message: str) -> None:
    log.debug(f"Session metrics: {message}")


def count(log: AgentLog, event: CanonicalEvent, env: Mapping[str, str]) -> bool:
    """Count one event (the hook's part); True when a report waits for a sender."""
    if event.name not in SPAN_NAMES:
        return False
    try:
        ensure_folder(log.home, ".scion")
        with FileLock(log.home, LOCK):
            state = _load(log)
            if _apply(log, state, event, env):
                _save(log, state)
            return any(_abandoned(report, time.time_ns()) for report in _pending(state))
    except OSError as exc:
        debug(log, f"{event.name} not counted: {failure(exc)}")
        return False


def hand_over(log: AgentLog, pid: int) -> None:
    """Claim the abandoned reports for the worker pid, so that the hooks that follow do not start
    another sender for them (the worker also claims them itself, should this never run)."""
    _claim(log, pid)


def claim(log: AgentLog) -> list[dict[str, object]]:
    """The summaries of the reports this process now sends: abandoned ones and its own."""
    return _claim(log, os.getpid())


def complete(log: AgentLog, session_ids: list[str]) -> None:
    """Drop this process's reports for session_ids once their send was attempted (Scion drops a
    report the hub refused too, so it is not sent forever)."""
    pid = os.getpid()
    try:
        with FileLock(log.home, LOCK):
            state = _load(log)
            kept = [
                r
                for r in _pending(state)
                if not (_int(r.get("claim_pid")) == pid and _summary(r).get("SessionID") in session_ids)
            ]
            if len(kept) != len(_pending(state)):
                state["pending"] = kept
                _save(log, state)
    except OSError as exc:
        debug(log, f"reports sent but not marked so: {failure(exc)}")


def payload(summary: dict[str, object], now_ns: int) -> dict[str, object]:
    """The hub's `agent_metrics` body for a summary (Scion's MetricsPayload; empty fields left out)."""
    session: dict[str, object] = {"id": _str(summary.get("SessionID"))}
    session["started_at"] = _rfc3339(_str(summary.get("StartedAt")), now_ns)
    session["ended_at"] = _rfc3339(_str(summary.get("EndedAt")), now_ns)
    for key, field in (("status", "Status"), ("turn_count", "TurnCount"), ("model", "Model")):
        if summary.get(field):
            session[key] = summary[field]
    tokens: dict[str, object] = {
        "input": _int(summary.get("TokensInput")),
        "output": _int(summary.get("TokensOutput")),
    }
    for key, field in (("cached", "TokensCached"), ("reasoning", "TokensReasoning")):
        if _int(summary.get(field)):
            tokens[key] = _int(summary.get(field))
    body: dict[str, object] = {
        "type": "agent_metrics",
        "agent_id": _str(summary.get("AgentID")),
        "timestamp": _rfc3339("", now_ns),
        "session": session,
        "tokens": tokens,
    }
    tools = _tools(summary.get("ToolCalls"))
    if tools:
        body["tools"] = tools
    return body


def _apply(log: AgentLog, state: dict[str, object], event: CanonicalEvent, env: Mapping[str, str]) -> bool:
    """Scion's aggregator rules for one event; False when the event is ignored."""
    agg = _aggregator(state)
    session_id = event.text("session_id")
    if state.get("closed") is True:
        if not session_id or session_id == agg["session_id"]:
            return False  # the session was closed (by Scion's init at shutdown): late events do not count
        state["closed"] = False
        agg = _zero()
    elif agg["session_id"] and session_id and agg["session_id"] != session_id:
        debug(
            log,
            f"{event.name} of session {session_id} discards the unreported counts of {agg['session_id']}",
        )
        agg = _zero()
    state["aggregator"] = agg
    name = event.name
    if name in _SESSION_EVENTS:
        _observe(agg, session_id)
    if (
        name != "model-end"
        and _int(event.data.get("api_calls"))
        and env.get("SCION_USAGE_SOURCE", "") != "native"
    ):
        # The model calls a turn's transcript told of (handlers/usage.py), with their tokens.
        agg["api_call_count"] = _int(agg["api_call_count"]) + _int(event.data.get("api_calls"))
        for key, field in _MODEL_TOKENS:
            agg[key] = _int(agg[key]) + _int(event.data.get(field))
    if name == "session-start":
        _start(agg, session_id)
    elif name == "tool-end":
        tools = agg.setdefault("tool_calls", {})
        assert isinstance(tools, dict)
        # Cut as agent-info cuts it: a 2 MB name would push the file past its 1 MiB limit.
        name = cut(event.text("tool_name"), TOOL_NAME_LIMIT)
        stats = tools.setdefault(name, {"calls": 0, "success": 0, "error": 0})
        stats["calls"] += 1
        stats["error" if event.text("error") else "success"] += 1
    elif name == "model-end" and env.get("SCION_USAGE_SOURCE", "") != "native":
        # With native usage Scion's deriver counts the calls and their tokens, never both.
        agg["api_call_count"] = _int(agg["api_call_count"]) + 1
        for key, field in _MODEL_TOKENS:
            agg[key] = _int(agg[key]) + _int(event.data.get(field))
    elif name == "agent-end":
        agg["turn_count"] = _int(agg["turn_count"]) + 1
    elif name == "session-end":
        summary = _finalize(agg, event, env)
        state["aggregator"] = _zero()
        if summary["SessionID"]:
            _add_pending(log, state, summary)
        else:
            debug(log, "a session without an id is not reported (the hub requires one)")
    return True


def _zero() -> dict[str, object]:
    return {
        "session_id": "",
        "started_at": ZERO_TIME,
        "open": False,
        "implicit": False,
        **dict.fromkeys(_COUNTS, 0),
    }


def _reset(agg: dict[str, object], session_id: str) -> None:
    agg.update(_zero(), session_id=session_id, started_at=timestamp(time.time_ns()), open=True)
    agg.pop("tool_calls", None)


def _start(agg: dict[str, object], session_id: str) -> None:
    """A session-start: keeps an open session of the same id (Claude sends one on /compact and
    on resume) or one opened implicitly without a conflicting id; anything else starts over."""
    same = bool(session_id) and agg["session_id"] == session_id
    implicit_fits = agg["implicit"] is True and (not agg["session_id"] or not session_id)
    if agg["open"] is True and (same or implicit_fits):
        if not agg["session_id"]:
            agg["session_id"] = session_id
        agg["implicit"] = False
        return
    _reset(agg, session_id)


def _observe(agg: dict[str, object], session_id: str) -> None:
    """Any other event of a session: opens one (implicitly) when none is open, adopts its id."""
    if agg["open"] is not True:
        _reset(agg, session_id)
        agg["implicit"] = True
    elif not agg["session_id"]:
        agg["session_id"] = session_id


def _finalize(agg: dict[str, object], event: CanonicalEvent, env: Mapping[str, str]) -> dict[str, object]:
    """The summary of the session session-end closes (Go's SessionSummary, its field names)."""
    ended = timestamp(time.time_ns())
    totals = [_int(event.data.get(field)) for _, field in _MODEL_TOKENS]
    if any(totals):  # the harness's own totals win, all four together
        for (key, _), value in zip(_MODEL_TOKENS, totals, strict=True):
            agg[key] = value
    started = _str(agg["started_at"])
    return {
        "SessionID": agg["session_id"],
        "AgentID": env.get("SCION_AGENT_ID", ""),
        "ProjectID": env.get("SCION_PROJECT_ID", ""),
        "StartedAt": ended if started in ("", ZERO_TIME) else started,
        "EndedAt": ended,
        "Status": "error" if event.text("error") else "completed",
        "Model": env.get("SCION_MODEL", ""),
        "TurnCount": _int(agg["turn_count"]),
        "APICallCount": _int(agg["api_call_count"]),
        "TokensInput": _int(agg["tokens_input"]),
        "TokensOutput": _int(agg["tokens_output"]),
        "TokensCached": _int(agg["tokens_cached"]),
        "TokensReasoning": _int(agg["tokens_reasoning"]),
        "ToolCalls": _tools(agg.get("tool_calls")),
    }


def _add_pending(log: AgentLog, state: dict[str, object], summary: dict[str, object]) -> None:
    """A new report, unclaimed (the worker that sends it claims it); one of the same session is
    replaced, and past MAX_PENDING the oldest are dropped."""
    kept = [r for r in _pending(state) if _summary(r).get("SessionID") != summary["SessionID"]]
    kept.append({"summary": summary, "claimed_at": ZERO_TIME})
    for report in kept[:-MAX_PENDING]:
        debug(
            log,
            f"dropping the unsent report of session {_summary(report).get('SessionID')}: too many pending",
        )
    state["pending"] = kept[-MAX_PENDING:]


def _claim(log: AgentLog, pid: int) -> list[dict[str, object]]:
    try:
        with FileLock(log.home, LOCK):
            state = _load(log)
            now = time.time_ns()
            mine = []
            for report in _pending(state):
                if _int(report.get("claim_pid")) == pid or _abandoned(report, now):
                    report["claim_pid"] = pid
                    report["claimed_at"] = timestamp(now)
                    mine.append(_summary(report))
            if mine:
                _save(log, state)
            return mine
    except OSError as exc:
        debug(log, f"reports not claimed: {failure(exc)}")
        return []


def _abandoned(report: dict[str, object], now_ns: int) -> bool:
    pid = _int(report.get("claim_pid"))
    if pid <= 0 or not _alive(pid):
        return True
    claimed = _parse_time(_str(report.get("claimed_at")))
    return claimed is None or now_ns - claimed > CLAIM_TTL_NS


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process (Scion's init daemon runs as root)
    # A dead claimer whose parent never reaps it (an init that does not) still answers kill 0.
    found = process.stat(pid)
    return found is None or found[1] != b"Z"  # unreadable: alive, as kill 0 said


def _load(log: AgentLog) -> dict[str, object]:
    """The state file's object, normalized; a file that is not usable reads as a new one."""
    state, problem = read_json_file(log.home, FILE)
    if problem:
        debug(log, f"starting over: {problem}")
    elif state and state.get("version") != VERSION:
        debug(log, f"starting over: {os.path.join(log.home, FILE)} has version {state.get('version')!r}")
        state = {}
    state["version"] = VERSION
    state["aggregator"] = _aggregator(state)
    state["closed"] = state.get("closed") is True
    state["pending"] = [r for r in _pending(state) if _summary(r)]
    return state


def _aggregator(state: dict[str, object]) -> dict[str, object]:
    found = state.get("aggregator")
    agg = _zero()
    if isinstance(found, dict):
        for key, default in agg.items():
            value = found.get(key)
            if type(default) is int:
                agg[key] = _int(value)
            elif type(value) is type(default):
                agg[key] = value
        tools = _tools(found.get("tool_calls"))
        if tools:
            agg["tool_calls"] = tools
    return agg


def _pending(state: dict[str, object]) -> list[dict[str, object]]:
    found = state.get("pending")
    return [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []


def _summary(report: dict[str, object]) -> dict[str, object]:
    found = report.get("summary")
    return found if isinstance(found, dict) and _str(found.get("SessionID")) else {}


def _tools(found: object) -> dict[str, dict[str, int]]:
    if not isinstance(found, dict):
        return {}
    tools = {}
    for name, stats in found.items():
        if isinstance(stats, dict):
            tools[name] = {key: _int(stats.get(key)) for key in ("calls", "success", "error")}
    return tools


def _save(log: AgentLog, state: dict[str, object]) -> None:
    agg = _aggregator(state)
    known = ("version", "aggregator", "closed", "pending")
    idle = not state["closed"] and not state["pending"] and not agg["session_id"] and agg["open"] is not True
    if idle and not set(state) - set(known):
        remove(log.home, FILE)  # nothing left worth keeping, as Scion does
        return
    write_atomic(log.home, FILE, gojson.dumps(state), mode=0o600)


def _int(value: object) -> int:
    """A count as the file holds it: Go's decoder (gojson's too) reads every number as a float."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value if type(value) is int else 0


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _rfc3339(text: str, default_ns: int) -> str:
    """A time as the hub takes it: UTC RFC 3339, whole seconds."""
    ns = _parse_time(text)
    seconds = (default_ns if ns is None else ns) // 1_000_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _parse_time(text: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 time as Go writes one; None when it is not one
    (or is Go's zero time). Without datetime or strptime: both would import more than the hook has."""
    date, _, clock = text.partition("T")
    try:
        year, month, day = (int(part) for part in date.split("-"))
        offset = 0
        if clock.endswith("Z"):
            clock = clock[:-1]
        else:
            sign = 1 if clock[-6] == "+" else -1 if clock[-6] == "-" else 0
            if not sign:
                return None
            hours, minutes = clock[-5:].split(":")
            offset, clock = sign * (int(hours) * 3600 + int(minutes) * 60), clock[:-6]
        hh, mm, rest = clock.split(":")
        whole, _, fraction = rest.partition(".")
        nanos = int((fraction + "000000000")[:9]) if fraction else 0
    except (ValueError, IndexError):
        return None
    if year <= 1 or not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    seconds = _days(year, month, day) * 86400 + int(hh) * 3600 + int(mm) * 60 + int(whole) - offset
    return seconds * 1_000_000_000 + nanos


def _days(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    of_era_days = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146097 + of_era_days - 719468
