"""Dialect fixtures in-process: how a fixture file is read, which dialect it is tested against, and
the field-by-field differences a dialect author sees."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from sciontool_py.authoring.contract import (
    DialectChooser,
    FixtureError,
    check_fixture,
    differences,
    failure_report,
    fixture_files,
    folder_dialect_file,
    load_fixture,
)
from sciontool_py.dialect.discover import find_dialect
from sciontool_py.dialect.load import load_dialect
from sciontool_py.errors import DialectError

TOOL_START = {
    "envelope": {"hook_event_name": "tool-start", "tool_name": "ls", "tool_input": {"d": 1}},
    "expect": {
        "name": "tool-start",
        "raw_name": "tool-start",
        "dialect": "core-agent",
        "data": {"tool_name": "ls", "tool_input": '{"d":1}'},
    },
}


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_a_fixture_decodes_its_envelope_as_go_does(home: Path, tmp_path: Path) -> None:
    fixture = load_fixture(str(write(tmp_path / "tool-start.json", TOOL_START)))
    assert fixture.name == "tool-start"
    assert fixture.envelope == {"hook_event_name": "tool-start", "tool_name": "ls", "tool_input": {"d": 1.0}}
    assert isinstance(fixture.envelope["tool_input"]["d"], float)
    assert differences(find_dialect("core-agent"), fixture) == []


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{", "not JSON: "),
        ("[]", 'expected an object with "envelope" and an "expect" object'),
        ('{"envelope": {}}', 'expected an object with "envelope" and an "expect" object'),
        ('{"envelope": {}, "expect": []}', 'expected an object with "envelope" and an "expect" object'),
        ('{"envelope": {}, "expect": {}, "respones": {}, "z": 1}', "unknown key(s) respones, z"),
        ('{"event": "", "envelope": {}, "expect": {}}', '"event" must be a non-empty string'),
        ('{"event": 3, "envelope": {}, "expect": {}}', '"event" must be a non-empty string'),
    ],
)
def test_a_bad_fixture_file_is_one_error_naming_it(tmp_path: Path, content: str, problem: str) -> None:
    path = write(tmp_path / "bad.json", content)
    with pytest.raises(FixtureError) as caught:
        load_fixture(str(path))
    assert str(caught.value).startswith(f"{path}: {problem}")


def test_a_fixture_names_the_event_a_nameless_envelope_gets_from_hook_event(
    home: Path, tmp_path: Path
) -> None:
    """agentino's contexts carry no event name: the fixture gives it, as `hook --event` does."""
    context = {"tool_name": "shell", "arguments": {"command": "ls"}}
    expect = {
        "name": "tool-start",
        "raw_name": "PreToolUse",
        "dialect": "agentino",
        "data": {"tool_name": "shell", "tool_input": '{"command":"ls"}'},
    }
    data = {"event": "PreToolUse", "envelope": context, "expect": expect}
    assert differences(find_dialect("agentino"), load_fixture(str(write(tmp_path / "a.json", data)))) == []
    del data["event"]
    [line] = differences(find_dialect("agentino"), load_fixture(str(write(tmp_path / "b.json", data))))
    assert line.startswith("normalization failed: event name field(s) [hook_event_name] missing")


def test_a_missing_fixture_file(tmp_path: Path) -> None:
    with pytest.raises(FixtureError) as caught:
        load_fixture(str(tmp_path / "nope.json"))
    assert str(caught.value) == f"{tmp_path / 'nope.json'}: No such file or directory"


def test_fixture_files_are_found_recursively_sorted_without_schemas(tmp_path: Path) -> None:
    for name in ("b/z.json", "b/a.json", "a.json", "dialect.schema.json", "notes.txt", "b/c/d.json"):
        write(tmp_path / name, "{}")
    single = write(tmp_path / "elsewhere.json", "{}")
    assert fixture_files([str(tmp_path / "b"), str(single)]) == [
        str(tmp_path / "b" / "a.json"),
        str(tmp_path / "b" / "z.json"),
        str(tmp_path / "b" / "c" / "d.json"),
        str(single),
    ]
    assert str(tmp_path / "dialect.schema.json") not in fixture_files([str(tmp_path)])
    with pytest.raises(FixtureError) as caught:
        fixture_files([str(tmp_path / "missing")])
    assert str(caught.value) == f"{tmp_path / 'missing'}: no such file or folder"


@pytest.mark.parametrize(
    ("edit", "lines"),
    [
        (
            lambda e: e["data"].update(tool_name="write_file"),
            ['data.tool_name: expected "write_file", got "ls"'],
        ),
        (lambda e: e["data"].pop("tool_input"), ['data.tool_input: unexpected "{\\"d\\":1}"']),
        (lambda e: e["data"].update(prompt="hi"), ['data.prompt: missing, expected "hi"']),
        (
            lambda e: e.update(name="tool-end", dialect="claude"),
            ['name: expected "tool-end", got "tool-start"', 'dialect: expected "claude", got "core-agent"'],
        ),
        (
            lambda e: e.update(data="x"),
            ['data: expected "x", got {"tool_name": "ls", "tool_input": "{\\"d\\":1}"}'],
        ),
    ],
)
def test_each_difference_is_one_line_naming_the_field(
    home: Path, tmp_path: Path, edit: object, lines: list[str]
) -> None:
    data = json.loads(json.dumps(TOOL_START))
    edit(data["expect"])  # type: ignore[operator]
    fixture = load_fixture(str(write(tmp_path / "f.json", data)))
    assert differences(find_dialect("core-agent"), fixture) == lines


def test_true_is_not_one(tmp_path: Path) -> None:
    dialect = load_dialect(str(FIXTURES / "nested-paths" / "dialect.yaml"))
    envelope = {"kind": "call.finish", "call": {"ok": True}}
    expect = {
        "name": "tool-end",
        "raw_name": "call.finish",
        "dialect": "nested-paths",
        "data": {"success": True},
    }
    fixture = load_fixture(str(write(tmp_path / "a.json", {"envelope": envelope, "expect": expect})))
    assert differences(dialect, fixture) == []
    expect["data"] = {"success": 1}
    fixture = load_fixture(str(write(tmp_path / "b.json", {"envelope": envelope, "expect": expect})))
    assert differences(dialect, fixture) == ["data.success: expected 1, got true"]


def test_a_response_is_checked_only_when_the_fixture_names_one(home: Path, tmp_path: Path) -> None:
    chooser = DialectChooser()
    source = FIXTURES / "nested-paths" / "nested-object-payload.json"
    folder = tmp_path / "nested-paths"
    shutil.copytree(source.parent, folder)
    fixture = folder / source.name
    assert check_fixture(chooser, str(fixture)) == []
    data = json.loads(fixture.read_text())
    data["response"] = {"decision": "deny"}
    fixture.write_text(json.dumps(data))
    assert check_fixture(chooser, str(fixture)) == [
        'response: expected {"decision": "deny"}, got {"decision": "allow", "reason": "observed by sciontool"}'
    ]
    del data["response"]
    fixture.write_text(json.dumps(data))
    assert check_fixture(chooser, str(fixture)) == []


def test_normalization_failure_is_a_difference(home: Path, tmp_path: Path) -> None:
    fixture = load_fixture(str(write(tmp_path / "f.json", {"envelope": {"tool_name": "x"}, "expect": {}})))
    [line] = differences(find_dialect("core-agent"), fixture)
    assert line.startswith("normalization failed: ") and "[hook_event_name] missing or empty" in line


def test_a_folder_uses_its_own_dialect_yaml_then_the_dialect_named_like_it(
    home: Path, tmp_path: Path
) -> None:
    own = tmp_path / "mine"
    shutil.copy(
        FIXTURES / "nested-paths" / "dialect.yaml", write(own / "x.json", "{}").parent / "dialect.yaml"
    )
    named = write(tmp_path / "gemini" / "y.json", "{}")
    chooser = DialectChooser()
    assert folder_dialect_file(str(own / "x.json")) == str(own / "dialect.yaml")
    assert folder_dialect_file(str(named)) is None
    assert chooser.spec_for(str(own / "x.json")).name == "nested-paths"
    assert chooser.spec_for(str(named)).name == "gemini"


def test_a_folder_without_a_dialect_fails_each_of_its_fixtures(home: Path, tmp_path: Path) -> None:
    chooser = DialectChooser()
    first = write(tmp_path / "unknown-harness" / "a.json", TOOL_START)
    second = write(tmp_path / "unknown-harness" / "b.json", TOOL_START)
    for path in (first, second):
        [line] = check_fixture(chooser, str(path))
        assert line.startswith("unknown dialect 'unknown-harness'; available: ")


def test_a_forced_dialect_applies_to_every_folder(home: Path) -> None:
    chooser = DialectChooser("gemini")
    assert chooser.spec_for(str(FIXTURES / "claude" / "notification.json")).name == "gemini"
    assert check_fixture(chooser, str(FIXTURES / "claude" / "notification.json")) != []
    by_file = DialectChooser(dialect_file=str(FIXTURES / "nested-paths" / "dialect.yaml"))
    assert by_file.spec_for(str(FIXTURES / "claude" / "notification.json")).name == "nested-paths"


def test_a_bad_forced_dialect_is_one_error_up_front(home: Path) -> None:
    with pytest.raises(DialectError) as caught:
        DialectChooser("nope")
    assert str(caught.value).startswith("unknown dialect 'nope'")


def test_every_shipped_fixture_passes(home: Path) -> None:
    chooser = DialectChooser()
    files = fixture_files([str(FIXTURES)])
    assert len(files) > 50
    assert {path: check_fixture(chooser, path) for path in files} == {path: [] for path in files}


def test_a_failure_report_is_the_file_then_indented_lines() -> None:
    assert failure_report("a/b.json", ["x: one", "y: two"]) == "FAIL a/b.json\n    x: one\n    y: two"
