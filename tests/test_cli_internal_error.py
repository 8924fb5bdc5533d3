"""A bug inside a typer command, in-process: the user sees one line naming the command and the
error, exit 1, never a traceback; with SCION_LOG_LEVEL=debug the traceback is one DEBUG line of
$HOME/agent.log for the bug report, and without it agent.log is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import log_entries

from sciontool_py import cli
from sciontool_py.dialect import discover
from sciontool_py.harness.base import Scope
from sciontool_py.harness.hermes import Hermes

Captured = pytest.CaptureFixture[str]


def broken_listing() -> list[tuple[str, str, str]]:
    raise KeyError("dialects")


def broken_show(self: Hermes, scope: Scope) -> str:
    raise ZeroDivisionError("division by zero")


def test_an_internal_error_is_one_line_naming_the_command(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: Captured
) -> None:
    monkeypatch.setattr(discover, "dialect_entries", broken_listing)

    code = cli.run(["dialect", "list"])

    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err == "sciontool dialect list: internal error: KeyError: 'dialects'\n"
    assert log_entries(home) == []  # a traceback only when the user asked for debug


def test_at_debug_the_traceback_is_one_agent_log_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: Captured
) -> None:
    monkeypatch.setattr(Hermes, "show", broken_show)
    monkeypatch.setenv("SCION_LOG_LEVEL", "debug")

    code = cli.run(["harness", "show", "hermes", "--user"])

    assert (code, capsys.readouterr().err) == (
        1,
        "sciontool harness show: internal error: ZeroDivisionError: division by zero\n",
    )
    [(level, tag, message)] = log_entries(home)
    assert (level, tag) == ("DEBUG", None)
    assert message.startswith("sciontool harness show: internal error: Traceback (most recent call last):\\n")
    assert "in broken_show\\n" in message and message.endswith("ZeroDivisionError: division by zero")
