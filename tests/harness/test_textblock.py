"""Mistral Vibe's hooks.toml and Hermes Agent's config.yaml: our marked block of lines, through the real CLI.

What the round trip (test_roundtrip.py) cannot show: the block sits where each harness reads it,
a reinstall rewrites it in place, and a file the block cannot join without changing the user's
settings is refused whole, untouched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CliHere, wired

from harness import project_line
from harness.test_merge import harness

REAL = Path(__file__).resolve().parent.parent / "data" / "real-envelopes"

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


@pytest.fixture(autouse=True)
def _no_harness_homes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VIBE_HOME", "HERMES_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)


def test_vibe_tables_join_the_users_hooks_vibe_reads_and_a_reinstall_rewrites_them_in_place(
    tmp_path: Path, harness_here: CliHere
) -> None:
    project = tmp_path / "project"
    hooks = project / ".vibe" / "hooks.toml"
    hooks.parent.mkdir(parents=True)
    mine = (
        '[[hooks]]\nname = "lint"  # mine\ntype = "post_agent"\ncommand = "ruff check ."\n\n[other]\nk = 1\n'
    )
    hooks.write_text(mine)
    assert harness_here(tmp_path, "install", "mistral-vibe", "--project", str(project)).returncode == 0
    harness_here(
        tmp_path, "install", "mistral-vibe", "--project", str(project), "--command", "/opt/v/sciontool"
    )
    text = hooks.read_text()
    parsed = tomllib.loads(text)["hooks"]
    assert parsed[0]["name"] == "lint"  # the user's stays first
    assert [(h["name"], h["type"], h["command"]) for h in parsed[1:]] == [
        (f"sciontool-{t}", t, project_line("/opt/v/sciontool", "hook --dialect=mistral-vibe"))
        for t in ("pre_tool", "post_tool", "post_agent")
    ]
    # Ours follow the user's last [[hooks]] table, before [other]; no marker line any more.
    assert text.index('name = "lint"') < text.index("sciontool-pre_tool") < text.index("[other]")
    assert "#" not in text.replace("# mine", "")
    assert harness_here(tmp_path, "uninstall", "mistral-vibe", "--project", str(project)).returncode == 0
    assert hooks.read_text() == mine


def test_vibe_block_an_older_version_wrote_is_removed_at_reinstall_and_uninstall(
    tmp_path: Path, harness_here: CliHere
) -> None:
    hooks = tmp_path / ".vibe" / "hooks.toml"
    hooks.parent.mkdir()
    mine = '# my hooks\n[[hooks]]\nname = "lint"\ntype = "post_agent"\ncommand = "ruff"\n'
    older = (REAL / "mistral-vibe-3.0.2" / "hooks.toml").read_text()  # what 0.2's install wrote
    hooks.write_text(mine + "\n" + older)
    assert harness_here(tmp_path, "install", "mistral-vibe", "--user").returncode == 0
    text = hooks.read_text()
    assert "# >>>" not in text and tomllib.loads(text)["hooks"][0]["name"] == "lint"
    assert len(tomllib.loads(text)["hooks"]) == 4
    hooks.write_text(mine + "\n" + older)
    assert harness_here(tmp_path, "uninstall", "mistral-vibe", "--user").returncode == 0
    assert hooks.read_text() == mine + "\n"  # its blank line was the user's: no record says otherwise


def test_vibe_inline_hooks_array_is_refused_untouched(tmp_path: Path, harness_here: CliHere) -> None:
    hooks = tmp_path / ".vibe" / "hooks.toml"
    hooks.parent.mkdir()
    text = 'hooks = [{name = "lint", type = "post_agent", command = "ruff"}]\n'
    hooks.write_text(text)
    proc = harness_here(tmp_path, "install", "mistral-vibe", "--user")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("sciontool harness install: ") and "inline array" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert hooks.read_text() == text


def test_hermes_block_joins_the_users_hooks_mapping_as_hermes_reads_it(
    tmp_path: Path, harness_here: CliHere
) -> None:
    config = tmp_path / ".hermes" / "config.yaml"
    config.parent.mkdir()
    config.write_text("model: x\nhooks:\n    pre_verify:\n      - command: t.sh  # mine\nterminal: {}\n")
    assert harness_here(tmp_path, "install", "hermes", "--user").returncode == 0
    data = yaml.safe_load(config.read_text())
    assert data["hooks"]["pre_verify"] == [{"command": "t.sh"}]
    assert data["hooks"]["pre_tool_call"] == [{"command": wired("sciontool hook --dialect=hermes")}]
    assert data["terminal"] == {} and "# mine" in config.read_text()


def test_hermes_puts_ours_first_in_a_list_the_user_has_for_the_event(
    tmp_path: Path, harness_here: CliHere
) -> None:
    config = tmp_path / ".hermes" / "config.yaml"
    config.parent.mkdir()
    config.write_text("hooks:\n  pre_tool_call:\n    - matcher: terminal\n      command: ~/bin/guard.py\n")
    assert harness_here(tmp_path, "install", "hermes", "--user").returncode == 0
    assert yaml.safe_load(config.read_text())["hooks"]["pre_tool_call"] == [
        {"command": wired("sciontool hook --dialect=hermes")},
        {"matcher": "terminal", "command": "~/bin/guard.py"},
    ]


def test_hermes_refuses_an_event_list_in_flow_style_and_changes_nothing(
    tmp_path: Path, harness_here: CliHere
) -> None:
    config = tmp_path / ".hermes" / "config.yaml"
    config.parent.mkdir()
    text = "hooks:\n  pre_tool_call: [{command: ~/bin/guard.py}]\n"
    config.write_text(text)
    proc = harness_here(tmp_path, "install", "hermes", "--user")
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "sciontool harness show hermes" in proc.stderr
    assert config.read_text() == text
    assert not (tmp_path / ".local" / "state" / "sciontool-py").exists()  # nothing remembered


def test_hermes_follows_hermes_home_and_refuses_a_project(tmp_path: Path) -> None:
    other = tmp_path / "profile"
    other.mkdir()
    env = {**os.environ, "HERMES_HOME": str(other), "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "harness", "install", "hermes", "--user"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "on_session_start" in yaml.safe_load((other / "config.yaml").read_text())["hooks"]
    refused = harness(tmp_path, "install", "hermes", "--project", str(tmp_path))
    assert refused.returncode == 1 and "use --user" in refused.stderr


@pytest.mark.parametrize("array", ["hooks", "servers"])
def test_vibe_install_refuses_a_file_with_an_array_of_tables_split_by_another_table_untouched(
    tmp_path: Path, harness_here: CliHere, array: str
) -> None:
    hooks = tmp_path / ".vibe" / "hooks.toml"
    hooks.parent.mkdir()
    # tomlkit writes [other] after the array: it would move the user's table at install
    text = f'[[{array}]]\nname = "a"\n[other]\nk = 1\n[[{array}]]\nname = "b"\n'
    if array == "hooks":
        text = text.replace('name = "a"\n', 'name = "a"\ntype = "post_tool"\ncommand = "x"\n')
        text = text.replace('name = "b"\n', 'name = "b"\ntype = "post_agent"\ncommand = "y"\n')
    hooks.write_text(text)
    proc = harness_here(tmp_path, "install", "mistral-vibe", "--user")
    assert proc.returncode == 1 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert (
        "tomlkit would not write it back as it is (an array of tables split by another table?)" in proc.stderr
    )
    assert hooks.read_text() == text
    # Uninstall cuts our tables out as lines, tomlkit aside: the user's split array stays as it is.
    ours = '[[hooks]]\nname = "sciontool-pre_tool"\ntype = "pre_tool"\ncommand = "sciontool hook"\n'
    hooks.write_text(text + "\n" + ours + "# the user's, below ours\n")
    proc = harness_here(tmp_path, "uninstall", "mistral-vibe", "--user")
    assert proc.returncode == 0, proc.stderr
    assert hooks.read_text() == text + "\n# the user's, below ours\n"
