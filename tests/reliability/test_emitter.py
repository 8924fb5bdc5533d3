"""The sender with real processes, for what tests/emitter/test_process.py does not cover:
daemons that fork twice or detach, and gates proven by a command that would leave a file."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from conftest import HANG_BOUND, TIMED
from emitter.test_process import fire_agent_end, leftovers, processes_running
from standin import eventually

from sciontool_py.emitter import DenyPatterns, Dispatcher
from sciontool_py.emitter.config import parse_hooks

pytestmark = TIMED

__all__ = ["leftovers"]  # the fixture, used by name


@pytest.mark.slow
def test_a_double_forked_daemon_is_killed_with_the_group_at_the_timeout(leftovers: list[str]) -> None:
    leftovers += ["sleep 30.126", "sleep 30.127"]
    # The subshell exits at once, so `sleep 30.126` is re-parented to init but stays in the group.
    command = "(sleep 30.126 &); sleep 30.127"
    elapsed, report = fire_agent_end([{"command": command, "timeout_seconds": 1}])
    assert 0.9 < elapsed < HANG_BOUND, elapsed
    assert report.endswith("timed out after 1s; killed it and every process it started\n")
    assert processes_running("sleep 30.126") == [] and processes_running("sleep 30.127") == []


def test_a_detached_daemon_that_lets_go_of_the_output_is_abandoned_at_once(leftovers: list[str]) -> None:
    leftovers.append("sleep 30.128")
    # A well-behaved daemon: new session, output closed. Nothing holds the agent.
    command = "setsid sleep 30.128 >/dev/null 2>&1 </dev/null & echo started"
    elapsed, report = fire_agent_end([{"command": command, "timeout_seconds": 60}])
    assert elapsed < HANG_BOUND, elapsed  # not the 60 s timeout: nothing held the agent
    assert report == ""
    # Left alone, as core-agent leaves it (the shell's background job may exec sleep a moment
    # after the shell itself has exited).
    assert eventually(lambda: processes_running("sleep 30.128") != [])


@pytest.mark.parametrize(
    ("gate", "reason"),
    [
        (None, "refused — no permission gate wired"),
        (DenyPatterns(["*touch*"]), "permission gate refused: matches deny pattern '*touch*'"),
    ],
    ids=["no-gate", "deny-pattern"],
)
def test_a_refused_command_is_reported_and_never_runs(
    tmp_path: Path, gate: DenyPatterns | None, reason: str
) -> None:
    marker = tmp_path / "ran"
    stderr = io.StringIO()
    hooks = {"agent-end": [{"command": f"touch {marker}"}, {"command": f"touch {marker}-2"}]}
    Dispatcher(parse_hooks(hooks), gate=gate, stderr=stderr).on_turn_end()
    time.sleep(0.2)  # anything started would have touched its file by now
    assert list(tmp_path.iterdir()) == []
    assert stderr.getvalue() == (
        f'hooks: agent-end handler #0 ("touch {marker}"): {reason}\n'
        f'hooks: agent-end handler #1 ("touch {marker}-2"): {reason}\n'
    )
