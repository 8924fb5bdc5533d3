"""`sciontool dialect test`: fixtures through normalization, a diff per failure.

The first test runs the real command; the rest run the typer app in-process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, CliHere, Ran, sciontool


def dialect_test(*args: str) -> subprocess.CompletedProcess[str]:
    return sciontool("dialect", "test", *args)


@pytest.fixture
def dialect_test_here(cli_here: CliHere) -> CliHere:
    def run(*args: str) -> Ran:
        return cli_here("dialect", "test", *args)

    return run


def test_core_agent_fixtures_pass() -> None:
    out = dialect_test("--dialect", "core-agent", str(FIXTURES / "core-agent"))
    count = len(list((FIXTURES / "core-agent").glob("*.json")))
    assert (out.returncode, out.stdout.splitlines()) == (0, [f"{count} passed, 0 failed"])


def test_an_edited_expectation_fails_with_a_diff_naming_the_field(
    tmp_path: Path, dialect_test_here: CliHere
) -> None:
    folder = tmp_path / "core-agent"
    shutil.copytree(FIXTURES / "core-agent", folder)
    fixture = folder / "tool-start.json"
    data = json.loads(fixture.read_text())
    data["expect"]["data"]["tool_name"] = "write_file"
    fixture.write_text(json.dumps(data))
    out = dialect_test_here("--dialect", "core-agent", str(folder))
    count = len(list(folder.glob("*.json")))
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        f"FAIL {fixture}",
        '    data.tool_name: expected "write_file", got "read_file"',
        f"{count - 1} passed, 1 failed",
    ]


def test_each_folder_uses_its_own_dialect_unless_one_is_forced(dialect_test_here: CliHere) -> None:
    out = dialect_test_here(str(FIXTURES))
    total = len(list(FIXTURES.glob("*/*.json")))
    assert (out.returncode, out.stdout.splitlines()[-1]) == (0, f"{total} passed, 0 failed")
    # Forced onto another dialect, claude's fixtures no longer hold.
    forced = dialect_test_here("--dialect", "gemini", str(FIXTURES / "claude"))
    assert forced.returncode == 1
    assert "    name: expected " in forced.stdout
    assert forced.stdout.splitlines()[-1].endswith(" failed")


def test_a_wrong_response_is_a_failure(tmp_path: Path, dialect_test_here: CliHere) -> None:
    shutil.copytree(FIXTURES / "nested-paths", tmp_path / "nested-paths")
    fixture = tmp_path / "nested-paths" / "nested-object-payload.json"
    data = json.loads(fixture.read_text())
    assert "response" in data
    data["response"] = {"decision": "deny"}
    fixture.write_text(json.dumps(data))
    out = dialect_test_here(str(fixture))
    assert out.stdout.splitlines() == [
        f"FAIL {fixture}",
        '    response: expected {"decision": "deny"}, got {"decision": "allow", "reason": "observed by sciontool"}',
        "0 passed, 1 failed",
    ]


def test_bad_input_is_one_line_and_exit_1(tmp_path: Path, dialect_test_here: CliHere) -> None:
    unknown = dialect_test_here("--dialect", "nope", str(FIXTURES / "claude"))
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("sciontool dialect test: unknown dialect 'nope'")
    assert len(unknown.stderr.splitlines()) == 1
    empty = dialect_test_here(str(tmp_path))
    assert (empty.returncode, empty.stderr) == (
        1,
        f"sciontool dialect test: no fixtures (*.json) in {tmp_path}\n",
    )
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "broken.json").write_text("{")
    broken = dialect_test_here("--dialect", "claude", str(tmp_path))
    assert broken.returncode == 1
    assert broken.stdout.splitlines()[0] == f"FAIL {tmp_path / 'mine' / 'broken.json'}"
    assert "not JSON" in broken.stdout


def test_update_writes_what_the_dialect_produces_and_shows_the_change(tmp_path: Path) -> None:
    folder = tmp_path / "core-agent"
    shutil.copytree(FIXTURES / "core-agent", folder)
    fixture = folder / "tool-start.json"
    before = json.loads(fixture.read_text())
    stale = json.loads(fixture.read_text())
    stale["expect"]["data"]["tool_name"] = "write_file"
    stale["response"] = {"decision": "allow"}
    fixture.write_text(json.dumps(stale))
    untouched = {p: p.read_bytes() for p in folder.glob("*.json") if p != fixture}

    out = dialect_test("--dialect", "core-agent", "--update", str(folder))
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        f"UPDATED {fixture}",
        '    data.tool_name: expected "write_file", got "read_file"',
        '    response: expected {"decision": "allow"}, got null',
        f"{len(untouched)} unchanged, 1 updated",
    ]
    updated = json.loads(fixture.read_text())
    assert updated["envelope"] == before["envelope"] and updated["expect"] == before["expect"]
    assert updated["response"] is None  # the fixture checked a response: it now expects none
    assert {p: p.read_bytes() for p in untouched} == untouched
    assert dialect_test("--dialect", "core-agent", str(folder)).returncode == 0
    again = dialect_test("--dialect", "core-agent", "--update", str(folder))
    assert again.stdout.splitlines() == [f"{len(untouched) + 1} unchanged, 0 updated"]
