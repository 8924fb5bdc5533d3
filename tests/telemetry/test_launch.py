"""Starting the detached worker from a process that lives on (agentino, ADK, `sciontool run`):
the real worker, started in this process, watched through /proc."""

from __future__ import annotations

import os
from pathlib import Path

from standin import eventually

from sciontool_py import process
from sciontool_py.telemetry import launch


def state(pid: int) -> bytes:
    """The process's state letter (Z: ended, not yet collected); b'' when it is gone."""
    found = process.stat(pid)
    return b"" if found is None else found[1]


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_a_caller_that_lives_on_keeps_no_zombie_past_its_next_start_and_no_thread(home: Path) -> None:
    before = threads()
    first = launch.start_worker(str(home), None, False)  # nothing to drain or send: it ends at once
    # No thread waits for it: one that wakes while the interpreter finalizes can crash it.
    assert threads() == before
    assert eventually(lambda: state(first) == b"Z")
    second = launch.start_worker(str(home), None, False)
    assert state(first) == b""  # collected by the next start
    os.waitpid(second, 0)  # the caller's own wait took it first: the next start still works
    third = launch.start_worker(str(home), None, False)
    assert state(second) == b""
    assert os.waitpid(third, 0)[1] == 0
    assert threads() == before
