"""`sciontool harness` errors, show, --command, symlinks and dialect-driven events, through the real CLI;
and `sciontool hook --dialect=codex JSON`, the envelope Codex's notify passes as an argument."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Agent, CliHere, Ran, wired_notify

from harness.test_merge import harness

CLAUDE_WITH_FAILURES = """\
dialect: claude
event_name_fields: [hook_event_name]
mappings:
  PreToolUse: {event: tool-start}
  PostToolUse: {event: tool-end}
  PostToolUseFailure: {event: tool-end}
  BeforeModel: {event: model-start}
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def _one_line_error(proc: subprocess.CompletedProcess[str] | Ran, *words: str) -> None:
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("sciontool harness ")
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in proc.stderr


def test_a_file_that_does_not_parse_is_left_untouched(
    tmp_path: Path, home: Path, harness_here: CliHere
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"allow": ["Bash"],}}\n')  # a trailing comma
    proc = harness_here(home, "install", "claude", "--project", str(tmp_path))
    _one_line_error(proc, str(settings), "cannot parse", "left untouched")
    assert settings.read_text() == '{"permissions": {"allow": ["Bash"],}}\n'
    assert not (tmp_path / ".claude" / "settings.json.bak").exists()


def test_a_codex_config_that_does_not_parse_is_left_untouched(home: Path, harness_here: CliHere) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("model = \n")
    proc = harness_here(home, "install", "codex", "--user")
    _one_line_error(proc, str(config), "cannot parse")
    assert config.read_text() == "model = \n"
    assert not (home / ".codex" / "hooks.json").exists()


def test_hooks_that_are_not_an_object_are_refused(tmp_path: Path, home: Path, harness_here: CliHere) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": ["old style"]}\n')
    _one_line_error(
        harness_here(home, "install", "gemini", "--project", str(tmp_path)), '"hooks" is not an object'
    )
    assert settings.read_text() == '{"hooks": ["old style"]}\n'


def test_a_symlink_out_of_the_project_is_not_followed(
    tmp_path: Path, home: Path, harness_here: CliHere
) -> None:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    outside = tmp_path / "dotfiles-settings.json"
    outside.write_text("{}\n")
    (project / ".claude" / "settings.json").symlink_to(outside)
    proc = harness_here(home, "install", "claude", "--project", str(project))
    _one_line_error(proc, "outside", "not following the symlink")
    assert outside.read_text() == "{}\n"


def test_a_symlink_inside_the_project_is_followed_and_kept(
    tmp_path: Path, home: Path, harness_here: CliHere
) -> None:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    shared = project / "shared-settings.json"
    shared.write_text("{}\n")
    link = project / ".claude" / "settings.json"
    link.symlink_to(shared)
    assert harness_here(home, "install", "claude", "--project", str(project)).returncode == 0
    assert link.is_symlink()
    assert "sciontool hook --dialect=claude" in shared.read_text()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["install", "core-agent", "--user"], ["core-agent reads only a project's .agents/config.json"]),
        (["install", "claude", "--user", "--project", "."], ["--project and --user exclude each other"]),
        (["install", "cursor"], ["unknown harness 'cursor'", "claude, gemini, codex, opencode"]),
        (["install", "agentino"], ["registered in code", "harness show agentino"]),
        (["uninstall", "agentino"], ["registered in code"]),
    ],
)
def test_refusals_are_one_line(home: Path, tmp_path: Path, args: list[str], words: list[str]) -> None:
    # As processes: a refusal is one line on the stderr of the process (most tests here run the
    # CLI in this process).
    _one_line_error(harness(home, *args, cwd=tmp_path), *words)


def test_default_project_is_the_current_folder(tmp_path: Path, home: Path, harness_here: CliHere) -> None:
    proc = harness_here(home, "install", "claude", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".claude" / "settings.json").exists()


def test_user_scope_writes_the_home_settings(home: Path, harness_here: CliHere) -> None:
    for name, path in (("claude", ".claude/settings.json"), ("gemini", ".gemini/settings.json")):
        assert harness_here(home, "install", name, "--user").returncode == 0
        assert f"sciontool hook --dialect={name}" in (home / path).read_text()
    assert harness_here(home, "install", "opencode", "--user").returncode == 0
    assert (home / ".config" / "opencode" / "plugins" / "sciontool-bridge.js").exists()


def test_show_prints_what_install_writes_and_writes_nothing(
    tmp_path: Path, home: Path, harness_here: CliHere
) -> None:
    shown = harness_here(home, "show", "claude", "--project", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    comment, _, body = shown.stdout.partition("\n")
    assert comment == f"# merged into {tmp_path}/.claude/settings.json"
    assert not (tmp_path / ".claude").exists()
    assert harness_here(home, "install", "claude", "--project", str(tmp_path)).returncode == 0
    assert json.loads(body) == json.loads((tmp_path / ".claude" / "settings.json").read_text())


def test_show_codex_names_notify_and_trust(home: Path, harness_here: CliHere) -> None:
    shown = harness_here(home, "show", "codex", "--user")
    assert shown.returncode == 0
    assert f"# in {home}/.codex/config.toml" in shown.stdout
    assert wired_notify("sciontool", "hook", "--dialect=codex") in shown.stdout
    assert "--dangerously-bypass-hook-trust" in shown.stdout
    assert not (home / ".codex").exists()


def test_show_opencode_and_agentino(home: Path) -> None:
    # `harness show` as a process (the tests above run it in this process).
    shown = harness(home, "show", "opencode", "--user")
    assert shown.stdout.startswith(f"// save as {home}/.config/opencode/plugins/sciontool-bridge.js")
    assert 'const COMMAND = ["sciontool", "hook", "--dialect=opencode"];' in shown.stdout
    agentino = harness(home, "show", "agentino")
    assert "register(hooks)\n" in agentino.stdout
    assert (
        'hooks.register(event, command="sciontool hook --dialect=agentino --event=" + event)'
        in agentino.stdout
    )
    assert '"PostToolUseFailure"' in agentino.stdout


def test_another_command_replaces_ours_and_uninstall_finds_either(
    tmp_path: Path, home: Path, harness_here: CliHere
) -> None:
    sciontool = "/opt/venv/bin/sciontool"
    settings = tmp_path / ".claude" / "settings.json"
    assert harness_here(home, "install", "claude", "--project", str(tmp_path)).returncode == 0
    assert (
        harness_here(home, "install", "claude", "--project", str(tmp_path), "--command", sciontool).returncode
        == 0
    )
    text = settings.read_text()
    assert f"exec {sciontool} hook --dialect=claude" in text
    assert "exec sciontool hook --dialect=claude" not in text  # replaced: each event runs once
    assert text.count("exec /opt/venv/bin/sciontool hook --dialect=claude") == len(json.loads(text)["hooks"])
    # Uninstall finds sciontool's hooks whatever program ran them.
    other = harness_here(home, "uninstall", "claude", "--project", str(tmp_path))
    assert other.returncode == 0, other.stderr
    assert not settings.exists() and not settings.parent.exists()


def test_command_prefix_becomes_codex_notify_argv(home: Path, harness_here: CliHere) -> None:
    proc = harness_here(home, "install", "codex", "--user", "--command", "python3 -m sciontool_py")
    assert proc.returncode == 0, proc.stderr
    config = (home / ".codex" / "config.toml").read_text()
    assert wired_notify("python3", "-m", "sciontool_py", "hook", "--dialect=codex") in config


def test_installed_events_follow_the_dialect(tmp_path: Path, home: Path) -> None:
    dialects = tmp_path / "dialects" / "claude"
    dialects.mkdir(parents=True)
    (dialects / "dialect.yaml").write_text(CLAUDE_WITH_FAILURES)
    env = {**os.environ, "HOME": str(home), "SCION_DIALECTS_PATH": str(tmp_path / "dialects")}
    proc = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "harness", "install", "claude", "--project", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    # A newly mapped event Claude Code fires is wired; a mapped name it never fires is not.
    assert list(hooks) == ["PreToolUse", "PostToolUse", "PostToolUseFailure"]
    assert hooks["PostToolUseFailure"][0]["matcher"] == "*"


def test_core_agent_writes_the_agents_folder_core_agent_would_find(
    tmp_path: Path, home: Path, harness_here: CliHere
) -> None:
    (tmp_path / ".agents").mkdir()
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    proc = harness_here(home, "install", "core-agent", "--project", str(sub))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".agents" / "config.json").exists()
    assert not (sub / ".agents").exists()


def test_opencode_refuses_a_plugin_of_the_same_name_that_is_not_ours(
    tmp_path: Path, home: Path, harness_here: CliHere
) -> None:
    plugin = tmp_path / ".opencode" / "plugins" / "sciontool-bridge.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("export const Mine = async () => ({})\n")
    _one_line_error(
        harness_here(home, "install", "opencode", "--project", str(tmp_path)), "not sciontool's bridge"
    )
    _one_line_error(
        harness_here(home, "uninstall", "opencode", "--project", str(tmp_path)), "not sciontool's bridge"
    )
    assert plugin.read_text() == "export const Mine = async () => ({})\n"


def _notes(ran: Ran) -> list[str]:
    return [line.removeprefix("note: ") for line in ran.stdout.splitlines() if line.startswith("note: ")]


def test_opencode_install_says_which_installs_of_opencodes_own_its_start_will_wait_for(
    tmp_path: Path, home: Path, harness_here: CliHere
) -> None:
    # opencode installs @opencode-ai/plugin into each config folder lacking it, and waits for
    # those installs once a plugin is to be loaded: a project's .opencode/, and the user's.
    project, user = tmp_path / ".opencode", home / ".config" / "opencode"
    notes = _notes(harness_here(home, "install", "opencode", "--project", str(tmp_path)))
    assert [n.split(" ")[:3] for n in notes] == [
        ["opencode", "installs", "@opencode-ai/plugin"],
        [str(user), "has", "no"],
    ]
    assert f"into {project} at its first start here" in notes[0] and "--user" in notes[0]
    assert notes[1] == _notes(harness_here(home, "install", "opencode", "--user"))[0]
    for folder in (project, user):  # as opencode's own install leaves it
        package = folder / "node_modules" / "@opencode-ai" / "plugin" / "package.json"
        package.parent.mkdir(parents=True)
        package.write_text('{"name": "@opencode-ai/plugin", "version": "1.18.33"}\n')
    again = harness_here(home, "install", "opencode", "--project", str(tmp_path))
    assert again.stdout.endswith("already wired, unchanged\n")  # and nothing more to say
    assert _notes(harness_here(home, "install", "opencode", "--user")) == []


# --- The opencode bridge, run by node as opencode runs it ---------------------------------------


def _part(part: dict[str, object]) -> dict[str, object]:
    return {
        "type": "message.part.updated",
        "properties": {"sessionID": "ses_1", "part": {"sessionID": "ses_1", **part}},
    }


def _tool(status: str, **state: object) -> dict[str, object]:
    return _part({"type": "tool", "tool": "read", "callID": "c2", "state": {"status": status, **state}})


# opencode's bus events and tool hooks in the shapes of tests/data/real-envelopes/opencode-1.18.33.
BUS = [
    {"type": "session.created", "properties": {"sessionID": "ses_1", "info": {"id": "ses_1"}}},
    {"type": "message.updated", "properties": {"sessionID": "ses_1", "info": {"id": "u1", "role": "user"}}},
    _part({"type": "text", "messageID": "u1", "text": "list the files"}),
    # the same user message again, with its summary: no second prompt
    {
        "type": "message.updated",
        "properties": {"sessionID": "ses_1", "info": {"id": "u1", "role": "user", "summary": {}}},
    },
    {"type": "session.status", "properties": {"sessionID": "ses_1", "status": {"type": "busy"}}},
    {
        "type": "message.updated",
        "properties": {
            "sessionID": "ses_1",
            "info": {"id": "msg_1", "role": "assistant", "modelID": "m1", "providerID": "p1"},
        },
    },
    # the new session's title: a model request beside the turn, not sent
    ["chat.params", {"sessionID": "ses_1", "agent": "title", "model": {"providerID": "p1", "id": "m0"}}, {}],
    ["chat.params", {"sessionID": "ses_1", "agent": "build", "model": {"providerID": "p1", "id": "m1"}}, {}],
    _part({"type": "step-start", "messageID": "msg_1"}),
    [
        "tool.execute.before",
        {"tool": "bash", "sessionID": "ses_1", "callID": "c1"},
        {"args": {"command": "ls"}},
    ],
    {
        "type": "permission.asked",
        "properties": {"id": "per_1", "sessionID": "ses_1", "title": "Run ls?", "tool": {"callID": "c1"}},
    },
    # 1.18.33 names the request only
    {
        "type": "permission.replied",
        "properties": {"sessionID": "ses_1", "requestID": "per_1", "reply": "once"},
    },
    # an answer to a call never seen starting: not sent (it would stay open)
    {
        "type": "permission.replied",
        "properties": {"sessionID": "ses_1", "requestID": "per_9", "reply": "once"},
    },
    [
        "tool.execute.after",
        {"tool": "bash", "sessionID": "ses_1", "callID": "c1"},
        {"output": "x", "metadata": {"exit": 2}},
    ],
    [
        "tool.execute.before",
        {"tool": "read", "sessionID": "ses_1", "callID": "c2"},
        {"args": {"filePath": "/x"}},
    ],
    _tool("error", input={"filePath": "/x"}, error="File not found: /x"),
    {
        "type": "session.status",
        "properties": {
            "sessionID": "ses_1",
            "status": {"type": "retry", "attempt": 1, "message": "Overloaded", "next": 2},
        },
    },
    _part(
        {
            "type": "step-finish",
            "messageID": "msg_1",
            "tokens": {"input": 276, "output": 4, "reasoning": 5, "cache": {"read": 1024, "write": 0}},
        }
    ),
    _part({"type": "text", "messageID": "msg_1", "text": "Done.", "time": {"start": 1, "end": 2}}),
    {
        "type": "session.error",
        "properties": {
            "sessionID": "ses_1",
            "error": {"name": "APIError", "data": {"message": "overloaded"}},
        },
    },
    {"type": "session.idle", "properties": {"sessionID": "ses_1"}},
    {"type": "server.instance.disposed", "properties": {"directory": "/p"}},
]
EXPECTED_ENVELOPES = [
    {"hook_event_name": "session.created", "session_id": "ses_1"},
    {"hook_event_name": "message.updated.user", "session_id": "ses_1", "prompt": "list the files"},
    {"hook_event_name": "chat.params", "session_id": "ses_1", "model": "p1/m1"},
    {
        "hook_event_name": "tool.execute.before",
        "session_id": "ses_1",
        "call_id": "c1",
        "tool_name": "bash",
        "tool_input": {"command": "ls"},
    },
    {"hook_event_name": "permission.asked", "session_id": "ses_1", "tool_name": "bash", "message": "Run ls?"},
    {
        "hook_event_name": "permission.replied",
        "session_id": "ses_1",
        "call_id": "c1",
        "tool_name": "bash",
        "tool_input": {"command": "ls"},
    },
    {
        "hook_event_name": "tool.execute.after",
        "session_id": "ses_1",
        "call_id": "c1",
        "tool_name": "bash",
        "tool_input": {"command": "ls"},
        "success": False,
        "error": "exit status 2",
        "tool_output": "x",
    },
    {
        "hook_event_name": "tool.execute.before",
        "session_id": "ses_1",
        "call_id": "c2",
        "tool_name": "read",
        "tool_input": {"filePath": "/x"},
    },
    {
        "hook_event_name": "tool.failed",
        "session_id": "ses_1",
        "call_id": "c2",
        "tool_name": "read",
        "tool_input": {"filePath": "/x"},
        "success": False,
        "error": "File not found: /x",
    },
    {
        "hook_event_name": "session.status.retry",
        "session_id": "ses_1",
        "error": "Overloaded",
        "attempt": 1,
    },
    {
        "hook_event_name": "message.part.updated.step-finish",
        "session_id": "ses_1",
        "model": "p1/m1",
        "input_tokens": 276,
        "output_tokens": 9,
        "reasoning_tokens": 5,
        "cached_tokens": 1024,
    },
    {"hook_event_name": "session.error", "session_id": "ses_1", "error": "overloaded"},
    {"hook_event_name": "session.idle", "session_id": "ses_1", "assistant_text": "Done."},
    {"hook_event_name": "server.instance.disposed", "session_id": "ses_1"},
]
DRIVER = """\
import { SciontoolBridge } from "./bridge.mjs";
import { readFileSync } from "node:fs";
const hooks = await SciontoolBridge({});
for (const step of JSON.parse(readFileSync("steps.json", "utf8"))) {
  if (Array.isArray(step)) await hooks[step[0]](step[1], step[2]);
  else await hooks.event({ event: step });
}
"""
RECORDER = """\
import os, sys
with open(os.environ["RECORD"], "a") as out:
    out.write(sys.stdin.read() + "\\n")
"""


def run_bridge(
    tmp_path: Path, home: Path, command: str, driver: str, steps: object, returncode: int = 0, **env: str
) -> subprocess.CompletedProcess[str]:
    """Install the opencode bridge with command as the hook, then run driver (node) feeding it
    the bus events steps, as opencode would; env is added to the driver's environment."""
    proc = harness(home, "install", "opencode", "--project", str(tmp_path), "--command", command)
    assert proc.returncode == 0, proc.stderr
    shutil.copy(tmp_path / ".opencode" / "plugins" / "sciontool-bridge.js", tmp_path / "bridge.mjs")
    (tmp_path / "driver.mjs").write_text(driver)
    (tmp_path / "steps.json").write_text(json.dumps(steps))
    run = subprocess.run(
        ["node", "driver.mjs"],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == returncode, run.stderr
    return run


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the opencode bridge")
def test_opencode_bridge_sends_the_mapped_events_as_envelopes(tmp_path: Path, home: Path) -> None:
    recorder = tmp_path / "record.py"
    recorder.write_text(RECORDER)
    record = tmp_path / "envelopes.jsonl"
    run_bridge(tmp_path, home, f"{sys.executable} {recorder}", DRIVER, BUS, RECORD=str(record))
    sent = [json.loads(line) for line in record.read_text().splitlines()]
    assert sent == EXPECTED_ENVELOPES  # in order; session.status and the like are not sent


# A hook that holds its envelope until the driver's own line is in the record (opencode's calls
# have all returned, or it is exiting): a bridge that waited for the hook would hold that line
# back, and the hook gives up after 10 s. It waits on what happened, not a guessed time.
SLOW_HOOK = """\
import os, sys, time
envelope = sys.stdin.read()
sys.stderr.write("HOOK NOISE\\n")
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    with open(os.environ["RECORD"], "a+") as record:
        record.seek(0)
        if {"returned", "exiting"} & set(record.read().splitlines()):
            break
    time.sleep(0.02)
with open(os.environ["RECORD"], "a") as out:
    out.write(envelope + "\\n")
"""
TIMED_DRIVER = (
    DRIVER
    + """\
import { appendFileSync } from "node:fs";
appendFileSync(process.env.RECORD, "returned\\n");
"""
)


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the opencode bridge")
def test_opencode_bridge_never_waits_for_the_hook_nor_shows_its_output(tmp_path: Path, home: Path) -> None:
    # Every hook waits for the driver's line: opencode's calls into the bridge have all returned
    # before the first hook has written anything, and the hooks still ran one after another, in
    # order, to the last.
    hook = tmp_path / "slow.py"
    hook.write_text(SLOW_HOOK)
    record = tmp_path / "record.txt"
    run = run_bridge(tmp_path, home, f"{sys.executable} {hook}", TIMED_DRIVER, BUS, RECORD=str(record))
    assert "HOOK NOISE" not in run.stdout + run.stderr
    lines = record.read_text().splitlines()
    assert lines[0] == "returned"
    assert [json.loads(line) for line in lines[1:]] == EXPECTED_ENVELOPES


EXITING_DRIVER = (
    DRIVER
    + """\
import { appendFileSync } from "node:fs";
appendFileSync(process.env.RECORD, "exiting\\n");
process.exit(0);
"""
)


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the opencode bridge")
@pytest.mark.parametrize("steps", [BUS[:-1], BUS[1:-1]], ids=["new-session", "resumed-session"])
def test_opencode_bridge_hands_the_queue_on_when_opencode_exits(
    tmp_path: Path, home: Path, steps: list[object]
) -> None:
    # `opencode run` calls process.exit() right after session.idle, with envelopes still queued
    # behind a hook that waits for it and no instance disposal: they all reach the hook after the exit, in
    # order, and the exit itself ends the instance. opencode's exit does not wait for them.
    # A resumed session (`run --continue`: no session.created on the bus) is started again first.
    hook = tmp_path / "slow.py"
    hook.write_text(SLOW_HOOK)
    record = tmp_path / "record.txt"
    # steps hold no server.instance.disposed
    run = run_bridge(
        tmp_path,
        home,
        f"{sys.executable} {hook}",
        EXITING_DRIVER,
        steps,
        RECORD=str(record),
        TMPDIR=str(tmp_path),
    )
    assert "HOOK NOISE" not in run.stdout + run.stderr
    before_exit = record.read_text().splitlines().index("exiting")
    assert before_exit < len(EXPECTED_ENVELOPES)  # node did not wait for the hooks
    deadline = time.monotonic() + 120  # a hang bound: 13 hooks, one after another
    lines = record.read_text().splitlines()
    while len(lines) < 1 + len(EXPECTED_ENVELOPES) and time.monotonic() < deadline:
        time.sleep(0.2)
        lines = record.read_text().splitlines()
    assert [json.loads(line) for line in lines if line != "exiting"] == EXPECTED_ENVELOPES
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("sciontool-bridge-")] == []


KILLED_DRIVER = (
    DRIVER
    + """\
const sent = () => readFileSync(process.env.RECORD, "utf8").split("\\n").length - 1;
while (sent() < Number(process.env.WANT)) await new Promise((done) => setTimeout(done, 50));
process.kill(process.pid, "SIGKILL");
"""
)


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the opencode bridge")
def test_opencode_bridge_ends_the_instance_when_opencode_ends_without_a_word(
    tmp_path: Path, home: Path
) -> None:
    # opencode's TUI ends the plugin's worker thread on /exit: no `exit` event, no disposal on
    # the bus. A process killed by SIGKILL says even less: the disposal still reaches the hook.
    recorder = tmp_path / "record.py"
    recorder.write_text(RECORDER)
    record = tmp_path / "envelopes.jsonl"
    record.write_text("")
    steps = BUS[:-1]  # no server.instance.disposed
    want = len(EXPECTED_ENVELOPES) - 1
    command = f"{sys.executable} {recorder}"
    run_bridge(tmp_path, home, command, KILLED_DRIVER, steps, -9, RECORD=str(record), WANT=str(want))
    deadline = time.monotonic() + 60  # a hang bound, not a speed claim
    lines = record.read_text().splitlines()
    while len(lines) <= want and time.monotonic() < deadline:
        time.sleep(0.1)
        lines = record.read_text().splitlines()
    assert [json.loads(line) for line in lines] == EXPECTED_ENVELOPES


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the opencode bridge")
def test_opencode_bridge_survives_a_missing_sciontool(tmp_path: Path, home: Path) -> None:
    run_bridge(tmp_path, home, "/nonexistent/sciontool", DRIVER, BUS)  # the driver exits 0


# --- sciontool hook --dialect=codex JSON -----------------------------------------------------------

NOTIFY = {
    "type": "agent-turn-complete",
    "thread-id": "thread-1",
    "turn-id": "turn-1",
    "cwd": "/home/dev/project",
    "input-messages": ["say hello"],
    "last-assistant-message": "All done.",
}


def test_codex_notify_json_argument_is_the_envelope(agent: Agent) -> None:
    # Codex runs notify with stdin at /dev/null and the JSON as the last argument.
    done = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "hook", "--dialect=codex", json.dumps(NOTIFY)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=agent.env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert agent.info == {"activity": "completed"}
    assert agent.log_lines[-1].endswith("[completed] Agent completed task")


def test_a_positional_that_is_not_a_json_object_keeps_the_event_name_form(agent: Agent) -> None:
    assert agent.run("hook", "--dialect=claude", "Stop").returncode == 0
    assert "Agent turn completed" in agent.log_lines[-1]
    assert agent.run("hook", "--dialect=codex", "[1, 2]").returncode == 0
    assert "Event: [1, 2]" in agent.log_lines[-1]
    # An object cut short is a broken envelope, refused as on stdin (issue 21, item 12).
    cut = agent.run("hook", "--dialect=codex", "{not json")
    assert (cut.returncode, cut.stderr.decode().count("\n")) == (1, 1)


def test_notify_form_imports_nothing_heavy(agent: Agent) -> None:
    """Codex waits on notify like any hook: the argument form stays on the light path."""
    probe = (
        "import sys\n"
        f"sys.argv = ['sciontool', 'hook', '--dialect=codex', {json.dumps(NOTIFY)!r}]\n"
        "from sciontool_py.main import main\n"
        "code = main()\n"
        "sys.stderr.write(' '.join(sorted(sys.modules)))\n"
    )
    for _ in range(2):  # the first call builds the dialect cache
        result = subprocess.run(
            [sys.executable, "-c", probe], stdin=subprocess.DEVNULL, capture_output=True, env=agent.env
        )
    loaded = set(result.stderr.decode().splitlines()[-1].split())
    assert "sciontool_py.receiver.hook" in loaded
    assert not loaded & {"typer", "yaml", "json", "re", "sciontool_py.harness"}
    assert agent.info == {"activity": "completed"}


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_a_project_folder_that_does_not_exist_is_refused_and_not_created(
    tmp_path: Path, home: Path, action: str, harness_here: CliHere
) -> None:
    missing = tmp_path / "typo"
    _one_line_error(harness_here(home, action, "core-agent", "--project", str(missing)), "no such folder")
    assert not missing.exists()


@pytest.mark.parametrize(
    ("name", "settings", "text", "words"),
    [
        (
            "hermes",
            ".hermes/config.yaml",
            "model: [unclosed\n",
            ["cannot parse YAML (line", "left untouched"],
        ),
        ("hermes", ".hermes/config.yaml", "- a list\n- not a mapping\n", ["not a mapping", "left untouched"]),
        (
            "hermes",
            ".hermes/config.yaml",
            "hooks: [pre_tool_call]\n",
            ["hooks is not a mapping", "left untouched"],
        ),
        (
            "hermes",
            ".hermes/config.yaml",
            "hooks: {pre_tool_call: []}\n",
            ["cannot find hooks.pre_tool_call", "by hand"],
        ),
        (
            "hermes",
            ".hermes/config.yaml",
            "hooks: {my_event: []}\n",
            ["hooks is not a block mapping", "by hand"],
        ),
        (
            "mistral-vibe",
            ".vibe/hooks.toml",
            'hooks = [{event = "pre_tool", command = "mine"}]\n',
            ["inline array", "left untouched"],
        ),
        ("mistral-vibe", ".vibe/hooks.toml", "model = \n", ["cannot parse"]),
    ],
)
def test_a_hermes_or_vibe_file_install_cannot_edit_safely_is_left_untouched(
    home: Path, name: str, settings: str, text: str, words: list[str], harness_here: CliHere
) -> None:
    # Hermes's YAML and Vibe's TOML get a block of lines, not a rewrite: where that block
    # cannot go safely, the file stays as the user wrote it, and nothing is put beside it.
    path = home / settings
    path.parent.mkdir()
    path.write_text(text)
    proc = harness_here(home, "install", name, "--user")
    _one_line_error(proc, str(path), *words)
    assert path.read_text() == text
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


# Starts `python -m sciontool_py` (as the harness tests do) once a line arrives on stdin, so the
# folder can go first. The gate execs rather than running the module under `-c`: there sys.path
# starts with '', and CPython 3.13.0-3.13.2 then fail an attribute miss on any module with a
# SystemError when the current folder is gone (python/cpython#130932, fixed in 3.13.3).
STARTS_ON_A_LINE = (
    "import os, sys; sys.stdin.readline(); "
    "os.execv(sys.executable, [sys.executable, '-m', 'sciontool_py', *sys.argv[1:]])"
)


def test_a_current_folder_that_was_removed_is_one_line(tmp_path: Path, home: Path) -> None:
    # A shell left in a deleted folder: install must not guess a project.
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.Popen(  # starts once the folder is gone: the line on stdin says so
        [sys.executable, "-c", STARTS_ON_A_LINE, "harness", "install", "claude"],
        cwd=gone,
        env={**os.environ, "HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
    )
    gone.rmdir()
    out, err = proc.communicate("go\n", timeout=60)
    _one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), "no longer exists")
    assert list(tmp_path.iterdir()) == [home] and list(home.iterdir()) == []


def test_hermes_install_and_uninstall_say_what_they_found(home: Path, harness_here: CliHere) -> None:
    config = home / ".hermes" / "config.yaml"
    assert "no such file" in harness_here(home, "uninstall", "hermes", "--user").stdout
    config.parent.mkdir()
    mine = "# my settings\nhooks:\n  pre_tool_call:\n    - command: my-guard\n"
    config.write_text(mine)
    assert "no sciontool hooks" in harness_here(home, "uninstall", "hermes", "--user").stdout
    assert harness_here(home, "install", "hermes", "--user").returncode == 0
    again = harness_here(home, "install", "hermes", "--user")
    assert again.returncode == 0 and "already wired" in again.stdout
    assert harness_here(home, "uninstall", "hermes", "--user").returncode == 0
    assert config.read_text() == mine  # the user's own guard and comment, byte for byte


def test_hermes_config_of_comments_only_round_trips(home: Path, harness_here: CliHere) -> None:
    config = home / ".hermes" / "config.yaml"
    config.parent.mkdir()
    config.write_text("# nothing set yet\n")
    assert harness_here(home, "install", "hermes", "--user").returncode == 0
    assert "hooks:" in config.read_text()
    assert harness_here(home, "uninstall", "hermes", "--user").returncode == 0
    assert config.read_text() == "# nothing set yet\n"
