"""What the user typed stays theirs: outside Scion, agent.log and prompt.md (prompts, tool input
in log lines) are this user's alone, even in a HOME others may enter; inside Scion the files keep
Scion's modes. Real hooks, a real second user (nobody, through setpriv) where the suite is root."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Agent

PROMPT = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "my secret plan"}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_home(agent: Agent) -> Iterator[Agent]:
    """The agent's HOME in a folder every user may enter, as a 0755 HOME under /home is."""
    base = Path(tempfile.mkdtemp(prefix="sciontool-open-home-"))
    try:
        base.chmod(0o755)
        home = base / "home"
        home.mkdir(mode=0o755)
        home.chmod(0o755)
        agent.home = home
        agent.env["HOME"] = str(home)
        yield agent
    finally:
        shutil.rmtree(base)


def test_outside_scion_what_the_user_typed_is_written_for_this_user_alone(open_home: Agent) -> None:
    assert open_home.hook(PROMPT, "--dialect=claude").returncode == 0
    home = open_home.home
    assert "my secret plan" in (home / "prompt.md").read_text()
    assert (mode(home / "agent.log"), mode(home / "prompt.md")) == (0o600, 0o600)
    assert mode(home / "agent-info.json") == 0o644  # the status is Scion's, for its readers


def test_an_older_readable_agent_log_and_prompt_are_made_private_at_the_next_hook(open_home: Agent) -> None:
    home = open_home.home
    (home / "agent.log").write_text("an older line\n")
    (home / "prompt.md").write_text("an older prompt")
    for name in ("agent.log", "prompt.md"):
        (home / name).chmod(0o644)
    assert open_home.hook(PROMPT, "--dialect=claude").returncode == 0
    assert (mode(home / "agent.log"), mode(home / "prompt.md")) == (0o600, 0o600)
    assert (home / "agent.log").read_text().startswith("an older line\n")  # kept, line appended
    assert (home / "prompt.md").read_text() == "an older prompt"  # the first prompt stays


def test_inside_scion_the_files_keep_scions_modes(open_home: Agent) -> None:
    result = open_home.hook(PROMPT, "--dialect=claude", SCION_AGENT_ID="agent-1")
    assert result.returncode == 0
    home = open_home.home
    # Created 0644 less the umask, as Scion's Go hook creates them.
    umask = os.umask(0)
    os.umask(umask)
    assert mode(home / "agent.log") == mode(home / "prompt.md") == 0o644 & ~umask


def test_another_user_cannot_read_the_prompt_or_the_log(open_home: Agent) -> None:
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv, to read as another user")
    assert open_home.hook(PROMPT, "--dialect=claude").returncode == 0
    home = open_home.home

    def read_as_nobody(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", str(home / name)],
            capture_output=True,
            text=True,
            timeout=60,
        )

    for name in ("prompt.md", "agent.log"):
        tried = read_as_nobody(name)
        assert tried.returncode != 0 and "Permission denied" in tried.stderr, name
        assert "my secret plan" not in tried.stdout
    assert read_as_nobody("agent-info.json").returncode == 0  # the status is for every reader
