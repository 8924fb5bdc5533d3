"""`sciontool dialect check`: every error at its line, warnings for likely mistakes.

The first test runs the real command; the rest run the typer app in-process.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, CliHere, Ran, sciontool


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return sciontool("dialect", "check", *args)


@pytest.fixture
def check_here(cli_here: CliHere) -> CliHere:
    def run(*args: str) -> Ran:
        return cli_here("dialect", "check", *args)

    return run


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "dialect.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_two_mistakes_give_two_located_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        dialect: mine
        event_name_field: hook_event_name
        mapings: {}
        mappings:
          PreTool:
            event: tool-strat
        """,
    )
    out = check(path)
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        f"{path}:3:1: dialect file: unknown key 'mapings' (did you mean 'mappings'?)",
        f"{path}:6:12: mappings.PreTool.event: 'tool-strat' is not a canonical event (did you mean 'tool-start'?)",
        "1 checked, 2 errors, 0 warnings",
    ]


def test_shipped_and_fixture_dialects_are_clean(check_here: CliHere) -> None:
    paths = [
        *sorted(str(p) for p in (REPO / "dialects").iterdir() if p.is_dir()),
        str(FIXTURES / "nested-paths"),
    ]
    out = check_here(*paths)
    assert (out.returncode, out.stdout.splitlines()) == (0, [f"{len(paths)} checked, 0 errors, 0 warnings"])


def test_legal_but_likely_wrong_gives_warnings_and_exit_0(tmp_path: Path, check_here: CliHere) -> None:
    path = write(
        tmp_path,
        """\
        dialect: mine
        event_name_field: hook_event_name
        mappings:
          PreToolUse:
            event: tool-start
            fields:
              tool_name: .tool.name
          BeforeTool:
            event: tool-start
            fields:
              tool_name: .name
        responses:
          PreToolUSe: {decision: allow}
        """,
    )
    out = check_here(path)
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        f"{path}:11:18: warning: mappings.BeforeTool.fields.tool_name: tool-start takes tool_name from .name here but from .tool.name for 'PreToolUse' (line 7)",
        f"{path}:13:3: warning: responses.PreToolUSe: no mapping for raw event 'PreToolUSe' (a misspelt name never gets this response)",
        "1 checked, 0 errors, 2 warnings",
    ]


def test_paths_the_fixture_envelopes_never_carry_are_warned_only_with_fixtures(check_here: CliHere) -> None:
    codex = str(REPO / "dialects" / "codex" / "dialect.yaml")
    assert check_here(codex).stdout.splitlines() == ["1 checked, 0 errors, 0 warnings"]
    # claude's envelopes never carry codex's `title`, `thread-id`, ...
    out = check_here("--fixtures", str(FIXTURES / "claude"), codex)
    line = Path(codex).read_text().splitlines().index("      message: .title") + 1
    assert out.returncode == 0
    assert out.stdout.splitlines()[0] == (
        f"{codex}:{line}:16: warning: mappings.agent-turn-complete.fields.message: path .title can never match: "
        "no envelope in the fixtures has a top-level 'title'"
    )
    # ...nor its hooks.json `token_usage` (five counts).
    assert out.stdout.splitlines()[-1] == "1 checked, 0 errors, 9 warnings"
    # codex's own fixtures carry them all.
    assert check_here("--fixtures", str(FIXTURES / "codex"), codex).stdout.splitlines() == [
        "1 checked, 0 errors, 0 warnings"
    ]


def test_a_missing_file_is_one_error_line(tmp_path: Path, check_here: CliHere) -> None:
    out = check_here(str(tmp_path / "nope.yaml"))
    assert out.returncode == 1
    # Issue 13: a missing file is said to be missing, not located at 1:1.
    assert out.stdout.splitlines() == [
        f"{tmp_path / 'nope.yaml'}: no such file",
        "1 checked, 1 error, 0 warnings",
    ]
    folder = check_here(str(tmp_path / "nothere"))
    assert folder.stdout.splitlines()[0] == f"{tmp_path / 'nothere'}: no such file or folder"
    assert "Traceback" not in out.stderr


def test_a_response_value_json_cannot_carry_is_an_error_at_its_place(
    tmp_path: Path, check_here: CliHere
) -> None:
    path = write(
        tmp_path,
        """\
        dialect: mine
        event_name_field: hook_event_name
        responses:
          PreToolUse: {decision: allow, since: 2026-01-01, limit: .inf}
        """,
    )
    out = check_here(path)
    assert out.returncode == 1
    assert out.stdout.splitlines()[0] == (
        f"{path}:4:40: responses.PreToolUse.since: a JSON response cannot carry the date 2026-01-01 "
        "(Scion would print it as a time); quote it to send the text"
    )
