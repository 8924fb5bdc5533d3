"""Issue 21, items 8, 12 and 21: stdin, the argv forms and JSON at its edges, against the real `sciontool`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import Agent

PRE = {"hook_event_name": "PreToolUse", "tool_name": "grep", "tool_input": {"pattern": "x"}}


def test_an_envelope_on_a_pipe_never_closed_is_taken_without_waiting_for_eof(agent: Agent) -> None:
    proc = agent.start_hook()
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(PRE).encode())
    proc.stdin.flush()  # and the pipe stays open
    try:
        proc.wait(timeout=8)  # stdin still open: the hook must not wait for its EOF
    finally:
        proc.kill()
        proc.stdin.close()
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert (proc.returncode, err) == (0, b"")
    assert agent.info["activity"] == "executing"
    assert any("Running tool: grep" in line for line in agent.log_lines)


def test_a_part_of_an_envelope_on_a_pipe_never_closed_is_refused_at_the_deadline(agent: Agent) -> None:
    proc = agent.start_hook()
    assert proc.stdin is not None
    proc.stdin.write(b'{"hook_event_name": "PreToolUse", "tool_name": ')
    proc.stdin.flush()
    started = time.monotonic()
    assert proc.stderr is not None
    err = proc.stderr.read()  # EOF when the hook exits; the pipe to it is still open
    proc.wait(timeout=30)
    proc.stdin.close()
    assert time.monotonic() - started < 30
    assert proc.returncode == 1
    assert err.decode().splitlines() == [
        "sciontool hook: stdin still open 10 s after its first byte without a complete JSON object (47 bytes read): refused"
    ]
    assert list(agent.home.iterdir()) == []


def test_a_never_ending_stdin_is_refused_past_the_cap_in_bounded_memory(agent: Agent) -> None:
    # /dev/zero through a pipe: the hook must stop reading at its cap, not at MemoryError.
    with open("/dev/zero", "rb") as zero:
        feeder = subprocess.Popen(["head", "-c", str(1 << 30)], stdin=zero, stdout=subprocess.PIPE)
        assert feeder.stdout is not None
        ran = subprocess.run(
            [
                sys.executable,
                "-c",
                "import resource, runpy, sys; sys.argv = ['sciontool', 'hook']; "
                "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
                "runpy.run_module('sciontool_py', run_name='__main__')",
            ],
            stdin=feeder.stdout,
            capture_output=True,
            env=agent.env,
            timeout=60,
        )
        feeder.stdout.close()
        feeder.kill()
        feeder.wait()
    assert ran.returncode == 1
    assert ran.stderr.decode().splitlines() == [
        "sciontool hook: envelope is larger than 134217728 bytes: refused (stdin read stopped there)"
    ]
    assert list(agent.home.iterdir()) == []


def test_a_cut_short_or_too_deep_json_argument_is_refused_as_stdin_refuses_it(agent: Agent) -> None:
    cut = agent.run("hook", '{"hook_event_name": "PreToolUse", "tool_')
    assert cut.returncode == 1
    assert cut.stderr.decode().startswith("sciontool hook: envelope: invalid JSON: Unterminated string")
    deep = agent.run("hook", '{"a":' * 20_000 + "1" + "}" * 20_000)
    assert (deep.returncode, deep.stderr) == (
        1,
        b"sciontool hook: envelope: invalid JSON: exceeded max depth of 10000\n",
    )
    assert list(agent.home.iterdir()) == []
    whole = agent.run("hook", json.dumps(PRE))
    assert (whole.returncode, whole.stderr) == (0, b"")


def test_an_event_argument_with_a_byte_that_is_not_utf8_is_logged_as_u_fffd(agent: Agent) -> None:
    ran = agent.run(
        "hook", "--dialect=agentino", b"--event=Pre\xffToolUse".decode(errors="surrogateescape"), stdin=b"{}"
    )
    assert (ran.returncode, ran.stderr) == (0, b"")
    log = (agent.home / "agent.log").read_bytes()
    assert b"\xff" not in log
    assert "Event: Pre\ufffdToolUse" in log.decode()


def normalized(agent: Agent, envelope: bytes, *args: str) -> tuple[int, bytes, bytes]:
    ran = agent.run("normalize", *args, stdin=envelope)
    return ran.returncode, ran.stdout, ran.stderr


def test_the_integer_literal_minus_zero_is_written_minus_zero_as_go_writes_it(agent: Agent) -> None:
    ran = agent.run(
        "normalize", "--raw", stdin=b'{"hook_event_name":"PreToolUse","tool_name":"x","tool_input":{"a":-0}}'
    )
    assert ran.returncode == 0
    assert b'"tool_input":"{\\"a\\":-0}"' in ran.stdout
    assert b'"tool_input":{"a":-0}' in ran.stdout


def test_keys_equal_only_after_u_fffd_replacement_keep_the_last_value_as_go(agent: Agent) -> None:
    envelope = b'{"hook_event_name":"PreToolUse","tool_name":"x","tool_input":{"\xef\xbf\xbd":1,"\\ud800":2,"\\ufffd":3}}'
    code, out, _ = normalized(agent, envelope)
    assert code == 0
    assert json.loads(out)["data"]["tool_input"] == '{"\ufffd":3}'
    # A pair is one character, an escaped backslash is no escape.
    code, out, _ = normalized(
        agent, b'{"hook_event_name":"PreToolUse","tool_name":"\\ud83d\\ude00\\\\ud800"}'
    )
    assert json.loads(out)["data"]["tool_name"] == "\U0001f600\\ud800"


def deep_envelope(levels: int, escape: bool) -> bytes:
    extra = ',"q":"\\ud800"' if escape else ""
    return (
        '{"hook_event_name":"PreToolUse","tool_name":"x"'
        + extra
        + ',"tool_input":'
        + "[" * levels
        + "]" * levels
        + "}"
    ).encode()


def test_values_nested_past_orjsons_and_pythons_limits_are_written_as_go_writes_them(agent: Agent) -> None:
    for levels, args in ((255, ()), (998, ("--raw",)), (9_998, ("--raw",))):
        for escape in (False, True):
            code, out, err = normalized(agent, deep_envelope(levels, escape), *args)
            assert (code, err) == (0, b""), (levels, escape)
            written = "[" * levels + "]" * levels
            assert f'"tool_input":"{written}"'.encode() in out
            if args:
                assert f'"tool_input":{written}'.encode() in out
        hooked = agent.hook(deep_envelope(levels, True))
        assert (hooked.returncode, hooked.stderr) == (0, b""), levels
    # Go's limit, with or without a surrogate escape: 10,000 levels.
    for escape in (False, True):
        code, _, err = normalized(agent, deep_envelope(10_000, escape))
        assert (code, err) == (
            1,
            b"sciontool normalize: <stdin>:1: invalid JSON: exceeded max depth of 10000\n",
        )
        hooked = agent.hook(deep_envelope(10_000, escape))
        assert hooked.stderr == b"sciontool hook: envelope: invalid JSON: exceeded max depth of 10000\n"


def big_response_dialect(tmp_path: Path) -> Path:
    path = tmp_path / "answering.yaml"
    reason = "r" * (100 * 1024)
    path.write_text(
        "dialect: answering\nevent_name_field: hook_event_name\n"
        "mappings:\n  PreToolUse: {event: tool-start}\n"
        f"responses:\n  PreToolUse: {{decision: allow, reason: {reason}}}\n"
    )
    return path


def test_a_response_over_64_kb_to_a_stdout_nobody_reads_does_not_block(agent: Agent, tmp_path: Path) -> None:
    dialect = big_response_dialect(tmp_path)
    proc = agent.start_hook(f"--dialect-file={dialect}")
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(json.dumps(PRE).encode())
    proc.stdin.close()
    try:
        proc.wait(timeout=60)  # stdout is never read: the pipe holds 64 KiB of the response
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert proc.stderr.read().decode().splitlines() == [
        "sciontool hook: stdout not read within 5 s: the response was not delivered"
    ]
    assert agent.info["activity"] == "executing"  # the event itself is on file
    assert proc.stdout is not None
    proc.stdout.close()


def test_a_response_over_64_kb_reaches_a_reader_whole(agent: Agent, tmp_path: Path) -> None:
    ran = agent.hook(PRE, f"--dialect-file={big_response_dialect(tmp_path)}")
    assert (ran.returncode, ran.stderr) == (0, b"")
    assert json.loads(ran.stdout) == {"decision": "allow", "reason": "r" * (100 * 1024)}


def test_the_deadline_counts_from_the_first_byte_and_silence_is_an_empty_stdin() -> None:
    import threading

    from sciontool_py.receiver.stdin import read_envelope

    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as reader, os.fdopen(write_fd, "wb") as writer:

        def write_late() -> None:
            writer.write(json.dumps(PRE).encode())
            writer.flush()

        late = threading.Timer(2.0, write_late)
        late.start()  # written after the 1 s deadline has passed since the read began
        try:
            assert json.loads(read_envelope(reader, deadline=1.0, first_byte_wait=60.0)) == PRE
        finally:
            late.join()
        started = time.monotonic()
        assert read_envelope(reader, deadline=1.0, first_byte_wait=0.5) == b""  # open, silent
        assert time.monotonic() - started < 30
