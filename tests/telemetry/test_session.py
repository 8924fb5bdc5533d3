"""Session metrics across hook processes (SPEC §7): Scion's aggregator rules in session-metrics.json."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_BOUND, event, log_entries

from sciontool_py.log.writer import AgentLog
from sciontool_py.telemetry import session

ENV = {"SCION_AGENT_ID": "a1", "SCION_PROJECT_ID": "p1", "SCION_MODEL": "m1"}


def count(home: Path, name: str, env: dict[str, str] | None = None, **data: object) -> bool:
    return session.count(AgentLog(str(home)), event(name, **data), env or ENV)


def state(home: Path) -> dict[str, object]:
    return json.loads((home / session.FILE).read_text())  # type: ignore[no-any-return]


def summaries(home: Path) -> list[dict[str, object]]:
    return [r["summary"] for r in state(home)["pending"]]  # type: ignore[index, union-attr]


def test_a_session_becomes_one_pending_report_with_its_counts(home: Path) -> None:
    assert not count(home, "session-start", session_id="s1", source="startup")
    for tool, error in (("Bash", ""), ("Bash", "exit 1"), ("Read", "")):
        count(home, "tool-end", session_id="s1", tool_name=tool, **({"error": error} if error else {}))
    count(home, "agent-end", session_id="s1")
    count(home, "agent-end", session_id="s1")
    written = state(home)
    assert written["version"] == 1 and written["closed"] is False and written["pending"] == []
    assert written["aggregator"]["open"] is True and written["aggregator"]["turn_count"] == 2  # type: ignore[index]
    assert count(home, "session-end", session_id="s1", reason="exit")  # a report waits for a sender
    [summary] = summaries(home)
    assert summary["SessionID"] == "s1" and summary["Status"] == "completed"
    assert (summary["AgentID"], summary["ProjectID"], summary["Model"]) == ("a1", "p1", "m1")
    assert summary["TurnCount"] == 2
    assert summary["ToolCalls"] == {
        "Bash": {"calls": 2, "success": 1, "error": 1},
        "Read": {"calls": 1, "success": 1, "error": 0},
    }
    assert state(home)["aggregator"]["open"] is False  # type: ignore[index]
    assert stat.S_IMODE((home / session.FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE((home / ".scion").stat().st_mode) == 0o700


def test_model_calls_and_tokens_unless_usage_is_native(home: Path) -> None:
    count(home, "model-end", session_id="s", input_tokens=10, output_tokens=4, cached_tokens=2)
    count(home, "model-end", {**ENV, "SCION_USAGE_SOURCE": "native"}, session_id="s", input_tokens=99)
    agg = state(home)["aggregator"]
    assert (agg["api_call_count"], agg["tokens_input"], agg["tokens_output"], agg["tokens_cached"]) == (
        1,
        10,
        4,
        2,
    )  # type: ignore[index]
    assert agg["implicit"] is True  # type: ignore[index]  # no session-start seen: opened by the first event


def test_session_end_totals_win_all_together(home: Path) -> None:
    count(home, "model-end", session_id="s", input_tokens=10, output_tokens=4, cached_tokens=2)
    count(home, "session-end", session_id="s", output_tokens=50)
    [summary] = summaries(home)
    assert (summary["TokensInput"], summary["TokensOutput"], summary["TokensCached"]) == (0, 50, 0)


def test_an_event_of_another_session_starts_over(home: Path) -> None:
    count(home, "tool-end", session_id="old", tool_name="Bash")
    count(home, "agent-end", session_id="new")
    agg = state(home)["aggregator"]
    assert (agg["session_id"], agg["turn_count"], agg.get("tool_calls")) == ("new", 1, None)  # type: ignore[union-attr]


def test_a_repeated_session_start_keeps_the_counts(home: Path) -> None:
    count(home, "session-start", session_id="s")
    count(home, "agent-end", session_id="s")
    count(home, "session-start", session_id="s", source="compact")  # Claude's /compact and resume
    assert state(home)["aggregator"]["turn_count"] == 1  # type: ignore[index]


def test_after_the_closed_marker_that_sessions_events_are_ignored(home: Path) -> None:
    (home / ".scion").mkdir()
    closed = {"version": 1, "aggregator": {"session_id": "s", "open": False}, "closed": True, "extra": [1]}
    (home / session.FILE).write_text(json.dumps(closed))
    count(home, "agent-end", session_id="s")
    count(home, "session-end", session_id="s")
    assert json.loads((home / session.FILE).read_text()) == closed  # untouched
    count(home, "agent-end", session_id="t")  # another session: counted from zero
    assert (state(home)["closed"], state(home)["aggregator"]["turn_count"]) == (False, 1)  # type: ignore[index]


def test_unknown_top_level_keys_are_kept(home: Path) -> None:
    (home / ".scion").mkdir()
    (home / session.FILE).write_text(json.dumps({"version": 1, "scion_future": {"x": 1}}))
    count(home, "agent-end", session_id="s")
    assert state(home)["scion_future"] == {"x": 1}


@pytest.mark.parametrize(
    "content",
    [
        b"{broken",
        b"[1, 2]",
        json.dumps({"version": 2, "aggregator": {"turn_count": 9}}).encode(),
        b" " * (1 << 20) + b"{}",
    ],
    ids=["not-json", "not-an-object", "other-version", "over-1-MiB"],
)
def test_a_damaged_or_oversized_file_starts_over_with_a_debug_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    monkeypatch.setenv("SCION_LOG_LEVEL", "debug")
    (home / ".scion").mkdir()
    (home / session.FILE).write_bytes(content)
    count(home, "agent-end", session_id="s")
    assert state(home)["aggregator"]["turn_count"] == 1  # type: ignore[index]
    [(level, _, message)] = log_entries(home)
    assert level == "DEBUG" and message.startswith("Session metrics: starting over: ")


def test_a_symlink_at_the_file_is_replaced_never_followed(home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text('{"version": 1}')
    (home / ".scion").mkdir()
    (home / session.FILE).symlink_to(outside)
    count(home, "agent-end", session_id="s")
    assert outside.read_text() == '{"version": 1}'
    assert not (home / session.FILE).is_symlink() and state(home)["aggregator"]["turn_count"] == 1  # type: ignore[index]


def test_at_most_16_reports_wait_the_oldest_dropped_one_per_session(home: Path) -> None:
    for i in range(session.MAX_PENDING + 2):
        count(home, "session-end", session_id=f"s{i}")
    count(home, "session-end", session_id="s5")  # replaces the report of s5, now the newest
    ids = [s["SessionID"] for s in summaries(home)]
    assert ids == [f"s{i}" for i in range(2, session.MAX_PENDING + 2) if i != 5] + ["s5"]


def test_a_session_without_an_id_is_not_reported(home: Path) -> None:
    count(home, "agent-end")
    assert not count(home, "session-end")
    assert not (home / session.FILE).exists()  # nothing left worth keeping: removed, as Scion does


def test_a_report_is_abandoned_when_unclaimed_its_claimer_dead_or_its_claim_a_minute_old(home: Path) -> None:
    count(home, "session-end", session_id="s")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    now = time.time()
    cases = [
        (0, now, True),
        (int(dead.stdout), now, True),
        (os.getpid(), now, False),  # alive and fresh: left to its claimer
        (os.getpid(), now - 61, True),
    ]
    for pid, claimed_at, abandoned in cases:
        written = state(home)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(claimed_at)) + ".5+00:00"
        written["pending"][0].update(claim_pid=pid, claimed_at=stamp)  # type: ignore[index]
        (home / session.FILE).write_text(json.dumps(written))
        assert count(home, "tool-end", session_id="s", tool_name="x") is abandoned, (pid, claimed_at)


def test_a_claimer_sends_then_completes_its_reports(home: Path) -> None:
    count(home, "session-end", session_id="s", reason="exit")
    [summary] = session.claim(AgentLog(str(home)))
    assert summary["SessionID"] == "s"
    assert state(home)["pending"][0]["claim_pid"] == os.getpid()  # type: ignore[index]
    assert not count(home, "tool-end", session_id="t", tool_name="x")  # claimed by a live process
    session.complete(AgentLog(str(home)), ["s"])
    assert state(home)["pending"] == []


def test_the_hub_body_is_scions_metrics_payload() -> None:
    summary = {
        "SessionID": "s",
        "AgentID": "a1",
        "StartedAt": "2026-11-30T03:12:45.123456789Z",
        "EndedAt": "2026-11-30T05:12:46+02:00",
        "Status": "completed",
        "Model": "",
        "TurnCount": 0,
        "TokensInput": 10,
        "TokensOutput": 0,
        "TokensCached": 2,
        "TokensReasoning": 0,
        "ToolCalls": {"Bash": {"calls": 1, "success": 1, "error": 0}},
    }
    now = 1_800_000_000 * 10**9
    assert session.payload(summary, now) == {
        "type": "agent_metrics",
        "agent_id": "a1",
        "timestamp": "2027-01-15T08:00:00Z",
        "session": {
            "id": "s",
            "started_at": "2026-11-30T03:12:45Z",
            "ended_at": "2026-11-30T03:12:46Z",
            "status": "completed",
        },
        "tokens": {"input": 10, "output": 0, "cached": 2},
        "tools": {"Bash": {"calls": 1, "success": 1, "error": 0}},
    }


def test_a_lock_held_past_2_seconds_leaves_the_event_uncounted(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCION_LOG_LEVEL", "debug")
    count(home, "agent-end", session_id="s")
    with open(home / session.LOCK, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        started = time.monotonic()
        assert not count(home, "agent-end", session_id="s")
        assert 1.9 < time.monotonic() - started < HANG_BOUND  # Scion's bound, then the hook goes on
    assert state(home)["aggregator"]["turn_count"] == 1  # type: ignore[index]
    assert "still locked by another process after 2s" in log_entries(home)[-1][2]
