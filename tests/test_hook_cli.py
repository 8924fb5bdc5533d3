"""`sciontool hook` / `status` / `normalize` as a harness calls them: real processes, real files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, Agent
from test_package_imports import MODULES, imported_anywhere

TOOL_START = {"hook_event_name": "tool-start", "tool_name": "read_file", "tool_input": {"path": "/etc/hosts"}}
# Go's time.RFC3339Nano in UTC: nanoseconds with trailing zeros trimmed.
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z"
LINE = re.compile(rf"^{STAMP} \[sciontool\] \[INFO\] \[(?P<tag>[^]]+)\] (?P<msg>.*)$")


def test_tool_start_sets_executing_and_logs_one_line(agent: Agent) -> None:
    result = agent.hook(TOOL_START, "--dialect=core-agent")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    assert (agent.home / "agent-info.json").read_text() == (
        '{\n  "activity": "executing",\n  "toolName": "read_file"\n}'
    )
    [line] = agent.log_lines
    match = LINE.match(line)
    assert match and match["tag"] == "executing" and match["msg"] == "Running tool: read_file"
    assert result.stderr == b""  # quiet, as Scion's hook: the harness captures stderr


def test_normalize_prints_scions_event_shape(agent: Agent) -> None:
    result = agent.run("normalize", "--dialect=core-agent", stdin=TOOL_START)
    assert result.stdout == (
        b'{"name":"tool-start","raw_name":"tool-start","dialect":"core-agent",'
        b'"data":{"tool_name":"read_file","tool_input":"{\\"path\\":\\"/etc/hosts\\"}"}}\n'
    )
    assert not (agent.home / "agent-info.json").exists()


def test_recorded_core_agent_session_walks_the_four_states(agent: Agent) -> None:
    steps = [
        (TOOL_START, "executing"),
        ({"hook_event_name": "tool-end", "tool_name": "read_file", "tool_output": {"ok": True}}, "working"),
        ({"hook_event_name": "model-start"}, "thinking"),
        ({"hook_event_name": "agent-end"}, "working"),
    ]
    for envelope, activity in steps:
        assert agent.hook(envelope, "--dialect=core-agent").returncode == 0
        assert agent.info["activity"] == activity
        assert ("toolName" in agent.info) == (activity == "executing")
    assert [LINE.match(x)["msg"] for x in agent.log_lines] == [  # type: ignore[index]
        "Running tool: read_file",
        "Tool read_file completed",
        "LLM call started",
        "Agent turn completed",
    ]


def test_sticky_completed_survives_tool_end_until_new_work(agent: Agent) -> None:
    assert agent.run("status", "task_completed", "done").returncode == 0
    assert agent.info["activity"] == "completed"
    assert LINE.match(agent.log_lines[-1])["msg"] == "Agent completed task: done"  # type: ignore[index]
    agent.hook({"hook_event_name": "tool-end", "tool_name": "x"}, "--dialect=core-agent")
    assert agent.info["activity"] == "completed"
    agent.hook({"hook_event_name": "UserPromptSubmit", "prompt": "again"}, "--dialect=claude")
    assert agent.info["activity"] == "thinking"


def test_tool_start_clears_waiting_but_not_blocked(agent: Agent) -> None:
    agent.run("status", "ask_user")
    agent.hook(TOOL_START, "--dialect=core-agent")
    assert agent.info == {"activity": "executing", "toolName": "read_file"}
    agent.run("status", "blocked", "need", "a", "key")
    agent.hook(TOOL_START, "--dialect=core-agent")
    assert agent.info == {"activity": "blocked"}
    assert LINE.match(agent.log_lines[-2])["msg"] == "Agent blocked: need a key"  # type: ignore[index]


def test_notification_always_writes(agent: Agent) -> None:
    agent.run("status", "task_completed")
    agent.hook({"hook_event_name": "Notification", "message": "permission?"})
    assert agent.info["activity"] == "waiting_for_input"


def test_claude_input_tools_wait_for_the_user(agent: Agent) -> None:
    agent.hook({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion"}, "--dialect=claude")
    assert agent.info == {"activity": "waiting_for_input"}


def test_other_keys_are_kept_and_legacy_keys_dropped(agent: Agent) -> None:
    (agent.home / "agent-info.json").write_text(
        json.dumps({"phase": "running", "template": "t", "status": "old", "sessionStatus": "x", "n": 3})
    )
    agent.hook(TOOL_START, "--dialect=core-agent")
    assert agent.info == {
        "phase": "running",
        "template": "t",
        "n": 3,
        "activity": "executing",
        "toolName": "read_file",
    }


@pytest.mark.parametrize(
    ("event", "phase", "activity"),
    [("pre-start", "starting", None), ("post-start", "running", "working"), ("pre-stop", "stopping", None)],
)
def test_lifecycle_events_set_the_phase(agent: Agent, event: str, phase: str, activity: str | None) -> None:
    agent.run("status", "blocked")
    assert agent.run("hook", event).returncode == 0  # Scion's synthetic-envelope form
    assert agent.info.get("phase") == phase and agent.info.get("activity") == activity


def test_session_end_stops(agent: Agent) -> None:
    agent.hook({"hook_event_name": "SessionEnd", "reason": "exit"})
    assert agent.info == {"phase": "stopped"}
    assert LINE.match(agent.log_lines[-1]).group("tag", "msg") == ("stopped", "Session ended (reason: exit)")  # type: ignore[union-attr]


def test_long_prompt_is_cut_at_100_bytes_in_the_log_and_saved_whole(agent: Agent) -> None:
    prompt = "é" * 60  # 120 bytes: Go cuts inside a character, we keep its bytes
    agent.hook({"hook_event_name": "UserPromptSubmit", "prompt": prompt})
    raw = (agent.home / "agent.log").read_bytes()
    assert raw.endswith(b"User prompt: " + prompt.encode()[:100] + b"...\n")
    assert (agent.home / "prompt.md").read_text() == prompt
    agent.hook({"hook_event_name": "UserPromptSubmit", "prompt": "second"})
    assert (agent.home / "prompt.md").read_text() == prompt


def test_unmapped_event_is_logged_by_raw_name(agent: Agent) -> None:
    agent.hook({"hook_event_name": "compaction"}, "--dialect=core-agent")
    assert LINE.match(agent.log_lines[0]).group("tag", "msg") == ("working", "Event: compaction")  # type: ignore[union-attr]
    assert not (agent.home / "agent-info.json").exists()


def test_empty_stdin_is_a_no_op(agent: Agent) -> None:
    result = agent.hook(b"", "--dialect=core-agent")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert list(agent.home.iterdir()) == []


@pytest.mark.parametrize(
    ("stdin", "args", "message"),
    [
        (b"{not json", ["--dialect=core-agent"], "envelope: invalid JSON"),
        (b"[1, 2]", ["--dialect=core-agent"], "envelope must be a JSON object, not an array"),
        (b'{"tool_name": "x"}', ["--dialect=core-agent"], "[hook_event_name] missing or empty"),
        (
            b'{"hook_event_name": "x"}',
            ["--dialect=nope"],
            "unknown dialect 'nope'; available: agentino, antigravity, auggie, claude",
        ),
        (b'{"hook_event_name": "x"}', ["--dialect=../etc"], "invalid dialect name '../etc'"),
        (b'{"hook_event_name": "x"}', ["--bogus"], "unknown option --bogus"),
        (b'{"hook_event_name": "x"}', ["--dialect"], "--dialect needs a value"),
        (b'{"hook_event_name": "x"}', ["--dialect-file=/nonexistent.yaml"], "cannot read dialect"),
    ],
)
def test_bad_input_is_one_clear_error_exit_1_and_touches_nothing(
    agent: Agent, stdin: bytes, args: list[str], message: str
) -> None:
    (agent.home / "agent-info.json").write_text('{"activity": "working"}')
    result = agent.hook(stdin, *args)
    assert result.returncode == 1
    assert message in result.stderr.decode()
    assert result.stderr.decode().startswith("sciontool hook: ")
    assert b"Traceback" not in result.stderr and result.stdout == b""
    assert (agent.home / "agent-info.json").read_text() == '{"activity": "working"}'
    assert not (agent.home / "agent.log").exists()


def test_declared_response_is_the_only_stdout(agent: Agent) -> None:
    dialect = FIXTURES / "nested-paths" / "dialect.yaml"
    result = agent.hook({"kind": "call.begin"}, f"--dialect-file={dialect}")
    assert result.stdout == b'{"decision":"allow","reason":"observed by sciontool"}\n'
    assert agent.hook({"kind": "call.finish"}, f"--dialect-file={dialect}").stdout == b""


def test_a_response_is_read_as_yaml_1_2_and_printed_as_go_encodes_it(agent: Agent, tmp_path: Path) -> None:
    dialect = tmp_path / "dialect.yaml"
    dialect.write_text(
        "dialect: mine\nevent_name_field: hook_event_name\n"
        "responses:\n  on: {continue: yes, mode: 0o755, at: 12:30, n: 1e3, html: <&>}\n"
    )
    result = agent.hook({"hook_event_name": "on"}, f"--dialect-file={dialect}")
    assert (result.returncode, result.stderr) == (0, b"")
    assert (
        result.stdout
        == b'{"at":"12:30","continue":"yes","html":"\\u003c\\u0026\\u003e","mode":493,"n":1000}\n'
    )


def test_a_response_json_cannot_carry_is_a_load_error_not_a_hook_time_error(
    agent: Agent, tmp_path: Path
) -> None:
    dialect = tmp_path / "dialect.yaml"
    dialect.write_text("dialect: mine\nevent_name_field: hook_event_name\nresponses:\n  X: {n: .nan}\n")
    for envelope in ({"hook_event_name": "X"}, {"hook_event_name": "Y"}):
        result = agent.hook(envelope, f"--dialect-file={dialect}")
        assert result.returncode == 1 and result.stdout == b""
        assert result.stderr.decode() == (
            f"sciontool hook: {dialect}:4:10: responses.X.n: a JSON response cannot carry nan "
            "(no JSON number is NaN or infinite)\n"
        )


def test_legacy_hook_forms(agent: Agent) -> None:
    assert agent.run("hook", "ask_user", "which", "branch?").returncode == 0
    assert agent.info == {"activity": "waiting_for_input"}
    assert LINE.match(agent.log_lines[-1])["msg"] == "Agent requested input: which branch?"  # type: ignore[index]
    assert agent.run("hook", "task_completed").returncode == 0
    assert LINE.match(agent.log_lines[-1])["msg"] == "Agent completed task: Task completed"  # type: ignore[index]
    assert agent.run("hook", "--dialect=core-agent", "model-start").returncode == 0
    assert agent.info == {"activity": "completed"}  # sticky: model-start does not clear it


@pytest.mark.parametrize(
    ("kind", "activity", "logged"),
    [
        ("ask_user", "waiting_for_input", "Agent requested input: Input requested"),
        ("blocked", "blocked", "Agent blocked: Agent is blocked"),
        ("task_completed", "completed", "Agent completed task: Task completed"),
        ("limits_exceeded", "limits_exceeded", "Agent limits exceeded: Agent limits exceeded"),
    ],
)
def test_status_types_and_default_messages(agent: Agent, kind: str, activity: str, logged: str) -> None:
    agent.hook(TOOL_START, "--dialect=core-agent")
    assert agent.run("status", kind).returncode == 0
    assert agent.info == {"activity": activity}
    assert LINE.match(agent.log_lines[-1]).group("tag", "msg") == (activity, logged)  # type: ignore[union-attr]


def test_unknown_status_type_lists_the_valid_ones(agent: Agent) -> None:
    result = agent.run("status", "done")
    assert result.returncode == 1
    assert result.stderr == (
        b"sciontool status: unknown status type 'done'; valid types: "
        b"ask_user, blocked, task_completed, limits_exceeded\n"
    )


def test_turn_limit_is_counted_and_enforced(agent: Agent, fallback_dir: Path) -> None:
    trigger = fallback_dir / "scion-limits-exceeded"
    end = {"hook_event_name": "agent-end"}
    agent.hook(end, "--dialect=core-agent", SCION_MAX_TURNS="2")
    limits = json.loads((agent.home / "agent-limits.json").read_text())
    assert (limits["turn_count"], limits["max_turns"], limits["max_model_calls"]) == (1, 2, 0)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", limits["started_at"])
    assert agent.info["activity"] == "working" and not trigger.exists()
    agent.hook(end, "--dialect=core-agent", SCION_MAX_TURNS="2")
    assert agent.info["activity"] == "limits_exceeded"
    assert LINE.match(agent.log_lines[-1]).group("tag", "msg") == (  # type: ignore[union-attr]
        "LIMITS_EXCEEDED",
        "Agent stopped: max_turns of 2 exceeded (completed 2)",
    )
    assert trigger.read_text() == "max_turns of 2 exceeded (completed 2)"
    agent.hook({"hook_event_name": "model-start"}, "--dialect=core-agent", SCION_MAX_TURNS="2")
    assert agent.info["activity"] == "limits_exceeded"


def test_model_calls_counted_only_with_their_limit(agent: Agent) -> None:
    agent.hook({"hook_event_name": "model-end"}, "--dialect=core-agent", SCION_MAX_TURNS="5")
    assert not (agent.home / "agent-limits.json").exists()  # no model-call limit: nothing to count
    for _ in range(2):
        agent.hook({"hook_event_name": "model-end"}, "--dialect=core-agent", SCION_MAX_MODEL_CALLS="9")
    assert json.loads((agent.home / "agent-limits.json").read_text())["model_call_count"] == 2


def _dialect(folder: Path, name: str, event: str) -> Path:
    path = folder / name / "dialect.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(f"dialect: {name}\nevent_name_field: e\nmappings:\n  go: {{event: {event}}}\n")
    return path


def test_dialects_path_then_harness_file_then_packaged(agent: Agent, tmp_path: Path) -> None:
    search = tmp_path / "dialects"
    _dialect(search, "mine", "tool-start")
    harness = agent.home / ".scion" / "harness"
    harness.mkdir(parents=True)
    (harness / "dialect.yaml").write_text(
        "dialect: core-agent\nevent_name_field: e\nmappings:\n  go: {event: notification}\n"
    )
    env = {"SCION_DIALECTS_PATH": f"/nonexistent:{search}"}
    assert agent.hook({"e": "go"}, "--dialect=mine", **env).returncode == 0
    assert agent.info["activity"] == "executing"
    agent.hook({"e": "go"}, "--dialect=core-agent")  # the harness bundle replaces the packaged one
    assert agent.info["activity"] == "waiting_for_input"
    listed = agent.run("dialect", "list", **env).stdout.decode().splitlines()
    assert listed[0] == f"mine\t{search / 'mine' / 'dialect.yaml'}\tok"
    assert f"core-agent\t{harness / 'dialect.yaml'}\tok" in listed


def test_symlinked_dialect_escaping_the_search_path_is_refused(agent: Agent, tmp_path: Path) -> None:
    outside = _dialect(tmp_path / "outside", "evil", "tool-start").parent
    search = tmp_path / "dialects"
    search.mkdir()
    (search / "evil").symlink_to(outside)
    result = agent.hook({"e": "go"}, "--dialect=evil", SCION_DIALECTS_PATH=str(search))
    assert result.returncode == 1 and b"outside the search folder" in result.stderr


def test_dialect_cache_sees_every_change(agent: Agent, tmp_path: Path) -> None:
    path = _dialect(tmp_path, "cached", "tool-start")
    args = (f"--dialect-file={path}",)
    agent.hook({"e": "go"}, *args)
    assert agent.info["activity"] == "executing"
    cache_files = list((agent.home.parent / "cache").glob("*.json"))
    assert len(cache_files) == 1
    # Same size, new mtime.
    stat = path.stat()
    path.write_text(path.read_text().replace("tool-start", "tool-end  "))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    agent.hook({"e": "go"}, *args)
    assert agent.info["activity"] == "working"
    # Same mtime, new size.
    stat = path.stat()
    path.write_text(path.read_text().replace("tool-end  ", "notification"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    agent.hook({"e": "go"}, *args)
    assert agent.info["activity"] == "waiting_for_input"
    # A corrupt cache entry is ignored and rebuilt.
    cache_files[0].write_text("{garbage")
    agent.run("status", "blocked")
    agent.hook({"e": "go"}, *args)
    assert agent.info["activity"] == "waiting_for_input"
    assert json.loads(cache_files[0].read_text())["spec"]["dialect"] == "cached"


def test_unwritable_cache_only_costs_speed(agent: Agent, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    result = agent.hook(TOOL_START, "--dialect=core-agent", SCIONTOOL_CACHE_DIR=str(blocker / "sub"))
    assert result.returncode == 0 and agent.info["activity"] == "executing"


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["hook", "--help"], b"Usage: sciontool hook "),
        (["hook", "-h"], b"Usage: sciontool hook "),
        (["hook", "--dialect=core-agent", "-h"], b"Usage: sciontool hook "),
        (["status", "-h"], b"Usage: sciontool status "),
        (["status", "ask_user", "-h"], b"Usage: sciontool status "),
        (["status", "--help"], b"Usage: sciontool status "),
        (["normalize", "-h"], b"Usage: sciontool normalize "),
        (["normalize", "--help"], b"Usage: sciontool normalize "),
    ],
)
def test_help_on_the_fast_path_prints_usage_and_writes_nothing(
    agent: Agent, args: list[str], usage: bytes
) -> None:
    result = agent.run(*args, stdin=TOOL_START)
    assert result.returncode == 0 and result.stdout.startswith(usage) and result.stderr == b""
    assert b"--dialect" in result.stdout or args[0] == "status"
    assert list(agent.home.iterdir()) == []  # no event named -h, no status written


@pytest.mark.parametrize(
    "args", [["-h"], ["--help"], ["dialect", "-h"], ["dialect", "check", "-h"], ["emit", "-h"]]
)
def test_help_on_every_other_command(agent: Agent, args: list[str]) -> None:
    result = agent.run(*args)
    assert result.returncode == 0 and b"Usage: sciontool" in result.stdout


def test_status_message_may_start_with_a_dash_after_double_dash(agent: Agent) -> None:
    result = agent.run("status", "ask_user", "--", "-h is a flag")
    assert result.returncode == 0 and agent.info["activity"] == "waiting_for_input"
    assert agent.log_lines[-1].endswith("Agent requested input: -h is a flag")


@pytest.mark.parametrize(
    "args",
    [
        ["bogus"],
        ["dialect", "show"],
        ["dialect", "test"],
        ["emit", "--nope"],
        ["normalize", "--bogus"],
        ["status"],
    ],
)
def test_usage_errors_are_one_line_and_exit_1(agent: Agent, args: list[str]) -> None:
    result = agent.run(*args)
    assert result.returncode == 1
    assert len(result.stderr.decode().splitlines()) == 1 and b"Traceback" not in result.stderr


@pytest.mark.parametrize("receiving", [False, True], ids=["nothing-listening", "live-otlp-receiver"])
def test_warm_hook_imports_nothing_heavy(agent: Agent, receiving: bool) -> None:
    """The hook runs while the agent waits: no typer, YAML, json package or regex on a warm cache,
    and none of OpenTelemetry, gRPC or protobuf when telemetry exports (the detached worker does)."""
    from otlp import GrpcReceiver

    probe = (
        "import sys; sys.argv = ['sciontool', 'hook', '--dialect=core-agent']\n"
        "from sciontool_py.main import main\n"
        "code = main()\n"
        "sys.stderr.write(' '.join(sorted(sys.modules)))\n"
    )
    receiver = GrpcReceiver() if receiving else None
    env = {**agent.env, "SCION_OTEL_GRPC_PORT": str(receiver.port if receiver else 9)}
    try:
        for _ in range(2):  # the first call builds the dialect cache
            result = subprocess.run(
                [sys.executable, "-c", probe],
                input=json.dumps(TOOL_START).encode(),
                capture_output=True,
                env=env,
            )
        if receiver:  # the export did happen, elsewhere
            receiver.wait_for(lambda: len(receiver.logs()) == 2)
    finally:
        if receiver:
            receiver.close()
    loaded = set(result.stderr.decode().splitlines()[-1].split())
    assert "sciontool_py.receiver.hook" in loaded
    assert not loaded & {
        "typer",
        "click",
        "yaml",
        "json",
        "re",
        "typing",
        "orjson",
        "urllib.request",
        "dataclasses",
    }
    heavy = ("opentelemetry", "grpc", "google", "requests", "logging", "threading")
    assert not {name for name in loaded if name.split(".")[0] in heavy}


def test_a_forked_helper_serves_its_first_hook_with_what_the_hook_had_loaded(agent: Agent) -> None:
    """The helper a hook leaves behind is a fork of that hook: what serving a relayed hook imports
    when it runs (its loop, the shell relay's side, the relayed hook's, the turns) must be loaded already,
    or the harness's next hook waits for it (contextlib held it 2.5 ms)."""
    probe = (
        "import sys; sys.argv = ['sciontool', 'hook', '--dialect=claude']\n"
        "from sciontool_py.main import main\n"
        "main()\n"
        "import sciontool_py.helper.server\n"  # what the hook imports to fork the helper
        "sys.stderr.write(' '.join(sorted(sys.modules)))\n"
    )
    envelope = {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash", "tool_input": {}}
    for _ in range(2):  # the first call builds the dialect cache
        result = subprocess.run(
            [sys.executable, "-c", probe],
            input=json.dumps(envelope).encode(),
            capture_output=True,
            env={**agent.env, "SCIONTOOL_EXIT_WATCH": "off"},  # no fork here: this process is the one
        )
    loaded = set(result.stderr.decode().splitlines()[-1].split())
    assert "sciontool_py.receiver.hook" in loaded
    for name in ("helper.server", "helper.bash", "helper.relayed", "turns", "process"):
        assert imported_anywhere(MODULES[f"sciontool_py.{name}"]) - loaded == set(), name


def test_dialect_list_marks_what_cannot_be_used(agent: Agent, tmp_path: Path) -> None:
    search = tmp_path / "dialects"
    _dialect(search, "claude", "tool-start")  # shadows the shipped claude
    (search / "broken").mkdir()
    (search / "broken" / "dialect.yaml").write_text("dialect: broken\nmappings: [\n")
    (search / "renamed").mkdir()
    (search / "renamed" / "dialect.yaml").write_text("dialect: other\nevent_name_field: e\n")
    listed = agent.run("dialect", "list", SCION_DIALECTS_PATH=str(search)).stdout.decode().splitlines()
    rows = {(line.split("\t")[0], line.split("\t")[1]): line.split("\t")[2] for line in listed}
    assert rows[("claude", str(search / "claude" / "dialect.yaml"))] == "ok"
    shipped_claude = next(
        path for name, path in rows if name == "claude" and not path.startswith(str(search))
    )
    assert rows[("claude", shipped_claude)] == f"shadowed by {search / 'claude' / 'dialect.yaml'}"
    assert rows[("broken", str(search / "broken" / "dialect.yaml"))].startswith("invalid: 3:1: invalid YAML")
    assert rows[("renamed", str(search / "renamed" / "dialect.yaml"))] == "name mismatch: declares 'other'"
    assert rows[("core-agent", shipped_claude.replace("claude", "core-agent"))] == "ok"


def test_normalize_reads_stdin_for_a_dash(agent: Agent, tmp_path: Path) -> None:
    log = tmp_path / "one.jsonl"
    log.write_text(json.dumps({"hook_event_name": "agent-end"}) + "\n")
    result = agent.run("normalize", "--dialect=core-agent", str(log), "-", stdin=TOOL_START)
    names = [json.loads(line)["name"] for line in result.stdout.splitlines()]
    assert (result.returncode, names) == (0, ["agent-end", "tool-start"])


def test_emit_help_fits_80_columns_without_cutting(agent: Agent) -> None:
    text = agent.run("emit", "--help", COLUMNS="80").stdout.decode()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "…" not in text and "--model-start-on-final-text" in text and "narrowed only by --deny" in text


def test_event_option_names_agentinos_nameless_context(agent: Agent) -> None:
    """agentino pipes json.dumps(context) with no event name: --event supplies it."""
    context = {"tool_name": "shell", "arguments": {"command": "ls"}}
    result = agent.hook(context, "--dialect=agentino", "--event=PreToolUse")
    assert (result.returncode, result.stderr) == (0, b"")
    assert agent.info == {"activity": "executing", "toolName": "shell"}
    named = agent.hook({"hook_event_name": "Stop"}, "--dialect=agentino", "--event", "PreToolUse")
    assert named.returncode == 0 and agent.info == {"activity": "working"}  # the envelope's name wins
    assert agent.hook(context, "--dialect=agentino").returncode == 1  # no name at all: as before
