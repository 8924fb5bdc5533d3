"""Issue 28 points 4, 5 and 9: the configs `harness install` edits, hand-damaged or hostile, with the
real `sciontool`: a marked block never costs a user's line, no config makes install spin (the
child's CPU seconds), and depth is one clear line for every parser install uses."""

from __future__ import annotations

import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import HANG_BOUND, Agent
from hostile_machine import one_error

REAL = Path(__file__).resolve().parent.parent / "data" / "real-envelopes"
CPU_BOUND = 2.0  # CPU seconds for a refusal (issue 28): the child's own, whatever the load


def sciontool(agent: Agent, *args: str) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """The real command, and the CPU seconds (user and system) its process took."""
    env = {k: v for k, v in agent.env.items() if k not in ("XDG_STATE_HOME", "VIBE_HOME", "HERMES_HOME")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ran = subprocess.run(
        [sys.executable, "-m", "sciontool_py", *args],
        capture_output=True,
        env=env,
        timeout=HANG_BOUND * 3,  # a hang fails here (the alias bomb ran past 30 s)
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CPU, (60, 60)),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ran, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@dataclass
class Config:
    harness: str
    path: str  # under HOME: each is wired with --user
    mine: str  # a user's file, with comments


VIBE = Config(
    "mistral-vibe",
    ".vibe/hooks.toml",
    '# my hooks\n[[hooks]]\nname = "lint"\ntype = "post_agent"\ncommand = "ruff check ."  # quiet\n',
)
HERMES = Config(
    "hermes",
    ".hermes/config.yaml",
    "model: x\n# my checks\nhooks:\n  pre_verify:\n    - command: ~/bin/t.sh\nother: 1  # mine\n",
)
END = "# <<< sciontool harness install {name}"


def _without_end(text: str, name: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if line.strip() != END.format(name=name))


def _end_deleted(text: str, name: str) -> str:
    return _without_end(text, name) + "# my own line, after\n# and another\n"


def _end_moved_below_mine(text: str, name: str) -> str:
    return _without_end(text, name) + "# my own line, after\n" + END.format(name=name) + "\n"


DAMAGE = {"end line deleted": _end_deleted, "end line moved below the user's line": _end_moved_below_mine}


@pytest.mark.parametrize("config", [VIBE, HERMES], ids=lambda c: c.harness)
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_block_damaged_by_hand_costs_no_user_line(agent: Agent, config: Config, damage: str) -> None:
    path = agent.home / config.path
    path.parent.mkdir()
    if config is VIBE:  # install writes Vibe no block now: the one an older version wrote
        path.write_text(config.mine + "\n" + (REAL / "mistral-vibe-3.0.2" / "hooks.toml").read_text())
    else:
        path.write_text(config.mine)
        ran, _ = sciontool(agent, "harness", "install", config.harness, "--user")
        assert ran.returncode == 0, ran.stderr
    path.write_text(DAMAGE[damage](path.read_text(), config.harness))
    damaged = path.read_text()
    for command in ("install", "uninstall"):  # before: reinstall + uninstall deleted the user's lines
        line = one_error(sciontool(agent, "harness", command, config.harness, "--user")[0], command)
        assert "sciontool's marked block cannot be told apart safely" in line
        assert f"`sciontool harness show {config.harness}` prints it" in line
        assert path.read_text() == damaged


# A marker of ours inside a string the user wrote: TOML's multi-line string, YAML's block scalar.
BEGIN = "# >>> sciontool harness install {name}: Scion's status hooks (uninstall removes this block)"
IN_A_STRING = {
    "mistral-vibe": '[[hooks]]\nname = "note"\ntype = "post_agent"\ncommand = """echo\n{marker}\n"""\n',
    "hermes": "hooks:\n  pre_verify:\n    - command: |\n        echo hi\n        {marker}\n        echo there\n",
}


@pytest.mark.parametrize("config", [VIBE, HERMES], ids=lambda c: c.harness)
@pytest.mark.parametrize("markers", ["begin", "begin and end"])
def test_a_marker_inside_a_string_never_leaves_a_file_uninstall_refuses(
    agent: Agent, config: Config, markers: str
) -> None:
    marker = BEGIN.format(name=config.harness)
    if markers == "begin and end":
        indent = "        " if config.harness == "hermes" else ""
        marker += "\n" + indent + END.format(name=config.harness)
    text = IN_A_STRING[config.harness].format(marker=marker)
    path = agent.home / config.path
    path.parent.mkdir()
    path.write_text(text)
    ran, _ = sciontool(agent, "harness", "install", config.harness, "--user")
    if ran.returncode != 0:  # refused, one line, the file as it was
        one_error(ran, "install")
        assert path.read_text() == text
        return
    # Installed (before: exit 0, and every later uninstall refused): uninstall gives back every byte.
    undone, _ = sciontool(agent, "harness", "uninstall", config.harness, "--user")
    assert undone.returncode == 0, undone.stderr
    assert path.read_text() == text


def _alias_bomb() -> str:
    """416 bytes of YAML that expand to 10^8 values (the issue's was 584): each anchor lists the one
    before ten times."""
    lines = ["hooks: {}", 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefg", "bcdefgh", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return "\n".join(lines) + "\n"


BIG = "KiB, more than a settings file holds"  # 256 KiB; Vibe's hooks.toml, read by tomlkit: 64 KiB


def _ten_mb(line: str) -> str:
    return line * ((10 << 20) // len(line) + 1)


HOSTILE = {
    "hermes alias bomb": ("hermes", ".hermes/config.yaml", _alias_bomb(), "(an alias bomb?)"),
    "hermes 10 MB": (
        "hermes",
        ".hermes/config.yaml",
        "a: 1\n" + _ten_mb("k: value of some text\n"),
        BIG,
    ),
    "vibe 10 MB": (
        "mistral-vibe",
        ".vibe/hooks.toml",
        _ten_mb('[[hooks]]\nname = "x"\ntype = "post_agent"\ncommand = "echo"\n'),
        BIG,
    ),
    "auggie 10 MB": ("auggie", ".augment/settings.json", '{"x": "' + "y" * (10 << 20) + '"}', BIG),
    "codex 10 MB": (
        "codex",
        ".codex/config.toml",
        _ten_mb('[projects."/src/p"]\ntrust_level = "trusted"\n'),
        BIG,
    ),
    # tomllib's time grows with the square of a key's parts: 30,000 of them (60 KB) cost 10 s.
    "vibe 30,000-part key": (
        "mistral-vibe",
        ".vibe/hooks.toml",
        ".".join(["a"] * 30_000) + " = 1\n",
        "dotted parts",
    ),
    "codex 30,000-part table": (
        "codex",
        ".codex/config.toml",
        "[" + ".".join(["a"] * 30_000) + "]\n",
        "dotted parts",
    ),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_no_config_makes_install_spin(agent: Agent, case: str) -> None:
    harness, rel, text, why = HOSTILE[case]
    path = agent.home / rel
    path.parent.mkdir()
    path.write_text(text)
    for command in ("install", "uninstall"):
        ran, cpu = sciontool(agent, "harness", command, harness, "--user")
        if command == "install" or ran.returncode:  # uninstall may find no block of ours, unparsed
            assert why in one_error(ran, command)
        else:
            assert ran.stdout.decode().endswith("no sciontool hooks, unchanged\n"), ran
        assert cpu < CPU_BOUND, f"{command}: {cpu:.2f} CPU seconds"  # before: 16 s, 2 s, past 30 s
    assert path.read_text() == text


def _legit_aliases() -> str:
    return "defaults: &d {timeout: 5, retries: 2}\nproviders:\n  a: *d\n  b: *d\nhooks:\n  pre_verify:\n    - command: t.sh\n"


def test_a_config_using_aliases_as_people_do_is_installed_and_given_back(agent: Agent) -> None:
    path = agent.home / ".hermes" / "config.yaml"
    path.parent.mkdir()
    path.write_text(_legit_aliases())
    for command in ("install", "uninstall"):
        ran, _ = sciontool(agent, "harness", command, "hermes", "--user")
        assert ran.returncode == 0, ran.stderr
    assert path.read_text() == _legit_aliases()


def _deep_yaml_flow(depth: int) -> str:
    return "model: x\nother: " + "[" * depth + "]" * depth + "\n"


def _deep_yaml_block(depth: int) -> str:
    return "model: x\nother:\n" + "".join(" " * i + "- \n" for i in range(depth))


def _deep_toml_array(depth: int) -> str:
    return 'model = "x"\nother = ' + "[" * depth + "]" * depth + "\n"


def _deep_toml_table(depth: int) -> str:
    return 'model = "x"\nother = ' + "{a = " * depth + "1" + "}" * depth + "\n"


def _deep_vibe_hook(depth: int) -> str:
    return (
        '[[hooks]]\nname = "x"\ntype = "post_agent"\ncommand = "c"\nextra = '
        + "[" * depth
        + "]" * depth
        + "\n"
    )


def _deep_json(depth: int) -> str:
    return '{"x": ' + "[" * depth + "]" * depth + "}"


# Every parser install uses, nested 600 deep (the case), as deep as libyaml reads (999),
# and 10,000 deep (what fits the 64 KiB of Vibe's hooks.toml).
DEEP = {
    "hermes flow": ("hermes", ".hermes/config.yaml", _deep_yaml_flow),
    "hermes block": ("hermes", ".hermes/config.yaml", _deep_yaml_block),
    "vibe array": ("mistral-vibe", ".vibe/hooks.toml", _deep_toml_array),
    "vibe inline table": ("mistral-vibe", ".vibe/hooks.toml", _deep_toml_table),
    "vibe hook's value": ("mistral-vibe", ".vibe/hooks.toml", _deep_vibe_hook),
    "codex config array": ("codex", ".codex/config.toml", _deep_toml_array),
    "codex config inline table": ("codex", ".codex/config.toml", _deep_toml_table),
    "auggie settings": ("auggie", ".augment/settings.json", _deep_json),
    "gemini jsonc": ("gemini", ".gemini/settings.json", lambda d: "// mine\n" + _deep_json(d)),
}


@pytest.mark.parametrize("depth", [600, 999, 10_000])
@pytest.mark.parametrize("case", DEEP)
def test_a_deep_config_is_one_clear_line_or_edited_whole(agent: Agent, case: str, depth: int) -> None:
    harness, rel, make = DEEP[case]
    if case == "hermes block":
        depth = min(depth, 700)  # its indentation grows with depth: 700 levels fill the 256 KiB
    path = agent.home / rel
    path.parent.mkdir()
    text = make(depth)
    path.write_text(text)
    installed, _ = sciontool(agent, "harness", "install", harness, "--user")
    if installed.returncode != 0:  # before: `internal error: RecursionError`
        line = one_error(installed, "install")
        assert line.endswith(
            ("nested too deeply to edit; left untouched", "maximum nesting depth); left untouched")
        )
        assert path.read_text() == text
        return
    assert path.read_text() != text  # wired: then uninstall reads it as deep, and gives it back
    undone, _ = sciontool(agent, "harness", "uninstall", harness, "--user")
    assert undone.returncode == 0, undone.stderr
    assert path.read_text() == text
