"""The state lock on a hostile machine: a process that holds it (the agent can take a flock on
its own HOME) delays a hook at most 2 s, Scion's bound for its session-state lock; then the
hook does the work without the lock, as Scion (which takes none) does, and says so."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TIMED
from hostile_machine import RETURN_WITHIN, Machine

pytestmark = TIMED  # every run is bounded in time: never beside the process flood

TOOL_START = {"hook_event_name": "tool-start", "tool_name": "grep"}
HOLD = "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX); print(flush=True); time.sleep(float(sys.argv[2]))"


def holding(home: Path, seconds: float) -> Iterator[subprocess.Popen[bytes]]:
    """Another process holding the state lock (a flock on HOME) for seconds."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(home), str(seconds)], stdout=subprocess.PIPE)
    assert holder.stdout is not None
    holder.stdout.readline()  # it holds the lock now
    try:
        yield holder
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture
def held(machine: Machine) -> Iterator[subprocess.Popen[bytes]]:
    yield from holding(machine.home, 60)


def test_a_lock_held_for_60_s_delays_hook_and_status_about_2_s(
    machine: Machine, held: subprocess.Popen[bytes]
) -> None:
    # Both at once: each waits on its own, so the test waits 2 s, not 4.
    hook = machine.start(TOOL_START, "--dialect=core-agent")
    status = machine.start({}, "blocked", "need a key", command="status")
    hook_run, status_run = machine.wait(hook), machine.wait(status)
    assert hook_run.returncode == status_run.returncode == 0
    for run in (hook_run, status_run):
        assert 1.8 < run.elapsed < RETURN_WITHIN, run.elapsed  # waited the bound, not the holder's 60 s
    assert held.poll() is None  # the holder still holds it
    warnings = [line for line in machine.log() if line.startswith("[WARN]")]
    assert (
        warnings
        == [
            f"[WARN] State lock on {machine.home} still held by another process after 2s; updating state without it"
        ]
        * 2
    )
    info = machine.settled()
    assert info["activity"] in ("executing", "blocked")  # both updated; the last writer wins


def test_a_lock_released_in_time_is_waited_for_and_taken(machine: Machine) -> None:
    holder = holding(machine.home, 0.5)
    next(holder)
    run = machine.hook(TOOL_START)
    holder.close()
    assert run.returncode == 0
    assert run.elapsed > 0.3, run.elapsed  # it waited for the holder...
    assert not any(line.startswith("[WARN]") for line in machine.log())  # ...and took the lock
    assert machine.settled()["toolName"] == "grep"
