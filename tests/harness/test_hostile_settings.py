"""`sciontool harness` against settings files the user (or the agent) left in a shape install
cannot use: each refusal is one line naming the file, exit 1, and nothing is written; and what
install leaves for the user (a folder holding files of theirs, a show of the hooks) is right."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import CliHere, Ran


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "hermes"
    folder.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(folder))
    return folder


def one_line(ran: Ran, command: str) -> str:
    assert ran.returncode == 1 and ran.stdout == ""
    lines = ran.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"sciontool harness {command}: "), lines
    assert "internal error" not in lines[0]
    return lines[0][len(f"sciontool harness {command}: ") :]


def test_a_settings_file_that_is_not_utf8_is_left_untouched(cli_here: CliHere, tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(b'{"model": "caf\xe9"}\n')
    for command in ("install", "uninstall"):
        message = one_line(cli_here("harness", command, "claude", "--project", str(tmp_path)), command)
        assert message == f"{settings}: not UTF-8 text; left untouched"
    assert settings.read_bytes() == b'{"model": "caf\xe9"}\n'
    assert os.listdir(settings.parent) == ["settings.json"]


def test_a_file_where_the_settings_folder_belongs_or_a_link_loop_is_one_line(
    cli_here: CliHere, tmp_path: Path
) -> None:
    (tmp_path / ".claude").write_text("not a folder")
    message = one_line(cli_here("harness", "install", "claude", "--project", str(tmp_path)), "install")
    assert message == f"{tmp_path}/.claude/settings.json: Not a directory"
    assert (tmp_path / ".claude").read_text() == "not a folder"

    looped = tmp_path / "looped"
    (looped / ".claude").mkdir(parents=True)
    (looped / ".claude" / "settings.json").symlink_to("settings.json")  # points at itself
    message = one_line(cli_here("harness", "install", "claude", "--project", str(looped)), "install")
    assert message == f"{looped}/.claude/settings.json: Too many levels of symbolic links"
    assert os.listdir(looped / ".claude") == ["settings.json"]


def test_a_folder_at_the_backup_name_stops_install_before_the_settings_change(
    cli_here: CliHere, tmp_path: Path
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "mine"}\n')
    (tmp_path / ".claude" / "settings.json.bak").mkdir()
    ran = cli_here("harness", "install", "claude", "--project", str(tmp_path), "--backup")
    assert one_line(ran, "install") == f"{settings}.bak: Is a directory"
    assert settings.read_text() == '{"model": "mine"}\n'
    assert sorted(os.listdir(settings.parent)) == ["settings.json", "settings.json.bak"]


def test_uninstall_keeps_a_folder_install_made_once_it_holds_the_users_files(
    cli_here: CliHere, tmp_path: Path
) -> None:
    assert cli_here("harness", "install", "claude", "--project", str(tmp_path)).returncode == 0
    (tmp_path / ".claude" / "notes.md").write_text("mine")
    ran = cli_here("harness", "uninstall", "claude", "--project", str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert os.listdir(tmp_path / ".claude") == ["notes.md"]  # the settings file install made is gone


def test_hermes_show_names_the_config_and_how_to_accept_the_hooks(
    cli_here: CliHere, hermes_home: Path
) -> None:
    ran = cli_here("harness", "show", "hermes", "--user")
    assert ran.returncode == 0
    lines = ran.stdout.splitlines()
    assert lines[0] == f"# merged into {hermes_home}/config.yaml"
    assert lines[1] == "hooks:" and "  on_session_start:" in lines
    assert lines[-1].startswith("# Hermes asks once per hook") and "--accept-hooks" in lines[-1]
    assert not os.listdir(hermes_home)  # show writes nothing


def test_hermes_hooks_in_flow_style_before_another_key_are_left_to_the_user(
    cli_here: CliHere, hermes_home: Path
) -> None:
    text = "hooks: {pre_llm_call: [{command: my-guard}]}\nmodel: mine\n"
    (hermes_home / "config.yaml").write_text(text)
    message = one_line(cli_here("harness", "install", "hermes", "--user"), "install")
    assert message.startswith(f"{hermes_home}/config.yaml: cannot find hooks.pre_llm_call in the file")
    assert (hermes_home / "config.yaml").read_text() == text


def test_hermes_install_goes_under_the_users_commented_hooks_at_their_indent(
    cli_here: CliHere, hermes_home: Path
) -> None:
    config = hermes_home / "config.yaml"
    text = "hooks:\n\n    # my own guard\n    my_event:\n      - command: my-guard\nmodel: mine\n"
    config.write_text(text)
    assert cli_here("harness", "install", "hermes", "--user").returncode == 0
    installed = config.read_text()
    assert "\n    on_session_start:\n" in installed  # the user's four spaces, not two
    assert "    my_event:\n      - command: my-guard\n" in installed
    assert cli_here("harness", "uninstall", "hermes", "--user").returncode == 0
    assert config.read_text() == text


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_removed_current_folder_is_one_line_and_nothing_is_guessed(
    cli_here: CliHere, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)  # a shell left in a folder removed since
    gone.rmdir()
    message = one_line(cli_here("harness", command, "claude"), command)
    assert message == "the current folder no longer exists: pass --project DIR (absolute)"
    assert os.listdir(tmp_path) == []
