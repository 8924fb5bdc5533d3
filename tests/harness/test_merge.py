"""`sciontool harness install/uninstall` through the real CLI, on settings shaped like real ones:
in this process (`harness_here`) but where a test keeps the process (`harness`).

For each harness: the user's settings and hooks keep their bytes, a second install changes
nothing, FILE.bak only with --backup, --dry-run prints the diff install would apply and writes
nothing, and uninstall gives back the file as it was, byte for byte.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import CliHere, wired, wired_notify

from harness import project_line
from sciontool_py.dialect.discover import find_dialect

CLAUDE = """\
{
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {
        "allow": ["Bash(npm run lint)", "Bash(npm run test:*)", "Read(~/.zshrc)"],
        "deny": ["Read(./.env)", "Read(./secrets/**)"]
    },
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0", "GREETING": "grüß dich"},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/check-bash.sh", "timeout": 5}]}
        ],
        "Stop": [
            {
                "hooks": [
                    {"type": "command", "command": "notify-send 'Claude is done'"}
                ]
            }
        ]
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
    "model": "opus"
}
"""

GEMINI = """\
{
  "general": {"vimMode": true, "preferredEditor": "code"},
  "ui": {"theme": "GitHub"},
  "model": {"name": "gemini-2.5-pro", "maxSessionTurns": 50},
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "write_file|replace",
        "hooks": [
          {
            "name": "prettier-check",
            "type": "command",
            "command": "$GEMINI_PROJECT_DIR/.gemini/hooks/format.sh",
            "timeout": 10000
          }
        ]
      }
    ]
  },
  "mcpServers": {"github": {"command": "github-mcp-server", "args": ["stdio"]}}
}
"""

CODEX_HOOKS = """\
{
  "description": "team hooks",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {"type": "command", "command": "python3 .codex/hooks/policy.py", "timeout": 10, "statusMessage": "Checking"}
        ]
      }
    ]
  }
}
"""

CODEX_CONFIG = """\
# Codex settings for this project
model = "gpt-5-codex"
approval_policy = "on-request"  # ask before anything risky

# Projects I trust
[projects."/home/dev/work"]
trust_level = "trusted"

[profiles.fast]
model = "gpt-5-mini"
"""

CORE_AGENT = """\
{
  "model": "gemini-2.5-flash",
  "permissions": {"allow": ["read_file", "list_dir"], "deny": ["bash:rm -rf *"]},
  "hooks": {
    "tool-start": [{"command": "logger -t agent tool-start", "timeout_seconds": 2}]
  },
  "subagents": []
}
"""


@dataclass
class Case:
    harness: str
    scope: str  # "--project" or "--user"
    settings: str  # relative to the project or the home
    original: str
    dialect: str
    core_events: tuple[str, ...]  # mapped today; a dialect that gains events only adds to these

    def files(self, project: Path, home: Path) -> Path:
        return (project if self.scope == "--project" else home) / self.settings


CASES = [
    Case(
        "claude",
        "--project",
        ".claude/settings.json",
        CLAUDE,
        "claude",
        ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"),
    ),
    Case(
        "gemini",
        "--project",
        ".gemini/settings.json",
        GEMINI,
        "gemini",
        ("SessionStart", "BeforeAgent", "BeforeModel", "BeforeTool", "AfterTool", "SessionEnd"),
    ),
    Case("codex", "--user", ".codex/hooks.json", CODEX_HOOKS, "codex", ("SessionStart", "SessionEnd")),
    Case(
        "core-agent",
        "--project",
        ".agents/config.json",
        CORE_AGENT,
        "core-agent",
        ("tool-start", "tool-end", "model-start", "agent-end"),
    ),
]
IDS = [c.harness for c in CASES]


def harness(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SCION_DIALECTS_PATH", "CODEX_HOME")}
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "sciontool_py", "harness", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home


def _setup(case: Case, dirs: tuple[Path, Path]) -> tuple[Path, list[str]]:
    project, home = dirs
    path = case.files(project, home)
    path.parent.mkdir(parents=True)
    path.write_text(case.original)
    if case.harness == "codex":
        (home / ".codex" / "config.toml").write_text(CODEX_CONFIG)
    where = ["--project", str(project)] if case.scope == "--project" else ["--user"]
    return path, [case.harness, *where]


def _ours(case: Case) -> str:
    return f"sciontool hook --dialect={case.dialect}"


def _our_events(data: dict[str, object], command: str) -> list[str]:
    hooks = data["hooks"]
    assert isinstance(hooks, dict)
    return [event for event, items in hooks.items() if command in json.dumps(items)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_install_merges_and_keeps_everything_else(
    case: Case, dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    path, args = _setup(case, dirs)
    before = json.loads(case.original)
    done = harness_here(dirs[1], "install", *args)
    assert done.returncode == 0, done.stderr
    assert f"{path.resolve()}: added sciontool hooks for " in done.stdout
    after = json.loads(path.read_text())
    # Every other setting is as it was, in the same order.
    assert list(after) == list(before)
    assert {k: v for k, v in after.items() if k != "hooks"} == {
        k: v for k, v in before.items() if k != "hooks"
    }
    # The user's hooks come first, untouched; ours follow.
    for event, items in before["hooks"].items():
        assert after["hooks"][event][: len(items)] == items
    events = _our_events(after, _ours(case))
    assert set(case.core_events) <= set(events)
    assert set(events) <= set(find_dialect(case.dialect).mappings)
    # Lines the user wrote stay byte for byte, one-line arrays included (but for the line
    # of an event list ours are appended to).
    touched = ("hooks", *(f'"{event}"' for event in before["hooks"]))
    for line in case.original.splitlines():
        if not any(word in line for word in touched) and line.strip() not in ("}", "]", "},", "],"):
            assert line in path.read_text()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_install_twice_changes_nothing_and_backs_up_only_when_asked(
    case: Case, dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    # --backup as a process too, for one harness (the others' installs run as processes in
    # test_roundtrip.py).
    run = harness if case.harness == "claude" else harness_here
    path, args = _setup(case, dirs)
    assert run(dirs[1], "install", *args).returncode == 0
    installed = path.read_bytes()
    backup = Path(str(path.resolve()) + ".bak")
    assert not backup.exists()
    again = run(dirs[1], "install", *args, "--backup")
    assert again.returncode == 0
    assert f"{path.resolve()}: already wired, unchanged" in again.stdout
    assert path.read_bytes() == installed
    assert not backup.exists()  # nothing changed: nothing to back up
    assert run(dirs[1], "uninstall", *args, "--backup").returncode == 0
    assert backup.read_bytes() == installed


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_dry_run_prints_the_diff_install_applies(
    case: Case, dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    path, args = _setup(case, dirs)
    listing = sorted(p for p in dirs[0].parent.rglob("*"))
    dry = harness_here(dirs[1], "install", *args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert path.read_text() == case.original
    assert sorted(p for p in dirs[0].parent.rglob("*")) == listing  # no file at all, no cache
    assert harness_here(dirs[1], "install", *args).returncode == 0
    real = str(path.resolve())
    expected = "".join(
        difflib.unified_diff(
            case.original.splitlines(keepends=True), path.read_text().splitlines(keepends=True), real, real
        )
    )
    assert expected in dry.stdout
    assert dry.stdout.startswith(f"--- {real}\n+++ {real}\n")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_uninstall_gives_back_the_file_as_it_was(
    case: Case, dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    path, args = _setup(case, dirs)
    assert harness_here(dirs[1], "install", *args).returncode == 0
    installed = path.read_text()
    dry = harness_here(dirs[1], "uninstall", *args, "--dry-run")
    assert dry.returncode == 0 and path.read_text() == installed
    assert f'-                "command": "{_ours(case)}"' in dry.stdout or _ours(case) in dry.stdout
    done = harness_here(dirs[1], "uninstall", *args)
    assert done.returncode == 0, done.stderr
    assert "removed sciontool hooks for" in done.stdout
    assert path.read_bytes() == case.original.encode()
    assert not Path(str(path.resolve()) + ".bak").exists()
    again = harness_here(dirs[1], "uninstall", *args)
    assert "no sciontool hooks, unchanged" in again.stdout
    assert path.read_text() == case.original


def test_codex_install_sets_notify_keeping_comments_and_uninstall_removes_it(
    dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    _, home = dirs
    _setup(CASES[2], dirs)
    config = home / ".codex" / "config.toml"
    done = harness_here(home, "install", "codex", "--user")
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert wired_notify("sciontool", "hook", "--dialect=codex") in text
    for line in CODEX_CONFIG.splitlines():
        assert line in text  # comments and tables kept
    # notify is a top-level key: it sits before the first table.
    assert text.index("notify =") < text.index('[projects."/home/dev/work"]')
    assert "trust" in done.stdout  # Codex runs hooks only once trusted: say so
    assert harness_here(home, "install", "codex", "--user").stdout.count("unchanged") == 2
    assert harness_here(home, "uninstall", "codex", "--user").returncode == 0
    assert config.read_text() == CODEX_CONFIG


def test_codex_keeps_another_notify_unless_forced(dirs: tuple[Path, Path], harness_here: CliHere) -> None:
    _, home = dirs
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = 'notify = ["sh", "notify.sh"]  # my wrapper\nmodel = "o3"\n'
    config.write_text(original)
    refused = harness_here(home, "install", "codex", "--user")
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1
    assert 'notify is already ["sh", "notify.sh"]' in refused.stderr and "--force" in refused.stderr
    assert config.read_text() == original
    assert not (home / ".codex" / "hooks.json").exists()  # nothing half-done
    forced = harness_here(home, "install", "codex", "--user", "--force")
    assert forced.returncode == 0, forced.stderr
    assert wired_notify("sciontool", "hook", "--dialect=codex") in config.read_text()
    assert 'model = "o3"' in config.read_text()
    # The user's notify stays in the file as a comment, and uninstall puts it back.
    assert harness_here(home, "uninstall", "codex", "--user").returncode == 0
    assert config.read_text() == original
    assert sorted(p.name for p in (home / ".codex").iterdir()) == ["config.toml"]


def test_codex_project_layer_and_codex_home(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    project, home = dirs
    done = harness(home, "install", "codex", "--project", str(project))
    assert done.returncode == 0, done.stderr
    assert (project / ".codex" / "hooks.json").exists()
    assert "notify" in (project / ".codex" / "config.toml").read_text()
    assert "trusted project" in done.stdout
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(codex_home)}
    proc = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "harness", "install", "codex", "--user"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert (codex_home / "hooks.json").exists() and (codex_home / "config.toml").exists()
    assert not (home / ".codex").exists()


def test_new_files_are_created_and_removed_again(dirs: tuple[Path, Path], harness_here: CliHere) -> None:
    project, home = dirs
    for name, path in (
        ("claude", project / ".claude" / "settings.json"),
        ("gemini", project / ".gemini" / "settings.json"),
        ("core-agent", project / ".agents" / "config.json"),
        ("opencode", project / ".opencode" / "plugins" / "sciontool-bridge.js"),
    ):
        if name == "core-agent":
            # core-agent uses the nearest .agents/ up the tree: the project's own keeps the
            # test inside its folder whatever a parent of the temp dir holds.
            path.parent.mkdir()
        done = harness_here(home, "install", name, "--project", str(project))
        assert done.returncode == 0, done.stderr
        assert "(new file)" in done.stdout
        assert path.exists()
        gone = harness_here(home, "uninstall", name, "--project", str(project))
        assert gone.returncode == 0, gone.stderr
        assert not path.exists()


def test_gemini_hooks_are_named_with_millisecond_timeouts_and_tool_matchers(
    dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    project, home = dirs
    assert harness_here(home, "install", "gemini", "--project", str(project)).returncode == 0
    hooks = json.loads((project / ".gemini" / "settings.json").read_text())["hooks"]
    for event, [group] in hooks.items():
        [hook] = group["hooks"]
        assert hook == {
            "name": f"scion-{event}",
            "type": "command",
            "command": project_line("sciontool", "hook --dialect=gemini", bash=True),  # Gemini's `bash -c`
            "timeout": 30000,
        }
        assert ("matcher" in group) == (event in ("BeforeTool", "AfterTool"))
        if "matcher" in group:
            assert group["matcher"] == "*"


def test_claude_matcher_only_on_tool_events_and_waits_only_at_a_turn_s_end(
    dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    project, home = dirs
    assert harness_here(home, "install", "claude", "--project", str(project)).returncode == 0
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    tool_events = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied"}
    # A person is asked after the first two; Claude Code may exit after the others.
    waited = {"PermissionRequest", "Notification", "Stop", "StopFailure", "SessionEnd"}
    for event, [group] in hooks.items():
        assert group.get("matcher") == ("*" if event in tool_events else None)
        hook = {"type": "command", "command": project_line("sciontool", "hook --dialect=claude")}
        assert group["hooks"] == [hook if event in waited else {**hook, "async": True}], event


def test_a_hook_the_user_put_in_our_group_survives_uninstall(
    dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    project, home = dirs
    path = project / ".claude" / "settings.json"
    assert harness_here(home, "install", "claude", "--project", str(project)).returncode == 0
    data = json.loads(path.read_text())
    data["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "say done"})
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert harness_here(home, "uninstall", "claude", "--project", str(project)).returncode == 0
    left = json.loads(path.read_text())
    assert left == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}


def test_gemini_is_not_wired_for_the_per_chunk_after_model_and_an_older_wiring_is_undone(
    harness_here: CliHere, dirs: tuple[Path, Path]
) -> None:
    """Issue 30: AfterModel fires once per streamed chunk (300 for one answer), and the harness
    waits for each: install does not wire it, and takes out one an older install wrote, keeping
    the user's own AfterModel hook; uninstall then gives back the user's bytes."""
    project, home = dirs
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    mine = {"name": "mine", "type": "command", "command": "logger after-model"}
    older = {"name": "scion-AfterModel", "type": "command", "command": "sciontool hook --dialect=gemini"}
    original = json.dumps({"hooks": {"AfterModel": [{"hooks": [mine]}]}}, indent=2) + "\n"
    settings.write_text(original)
    done = harness_here(home, "install", "gemini", "--project", str(project), "--command", "sciontool")
    assert done.returncode == 0, done.stderr
    wired = json.loads(settings.read_text())["hooks"]
    assert wired["AfterModel"] == [{"hooks": [mine]}]
    assert "sciontool" not in json.dumps(wired["AfterModel"]) and "BeforeModel" in wired
    # As an older install left it: ours beside the user's.
    wired["AfterModel"].append({"hooks": [older]})
    settings.write_text(json.dumps({"hooks": wired}, indent=2) + "\n")
    again = harness_here(home, "install", "gemini", "--project", str(project), "--command", "sciontool")
    assert "removed those for AfterModel, no longer wired" in again.stdout
    assert json.loads(settings.read_text())["hooks"]["AfterModel"] == [{"hooks": [mine]}]
    harness_here(home, "uninstall", "gemini", "--project", str(project), "--command", "sciontool")
    assert json.loads(settings.read_text()) == json.loads(original)


def test_an_earlier_claude_install_is_made_async_by_the_next_with_one_entry_an_event(
    dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    """What install wrote before hooks ran in the background: each of ours is replaced, a user's
    own hook in the same event is kept as it was."""
    project, home = dirs
    command = wired("sciontool hook --dialect=claude")
    mine = {"type": "command", "command": "notify-send done"}
    earlier = {
        "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}],
        "Stop": [{"hooks": [{"type": "command", "command": command}, mine]}],
    }
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": earlier}))
    done = harness_here(home, "install", "claude", "--project", str(project))
    assert done.returncode == 0, done.stderr
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    now = project_line("sciontool", "hook --dialect=claude")  # a project's line replaces the older one
    assert hooks["PreToolUse"] == [
        {"matcher": "*", "hooks": [{"type": "command", "command": now, "async": True}]}
    ]
    assert hooks["Stop"] == [{"hooks": [mine]}, {"hooks": [{"type": "command", "command": now}]}]


def test_codex_hooks_read_the_relay_into_codexs_bash_and_replace_an_earlier_install(
    dirs: tuple[Path, Path], harness_here: CliHere
) -> None:
    """Codex runs each hook with `bash -c`: the line reads the relay into that bash. An earlier
    install's line (the relay's own bash) is replaced, one entry an event; a user's hook beside it
    stays, through the install and the uninstall."""
    project, home = dirs
    mine = {"type": "command", "command": "notify-send done"}
    earlier = {"type": "command", "command": wired("sciontool hook --dialect=codex"), "timeout": 30}
    (project / ".codex").mkdir()
    hooks_file = project / ".codex" / "hooks.json"
    hooks_file.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [earlier, mine]}]}}))
    done = harness_here(home, "install", "codex", "--project", str(project))
    assert done.returncode == 0, done.stderr
    hooks = json.loads(hooks_file.read_text())["hooks"]
    line = project_line("sciontool", "hook --dialect=codex", bash=True)
    ours = [h for groups in hooks.values() for group in groups for h in group["hooks"] if h != mine]
    assert {h["command"] for h in ours} == {line} and len(ours) == len(hooks)  # one an event
    assert hooks["PreToolUse"][0] == {"hooks": [mine]}
    done = harness_here(home, "uninstall", "codex", "--project", str(project))
    assert done.returncode == 0, done.stderr
    assert json.loads(hooks_file.read_text())["hooks"] == {"PreToolUse": [{"hooks": [mine]}]}


@pytest.mark.parametrize("event", ["PreModelRequest", "PostModelRequest"])
def test_codex_is_not_wired_for_its_model_requests_and_an_earlier_wiring_is_undone(
    dirs: tuple[Path, Path], harness_here: CliHere, event: str
) -> None:
    """Issue 30: Codex fires PreModelRequest and PostModelRequest at every model request (22 of a
    ten-tool session's 47 hooks), each waited for, and what they say comes from elsewhere: the
    prompt or a tool's end before the request, the next hook and the rollout after it. Install
    wires neither and takes out the one an earlier install wrote, keeping the user's own."""
    project, home = dirs
    mine = {"type": "command", "command": "logger model"}
    earlier = {"type": "command", "command": wired("sciontool hook --dialect=codex"), "timeout": 30}
    (project / ".codex").mkdir()
    hooks_file = project / ".codex" / "hooks.json"
    original = {"hooks": {event: [{"hooks": [mine]}]}}
    hooks_file.write_text(json.dumps(original))
    done = harness_here(home, "install", "codex", "--project", str(project))
    assert done.returncode == 0, done.stderr
    hooks = json.loads(hooks_file.read_text())["hooks"]
    assert hooks[event] == [{"hooks": [mine]}]
    assert {"UserPromptSubmit", "PostToolUse", "Stop"} <= set(hooks)
    assert not ({"PreModelRequest", "PostModelRequest"} - {event}) & set(hooks)  # the other one
    hooks[event].append({"hooks": [earlier]})  # as an earlier install left it
    hooks_file.write_text(json.dumps({"hooks": hooks}))
    again = harness_here(home, "install", "codex", "--project", str(project))
    assert f"removed those for {event}, no longer wired" in again.stdout, again.stdout
    assert json.loads(hooks_file.read_text())["hooks"][event] == [{"hooks": [mine]}]
    hooks = json.loads(hooks_file.read_text())["hooks"]
    hooks[event].append({"hooks": [earlier]})
    hooks_file.write_text(json.dumps({"hooks": hooks}))
    done = harness_here(home, "uninstall", "codex", "--project", str(project))
    assert done.returncode == 0, done.stderr
    assert json.loads(hooks_file.read_text()) == original
