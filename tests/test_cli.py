"""The typer app in-process: every command is reachable, its output is what a user reads, and every
error, usage errors included, is one line on stderr and exit 1.

The real process, with the entry point's routing, is proven in test_hook_cli.py.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, read_info
from typer.main import get_command

from sciontool_py import cli, main
from sciontool_py.errors import SciontoolError
from sciontool_py.harness import INSTALLABLE, NAMES, find_harness
from sciontool_py.harness.base import Scope

Captured = pytest.CaptureFixture[str]


def run(capsys: Captured, *args: str) -> tuple[int, str, str]:
    code = cli.run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args", [[], ["-h"], ["--help"]])
def test_help_lists_every_command(capsys: Captured, args: list[str]) -> None:
    code, out, err = run(capsys, *args)
    assert (code, err) == (0, "")
    assert "Usage: sciontool" in out
    for command in ("hook", "status", "normalize", "emit", "dialect"):
        assert command in out


def test_a_group_without_a_command_shows_its_help(capsys: Captured) -> None:
    code, out, err = run(capsys, "dialect")
    assert (code, err) == (0, "")  # as `sciontool` alone: help, and no empty error line
    assert "Usage: sciontool dialect" in out and "scaffold" in out


@pytest.mark.parametrize("args", [["dialect", "-h"], ["dialect", "check", "--help"], ["emit", "-h"]])
def test_help_on_subcommands(capsys: Captured, args: list[str]) -> None:
    code, out, _ = run(capsys, *args)
    assert code == 0 and f"Usage: sciontool {' '.join(a for a in args if not a.startswith('-'))}" in out


@pytest.mark.parametrize(
    ("args", "err"),
    [
        (["bogus"], "sciontool: No such command 'bogus'. (see 'sciontool --help')\n"),
        (
            ["dialect", "show"],
            "sciontool dialect show: Missing argument 'NAME'. (see 'sciontool dialect show --help')\n",
        ),
        (["emit", "--nope"], "sciontool emit: No such option: --nope (see 'sciontool emit --help')\n"),
        (
            ["dialect", "show", "nope"],
            "sciontool dialect show: unknown dialect 'nope'; available: agentino, antigravity, auggie, claude, codex, copilot, core-agent, droid, gemini, grok-build, hermes, lhh, mistral-vibe, muse-code, opencode, qwen-code\n",
        ),
    ],
)
def test_errors_are_one_line_and_exit_1(home: Path, capsys: Captured, args: list[str], err: str) -> None:
    assert run(capsys, *args) == (1, "", err)


def test_the_hot_commands_pass_through_to_the_fast_path(
    home: Path, capsys: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"hook_event_name": "tool-start", "tool_name": "ls"}'))
    )
    assert cli.run(["hook", "--dialect=core-agent"]) == 0
    assert read_info(home) == {"activity": "executing", "toolName": "ls"}
    assert cli.run(["status", "blocked", "--", "-x"]) == 0
    assert read_info(home) == {"activity": "blocked"}
    assert cli.run(["status"]) == 1
    assert capsys.readouterr().err.endswith(
        "sciontool status: missing status type (usage: sciontool status TYPE [MESSAGE...])\n"
    )
    assert cli.run(["normalize", "-h"]) == 0
    assert capsys.readouterr().out.startswith("Usage: sciontool normalize ")


def test_the_entry_point_routes_hot_commands_and_the_rest(
    home: Path, capsys: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["sciontool", "status", "ask_user", "which?"])
    assert main.main() == 0
    assert read_info(home) == {"activity": "waiting_for_input"}
    monkeypatch.setattr(sys, "argv", ["sciontool", "dialect", "list"])
    assert main.main() == 0
    assert "core-agent\t" in capsys.readouterr().out


def test_dialect_list_names_each_dialect_and_its_file(home: Path, capsys: Captured) -> None:
    code, out, _ = run(capsys, "dialect", "list")
    assert code == 0
    assert f"claude\t{REPO / 'dialects' / 'claude' / 'dialect.yaml'}\tok" in out.splitlines()


def test_dialect_show_prints_the_compiled_dialect(home: Path, capsys: Captured) -> None:
    code, out, _ = run(capsys, "dialect", "show", "core-agent")
    shown = json.loads(out)
    assert code == 0 and shown["dialect"] == "core-agent"
    assert shown["mappings"]["tool-start"]["event"] == "tool-start"


def test_dialect_schema_prints_the_committed_schema(capsys: Captured) -> None:
    code, out, _ = run(capsys, "dialect", "schema")
    assert code == 0 and out == (REPO / "dialects" / "dialect.schema.json").read_text()


def test_dialect_schema_path_names_the_installed_schema_file(capsys: Captured) -> None:
    # What a dialect author puts in a `$schema` line: the file the command prints.
    code, out, _ = run(capsys, "dialect", "schema", "--path")
    assert code == 0 and out.endswith("dialect.schema.json\n")
    assert Path(out.strip()).read_text() == (REPO / "dialects" / "dialect.schema.json").read_text()


def test_dialect_check_counts_errors_and_warnings(home: Path, capsys: Captured, tmp_path: Path) -> None:
    bad = tmp_path / "dialect.yaml"
    bad.write_text("dialect: mine\nevent_name_field: e\nmapings: {}\n")
    code, out, _ = run(capsys, "dialect", "check", str(bad), str(REPO / "dialects" / "claude"))
    assert code == 1
    assert out.splitlines() == [
        f"{bad}:3:1: dialect file: unknown key 'mapings' (did you mean 'mappings'?)",
        "2 checked, 1 error, 0 warnings",
    ]
    code, out, _ = run(capsys, "dialect", "check", str(REPO / "dialects" / "claude"))
    assert (code, out) == (0, "1 checked, 0 errors, 0 warnings\n")


def test_dialect_test_reports_passes_and_failures(home: Path, capsys: Captured, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "dialect", "test", str(FIXTURES / "gemini"))
    count = len(list((FIXTURES / "gemini").glob("*.json")))
    assert (code, out) == (0, f"{count} passed, 0 failed\n")
    code, out, _ = run(
        capsys,
        "dialect",
        "test",
        "--dialect-file",
        str(FIXTURES / "nested-paths" / "dialect.yaml"),
        str(FIXTURES / "gemini" / "notification.json"),
    )
    assert code == 1 and out.splitlines()[0] == f"FAIL {FIXTURES / 'gemini' / 'notification.json'}"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(capsys, "dialect", "test", str(empty)) == (
        1,
        "",
        f"sciontool dialect test: no fixtures (*.json) in {empty}\n",
    )


def test_dialect_scaffold_writes_and_reports(home: Path, capsys: Captured, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text('{"hook_event_name": "tool-start", "tool_name": "ls"}\n{"hook_event_name": "Weird"}\n')
    code, out, _ = run(capsys, "dialect", "scaffold", "mine", "--from", str(log), "--out", str(tmp_path))
    assert code == 0
    assert out.splitlines()[-1] == "1 raw event mapped, 1 left as TODO"
    assert f"wrote {tmp_path / 'mine' / 'dialect.yaml'}" in out.splitlines()


def test_emit_prints_an_envelope(capsys: Captured) -> None:
    assert run(capsys, "emit", "tool-end", "--tool-name", "t", "--session-id", "s") == (
        0,
        '{"hook_event_name":"tool-end","session_id":"s","tool_name":"t","tool_output":null}\n',
        "",
    )


def _command_paths() -> list[list[str]]:
    """Every command of the app, as the words that name it (["dialect", "check"], ...)."""
    paths: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            paths.append(path)
            return
        for name, sub in subcommands.items():
            walk(sub, [*path, name])

    walk(get_command(cli.app), [])
    return paths


COMMAND_PATHS = _command_paths()
# typer's way of naming a value: `<str>`, `<list[str]>`, `<int>`.
_PYTHON_TYPE = re.compile(r"<[a-z]+(\[[a-z, \[\]]+\])?>")


def test_the_command_list_is_complete() -> None:
    assert {" ".join(p) for p in COMMAND_PATHS} >= {
        "hook", "status", "normalize", "run", "agents", "emit", "dialect check", "dialect schema", "harness show"
    }  # fmt: skip


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=" ".join)
def test_every_commands_help_is_in_one_style(capsys: Captured, path: list[str]) -> None:
    """hook, status and normalize print their own help (no typer on the hook path); it reads as
    the rest does, and no help names a value by its Python type."""
    code, out, err = run(capsys, *path, "-h")
    assert (code, err) == (0, "")
    usage = out.splitlines()[0]
    assert usage.startswith(f"Usage: sciontool {' '.join(path)}") and "{" not in usage
    assert not _PYTHON_TYPE.search(out), _PYTHON_TYPE.search(out)
    assert "\n\nOptions:\n" in out
    assert re.search(r"^  -h, --help +Show this message and exit\.$", out, re.M)


@pytest.mark.parametrize(
    ("command", "names"), [("install", INSTALLABLE), ("uninstall", INSTALLABLE), ("show", NAMES)]
)
def test_harness_help_lists_the_harnesses_the_command_takes(
    capsys: Captured, command: str, names: tuple[str, ...]
) -> None:
    code, out, _ = run(capsys, "harness", command, "-h")
    assert code == 0
    assert f" NAME {', '.join(names[:-1])} or {names[-1]}" in " ".join(out.split())


def test_every_harness_is_found_by_its_name_and_only_agentino_cannot_be_installed(tmp_path: Path) -> None:
    scope = Scope(str(tmp_path))
    assert [find_harness(name).name for name in NAMES] == list(NAMES)
    assert set(NAMES) - set(INSTALLABLE) == {"agentino"}
    with pytest.raises(SciontoolError, match="registered in code"):
        find_harness("agentino").install(scope)
    with pytest.raises(SciontoolError, match="unknown harness 'nope'; known: claude, gemini, "):
        find_harness("nope")
