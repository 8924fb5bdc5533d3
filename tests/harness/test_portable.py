"""A project's wiring is portable: the committed file names no path of this machine, its lines run
the hook where PATH has sciontool, and do nothing, without a word, where it does not.

Install runs as a process; then each line it wrote is run as the harness runs it (`sh -c`, or
`bash -c` for Codex and Gemini CLI, Codex's notify as an argv with the turn's JSON appended) in
the project folder, with a PATH that has the venv's bin folder or not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_BOUND, Agent

VENV_BIN = Path(sys.executable).parent
BARE_PATH = "/usr/bin:/bin"  # a teammate's machine, or CI, without sciontool
ON_PATH = f"{VENV_BIN}:{BARE_PATH}"
# (harness, its project file, the shell that runs its lines)
SHELL_HARNESSES = [
    ("claude", ".claude/settings.json", "sh"),
    ("gemini", ".gemini/settings.json", "bash"),
    ("codex", ".codex/hooks.json", "bash"),
    ("copilot", ".github/hooks/sciontool.json", "bash"),
    ("qwen-code", ".qwen/settings.json", "sh"),
    ("droid", ".factory/settings.json", "sh"),
    ("auggie", ".augment/settings.json", "bash"),
    ("antigravity", ".agents/hooks.json", "sh"),
    ("core-agent", ".agents/config.json", "sh"),
]
ENVELOPE = {"hook_event_name": "PreToolUse", "session_id": "p1", "tool_name": "Bash", "tool_input": {}}


def install(agent: Agent, project: Path, name: str) -> None:
    """`harness install NAME --project` as a process, from PATH with this venv's bin folder."""
    env = {**agent.env, "PATH": ON_PATH, "SCION_TELEMETRY_ENABLED": "false"}
    ran = subprocess.run(
        [str(VENV_BIN / "sciontool"), "harness", "install", name, "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_BOUND,
    )
    assert ran.returncode == 0, ran.stderr


def commands(value: object, key: str) -> list[str]:
    """Every command line under KEY anywhere in a settings file."""
    if isinstance(value, dict):
        found = [value[key]] if isinstance(value.get(key), str) else []
        return found + [c for v in value.values() for c in commands(v, key)]
    if isinstance(value, list):
        return [c for v in value for c in commands(v, key)]
    return []


def run(
    agent: Agent, argv: list[str], project: Path, path: str, stdin: bytes
) -> subprocess.CompletedProcess[bytes]:
    env = {**agent.env, "PATH": path, "SCION_TELEMETRY_ENABLED": "false"}
    return subprocess.run(argv, input=stdin, capture_output=True, cwd=project, env=env, timeout=HANG_BOUND)


def assert_names_no_path_of_this_machine(text: str) -> None:
    for here in (str(VENV_BIN), sys.prefix, "relay.bash", "/usr/bin/bash", str(Path.cwd())):
        assert here not in text, here


@pytest.mark.parametrize(("name", "relative", "shell"), SHELL_HARNESSES)
def test_a_projects_line_runs_the_hook_with_sciontool_on_path_and_nothing_without(
    agent: Agent, tmp_path: Path, name: str, relative: str, shell: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    install(agent, project, name)
    text = (project / relative).read_text()
    assert_names_no_path_of_this_machine(text)
    key = "bash" if name == "copilot" else "command"
    root = json.loads(text)
    hooks = root.get("hooks") or root["sciontool"]  # antigravity's named group
    event, entries = next(iter(hooks.items()))
    line = commands(entries, key)[0]
    envelope = json.dumps({**ENVELOPE, "hook_event_name": event}).encode()
    info = agent.home / "agent-info.json"
    # A teammate without sciontool: exit 0, not a byte on stderr (no hook error shown), no event.
    quiet = run(agent, [shell, "-c", line], project, BARE_PATH, envelope)
    assert (quiet.returncode, quiet.stderr, quiet.stdout) == (0, b"", b"")
    assert not info.exists()
    # With sciontool on PATH the event lands.
    done = run(agent, [shell, "-c", line], project, ON_PATH, envelope)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert info.exists()


def test_codexs_project_notify_passes_the_turn_on_and_is_quiet_without_sciontool(
    agent: Agent, tmp_path: Path
) -> None:
    import tomllib

    project = tmp_path / "project"
    project.mkdir()
    install(agent, project, "codex")
    text = (project / ".codex" / "config.toml").read_text()
    assert_names_no_path_of_this_machine(text)
    notify = tomllib.loads(text)["notify"]
    turn = json.dumps({"type": "agent-turn-complete", "turn-id": "t1", "last-assistant-message": "done"})
    quiet = run(agent, [*notify, turn], project, BARE_PATH, b"")
    assert (quiet.returncode, quiet.stderr) == (0, b"")
    assert not (agent.home / "agent.log").exists()
    done = run(agent, [*notify, turn], project, ON_PATH, b"")
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert (agent.home / "agent.log").exists()


def test_vibe_and_opencode_project_files_name_no_path_of_this_machine(agent: Agent, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("mistral-vibe", "opencode"):
        install(agent, project, name)
    assert_names_no_path_of_this_machine((project / ".vibe" / "hooks.toml").read_text())
    bridge = (project / ".opencode" / "plugins" / "sciontool-bridge.js").read_text()
    assert 'const COMMAND = ["sciontool","hook","--dialect=opencode"];' in bridge.replace(", ", ",")


def test_install_without_sciontool_on_path_still_writes_the_name_and_says_so(
    agent: Agent, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {**agent.env, "PATH": BARE_PATH}
    ran = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "harness", "install", "claude", "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_BOUND,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[-1].startswith("note: `sciontool` is not on PATH here")
    assert_names_no_path_of_this_machine((project / ".claude" / "settings.json").read_text())


def test_the_relay_is_installed_beside_sciontool() -> None:
    """What a project's lines look up on PATH: the package's script, executable, beside `sciontool`."""
    relay = VENV_BIN / "sciontool-relay"
    assert os.access(relay, os.X_OK)
    assert (
        relay.read_bytes()
        == (Path(__file__).parents[2] / "sciontool_py" / "helper" / "relay.bash").read_bytes()
    )
