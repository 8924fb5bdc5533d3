"""A relayed hook answers as a hook process exits: once agent-info.json, agent.log and the agent's
record hold its event and the state lock is free (Scion's contract), then does what no file reader
needs (telemetry, the exit watcher's check). Real files in a temp HOME, the helper's own function
(relayed.run), a real flock."""

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

from sciontool_py import agents_view
from sciontool_py.deferred import AnswerFirst, defer
from sciontool_py.helper import relayed


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


TURN = [
    {"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup"},
    {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "build it"},
    {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash", "tool_use_id": "t1"},
    {"hook_event_name": "Notification", "session_id": "s1", "message": "Claude needs your permission"},
    {"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Bash", "tool_use_id": "t1"},
    {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": "AskUserQuestion",
        "tool_use_id": "t2",
    },
    {
        "hook_event_name": "PostToolUse",
        "session_id": "s1",
        "tool_name": "AskUserQuestion",
        "tool_use_id": "t2",
    },
    {"hook_event_name": "Stop", "session_id": "s1"},
    {"hook_event_name": "SessionEnd", "session_id": "s1", "reason": "exit"},
]


def test_every_event_is_answered_once_its_files_and_record_are_written_and_the_lock_is_free(
    home: Path,
) -> None:
    # Scion's hook writes, then exits: whoever reads agent-info.json, agent.log or the agent's
    # record once the hook returned, without any lock, finds its event.
    seen: list[tuple[object, ...]] = []
    for at, envelope in enumerate(TURN, 1):
        assert relay(home, envelope, seen)
        code, activity, at_answer, held = seen[-1]
        assert (code, held) == ((b"", b"", 0), False), envelope
        assert activity == info(home).get("activity"), envelope
        assert at_answer == records(home, settle=False), envelope
        assert len((home / "agent.log").read_text().splitlines()) == at, envelope
    assert [entry[1] for entry in seen] == [
        "working",
        "thinking",
        "executing",
        "waiting_for_input",
        "working",
        "waiting_for_input",
        "working",
        "working",
        None,
    ]


def test_a_status_that_cannot_be_written_is_the_exit_status_as_in_a_hook_process(home: Path) -> None:
    # agent-info.json is a folder: the status cannot be written, and the harness is told so.
    (home / "agent-info.json").mkdir()
    seen: list[tuple[object, ...]] = []
    tool = {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash", "tool_use_id": "t1"}
    assert relay(home, tool, seen)
    [(answer, *_)] = seen
    assert answer[0::2] == (b"", 1)
    assert b"cannot update agent state" in answer[1]
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
