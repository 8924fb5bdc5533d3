"""One hook command in-process, through a real /bin/sh: its stdin, environment, exit status and
output as reported, and the bounds on its time and output."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from sciontool_py.emitter.runner import OUTPUT_LIMIT, Outcome, run

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def test_success_is_no_error_and_keeps_the_output() -> None:
    assert run("echo out; echo err >&2", b"", 30, ENV) == Outcome(None, b"out\nerr\n", False)


def test_stdin_is_the_envelope_exactly(tmp_path: Path) -> None:
    out = tmp_path / "stdin"
    envelope = b'{"hook_event_name":"agent-end"}'  # no newline, as core-agent sends it
    assert run(f"cat > {out}", envelope, 30, ENV).error is None
    assert out.read_bytes() == envelope


def test_a_command_that_ignores_stdin_is_fine() -> None:
    assert run("true", b"x" * 1_000_000, 30, ENV) == Outcome(None)


def test_the_environment_is_exactly_the_one_given() -> None:
    outcome = run('printf "%s|%s" "$ONLY" "${HOME-unset}"', b"", 30, {**ENV, "ONLY": "this"})
    assert outcome.output == b"this|unset"


@pytest.mark.parametrize(
    ("code", "error"), [(1, "exit status 1"), (7, "exit status 7"), (255, "exit status 255")]
)
def test_a_failure_is_reported_in_gos_words(code: int, error: str) -> None:
    assert run(f"echo why; exit {code}", b"", 30, ENV) == Outcome(error, b"why\n", False)


# Not INT: a test run started in the background ignores it, and so would the command.
@pytest.mark.parametrize(
    ("signal", "error"),
    [("KILL", "signal: killed"), ("TERM", "signal: terminated")],
)
def test_a_command_ended_by_a_signal_says_which(signal: str, error: str) -> None:
    assert run(f"kill -{signal} $$", b"", 30, ENV).error == error


def test_only_the_last_bytes_of_a_large_output_are_kept() -> None:
    outcome = run(f"head -c {OUTPUT_LIMIT * 10} /dev/zero | tr '\\0' a; printf END", b"", 30, ENV)
    assert outcome.error is None and outcome.truncated
    assert len(outcome.output) == OUTPUT_LIMIT
    assert outcome.output.endswith(b"aEND")


def test_output_at_the_limit_is_not_truncated() -> None:
    outcome = run(f"head -c {OUTPUT_LIMIT} /dev/zero", b"", 30, ENV)
    assert (len(outcome.output), outcome.truncated) == (OUTPUT_LIMIT, False)


def test_a_timeout_kills_the_command_and_says_so() -> None:
    started = time.monotonic()
    outcome = run("echo begun; sleep 30.131; echo never", b"", 0.5, ENV)
    assert time.monotonic() - started < 10  # a bound for a loaded machine; the kill is at 0.5 s
    assert outcome == Outcome(
        "timed out after 0.5s; killed it and every process it started", b"begun\n", False
    )


def test_a_missing_command_is_the_shells_exit_127() -> None:
    outcome = run("definitely-not-a-command-8c1f", b"", 30, ENV)
    assert outcome.error == "exit status 127"
    assert b"not found" in outcome.output


class _StandIn:
    """A Popen that reports whatever pid a fake process library hands out and never exits."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.stdout = open(os.devnull, "rb")  # noqa: SIM115 - closed by the runner
        self.killed = False

    def wait(self, timeout: float | None = None) -> int:
        if not self.killed:
            raise subprocess.TimeoutExpired("sh", timeout or 0)
        return -9

    def kill(self) -> None:
        self.killed = True


@pytest.mark.parametrize(
    "pid",
    [1, 2, os.getpid(), os.getpgrp(), os.getppid()],
    ids=["init", "pid-2", "self", "own-group", "parent"],
)
def test_a_timeout_never_signals_a_group_the_runner_did_not_create(
    pid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest-subprocess numbers its stand-ins 1, 2, 3...: killpg on such a pid would hit
    # init's group or another program's. Only the kernel's word that the runner created the
    # session may lead to killpg. The recorder replaces the signal, so nothing is sent.
    groups: list[int] = []
    monkeypatch.setattr(os, "killpg", lambda group, sig: groups.append(group))
    monkeypatch.setattr(subprocess, "Popen", lambda *args, **kwargs: _StandIn(pid))
    outcome = run("hang", b"", 0.2, ENV)
    assert outcome.error is not None and outcome.error.startswith("timed out")
    assert groups == []


def test_a_real_timeout_kills_the_session_the_runner_started(monkeypatch: pytest.MonkeyPatch) -> None:
    groups: list[int] = []
    real_killpg = os.killpg

    def record(group: int, sig: int) -> None:
        groups.append(group)
        real_killpg(group, sig)

    monkeypatch.setattr(os, "killpg", record)
    outcome = run("sleep 30 & sleep 30", b"", 0.5, ENV)
    assert outcome.error is not None and outcome.error.startswith("timed out")
    assert len(groups) >= 1 and all(group > 1 and group != os.getpgrp() for group in groups)
