"""Issue 31 point 4: `harness install` run by a program PATH does not find writes hooks that run.

Each case runs install as its own process with a real PATH (the venv's bin folder on it or not),
then runs the hook command it wrote through `sh -c` with that same PATH, as a harness would.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from conftest import HANG_BOUND, Agent, wired

VENV_BIN = Path(sys.executable).parent
BARE_PATH = "/usr/bin:/bin"  # a harness's PATH without the venv


def install(
    agent: Agent, program: list[str], path: str, project: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """Install into the user's settings (project: HOME), where install may name this machine's
    paths; a project's files never do (test_portable.py)."""
    env = {**agent.env, "PATH": path, "SCION_TELEMETRY_ENABLED": "false"}
    ran = subprocess.run(
        [*program, "harness", "install", "claude", "--user", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_BOUND,
    )
    assert ran.returncode == 0, ran.stderr
    return ran


def written(project: Path) -> str:
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    return str(settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"])


def fire(agent: Agent, command: str, path: str) -> subprocess.CompletedProcess[bytes]:
    """The hook command run as Claude Code runs it: `sh -c` with the harness's PATH."""
    envelope = b'{"hook_event_name": "PreToolUse", "tool_name": "Bash"}'
    env = {**agent.env, "PATH": path, "SCION_TELEMETRY_ENABLED": "false"}
    return subprocess.run(
        ["sh", "-c", command], input=envelope, capture_output=True, env=env, timeout=HANG_BOUND
    )


def test_a_program_path_does_not_find_writes_its_absolute_path_and_the_hook_runs(
    agent: Agent, tmp_path: Path
) -> None:
    tools = tmp_path / "my tools"  # a space in the path: the command must quote it
    tools.mkdir()
    (tools / "sciontool").symlink_to(VENV_BIN / "sciontool")
    project = agent.home
    ran = install(agent, [str(tools / "sciontool")], BARE_PATH, project)
    program = shlex.quote(str(tools / "sciontool"))
    assert written(project) == wired(f"{program} hook --dialect=claude")
    assert ran.stdout.splitlines()[-1] == (
        f"note: `sciontool` is not on PATH, so the hooks run {program}; pass --command sciontool to "
        "write the bare name (for a harness whose PATH has it)"
    )
    hook = fire(agent, written(project), BARE_PATH)
    assert hook.returncode == 0, hook.stderr
    assert json.loads((agent.home / "agent-info.json").read_text())["toolName"] == "Bash"


def test_python_m_sciontool_py_not_on_path_writes_this_python_and_the_hook_runs(
    agent: Agent, tmp_path: Path
) -> None:
    project = agent.home
    install(agent, [sys.executable, "-m", "sciontool_py"], BARE_PATH, project)
    assert written(project) == wired(f"{shlex.quote(sys.executable)} -m sciontool_py hook --dialect=claude")
    hook = fire(agent, written(project), BARE_PATH)
    assert hook.returncode == 0, hook.stderr
    assert json.loads((agent.home / "agent-info.json").read_text())["activity"] == "executing"


def test_sciontool_on_path_is_written_as_the_bare_name(agent: Agent, tmp_path: Path) -> None:
    project = agent.home
    on_path = f"{VENV_BIN}{os.pathsep}{BARE_PATH}"
    ran = install(agent, [str(VENV_BIN / "sciontool")], on_path, project)
    assert written(project) == wired("sciontool hook --dialect=claude")
    assert "note: `sciontool`" not in ran.stdout
    assert fire(agent, written(project), on_path).returncode == 0


def test_a_bare_command_the_user_asks_for_is_written_with_a_warning_naming_command(
    agent: Agent, tmp_path: Path
) -> None:
    project = agent.home
    ran = install(agent, [str(VENV_BIN / "sciontool")], BARE_PATH, project, "--command", "sciontool")
    assert written(project) == wired("sciontool hook --dialect=claude")
    assert ran.stdout.splitlines()[-1] == (
        "warning: `sciontool` is not on PATH: unless the harness's PATH has it, every hook fails with "
        f"`sciontool: not found`; pass --command with its absolute path (this one is "
        f"{shlex.quote(str(VENV_BIN / 'sciontool'))})"
    )
    assert fire(agent, written(project), BARE_PATH).returncode == 127  # what the warning said
