"""An installer never loses a byte of the user's, and refuses a file its harness's parser rejects.

Real files in a temp HOME, through the CLI's own entry: the user's comments and blank lines
around and among our entries survive uninstall (property-style over generated files for the
TOML and YAML formats, edited by lines), and a file the harness itself would refuse is left
untouched with one line naming it.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import CliHere

# One file per harness format that its harness's own parser refuses, and where it lives.
REJECTED = [
    pytest.param("claude", "--project", ".claude/settings.json", '{"model": NaN}\n', id="claude-NaN"),
    pytest.param(
        "gemini", "--project", ".gemini/settings.json", '{\n  // c\n  "x": Infinity\n}\n', id="jsonc"
    ),
    pytest.param("codex", "--project", ".codex/config.toml", 'model = "o3\n', id="codex-toml"),
    pytest.param("copilot", "--project", ".github/hooks/sciontool.json", '{"version": 1,}\n', id="copilot"),
    pytest.param("core-agent", "--project", ".agents/config.json", '{"a": -Infinity}\n', id="core-agent"),
    pytest.param("mistral-vibe", "--project", ".vibe/hooks.toml", "[[hooks]]\nname = \n", id="vibe-toml"),
    # libyaml reads a tab after a value; PyYAML's parser, which Hermes uses, stops there.
    pytest.param("hermes", "--user", ".hermes/config.yaml", "model: gpt\tfast\n", id="hermes-tab-value"),
    pytest.param("hermes", "--user", ".hermes/config.yaml", "model:\tgpt\n", id="hermes-tab-sep"),
]


@pytest.mark.parametrize(("name", "scope", "relative", "text"), REJECTED)
def test_a_file_the_harness_rejects_is_refused_untouched_in_one_line(
    tmp_path: Path, harness_here: CliHere, name: str, scope: str, relative: str, text: str
) -> None:
    root = tmp_path if scope == "--project" else tmp_path / "home"
    target = root / relative
    target.parent.mkdir(parents=True)
    target.write_bytes(text.encode())
    where = ["--project", str(tmp_path)] if scope == "--project" else ["--user"]
    for command in ("install", "uninstall"):
        ran = harness_here(tmp_path / "home", command, name, *where)
        assert ran.returncode == 1, (command, ran.stdout, ran.stderr)
        assert ran.stdout == "" and len(ran.stderr.splitlines()) == 1, ran.stderr
        assert str(target) in ran.stderr and "left untouched" in ran.stderr
        assert target.read_bytes() == text.encode()


def _vibe_users_file(rng: random.Random) -> str:
    """A hooks.toml a person may keep: their tables, comments and blank lines, in any order."""
    parts = []
    for i in range(rng.randint(0, 3)):
        parts.append(rng.choice(["", "# about my hooks\n", "\n", "# two\n# lines\n"]))
        note = rng.choice(["", "  # mine"])
        parts.append(f'[[hooks]]{note}\nname = "mine{i}"\ntype = "post_tool"\ncommand = "echo {i}"\n')
        parts.append(rng.choice(["", "# under mine\n", "\n\n"]))
    text = "".join(parts)
    if text and rng.random() < 0.3:
        text = text.replace("\n", "\r\n")
    if text and rng.random() < 0.3:
        text = text.rstrip("\r\n")  # no line end on the last line
    return text


@pytest.mark.parametrize("seed", range(12))
def test_vibe_keeps_the_users_comments_among_and_below_our_tables(
    tmp_path: Path, harness_here: CliHere, seed: int
) -> None:
    rng = random.Random(seed)
    home = tmp_path / "home"
    hooks = tmp_path / ".vibe" / "hooks.toml"
    hooks.parent.mkdir()
    start = _vibe_users_file(rng)
    hooks.write_bytes(start.encode())
    assert harness_here(home, "install", "mistral-vibe", "--project", str(tmp_path)).returncode == 0
    if rng.random() < 0.5:  # install then uninstall, untouched between: every byte comes back
        assert harness_here(home, "uninstall", "mistral-vibe", "--project", str(tmp_path)).returncode == 0
        assert hooks.read_bytes() == start.encode()
        return
    wired = hooks.read_bytes().decode()
    newline = "\r\n" if "\r\n" in wired else "\n"
    lines = wired.splitlines(keepends=True)
    ours = [i for i, line in enumerate(lines) if line.startswith('name = "sciontool-')]
    # The person writes their notes below and among our tables, and on one of our lines.
    lines.insert(ours[1] + 3, f"# between ours {seed}{newline}")
    lines[ours[0]] = lines[ours[0]].rstrip("\r\n") + f"  # note on ours {seed}{newline}"
    edited = "".join(lines)
    edited += ("" if edited.endswith("\n") else newline) + f"{newline}# below ours {seed}{newline}"
    hooks.write_bytes(edited.encode())
    ran = harness_here(home, "uninstall", "mistral-vibe", "--project", str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    after = hooks.read_bytes().decode()
    assert "sciontool-" not in after
    for note in (f"# between ours {seed}", f"# note on ours {seed}", f"# below ours {seed}"):
        assert note in after
    # Nothing else of the user's moved: their own file is where it was, at the start.
    assert after.startswith(start.rstrip("\r\n"))


def _hermes_users_file(rng: random.Random) -> str:
    parts = ["# my Hermes\n", "model:\n  default: gpt-5  # fast\n"]
    rng.shuffle(parts)
    if rng.random() < 0.5:
        parts.append(rng.choice(["hooks:\n", "hooks: {}\n", "hooks:  # mine\n"]))
        if parts[-1] == "hooks:\n" and rng.random() < 0.7:
            parts.append("  on_session_start:\n    - command: say hi\n")
    parts.append(rng.choice(["", "\n", "# end\n", "toolsets: [web]\n"]))
    text = "".join(parts)
    return text.replace("\n", "\r\n") if rng.random() < 0.25 else text


@pytest.mark.parametrize("seed", range(12))
def test_hermes_install_then_uninstall_gives_back_every_byte(
    tmp_path: Path, harness_here: CliHere, seed: int
) -> None:
    config = tmp_path / "home" / ".hermes" / "config.yaml"
    config.parent.mkdir(parents=True)
    start = _hermes_users_file(random.Random(seed))
    config.write_bytes(start.encode())
    ran = harness_here(tmp_path / "home", "install", "hermes", "--user")
    assert ran.returncode == 0, ran.stderr
    assert config.read_bytes() != start.encode()
    ran = harness_here(tmp_path / "home", "uninstall", "hermes", "--user")
    assert ran.returncode == 0, ran.stderr
    assert config.read_bytes() == start.encode()


def test_an_opencode_bridge_the_user_edited_is_neither_replaced_nor_deleted(
    tmp_path: Path, harness_here: CliHere
) -> None:
    home = tmp_path / "home"
    assert harness_here(home, "install", "opencode", "--project", str(tmp_path)).returncode == 0
    bridge = tmp_path / ".opencode" / "plugins" / "sciontool-bridge.js"
    edited = bridge.read_text() + "// my own line\n"
    bridge.write_text(edited)
    for command in ("install", "uninstall"):
        ran = harness_here(home, command, "opencode", "--project", str(tmp_path))
        assert ran.returncode == 1 and len(ran.stderr.splitlines()) == 1, ran.stderr
        assert f"{bridge}: changed since sciontool wrote it" in ran.stderr
        assert bridge.read_text() == edited
    # As install wrote it, the file is ours again: uninstall takes it and the folders it made.
    bridge.write_text(edited.removesuffix("// my own line\n"))
    assert harness_here(home, "uninstall", "opencode", "--project", str(tmp_path)).returncode == 0
    assert not (tmp_path / ".opencode").exists()
