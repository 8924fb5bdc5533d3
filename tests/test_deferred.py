"""A relayed hook answers first: the resident helper sends the answer before any file is written
for an event the harness need not wait for, and once the status file is written for the others
(then writes the agent's record, still under the state lock, and does the rest). Real files in a
temp HOME, the helper's own function (relayed.run), a real flock."""

from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from standin import info, records

from sciontool_py import agents_view, relayed
from sciontool_py.deferred import AnswerFirst, defer


def locked(home: Path) -> bool:
    """Whether another holder has HOME's state lock (fs.StateLock: a flock on the folder)."""
    fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        assert exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK)
        return True
    finally:
        os.close(fd)
    return False


def relay(home: Path, envelope: dict[str, object], seen: list[tuple[object, ...]]) -> bool:
    """One claude hook through relayed.run, as the helper runs it; what its answer saw in SEEN."""
    environ = {**os.environ, "HOME": str(home), "SCIONTOOL_EXIT_WATCH": "on", "SCIONTOOL_TELEMETRY": "off"}

    def answer(out: bytes, err: bytes, code: int) -> None:
        seen.append(((out, err, code), info(home).get("activity"), records(home, settle=False), locked(home)))

    data = io.BytesIO(json.dumps(envelope).encode())
    return relayed.run(str(home), os.getpid(), str(home), ["--dialect=claude"], environ, lambda: data, answer)


def test_a_waited_event_is_answered_once_its_status_is_written_and_the_record_follows_under_the_lock(
    home: Path,
) -> None:
    seen: list[tuple[object, ...]] = []
    start = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "build it"}
    assert relay(home, start, seen)
    before = records(home)
    asked = {"hook_event_name": "Notification", "session_id": "s1", "message": "Claude needs your permission"}
    assert relay(home, asked, seen)
    # At the answer: the exit status, agent-info.json already says the agent waits (the person
    # is asked next), the agent's record is still the prompt's, and the state lock is still held.
    assert seen[1] == ((b"", b"", 0), "waiting_for_input", before, True)
    # After it: the record is the notification's, and the lock is free.
    ((key, record),) = records(home).items()
    assert (
        record["info"]["activity"] == "waiting_for_input"
        and before[key]["info"]["activity"] != "waiting_for_input"
    )
    assert not locked(home)


def test_an_event_the_harness_need_not_wait_for_is_answered_before_any_file_is_written(home: Path) -> None:
    seen: list[tuple[object, ...]] = []
    start = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "build it"}
    assert relay(home, start, seen)
    before = records(home)
    tool = {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash", "tool_use_id": "t1"}
    assert relay(home, tool, seen)
    # At the answer: exit 0, and nothing of the tool yet: the prompt's status and record, the
    # state lock held (a reader that waits for it, as `sciontool agents` does, finds the tool).
    assert seen[1] == ((b"", b"", 0), "thinking", before, True)
    # Once run returned, every file says the tool runs.
    assert info(home)["activity"] == "executing"
    ((record),) = records(home).values()
    assert record["info"]["activity"] == "executing"
    assert not locked(home)


def test_an_input_tool_is_waited_for_a_person_is_asked(home: Path) -> None:
    seen: list[tuple[object, ...]] = []
    ask = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": "AskUserQuestion",
        "tool_use_id": "t1",
    }
    assert relay(home, ask, seen)
    assert seen[0][:2] == ((b"", b"", 0), "waiting_for_input")


def test_a_failure_after_an_early_answer_is_in_agent_log(home: Path) -> None:
    # agent-info.json is a folder: the status cannot be written. The harness had its answer
    # (exit 0) before; the failure is logged as Scion logs it.
    (home / "agent-info.json").mkdir()
    seen: list[tuple[object, ...]] = []
    tool = {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash", "tool_use_id": "t1"}
    assert relay(home, tool, seen)
    assert [entry[0] for entry in seen] == [(b"", b"", 0)]
    assert "Hook processing failed: cannot update agent state" in (home / "agent.log").read_text()


def test_outside_a_relayed_hook_each_step_runs_where_it_is_called() -> None:
    done: list[str] = []
    defer(lambda: done.append("now"))
    assert done == ["now"]


def test_held_steps_run_after_the_block_in_order_every_one_even_after_a_failure() -> None:
    done: list[str] = []

    def fails() -> None:
        done.append("fails")
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"), AnswerFirst():
        defer(lambda: done.append("record"))
        defer(fails)
        defer(lambda: done.append("unlock"))
        done.append("answer")
    assert done == ["answer", "record", "fails", "unlock"]


def test_the_blocks_own_error_wins_and_the_steps_still_run() -> None:
    done: list[str] = []
    with pytest.raises(ValueError, match="answer lost"), AnswerFirst():
        defer(lambda: done.append("unlock"))
        raise ValueError("answer lost")
    assert done == ["unlock"]


def test_the_agents_list_waits_for_a_hook_still_writing_its_record(home: Path) -> None:
    # A hook that answered and still holds the lock: its record comes 0.3 s later.
    holder = subprocess.Popen(
        [sys.executable, "-c", _WRITES_LATE, str(home)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert [row.record.session for row in agents_view.rows(str(home))] == ["s1"]
    finally:
        assert holder.wait(timeout=60) == 0


_WRITES_LATE = """
import sys, time
from sciontool_py import fs, registry
home = sys.argv[1]
lock = fs.StateLock(home).acquire()
print("held", flush=True)
time.sleep(0.3)
record = registry.Record(registry.session_key("s1"))
record.session = "s1"
registry.write(home, record)
lock.release()
"""


def test_a_turns_end_is_answered_first_and_the_sessions_end_finds_it_written(home: Path) -> None:
    # make bench: a relayed agent-end waited 3 ms more than a tool's start for its writes. The
    # session's end after it, which the harness exits on, is still answered once written.
    seen: list[tuple[object, ...]] = []
    start = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "build it"}
    assert relay(home, start, seen)
    before = records(home)
    assert relay(home, {"hook_event_name": "Stop", "session_id": "s1"}, seen)
    assert seen[1] == ((b"", b"", 0), "thinking", before, True)
    assert relay(home, {"hook_event_name": "SessionEnd", "session_id": "s1", "reason": "exit"}, seen)
    # At the session end's answer agent-info.json says it already (the harness exits next).
    assert seen[2][:2] == ((b"", b"", 0), None) and seen[2][3]
    assert info(home)["phase"] == "stopped"
    lines = [line.split(" ", 2)[2] for line in (home / "agent.log").read_text().splitlines()]
    assert lines[-2:] == [
        "[INFO] [working] Agent turn completed",
        "[INFO] [stopped] Session ended (reason: exit)",
    ]
