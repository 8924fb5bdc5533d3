"""agent.log in-process: one line per event in Scion's format, mirrored to stderr, never lost."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import LOG_LINE, event, log_entries

from sciontool_py.log import writer
from sciontool_py.receiver.handlers import agent_log


@pytest.fixture
def fallback(fallback_dir: Path) -> Path:
    """Scion's /tmp/agent.log, in this test's folder so tests cannot see each other's lines."""
    return fallback_dir / "agent.log"


def test_a_line_in_scions_format_and_its_stderr_mirror(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    writer.AgentLog(str(home)).write("executing", "Running tool: ls")
    [line] = (home / "agent.log").read_text().splitlines()
    match = LOG_LINE.match(line)
    assert match and (match["level"], match["tag"], match["msg"]) == ("INFO", "executing", "Running tool: ls")
    assert capsys.readouterr().err == "[sciontool] INFO: [executing] Running tool: ls\n"


def test_a_line_without_a_tag_has_no_empty_brackets(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    writer.AgentLog(str(home)).write("", "Hub status update failed: x", level="ERROR")
    assert log_entries(home) == [("ERROR", None, "Hub status update failed: x")]
    assert " [sciontool] [ERROR] Hub status update failed: x" in (home / "agent.log").read_text()
    assert capsys.readouterr().err == "[sciontool] ERROR: Hub status update failed: x\n"


def test_lines_are_appended_never_rewritten(home: Path) -> None:
    (home / "agent.log").write_text("written by Scion\n")
    writer.AgentLog(str(home)).write("working", "one")
    writer.AgentLog(str(home)).write("working", "two")
    lines = (home / "agent.log").read_text().splitlines()
    assert lines[0] == "written by Scion" and [line[-3:] for line in lines[1:]] == ["one", "two"]


def test_bytes_that_are_not_utf8_are_kept_as_they_came(
    home: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    message = b"Running tool: caf\xe9".decode("utf-8", "surrogateescape")
    writer.AgentLog(str(home)).write("executing", message)
    assert (home / "agent.log").read_bytes().endswith(b"[executing] Running tool: caf\xe9\n")
    assert capsysbinary.readouterr().err.endswith(b"Running tool: caf\xe9\n")


def test_concurrent_writers_never_interleave_within_a_line(home: Path) -> None:
    def write(n: int) -> None:
        for i in range(100):
            writer.AgentLog(str(home)).write("executing", f"writer {n} line {i} " + "x" * 200)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = log_entries(home)  # every line parses
    assert len(entries) == 800
    assert all(msg.endswith("x" * 200) for _, _, msg in entries)


def test_an_unwritable_log_falls_back_with_a_warning(
    home: Path, fallback: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "agent.log").mkdir()
    writer.AgentLog(str(home)).write("executing", "Running tool: ls")
    warning = (
        f"[sciontool] WARNING: Failed to write to {home / 'agent.log'}: Is a directory. "
        f"Falling back to {fallback}."
    )
    assert capsys.readouterr().err == f"{warning}\n[sciontool] INFO: [executing] Running tool: ls\n"
    warned, logged = fallback.read_text().splitlines()
    assert warned.endswith(f" {warning}")
    assert LOG_LINE.match(logged)["msg"] == "Running tool: ls"  # type: ignore[index]


def test_with_the_fallback_unwritable_too_the_line_is_only_on_stderr(
    home: Path, fallback: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "agent.log").mkdir()
    fallback.mkdir()
    writer.AgentLog(str(home)).write("working", "Tool ls completed")  # no exception: the hook goes on
    assert capsys.readouterr().err.endswith("[sciontool] INFO: [working] Tool ls completed\n")


def test_the_log_goes_to_home_unless_scions_folder_exists(home: Path) -> None:
    assert writer.log_folder(str(home)) == str(home)


@pytest.mark.parametrize(
    ("name", "data", "tag", "message"),
    [
        ("session-start", {"source": "resume"}, "starting", "Session started (source: resume)"),
        ("session-start", {}, "starting", "Session started"),
        ("session-end", {"reason": "exit"}, "stopped", "Session ended (reason: exit)"),
        ("session-end", {}, "stopped", "Session ended"),
        ("tool-start", {"tool_name": "ls"}, "executing", "Running tool: ls"),
        ("tool-start", {}, "executing", "Tool execution started"),
        ("tool-end", {"tool_name": "ls"}, "working", "Tool ls completed"),
        ("tool-end", {}, "working", "Tool execution completed"),
        ("notification", {"message": "allow?"}, "waiting_for_input", "Notification: allow?"),
        ("notification", {}, "waiting_for_input", "Notification received"),
        ("response-complete", {"message": "done"}, "completed", "Agent completed task: done"),
        ("response-complete", {}, "completed", "Agent completed task"),
        ("prompt-submit", {"prompt": "fix it"}, "thinking", "User prompt: fix it"),
        ("prompt-submit", {}, "thinking", "User prompt submitted"),
        ("agent-start", {"prompt": "ignored"}, "thinking", "Agent turn started"),
        ("agent-end", {}, "working", "Agent turn completed"),
        ("model-start", {}, "thinking", "LLM call started"),
        ("model-end", {}, "working", "LLM call completed"),
        ("pre-start", {}, "starting", "Container initializing"),
        ("post-start", {}, "working", "Container ready"),
        ("pre-stop", {}, "stopping", "Container shutting down (received termination signal)"),
        ("subagent-end", {}, "working", "Event: subagent-end"),
    ],
)
def test_each_event_is_described_as_scion_describes_it(
    name: str, data: dict[str, object], tag: str, message: str
) -> None:
    assert agent_log.describe(event(name, **data)) == (tag, message)


def test_an_unmapped_event_is_described_by_its_raw_name() -> None:
    assert agent_log.describe(event("compaction", "PreCompact")) == ("working", "Event: PreCompact")


def test_a_non_string_field_counts_as_missing() -> None:
    assert agent_log.describe(event("tool-start", tool_name=3.0)) == ("executing", "Tool execution started")


def test_a_long_prompt_is_cut_at_100_bytes_even_inside_a_character(home: Path) -> None:
    prompt = "é" * 60  # 120 bytes
    tag, message = agent_log.describe(event("prompt-submit", prompt=prompt))
    writer.AgentLog(str(home)).write(tag, message)
    assert (home / "agent.log").read_bytes().endswith(b"User prompt: " + prompt.encode()[:100] + b"...\n")
    assert agent_log.describe(event("prompt-submit", prompt="é" * 50)) == (
        "thinking",
        "User prompt: " + "é" * 50,
    )


def test_quiet_writes_the_line_but_not_the_mirror(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = writer.AgentLog(str(home), quiet=True)  # what hook and status make: the harness captures stderr
    log.write("executing", "Running tool: ls")
    assert capsys.readouterr().err == ""
    assert log_entries(home) == [("INFO", "executing", "Running tool: ls")]


@pytest.mark.parametrize(
    ("spec", "written"),
    [
        ("", ["INFO", "WARN", "ERROR"]),
        ("warn", ["WARN", "ERROR"]),
        ("debug", ["DEBUG", "INFO", "WARN", "ERROR"]),
        ("error,executing=debug", ["DEBUG", "INFO", "WARN", "ERROR"]),  # this tag's lines
        ("loud", ["INFO", "WARN", "ERROR"]),  # an invalid level means info
    ],
)
def test_scion_log_level_chooses_the_lines(
    home: Path, monkeypatch: pytest.MonkeyPatch, spec: str, written: list[str]
) -> None:
    monkeypatch.setenv("SCION_LOG_LEVEL", spec)
    for level in ("DEBUG", "INFO", "WARN", "ERROR"):
        writer.AgentLog(str(home)).write("executing", f"at {level}", level=level)
    assert [level for level, _, _ in log_entries(home)] == written


def test_scion_debug_alone_means_debug(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCION_DEBUG", "1")
    writer.AgentLog(str(home)).write("", "skipped update", level="DEBUG")
    assert log_entries(home) == [("DEBUG", None, "skipped update")]
