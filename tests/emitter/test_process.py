"""What only real processes show: process-tree kills, pipes held open, bounded memory,
the environment a hook really gets, and a real `sciontool hook` on the other end."""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import sys
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_BOUND, TIMED

from sciontool_py.emitter import AllowAll, Dispatcher
from sciontool_py.emitter.config import parse_hooks

pytestmark = TIMED


# Every command the tests start inherits this token: a process is ours only if its
# environment holds it, so the clean-up never touches another program's `sleep`.
TOKEN = f"SCIONTOOL_TEST_RUN={uuid.uuid4().hex}"


def processes_running(marker: str) -> list[int]:
    """Pids this test run started whose command line contains ``marker`` (a sleep length)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as stream:
                cmdline = stream.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as stream:
                zombie = stream.read().rsplit(")", 1)[1].split()[0] == "Z"
            with open(f"/proc/{entry}/environ", "rb") as stream:
                ours = TOKEN.encode() in stream.read().split(b"\0")
        except OSError:
            continue
        if marker in cmdline and ours and not zombie:
            found.append(int(entry))
    return found


@pytest.fixture
def leftovers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Markers a test registers; anything it started still running with one is killed afterwards."""
    name, value = TOKEN.split("=")
    monkeypatch.setenv(name, value)
    markers: list[str] = []
    yield markers
    for marker in markers:
        for pid in processes_running(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def fire_agent_end(hooks: list[dict[str, object]], **options: object) -> tuple[float, str]:
    stderr = io.StringIO()
    d = Dispatcher(parse_hooks({"agent-end": hooks}), gate=AllowAll(), stderr=stderr, **options)  # type: ignore[arg-type]
    started = time.monotonic()
    d.on_turn_end()
    return time.monotonic() - started, stderr.getvalue()


def test_a_timeout_kills_the_whole_process_tree(leftovers: list[str]) -> None:
    leftovers.append("sleep 30.123")
    # `; echo` keeps /bin/sh alive as the sleep's parent, so sleep is a grandchild.
    elapsed, report = fire_agent_end([{"command": "sleep 30.123; echo never", "timeout_seconds": 1}])
    assert 0.9 < elapsed < HANG_BOUND, elapsed
    assert report == (
        'hooks: agent-end handler #0 ("sleep 30.123; echo never"): '
        "timed out after 1s; killed it and every process it started\n"
    )
    assert processes_running("sleep 30.123") == []


def test_a_background_process_holding_the_output_is_killed_at_the_deadline(leftovers: list[str]) -> None:
    leftovers.append("sleep 30.124")
    elapsed, report = fire_agent_end([{"command": "sleep 30.124 & echo started", "timeout_seconds": 1}])
    assert 0.9 < elapsed < HANG_BOUND, elapsed
    assert "its output was still open at the 1s deadline; killed its background processes" in report
    assert report.endswith(': "started"\n')
    assert processes_running("sleep 30.124") == []


def test_a_process_that_escaped_the_group_does_not_hang_the_agent(leftovers: list[str]) -> None:
    leftovers.append("sleep 30.125")
    elapsed, report = fire_agent_end([{"command": "setsid sleep 30.125 & echo x", "timeout_seconds": 1}])
    assert 1.5 < elapsed < HANG_BOUND, elapsed  # the deadline, then a bounded grace for the pipe
    assert report == (
        'hooks: agent-end handler #0 ("setsid sleep 30.125 & echo x"): '
        'a process that left its process group holds its output open; stopped waiting: "x"\n'
    )


def test_huge_output_is_read_in_bounded_memory() -> None:
    tracemalloc.start()
    try:
        _, report = fire_agent_end([{"command": "head -c 100000000 /dev/zero | tr '\\0' y; exit 3"}])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak
    assert report.startswith(
        "hooks: agent-end handler #0 (\"head -c 100000000 /dev/zero | tr '\\\\0' y; exit 3\"): "
    )
    assert f'exit status 3: (last 4096 bytes) "{"y" * 4096}"\n' in report


def test_stdin_is_the_envelope_without_a_newline(tmp_path: Path) -> None:
    out = tmp_path / "stdin"
    hooks = {"tool-end": [{"command": f"cat > {shlex.quote(str(out))}"}]}
    d = Dispatcher(parse_hooks(hooks), session_id="abc", gate=AllowAll())
    d.on_event({"content": {"parts": [{"functionResponse": {"name": "ls", "response": {"n": 2}}}]}})
    assert out.read_bytes() == (
        b'{"hook_event_name":"tool-end","session_id":"abc","tool_name":"ls","tool_output":{"n":2}}'
    )


def test_withheld_variables_never_reach_the_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMITTER_TEST_PRIVATE", "s3cret")
    monkeypatch.setenv("EMITTER_TEST_VISIBLE", "shown")
    out = tmp_path / "env"
    probe = f'printf "%s|%s" "${{EMITTER_TEST_PRIVATE-unset}}" "${{EMITTER_TEST_VISIBLE-unset}}" > {out}'
    _, report = fire_agent_end([{"command": probe}], withheld_env=["EMITTER_TEST_PRIVATE"])
    assert report == ""
    assert out.read_text() == "unset|shown"


def test_a_real_sciontool_hook_receives_the_envelopes(tmp_path: Path) -> None:
    python = shlex.quote(sys.executable)
    receiver = f"HOME={shlex.quote(str(tmp_path))} {python} -m sciontool_py hook --dialect=core-agent"
    hooks = {event: [{"command": receiver, "timeout_seconds": 30}] for event in ("tool-start", "tool-end")}
    stderr = io.StringIO()
    d = Dispatcher(parse_hooks(hooks), gate=AllowAll(), stderr=stderr)
    info = tmp_path / "agent-info.json"

    d.on_event(
        {"content": {"parts": [{"functionCall": {"name": "read_file", "args": {"path": "/etc/hosts"}}}]}}
    )
    assert json.loads(info.read_text()) == {"activity": "executing", "toolName": "read_file"}
    d.on_event(
        {"content": {"parts": [{"functionResponse": {"name": "read_file", "response": {"ok": True}}}]}}
    )
    assert json.loads(info.read_text()) == {"activity": "working"}

    assert stderr.getvalue() == ""
    log = (tmp_path / "agent.log").read_text().splitlines()
    assert [line.split(" [sciontool] [INFO] ")[1] for line in log] == [
        "[executing] Running tool: read_file",
        "[working] Tool read_file completed",
    ]
