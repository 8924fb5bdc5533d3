"""agent-limits.json in-process: what is counted, when a limit is hit, and the file Scion's init reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import log_entries

from sciontool_py.log.writer import AgentLog
from sciontool_py.receiver.handlers import limits

TURNS = {"max_turns": 2, "max_model_calls": 0}


def count(home: Path, event_name: str, configured: dict[str, int]) -> tuple[dict[str, object] | None, str]:
    return limits.count_event(str(home), event_name, configured, AgentLog(str(home)))


@pytest.fixture
def trigger(fallback_dir: Path) -> Path:
    """Scion's /tmp/scion-limits-exceeded, in this test's folder."""
    return fallback_dir / limits.TRIGGER_NAME


def stored(home: Path) -> dict[str, object]:
    return json.loads((home / "agent-limits.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("turns", "calls", "expected"),
    [
        (None, None, None),
        ("", "", None),
        ("0", "0", None),
        ("3", None, {"max_turns": 3, "max_model_calls": 0}),
        (None, "7", {"max_turns": 0, "max_model_calls": 7}),
        ("-4", "5", {"max_turns": 0, "max_model_calls": 5}),
        ("lots", "2", {"max_turns": 0, "max_model_calls": 2}),
        ("1.5", None, None),
    ],
)
def test_limits_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, turns: str | None, calls: str | None, expected: dict[str, int] | None
) -> None:
    for name, value in (("SCION_MAX_TURNS", turns), ("SCION_MAX_MODEL_CALLS", calls)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert limits.configured_limits() == expected


def test_turns_are_counted_in_scions_file_format(home: Path) -> None:
    state, exceeded = count(home, "agent-end", TURNS)
    assert exceeded == ""
    text = (home / "agent-limits.json").read_text()
    started = stored(home)["started_at"]
    assert isinstance(started, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", started)
    assert text == (
        '{\n  "turn_count": 1,\n  "model_call_count": 0,\n  "max_turns": 2,\n'
        f'  "max_model_calls": 0,\n  "started_at": "{started}"\n}}'
    )
    assert state == {**stored(home), "turn_count": 1}


def test_the_limit_is_exceeded_when_the_count_reaches_it(home: Path) -> None:
    assert count(home, "agent-end", TURNS)[1] == ""
    state, exceeded = count(home, "agent-end", TURNS)
    assert exceeded == "max_turns of 2 exceeded (completed 2)"
    assert state["turn_count"] == 2 and stored(home)["turn_count"] == 2


def test_model_calls_are_counted_only_with_their_limit(home: Path) -> None:
    assert count(home, "model-end", TURNS) == (None, "")
    assert not (home / "agent-limits.json").exists()
    both = {"max_turns": 5, "max_model_calls": 1}
    _, exceeded = count(home, "model-end", both)
    assert exceeded == "max_model_calls of 1 exceeded (completed 1)"
    assert (stored(home)["turn_count"], stored(home)["model_call_count"]) == (0, 1)


@pytest.mark.parametrize("name", ["tool-start", "tool-end", "model-start", "agent-start", "prompt-submit"])
def test_other_events_are_not_counted_and_write_nothing(home: Path, name: str) -> None:
    assert count(home, name, {"max_turns": 1, "max_model_calls": 1}) == (None, "")
    assert not (home / "agent-limits.json").exists()


def test_counts_and_start_time_carry_over_from_the_file(home: Path) -> None:
    (home / "agent-limits.json").write_text(
        json.dumps(
            {"turn_count": 4, "model_call_count": 9, "started_at": "2025-01-02T03:04:05Z", "max_turns": 99}
        )
    )
    state, exceeded = count(home, "agent-end", {"max_turns": 10, "max_model_calls": 0})
    assert exceeded == ""
    # The limits in force are the environment's, not the file's.
    assert stored(home) == {
        "turn_count": 5,
        "model_call_count": 9,
        "max_turns": 10,
        "max_model_calls": 0,
        "started_at": "2025-01-02T03:04:05Z",
    }
    assert state == stored(home)


@pytest.mark.parametrize(
    "counts", [{"turn_count": -3}, {"turn_count": "4"}, {"turn_count": True}, {"turn_count": None}]
)
def test_a_count_that_is_not_a_count_starts_from_zero(home: Path, counts: dict[str, object]) -> None:
    (home / "agent-limits.json").write_text(json.dumps({**counts, "started_at": 5}))
    count(home, "agent-end", TURNS)
    assert stored(home)["turn_count"] == 1
    assert isinstance(stored(home)["started_at"], str)


def test_a_damaged_file_is_logged_and_counting_restarts(home: Path) -> None:
    (home / "agent-limits.json").write_text('{"turn_count": 4, "model_call_co')
    count(home, "agent-end", TURNS)
    [(level, tag, message)] = log_entries(home)
    assert (level, tag) == ("ERROR", None)
    assert message.startswith(f"Failed to read agent-limits.json: parsing {home / 'agent-limits.json'}: ")
    assert message.endswith("; counting from 0")
    assert stored(home)["turn_count"] == 1


def test_an_unwritable_file_is_logged_and_the_limit_still_enforced(home: Path) -> None:
    (home / "agent-limits.json").mkdir()
    _, exceeded = count(home, "agent-end", {"max_turns": 1, "max_model_calls": 0})
    assert exceeded == "max_turns of 1 exceeded (completed 1)"
    messages = [message for _, _, message in log_entries(home)]
    assert messages[0].startswith("Failed to read agent-limits.json: reading ")
    assert messages[1] == f"Failed to write agent-limits.json: {home / 'agent-limits.json'}: Is a directory"


def test_the_trigger_file_tells_scions_init_why(home: Path, trigger: Path) -> None:
    limits.write_trigger("max_turns of 2 exceeded (completed 2)", AgentLog(str(home)))
    assert trigger.read_text() == "max_turns of 2 exceeded (completed 2)"
    limits.write_trigger("max_model_calls of 1 exceeded (completed 1)", AgentLog(str(home)))
    assert trigger.read_text() == "max_model_calls of 1 exceeded (completed 1)"  # replaced, not appended
    assert log_entries(home) == []


def test_a_trigger_that_cannot_be_written_is_logged(home: Path, trigger: Path) -> None:
    trigger.mkdir()
    limits.write_trigger("max_turns of 2 exceeded (completed 2)", AgentLog(str(home)))
    assert log_entries(home) == [
        ("ERROR", None, f"Failed to write limits trigger file: {trigger}: Is a directory")
    ]
