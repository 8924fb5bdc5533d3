"""Install then uninstall gives back every byte, for every harness, through the real CLI (as a
process for each harness's realistic settings, its typer app in this process for the others).

Each harness starts from what a person may have: no file, an empty `{}`, their own empty
`"hooks"` lists, or settings shaped like real ones (JSONC for Gemini CLI and Qwen Code). The
whole temp tree (project and HOME, folders included) is compared, so a `.bak`, a folder
install created, a leftover record or a dialect cache written by --dry-run all fail it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import CliHere, Ran, wired_notify

CLAUDE = """\
{
    "permissions": {"allow": ["Bash(npm run lint)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
    },
    "model": "opus"
}
"""
GEMINI_JSONC = """\
{
  // my editor settings
  "general": {"vimMode": true},
  /* hooks I rely on */
  "hooks": {
    "BeforeTool": [
      {"matcher": "write_file", "hooks": [{"name": "fmt", "type": "command", "command": "fmt.sh"}]} // format
    ]
  },
  "ui": {"theme": "GitHub"}
}
"""
CODEX = '{\n  "hooks": {\n    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "p"}]}]\n  }\n}\n'
CODEX_CONFIG = '# mine\nmodel = "o3"\n\n[profiles.fast]\nmodel = "gpt-5-mini"\n'
CORE_AGENT = '{\n  "model": "gemini-2.5-flash",\n  "hooks": {"tool-start": [{"command": "logger"}]}\n}\n'
COPILOT = '{\n  "version": 1,\n  "hooks": {\n    "preToolUse": [{"type": "command", "bash": "./audit.sh"}]\n  }\n}\n'
ANTIGRAVITY = (
    '{\n  "scion-hooks": {\n    "Stop": [{"type": "command", "command": "say done", "timeout": 5}]\n  }\n}\n'
)
GROK = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}\n'
QWEN_JSONC = """\
{
  // Qwen Code settings
  "model": {"name": "qwen3-coder"},
  "hooks": {
    "PreToolUse": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "guard.sh"}]}]
  }
}
"""
DROID = """\
{
  "customModels": [{"model": "gpt-4.1", "baseUrl": "http://127.0.0.1:1/v1", "apiKey": "k"}],
  "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}
}
"""
AUGGIE = """\
{
  "model": "claude-sonnet-4-5",
  "hooks": {
    "PreToolUse": [{"matcher": "launch-process", "hooks": [{"type": "command", "command": "/etc/augment/guard.sh", "timeout": 5000}]}]
  }
}
"""
VIBE = """\
# my hooks
[[hooks]]
name = "lint"
type = "post_agent"
command = "ruff check ."  # quiet
"""
VIBE_ODD = (
    "#  my hooks   \n"
    'model   =    "devstral"   # trailing\n'
    'env = { A = "1", B = { c = [1, 2] } }\n'
    "[[hooks]]\n"
    'name    = "lint"\n'
    'type = "post_agent"\n'
    "command = '''ruff check .'''\n"
    "[hooks.env]\n"
    'X = "y"\n'
    "\n"
    "# between\n"
    "[[hooks]]\n"
    'name = "fmt"\n'
    'type = "post_tool"\n'
    'command = """\nblack ."""\n'
    "\n"
    "[tools.bash]\n"
    '\tallow = ["ls", "cat"]\n'
)
HERMES = """\
model:
  default: anthropic/claude-sonnet-4
  provider: openrouter
# my checks
hooks:
    pre_verify:
      - command: ~/bin/run-tests.sh
        timeout: 120
    pre_tool_call:
    - matcher: terminal  # my guard
      command: ~/bin/guard.py
hooks_auto_accept: false
"""


@dataclass
class Harness:
    name: str
    scope: str  # "--project" or "--user"
    settings: str  # relative to the project or the home
    realistic: str
    empty_event: str  # an event install routes, for the user's own empty list
    # The starts for a file that is not JSON (TOML, YAML): name -> text (None: no file).
    own_starts: dict[str, str | None] | None = None


HARNESSES = [
    Harness("claude", "--project", ".claude/settings.json", CLAUDE, "Stop"),
    Harness("gemini", "--project", ".gemini/settings.json", GEMINI_JSONC, "AfterAgent"),
    Harness("codex", "--user", ".codex/hooks.json", CODEX, "Stop"),
    Harness("core-agent", "--project", ".agents/config.json", CORE_AGENT, "agent-end"),
    Harness("copilot", "--user", ".copilot/hooks/sciontool.json", COPILOT, "agentStop"),
    Harness("antigravity", "--project", ".agents/hooks.json", ANTIGRAVITY, "Stop"),
    Harness("grok-build", "--user", ".grok/hooks/sciontool.json", GROK, "Stop"),
    Harness("qwen-code", "--project", ".qwen/settings.json", QWEN_JSONC, "Stop"),
    Harness("droid", "--project", ".factory/settings.json", DROID, "Stop"),
    Harness("auggie", "--project", ".augment/settings.json", AUGGIE, "Stop"),
    Harness(
        "mistral-vibe",
        "--project",
        ".vibe/hooks.toml",
        VIBE,
        "",
        {
            "absent": None,
            "empty file": "",
            "a comment, no line end": "# nothing yet",
            "a setting, no line end": 'other = "x"',
            "the user's hooks last, no line end": '[[hooks]]\nname = "a"\ntype = "post_tool"\ncommand = "x"',
            "CRLF": '# mine\r\n[[hooks]]\r\nname = "a"\r\ntype = "post_tool"\r\ncommand = "x"\r\n',
            "odd spacing, inline tables, a hook's sub-table, tables after": VIBE_ODD,
            "realistic": VIBE,
        },
    ),
    Harness(
        "hermes",
        "--user",
        ".hermes/config.yaml",
        HERMES,
        "",
        {
            "absent": None,
            "empty file": "",
            "empty hooks": "model: x\nhooks: {}\nterminal:\n  backend: local\n",
            "hooks without a value, last line": "model: x\nhooks:",
            "the user's own empty list": "hooks:\n  post_llm_call: []\n",
            "no line end": "model: x",
            "realistic": HERMES,
        },
    ),
]


def starts(h: Harness) -> dict[str, str | None]:
    if h.own_starts is not None:
        return h.own_starts
    root = "sciontool" if h.name == "antigravity" else "hooks"
    return {
        "absent": None,
        "empty object": "{}\n",
        "empty hooks": f'{{\n  "{root}": {{}}\n}}\n',
        "empty event list": f'{{\n  "{root}": {{\n    "{h.empty_event}": []\n  }}\n}}\n',
        "realistic": h.realistic,
    }


CASES = [(h, start) for h in HARNESSES for start in starts(h)]


CACHE = os.path.join("home", ".cache")  # the compiled dialects a real run may keep


def snapshot(root: Path, cache: bool = True) -> dict[str, bytes | None]:
    """Every file's bytes and every folder (None) under root (without the dialect cache)."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if cache or not name.startswith(CACHE):
            out[name] = None if path.is_dir() else path.read_bytes()
    return out


# What a test must not inherit: each sends a harness's settings (or the cache) elsewhere.
FOREIGN = (
    "SCION_DIALECTS_PATH",
    "CODEX_HOME",
    "VIBE_HOME",
    "HERMES_HOME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "SCIONTOOL_CACHE_DIR",  # the cache goes under HOME: --dry-run must not write it
)


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`sciontool harness ARGS` as its own process, HOME in tmp."""
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN}
    env["HOME"] = str(tmp / "home")
    proc = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "harness", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def run_here(cli_here: CliHere, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Ran]:
    """`run` through the same typer app in this process: the CLI's own entry, the same
    environment (each command reads HOME and the cache folder when it runs)."""

    def here(tmp: Path, *args: str) -> Ran:
        for name in FOREIGN:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HOME", str(tmp / "home"))
        done = cli_here("harness", *args)
        assert done.returncode == 0, done.stderr
        return done

    return here


@pytest.mark.parametrize(("h", "start"), CASES, ids=[f"{h.name}-{start}" for h, start in CASES])
def test_install_then_uninstall_gives_back_every_byte(
    tmp_path: Path, h: Harness, start: str, run_here: Callable[..., Ran]
) -> None:
    # The realistic start of each harness runs every command as its own process; the other
    # starts (what the edit itself must get right) run the same CLI in this process, without
    # four interpreter starts of typer and pydantic each. The tests below use processes too.
    harness: Callable[..., object] = run if start == "realistic" else run_here
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    if h.name == "core-agent":
        (project / ".agents").mkdir()  # core-agent looks for the nearest .agents/ up the tree
    text = starts(h)[start]
    settings = (project if h.scope == "--project" else home) / h.settings
    if text is not None:
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(text)
    if h.name == "codex" and start == "realistic":
        (home / ".codex" / "config.toml").write_text(CODEX_CONFIG)
    where = [h.scope, str(project)] if h.scope == "--project" else [h.scope]
    before = snapshot(tmp_path)

    harness(tmp_path, "install", h.name, *where, "--dry-run")
    assert snapshot(tmp_path) == before  # --dry-run writes nothing, no cache either

    harness(tmp_path, "install", h.name, *where)
    installed = settings.read_text()
    assert "hook" in installed and installed != text
    # A second install with another program replaces ours: one hook per event, as before.
    harness(tmp_path, "install", h.name, *where, "--command", "/opt/venv/bin/sciontool")
    again = settings.read_text()
    assert again.count("hook") == installed.count("hook")
    assert "/opt/venv/bin/sciontool hook" in again

    harness(tmp_path, "uninstall", h.name, *where)
    assert snapshot(tmp_path, cache=False) == before


def test_opencode_plugin_and_the_folders_it_needed_go_again(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".opencode").mkdir(parents=True)
    (project / ".opencode" / "opencode.json").write_text("{}\n")
    (tmp_path / "home").mkdir()
    before = snapshot(tmp_path)
    run(tmp_path, "install", "opencode", "--project", str(project))
    assert (project / ".opencode" / "plugins" / "sciontool-bridge.js").exists()
    run(tmp_path, "uninstall", "opencode", "--project", str(project))
    assert snapshot(tmp_path, cache=False) == before  # plugins/ went; .opencode/ (the user's) stayed


def test_force_then_uninstall_gives_back_the_users_codex_notify(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    config = home / ".codex" / "config.toml"
    config.write_text('# mine\nnotify = ["sh", "~/bin/ping.sh"]  # ping me\nmodel = "o3"\n')
    before = snapshot(tmp_path)
    run(tmp_path, "install", "codex", "--user", "--force")
    assert wired_notify("sciontool", "hook", "--dialect=codex") in config.read_text()
    run(tmp_path, "uninstall", "codex", "--user")
    assert snapshot(tmp_path, cache=False) == before


@pytest.mark.parametrize("order", [("core-agent", "antigravity"), ("antigravity", "core-agent")])
def test_two_harnesses_sharing_a_folder_install_made_leave_nothing_in_either_order(
    tmp_path: Path, run_here: Callable[..., Ran], order: tuple[str, str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "home").mkdir()
    before = snapshot(tmp_path)
    for name in ("core-agent", "antigravity"):  # both files in the `.agents/` the first one made
        run_here(tmp_path, "install", name, "--project", str(project))
    for name in order:
        run_here(tmp_path, "uninstall", name, "--project", str(project))
    assert snapshot(tmp_path, cache=False) == before  # `.agents/` went with the second (before: it stayed)
