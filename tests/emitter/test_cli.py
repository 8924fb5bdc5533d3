"""`sciontool emit`: the real command where the process boundary is the point (stdin, the pipe into
`sciontool hook`, hooks run from a config), the typer app in-process for the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CliHere, sciontool


def emit(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return sciontool("emit", *args, stdin=stdin, env=env)


@pytest.fixture
def emit_here(cli_here: CliHere) -> CliHere:
    """`sciontool emit ARGS` through the typer app in this process."""
    return lambda *args, stdin="": cli_here("emit", *args, stdin=stdin)


AGENT_EVENTS = "\n".join(
    [
        '{"content":{"parts":[{"functionCall":{"name":"ls","args":{"d":"."}}}]}}',
        '{"partial":true,"content":{"parts":[{"text":"a"}]}}',
        '{"partial":true,"content":{"parts":[{"text":"b"}]}}',
        '{"turn_end":true}',
        "",
    ]
)


def test_events_from_stdin_print_one_envelope_per_hook() -> None:
    result = emit("--events", "-", "--session-id", "s1", stdin=AGENT_EVENTS)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        '{"hook_event_name":"tool-start","session_id":"s1","tool_input":{"d":"."},"tool_name":"ls"}\n'
        '{"hook_event_name":"model-start","session_id":"s1"}\n'
        '{"hook_event_name":"agent-end","session_id":"s1"}\n'
    )
    assert result.stderr == ""


def test_events_from_a_file(tmp_path: Path, emit_here: CliHere) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"content":{"parts":[{"function_response":{"name":"ls","response":null}}]}}\n\n')
    result = emit_here("--events", str(path))
    assert result.stdout == '{"hook_event_name":"tool-end","tool_name":"ls","tool_output":null}\n'


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["tool-start", "--tool-name", "read_file", "--tool-input", '{"path":"/etc/hosts"}'],
            '{"hook_event_name":"tool-start","tool_input":{"path":"/etc/hosts"},"tool_name":"read_file"}',
        ),
        (
            ["tool-start", "--tool-name", "t"],
            '{"hook_event_name":"tool-start","tool_input":null,"tool_name":"t"}',
        ),
        (
            ["tool-end", "--tool-name", "t", "--tool-output", '{"b":2,"a":1}'],
            '{"hook_event_name":"tool-end","tool_name":"t","tool_output":{"a":1,"b":2}}',
        ),
        (["model-start", "--session-id", "x"], '{"hook_event_name":"model-start","session_id":"x"}'),
        (["agent-end"], '{"hook_event_name":"agent-end"}'),
    ],
)
def test_one_event_from_options(args: list[str], line: str, emit_here: CliHere) -> None:
    result = emit_here(*args)
    assert (result.returncode, result.stdout, result.stderr) == (0, line + "\n", "")


def test_the_printed_envelope_pipes_into_sciontool_hook(tmp_path: Path) -> None:
    sent = emit("tool-start", "--tool-name", "bash", "--tool-input", '{"cmd":"ls"}')
    hook = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "hook", "--dialect=core-agent"],
        input=sent.stdout,
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path)},
        timeout=60,
    )
    assert hook.returncode == 0, hook.stderr
    assert json.loads((tmp_path / "agent-info.json").read_text()) == {
        "activity": "executing",
        "toolName": "bash",
    }


def test_with_a_config_the_hooks_run_instead_of_printing(tmp_path: Path) -> None:
    out = tmp_path / "got"
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "hooks": {
                    "agent-end": [
                        {"command": "rm -rf /nonexistent-emitter-test"},
                        {"command": f"cat > {out}"},
                    ]
                }
            }
        )
    )
    result = emit("agent-end", "--config", str(config), "--session-id", "s9", "--deny", "rm -rf *")
    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr == (
        'hooks: agent-end handler #0 ("rm -rf /nonexistent-emitter-test"): '
        "permission gate refused: matches deny pattern 'rm -rf *'\n"
    )
    assert out.read_text() == '{"hook_event_name":"agent-end","session_id":"s9"}'


def test_withhold_keeps_a_variable_from_the_hooks(tmp_path: Path) -> None:
    out = tmp_path / "env"
    config = tmp_path / "config.json"
    probe = f'printf "%s|%s" "${{T_PRIVATE-unset}}" "${{T_SHOWN-unset}}" > {out}'
    config.write_text(json.dumps({"hooks": {"agent-end": [{"command": probe}]}}))
    env = {**os.environ, "T_PRIVATE": "x", "T_SHOWN": "y"}
    result = emit("agent-end", "--config", str(config), "--withhold", "T_PRIVATE", env=env)
    assert result.returncode == 0, result.stderr
    assert out.read_text() == "unset|y"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (
            ["tool-strat"],
            "",
            'unknown event "tool-strat" (valid: [tool-start tool-end model-start agent-end])',
        ),
        ([], "", "give either an EVENT or --events FILE|-"),
        (["tool-start"], "", "tool-start needs --tool-name"),
        (
            ["tool-start", "--tool-name", "t", "--tool-input", "[1]"],
            "",
            "--tool-input: expected a JSON object or null",
        ),
        (["tool-start", "--tool-name", "t", "--tool-input", "{"], "", "--tool-input: invalid JSON"),
        (["agent-end", "--tool-output", "{}"], "", "--tool-output goes with tool-end, not agent-end"),
        (["--events", "-"], '{"turn_end":true}\n[1]\n', "<stdin>:2: expected a JSON object (an agent event)"),
        (["--events", "-"], "{nope\n", "<stdin>:1: invalid JSON"),
        (
            ["--events", "/nonexistent/events.jsonl"],
            "",
            "/nonexistent/events.jsonl: No such file or directory",
        ),
        (["agent-end", "--deny", "x"], "", "--deny, --withhold and --pass-env go with --config"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(
    args: list[str], stdin: str, message: str, emit_here: CliHere
) -> None:
    result = emit_here(*args, stdin=stdin)
    assert result.returncode == 1
    assert result.stderr.startswith(f"sciontool emit: {message}")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_bad_input_from_the_real_command_is_one_line_and_exit_1() -> None:
    result = emit("--events", "-", stdin='{"turn_end":true}\n[1]\n')
    assert result.returncode == 1
    assert result.stderr == "sciontool emit: <stdin>:2: expected a JSON object (an agent event)\n"
    assert result.stdout == '{"hook_event_name":"agent-end"}\n'  # what came before the bad line was sent


def test_a_bad_config_is_refused_before_anything_runs(tmp_path: Path, emit_here: CliHere) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"hooks": {"tool-strat": [{"command": "true"}]}}))
    result = emit_here("agent-end", "--config", str(config))
    assert result.returncode == 1
    assert result.stderr == (
        f'sciontool emit: {config}: hooks: unknown event "tool-strat" '
        "(valid: [tool-start tool-end model-start agent-end])\n"
    )


def test_help_says_config_hooks_pass_an_allow_all_gate(emit_here: CliHere) -> None:
    result = emit_here("--help")
    assert result.returncode == 0
    assert "ALLOW-ALL" in result.stdout


def test_final_text_fires_model_start_only_with_the_opt_in(emit_here: CliHere) -> None:
    final_text = '{"content":{"parts":[{"text":"done"}]}}\n{"turn_end":true}\n'
    assert emit_here("--events", "-", stdin=final_text).stdout == '{"hook_event_name":"agent-end"}\n'
    opted_in = emit_here("--events", "-", "--model-start-on-final-text", stdin=final_text)
    assert opted_in.stdout == '{"hook_event_name":"model-start"}\n{"hook_event_name":"agent-end"}\n'
