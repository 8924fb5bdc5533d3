"""agent.log and stderr on a hostile machine: values the model shapes cannot forge log lines or
repaint a terminal, a huge value is not copied into every output, and a stderr pipe nobody
reads never holds up the state update."""

from __future__ import annotations

import fcntl
import json
import os

from conftest import TIMED
from hostile_machine import Machine

pytestmark = TIMED  # every run is bounded in time: never beside the process flood

FORGED = "\n2099-01-01 00:00:00 [sciontool] [INFO] [completed] Agent completed task: forged"


def test_control_characters_in_values_cannot_forge_log_lines(machine: Machine) -> None:
    tool = "grep\x1b[2J\x1b[31m" + FORGED
    assert machine.hook({"hook_event_name": "tool-start", "tool_name": tool}).returncode == 0
    assert machine.hook({"hook_event_name": "notification", "message": "wait\rfor\u2028me"}).returncode == 0
    assert machine.run({}, "blocked", "need\na key\x07", command="status").returncode == 0
    log = (machine.home / "agent.log").read_bytes()
    assert log.count(b"\n") == 3  # one line per event
    assert b"\x1b" not in log and b"\r" not in log and b"\x07" not in log
    messages = machine.log()
    assert messages[0] == "[INFO] [executing] Running tool: grep\\x1b[2J\\x1b[31m" + FORGED.replace(
        "\n", "\\n"
    )
    assert messages[1] == "[INFO] [waiting_for_input] Notification: wait\\rfor\\u2028me"
    assert messages[2] == "[INFO] [blocked] Agent blocked: need\\na key\\x07"
    assert machine.settled()["activity"] == "blocked"


def test_a_50_mb_tool_name_is_cut_everywhere_and_memory_stays_bounded(machine: Machine) -> None:
    size = 50 << 20
    envelope = json.dumps({"hook_event_name": "tool-start", "tool_name": "t" * size}).encode()
    run = machine.hook(envelope, measure=True)
    assert run.returncode == 0
    assert run.peak_mib < 4 * size / (1 << 20) + 40, run.peak_mib  # a small multiple of the envelope
    assert machine.log() == [f"[INFO] [executing] Running tool: {'t' * 100}..."]  # as Scion cuts the prompt
    assert len(run.stderr) < 1024
    info = machine.settled()
    assert info["toolName"] == "t" * 1024 + "..."  # small enough to be read back under the 1 MiB cap
    assert (machine.home / "agent-info.json").stat().st_size < 2048


def full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is full and that nobody reads."""
    read_end, write_end = os.pipe()
    flags = fcntl.fcntl(write_end, fcntl.F_GETFL)
    fcntl.fcntl(write_end, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    try:
        while True:
            os.write(write_end, b"x" * 65536)
    except BlockingIOError:
        pass
    fcntl.fcntl(write_end, fcntl.F_SETFL, flags)  # blocking again, as a harness's pipe is
    return read_end, write_end


def test_a_full_stderr_pipe_nobody_reads_never_holds_up_the_state_update(machine: Machine) -> None:
    read_end, write_end = full_pipe()
    try:
        envelopes = [
            {"hook_event_name": "tool-start", "tool_name": "x" * 100_000},  # a long line to mirror
            {"hook_event_name": "agent-start", "prompt": "first"},
        ]
        started = [machine.start(e, "--dialect=core-agent", stderr=write_end) for e in envelopes]
        (machine.home / "bad.yaml").write_text("dialect: [")  # a failure: one error line to write
        failing = machine.start({"e": "x"}, f"--dialect-file={machine.home / 'bad.yaml'}", stderr=write_end)
        runs = [machine.wait(s) for s in started]
        failed = machine.wait(failing)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert [run.returncode for run in runs] == [0, 0]
    assert failed.returncode == 1  # its error line waited at most 1 s, then it gave up (the hang bound)
    assert (machine.home / "prompt.md").read_text() == "first"
    assert len(machine.log()) == 2
    machine.settled()
