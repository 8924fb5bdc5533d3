"""Issue 21, items 14-19: `harness install` / `uninstall` against hostile settings, with the real `sciontool`."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Agent
from hostile_machine import one_error


def sciontool(
    agent: Agent, *args: str, cwd: Path | None = None, umask: int | None = None
) -> subprocess.CompletedProcess[bytes]:
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))  # the quadratic editor took 105 s
        if umask is not None:
            os.umask(umask)

    return subprocess.run(
        [sys.executable, "-m", "sciontool_py", *args],
        capture_output=True,
        env=agent.env,
        cwd=cwd,
        timeout=120,
        preexec_fn=limits,
    )


def test_a_settings_file_with_a_duplicate_hooks_key_is_refused(agent: Agent, tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    text = '{"hooks": {"Stop": []}, "model": "x", "hooks": {}}\n'
    settings.write_text(text)
    for command in ("install", "uninstall"):
        line = one_error(sciontool(agent, "harness", command, "claude", "--project", str(tmp_path)), command)
        assert 'the key "hooks" appears twice in one object' in line
    assert settings.read_text() == text
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]  # no backup either


def test_a_fifo_as_settings_file_is_refused_without_blocking(agent: Agent, tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    os.mkfifo(settings)
    for command in ("install", "uninstall"):
        line = one_error(sciontool(agent, "harness", command, "claude", "--project", str(tmp_path)), command)
        assert line.endswith("settings.json: not a regular file; left untouched")
    assert stat.S_ISFIFO(settings.lstat().st_mode)


def test_a_codex_config_with_a_3000_line_array_is_edited_in_linear_time(agent: Agent, tmp_path: Path) -> None:
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    lines = (
        ["model = 'x'", "allowed = ["]
        + [f"  'item{i}'," for i in range(3000)]
        + ["]", "", "[table]", "k = 1", ""]
    )
    config.write_text("\n".join(lines))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    ran = sciontool(agent, "harness", "install", "codex", "--project", str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    # CPU seconds, not wall time: a loaded machine slows both alike. Linear is well under 1 s.
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before < 20
    text = config.read_text()
    assert text.index("notify = [") < text.index("[table]")
    assert "'item2999'," in text
    undone = sciontool(agent, "harness", "uninstall", "codex", "--project", str(tmp_path))
    assert undone.returncode == 0, undone.stderr
    assert config.read_text() == "\n".join(lines)


def test_folders_are_created_0755_under_umask_000(agent: Agent, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for harness in ("claude", "codex", "opencode"):
        ran = sciontool(agent, "harness", "install", harness, "--project", str(project), umask=0)
        assert ran.returncode == 0, ran.stderr
    user = sciontool(agent, "harness", "install", "opencode", "--user", umask=0)
    assert user.returncode == 0, user.stderr
    made = [
        project / ".claude",
        project / ".codex",
        project / ".opencode",
        project / ".opencode" / "plugins",
        agent.home / ".config",
        agent.home / ".config" / "opencode",
        agent.home / ".config" / "opencode" / "plugins",
    ]
    assert {str(p): oct(p.stat().st_mode & 0o777) for p in made} == {str(p): "0o755" for p in made}


def test_a_command_with_a_byte_that_is_not_utf8_is_refused(agent: Agent, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    command = b"/opt/sc\xffion/sciontool".decode(errors="surrogateescape")
    ran = sciontool(agent, "harness", "install", "claude", "--project", str(project), "--command", command)
    assert one_error(ran, "install").endswith(
        "--command holds a byte that is not UTF-8: no settings file can carry it"
    )
    assert list(project.iterdir()) == []


def test_a_settings_file_600_deep_is_one_clear_line(agent: Agent, tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    text = '{"x": ' + "[" * 600 + "]" * 600 + "}"
    settings.write_text(text)
    for command in ("install", "uninstall"):
        line = one_error(sciontool(agent, "harness", command, "claude", "--project", str(tmp_path)), command)
        assert line.endswith("settings.json: nested too deeply to edit; left untouched")
    assert settings.read_text() == text


@pytest.mark.parametrize("key", ['"notify"', "'notify'"])
def test_a_quoted_notify_key_is_removed_at_uninstall(agent: Agent, tmp_path: Path, key: str) -> None:
    installed = sciontool(agent, "harness", "install", "codex", "--project", str(tmp_path))
    assert installed.returncode == 0, installed.stderr
    config = tmp_path / ".codex" / "config.toml"
    text = config.read_text()
    config.write_text(text.replace("\nnotify = ", f"\n{key} = "))
    ran = sciontool(agent, "harness", "uninstall", "codex", "--project", str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert not config.exists() or "notify" not in config.read_text()


def test_relative_paths_from_a_deleted_folder_are_one_clear_line(agent: Agent, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        "import os, subprocess, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
        "cmd = [sys.executable, '-m', 'sciontool_py']; "
        "a = subprocess.run(cmd + ['harness', 'install', 'claude'], capture_output=True); "
        "b = subprocess.run(cmd + ['hook', '--dialect-file', 'rel.yaml'], input=b'{}', capture_output=True); "
        "print(a.returncode, b.returncode); sys.stdout.flush(); "
        "sys.stdout.buffer.write(a.stderr + b.stderr)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script, str(gone)], capture_output=True, env=agent.env, timeout=120
    )
    assert ran.stdout.decode().splitlines() == [
        "1 1",
        "sciontool harness install: the current folder no longer exists: pass --project DIR (absolute)",
        "sciontool hook: rel.yaml: a relative path, and the current folder no longer exists",
    ]
    assert json.dumps(ran.stderr.decode()) == '""'
