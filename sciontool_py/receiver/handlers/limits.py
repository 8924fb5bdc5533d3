"""agent-limits.json: turn and model-call counts against SCION_MAX_* limits."""

from __future__ import annotations

import os
import time

from sciontool_py import gojson
from sciontool_py.fs import failure, read_json_file, shared_tmp, write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sciontool_py.log.writer import AgentLog

FILE = "agent-limits.json"
TRIGGER_NAME = "scion-limits-exceeded"  # in shared_tmp(): Scion's init watches /tmp/scion-limits-exceeded
_COUNTED = {
    # event -> (count key, limit key)
    "agent-end": ("turn_count", "max_turns"),
    "model-end": ("model_call_count", "max_model_calls"),
}
_ORDER = ("turn_count", "model_call_count", "max_turns", "max_model_calls")


def _env_limit(name: str) -> int:
    try:
        return max(int(os.environ.get(name, "")), 0)
    except ValueError:
        return 0


def configured_limits() -> dict[str, int] | None:
    """The limits set in the environment, or None when there are none."""
    limits = {
        "max_turns": _env_limit("SCION_MAX_TURNS"),
        "max_model_calls": _env_limit("SCION_MAX_MODEL_CALLS"),
    }
    return limits if any(limits.values()) else None


def _as_count(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else 0


def read_state(home: str, limits: dict[str, int], log: AgentLog) -> dict[str, object]:
    """The counts so far (a missing or damaged file starts them at zero).

    Scion's init creates the file and its hook stops counting while the file
    is damaged, so limits are never enforced again; counting from zero and
    rewriting the file repairs it and keeps them enforced.
    """
    stored, problem = read_json_file(home, FILE)
    if problem:
        log.write("", f"Failed to read agent-limits.json: {problem}; counting from 0", level="ERROR")
    started = stored.get("started_at")
    return {
        "turn_count": _as_count(stored.get("turn_count")),
        "model_call_count": _as_count(stored.get("model_call_count")),
        **limits,
        "started_at": started
        if isinstance(started, str) and started
        else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _render(state: dict[str, object]) -> str:
    # Go struct order, MarshalIndent with two spaces, no trailing newline.
    lines = [f'  "{key}": {state[key]}' for key in _ORDER]
    lines.append(f'  "started_at": {gojson.dumps(state["started_at"])}')
    return "{\n" + ",\n".join(lines) + "\n}"


def count_event(
    home: str, event_name: str, limits: dict[str, int], log: AgentLog
) -> tuple[dict[str, object] | None, str]:
    """Count the event; returns the counts (None when this event is not counted) and the
    exceeded message ('' if within limits)."""
    keys = _COUNTED.get(event_name)
    if keys is None or not limits[keys[1]]:
        return None, ""
    state = read_state(home, limits, log)
    count_key, limit_key = keys
    count = state[count_key] = int(state[count_key]) + 1  # type: ignore[call-overload]
    try:
        write_atomic(home, FILE, _render(state))
    except OSError as exc:
        # As in Scion: logged, not fatal; this call still enforces the limit.
        log.write("", f"Failed to write agent-limits.json: {failure(exc)}", level="ERROR")
    limit = limits[limit_key]
    if count < limit:
        return state, ""
    return state, f"{limit_key} of {limit} exceeded (completed {count})"


def write_trigger(message: str, log: AgentLog) -> None:
    """Tell Scion's init to stop the agent; a failure is logged, as Scion does.

    Replaced like a state file: a symlink or FIFO planted there is replaced, never followed.
    """
    try:
        write_atomic(shared_tmp(), TRIGGER_NAME, message)
    except OSError as exc:
        log.write("", f"Failed to write limits trigger file: {failure(exc)}", level="ERROR")
