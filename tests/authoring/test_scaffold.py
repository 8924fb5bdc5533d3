"""`sciontool dialect scaffold`: from a recorded envelope log to a dialect that passes check and test.

The first test scaffolds with the real command and normalizes with it; check, test and the other
cases run the typer app in-process.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from conftest import REPO, CliHere, sciontool


def core_agent_log(turns: int = 50) -> str:
    """What a `cat >> events.jsonl` hook records from core-agent: four envelopes a turn."""
    lines = []
    for i in range(turns):
        lines += [
            {"hook_event_name": "model-start", "session_id": "s-1"},
            {
                "hook_event_name": "tool-start",
                "session_id": "s-1",
                "tool_name": "read_file",
                "tool_input": {"path": f"/src/f{i}.py", "limit": i},
            },
            {
                "hook_event_name": "tool-end",
                "session_id": "s-1",
                "tool_name": "read_file",
                "tool_output": {"content": f"line {i}", "ok": True},
            },
            {"hook_event_name": "agent-end", "session_id": "s-1"},
        ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_a_recorded_core_agent_log_scaffolds_a_dialect_that_checks_and_tests(
    tmp_path: Path, cli_here: CliHere
) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(core_agent_log())
    assert len(log.read_text().splitlines()) == 200
    out = sciontool("dialect", "scaffold", "mine", "--from", str(log), "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    folder = tmp_path / "mine"
    assert sorted(p.name for p in folder.iterdir()) == [
        "agent-end.json",
        "dialect.schema.json",
        "dialect.yaml",
        "model-start.json",
        "tool-end.json",
        "tool-start.json",
    ]
    assert out.stdout.splitlines()[-1] == "4 raw events mapped, 0 left as TODO"

    check = cli_here("dialect", "check", str(folder))
    assert (check.returncode, check.stdout) == (0, "1 checked, 0 errors, 0 warnings\n")
    tested = cli_here("dialect", "test", str(folder))
    assert (tested.returncode, tested.stdout) == (0, "4 passed, 0 failed\n")

    text = (folder / "dialect.yaml").read_text()
    assert text.splitlines()[0] == "# yaml-language-server: $schema=dialect.schema.json"
    assert (folder / "dialect.schema.json").read_text() == (
        REPO / "dialects" / "dialect.schema.json"
    ).read_text()
    spec = yaml.safe_load(text)
    assert spec["event_name_fields"] == ["hook_event_name"]
    assert spec["mappings"]["tool-start"] == {"event": "tool-start", "fields": {"tool_input": ".tool_input"}}
    assert spec["mappings"]["tool-end"] == {"event": "tool-end", "fields": {"tool_output": ".tool_output"}}
    # The guessed dialect reads the whole log exactly as the shipped core-agent dialect does.
    mine = sciontool("normalize", f"--dialect-file={folder / 'dialect.yaml'}", str(log))
    core = sciontool("normalize", "--dialect=core-agent", str(log))
    assert mine.stdout.replace('"dialect":"mine"', '"dialect":"core-agent"') == core.stdout
    assert len(core.stdout.splitlines()) == 200


def test_unknown_events_and_nested_fields(tmp_path: Path, cli_here: CliHere) -> None:
    log = tmp_path / "events.jsonl"
    # Written without newlines, as `cat >>` records a harness that sends none.
    log.write_text(
        json.dumps({"type": "pre_tool_use", "tool": {"name": "grep", "args": {"q": "x"}}, "sessionId": "s"})
        + json.dumps({"type": "Frobnicate", "message": "hi"})
    )
    out = cli_here("dialect", "scaffold", "nested", "--from", str(log), "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "nested" / "dialect.yaml").read_text()
    assert yaml.safe_load(text)["mappings"] == {
        "pre_tool_use": {
            "event": "tool-start",
            "fields": {"tool_name": ".tool.name", "session_id": ".sessionId", "tool_input": ".tool.args"},
        }
    }
    assert "  # TODO: Frobnicate (seen 1 time) matches no known harness event." in text
    assert "  # Frobnicate:\n  #   event: TODO\n" in text
    assert cli_here("dialect", "check", str(tmp_path / "nested")).returncode == 0
    assert cli_here("dialect", "test", str(tmp_path / "nested")).stdout == "2 passed, 0 failed\n"
    fixture = json.loads((tmp_path / "nested" / "pre-tool-use.json").read_text())
    assert fixture["expect"]["data"] == {"tool_name": "grep", "session_id": "s", "tool_input": '{"q":"x"}'}


def test_existing_files_are_kept_without_force(tmp_path: Path, cli_here: CliHere) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(core_agent_log(1))
    args = ("dialect", "scaffold", "mine", "--from", str(log), "--out", str(tmp_path))
    assert cli_here(*args).returncode == 0
    dialect = tmp_path / "mine" / "dialect.yaml"
    dialect.write_text("edited by hand\n")
    again = cli_here(*args)
    assert (again.returncode, again.stderr) == (
        1,
        f"sciontool dialect scaffold: {dialect}: already exists (use --force to overwrite)\n",
    )
    assert dialect.read_text() == "edited by hand\n"
    assert cli_here(*args, "--force").returncode == 0
    assert dialect.read_text().startswith("# yaml-language-server:")


def test_bad_logs_are_one_line_errors(tmp_path: Path, cli_here: CliHere) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text('{"hook_event_name": "a"}\n{"oops"\n')
    out = cli_here("dialect", "scaffold", "mine", "--from", str(log), "--out", str(tmp_path))
    assert out.returncode == 1
    assert (
        out.stderr.startswith(f"sciontool dialect scaffold: {log}:2: not JSON:")
        and len(out.stderr.splitlines()) == 1
    )
    log.write_text('{"hook_event_name": "a"}\n{"foo": 1}\n')
    out = cli_here("dialect", "scaffold", "mine", "--from", str(log), "--out", str(tmp_path))
    assert out.stderr.startswith(
        f"sciontool dialect scaffold: {log}:2: no event name in the envelope (tried hook_event_name,"
    )
    out = cli_here("dialect", "scaffold", "Bad Name", "--from", str(log), "--out", str(tmp_path))
    assert (
        out.stderr
        == "sciontool dialect scaffold: invalid dialect name 'Bad Name': expected [a-z0-9][a-z0-9._-]*\n"
    )
    assert not (tmp_path / "mine").exists()


def test_a_made_up_harness_gets_fields_from_its_shape_and_events_from_its_words(
    tmp_path: Path, cli_here: CliHere
) -> None:
    """Key names it has never seen: a name beside args is a tool call, a constant `session` an id."""
    log = "".join(
        json.dumps(e) + "\n"
        for e in [
            {"type": "ToolCallStarted", "call": {"name": "ls", "args": {"d": "."}}, "session": "s1"},
            {
                "type": "ToolCallFinished",
                "call": {"name": "ls", "args": {"d": "."}, "result": "a b"},
                "session": "s1",
            },
        ]
    )
    out = sciontool("dialect", "scaffold", "acme", "--from", "-", "--out", str(tmp_path), stdin=log)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "2 raw events mapped, 0 left as TODO"
    dialect = yaml.safe_load((tmp_path / "acme" / "dialect.yaml").read_text())
    assert dialect["mappings"]["ToolCallStarted"] == {
        "event": "tool-start",
        "fields": {"tool_name": ".call.name", "tool_input": ".call.args", "session_id": ".session"},
    }
    assert dialect["mappings"]["ToolCallFinished"]["event"] == "tool-end"
    assert dialect["mappings"]["ToolCallFinished"]["fields"]["tool_output"] == ".call.result"
    assert "from <stdin>: 2 envelopes, 2 raw events." in (tmp_path / "acme" / "dialect.yaml").read_text()
    tested = cli_here("dialect", "test", str(tmp_path / "acme"))
    assert tested.stdout.splitlines()[-1] == "2 passed, 0 failed"


def test_one_event_is_counted_in_the_singular(tmp_path: Path, cli_here: CliHere) -> None:
    log = json.dumps({"hook_event_name": "tool-start", "tool_name": "x"}) + "\n"
    out = cli_here("dialect", "scaffold", "one", "--from", "-", "--out", str(tmp_path), stdin=log)
    assert out.stdout.splitlines()[-1] == "1 raw event mapped, 0 left as TODO"
    assert "1 envelope, 1 raw event." in (tmp_path / "one" / "dialect.yaml").read_text()
