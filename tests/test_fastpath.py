"""The hot commands' hand-made argument parsing and their guard, in-process: what each command line
does, and that every failure is one line and exit 1, never 2 and never a traceback."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, log_entries, read_info

from sciontool_py import fastpath
from sciontool_py.errors import SciontoolError
from sciontool_py.log.writer import TRACEBACK_LIMIT, AgentLog

TOOL_START = b'{"hook_event_name": "tool-start", "tool_name": "ls"}'


class Stdin(io.TextIOWrapper):
    """A piped stdin: bytes, and not a terminal."""

    def __init__(self, data: bytes, tty: bool = False) -> None:
        super().__init__(io.BytesIO(data))
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class Stdout(io.TextIOWrapper):
    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", write_through=True)

    @property
    def text(self) -> str:
        return self.buffer.getvalue().decode()  # type: ignore[attr-defined,no-any-return]


def run(
    monkeypatch: pytest.MonkeyPatch, command: str, *args: str, stdin: bytes = b"", tty: bool = False
) -> tuple[int, str]:
    """(exit status, stdout) of `sciontool COMMAND ARGS` in this process."""
    out = Stdout()
    monkeypatch.setattr(sys, "stdin", Stdin(stdin, tty))
    monkeypatch.setattr(sys, "stdout", out)
    return fastpath.run(command, list(args)), out.text


@pytest.mark.parametrize(
    ("args", "options", "positional"),
    [
        ([], {}, []),
        (["--dialect=claude"], {"--dialect": "claude"}, []),
        (["--dialect", "claude", "x"], {"--dialect": "claude"}, ["x"]),
        (["--dialect-file=a=b.yaml"], {"--dialect-file": "a=b.yaml"}, []),
        (["a", "--", "--dialect", "-h"], {}, ["a", "--dialect", "-h"]),
        (["-", "--raw"], {"--raw": ""}, ["-"]),
        (["--dialect=a", "--dialect=b"], {"--dialect": "b"}, []),  # the last one wins
    ],
)
def test_options_and_arguments(args: list[str], options: dict[str, str], positional: list[str]) -> None:
    assert fastpath.parse_args(args, "usage", flags=("--raw",)) == (options, positional)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dialect"], "--dialect needs a value (usage: x)"),
        (["--raw"], "unknown option --raw (usage: x)"),
        (["-x"], "unknown option -x (usage: x)"),
    ],
)
def test_bad_options_say_what_and_show_the_usage(args: list[str], message: str) -> None:
    with pytest.raises(SciontoolError) as caught:
        fastpath.parse_args(args, "usage: x")
    assert str(caught.value) == message


@pytest.mark.parametrize("args", [["-h"], ["--help"], ["--dialect=x", "-h"], ["x", "--help", "--bogus"]])
def test_help_wins_over_everything_before_a_double_dash(args: list[str]) -> None:
    with pytest.raises(fastpath.HelpRequested):
        fastpath.parse_args(args, "usage")


def test_hook_reads_the_envelope_from_stdin(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(monkeypatch, "hook", "--dialect=core-agent", stdin=TOOL_START) == (0, "")
    assert read_info(home) == {"activity": "executing", "toolName": "ls"}


def test_hook_on_a_terminal_is_a_no_op(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(monkeypatch, "hook", "--dialect=core-agent", stdin=TOOL_START, tty=True) == (0, "")
    assert list(home.iterdir()) == []


def test_hook_prints_the_dialects_response(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dialect = FIXTURES / "nested-paths" / "dialect.yaml"
    code, out = run(monkeypatch, "hook", "--dialect-file", str(dialect), stdin=b'{"kind": "call.begin"}')
    assert (code, out) == (0, '{"decision":"allow","reason":"observed by sciontool"}\n')


def test_hook_with_an_event_name_is_scions_synthetic_envelope(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(monkeypatch, "hook", "post-start", stdin=TOOL_START) == (0, "")  # stdin is not read
    assert read_info(home) == {"phase": "running", "activity": "working"}
    assert log_entries(home) == [("INFO", "working", "Container ready")]


def test_hook_with_a_status_type_is_the_older_status_form(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(monkeypatch, "hook", "ask_user", "which", "branch?") == (0, "")
    assert read_info(home) == {"activity": "waiting_for_input"}
    assert log_entries(home) == [("INFO", "waiting_for_input", "Agent requested input: which branch?")]


def test_hook_with_two_event_names_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(monkeypatch, "hook", "a", "b")[0] == 1
    assert capsys.readouterr().err == f"sciontool hook: too many arguments ({fastpath.HOOK_USAGE})\n"
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "logged"),
    [
        (["blocked", "need", "a", "key"], "Agent blocked: need a key"),
        (["ask_user", "--", "-h is a flag"], "Agent requested input: -h is a flag"),
        (["--", "ask_user", "-x"], "Agent requested input: -x"),
        (["ask_user", "--bogus"], "Agent requested input: --bogus"),  # free text after the type
    ],
)
def test_status_takes_free_text(
    home: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], logged: str
) -> None:
    assert run(monkeypatch, "status", *args) == (0, "")
    assert log_entries(home)[-1][2] == logged


@pytest.mark.parametrize("args", [[], ["--"], ["-x"], ["--bogus", "blocked"]])
def test_status_without_a_type_is_a_usage_error(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert run(monkeypatch, "status", *args)[0] == 1
    assert capsys.readouterr().err == f"sciontool status: missing status type ({fastpath.STATUS_USAGE})\n"
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(
    ("command", "args"), [("hook", ["-h"]), ("status", ["blocked", "--help"]), ("normalize", ["--help"])]
)
def test_help_prints_the_usage_and_does_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch, command: str, args: list[str]
) -> None:
    code, out = run(monkeypatch, command, *args, stdin=TOOL_START)
    assert (code, out) == (0, fastpath.HELP[command])
    assert out.startswith(f"Usage: sciontool {command} ")
    assert list(home.iterdir()) == []


def test_normalize_prints_one_line_per_envelope_and_writes_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = run(monkeypatch, "normalize", "--dialect=core-agent", stdin=TOOL_START + b"\n" + TOOL_START)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0]) == {
        "name": "tool-start",
        "raw_name": "tool-start",
        "dialect": "core-agent",
        "data": {"tool_name": "ls"},
    }
    assert list(home.iterdir()) == []


def test_normalize_with_raw_and_files(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    envelopes = tmp_path / "events.jsonl"
    envelopes.write_bytes(TOOL_START + b"\n")
    code, out = run(
        monkeypatch, "normalize", "--raw", "--dialect", "core-agent", str(envelopes), str(envelopes)
    )
    assert code == 0
    assert [json.loads(line)["data"]["raw"]["tool_name"] for line in out.splitlines()] == ["ls", "ls"]


def guarded(command: str, error: BaseException, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    def fail(args: list[str], log: AgentLog) -> None:
        raise error

    code = fastpath.guarded(command, fail, [])
    return code, capsys.readouterr().err


def test_an_error_message_with_newlines_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert guarded("hook", SciontoolError("first\nsecond"), capsys) == (1, "sciontool hook: first second\n")


def test_an_unexpected_exception_is_an_internal_error_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert guarded("hook", ZeroDivisionError("boom"), capsys) == (
        1,
        "sciontool hook: internal error: ZeroDivisionError: boom\n",
    )


def test_an_internal_errors_traceback_is_in_agent_log_at_debug_and_the_user_sees_one_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def inner() -> None:
        raise ZeroDivisionError("boom")

    def fail(args: list[str], log: AgentLog) -> None:
        inner()

    monkeypatch.setenv("SCION_LOG_LEVEL", "debug")
    assert fastpath.guarded("hook", fail, []) == 1
    assert capsys.readouterr().err == "sciontool hook: internal error: ZeroDivisionError: boom\n"
    [(level, tag, message)] = log_entries(home)
    assert (level, tag) == ("DEBUG", None)
    assert message.startswith("sciontool hook: internal error: Traceback (most recent call last):\\n")
    assert "in inner\\n" in message and message.endswith("ZeroDivisionError: boom")


def test_without_debug_an_internal_error_leaves_agent_log_alone(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert guarded("status", ZeroDivisionError("boom"), capsys)[0] == 1
    assert log_entries(home) == []


def test_a_traceback_in_agent_log_is_bounded(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCION_LOG_LEVEL", "debug")
    AgentLog(str(home)).traceback("sciontool hook", ValueError("x" * 100_000))
    [(_, _, message)] = log_entries(home)
    assert message.startswith("sciontool hook: internal error: ...") and message.endswith("x" * 1000)
    assert len(message.encode()) < TRACEBACK_LIMIT + 100


def test_an_interrupt_is_exit_1_and_silent(capsys: pytest.CaptureFixture[str]) -> None:
    assert guarded("status", KeyboardInterrupt(), capsys) == (1, "")
