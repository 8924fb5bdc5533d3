"""The pytest plugin: one test item per fixture, the `dialect test` diff on failure."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES, REPO

pytest_plugins = ["pytester"]


def copy(pytester: pytest.Pytester, *names: str) -> None:
    for name in names:
        shutil.copytree(FIXTURES / name, pytester.path / name)


def test_one_item_per_fixture(pytester: pytest.Pytester) -> None:
    copy(pytester, "claude")
    files = [p.stem for p in sorted((pytester.path / "claude").glob("*.json"))]
    result = pytester.runpytest("--sciontool-fixtures", "claude", "--sciontool-dialect", "claude")
    result.assert_outcomes(passed=len(files))
    collected = pytester.runpytest("--sciontool-fixtures", "claude", "--collect-only", "-q")
    items = [line for line in collected.outlines if "::" in line]
    assert items == [f"claude/{name}.json::{name}" for name in files]


def test_a_failing_fixture_shows_the_field_diff(pytester: pytest.Pytester) -> None:
    copy(pytester, "core-agent")
    fixture = pytester.path / "core-agent" / "tool-start.json"
    data = json.loads(fixture.read_text())
    data["expect"]["data"]["tool_name"] = "write_file"
    fixture.write_text(json.dumps(data))
    result = pytester.runpytest("--sciontool-fixtures", "core-agent")
    result.assert_outcomes(passed=len(list(fixture.parent.glob("*.json"))) - 1, failed=1)
    result.stdout.fnmatch_lines(['data.tool_name: expected "write_file", got "read_file"'])
    assert "Traceback" not in result.stdout.str()


def test_each_folder_uses_its_own_dialect_from_the_ini_file(pytester: pytest.Pytester) -> None:
    copy(pytester, "claude", "codex", "nested-paths")
    pytester.makeini("[pytest]\nsciontool_fixtures = .\n")
    count = len(list(pytester.path.glob("*/*.json")))
    pytester.runpytest().assert_outcomes(passed=count)
    # Forcing one dialect on every folder breaks the others' fixtures.
    forced = pytester.runpytest("--sciontool-dialect", "claude")
    assert forced.parseoutcomes()["failed"] > 0


def test_off_unless_asked(pytester: pytest.Pytester) -> None:
    copy(pytester, "claude")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.runpytest("claude").assert_outcomes()  # a .json file is no test by itself


def test_an_unknown_dialect_is_a_usage_error(pytester: pytest.Pytester) -> None:
    copy(pytester, "claude")
    result = pytester.runpytest("--sciontool-fixtures", "claude", "--sciontool-dialect", "nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*sciontool: unknown dialect 'nope'*"])


def test_a_missing_fixture_folder_is_named(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--sciontool-fixtures", "missing-dir")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*sciontool: --sciontool-fixtures: {pytester.path / 'missing-dir'}: no such folder*"]
    )


def test_an_unknown_dialect_says_how_dialects_are_found(pytester: pytest.Pytester) -> None:
    copy(pytester, "claude")
    result = pytester.runpytest("--sciontool-fixtures", "claude", "--sciontool-dialect", "nope")
    result.stderr.fnmatch_lines(["*SCION_DIALECTS_PATH*--sciontool-dialect-file*"])


def test_a_fresh_pytest_finds_the_plugin_and_reads_the_ini_dialect_file_beside_the_ini(
    pytester: pytest.Pytester,
) -> None:
    # In a new process the plugin arrives through its pytest11 entry point alone. The ini file
    # lives in a folder of its own, so its dialect file's path counts from there, not the cwd.
    copy(pytester, "claude")
    conf = pytester.path / "conf"
    (conf / "mine").mkdir(parents=True)
    shutil.copy(REPO / "dialects" / "claude" / "dialect.yaml", conf / "mine" / "dialect.yaml")
    (conf / "pytest.ini").write_text(
        "[pytest]\nsciontool_fixtures = ../claude\nsciontool_dialect_file = mine/dialect.yaml\n"
    )
    count = len(list((pytester.path / "claude").glob("*.json")))
    result = pytester.runpytest_subprocess("-c", str(conf / "pytest.ini"), "-p", "no:randomly")
    result.assert_outcomes(passed=count)
    (conf / "mine" / "dialect.yaml").unlink()  # the path really is the one beside the ini
    gone = pytester.runpytest_subprocess("-c", str(conf / "pytest.ini"), "-p", "no:randomly")
    assert gone.ret == pytest.ExitCode.USAGE_ERROR
    gone.stderr.fnmatch_lines([f"*sciontool: *{conf / 'mine' / 'dialect.yaml'}*"])
