"""Issue 28 points 4, 5 and 9: the configs `harness install` edits, hand-damaged or hostile, with the
real `sciontool`: a marked block never costs a user's line, no config makes install spin (the
child's CPU seconds), and depth is one clear line for every parser install uses."""

from __future__ import annotations

import resource
import subprocess
import sys
from dataclasses import dataclass

import pytest
from conftest import HANG_BOUND, Agent

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


def one_error(ran: subprocess.CompletedProcess[bytes], command: str) -> str:
    assert ran.returncode == 1, ran
    lines = ran.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"sciontool harness {command}: "), lines
    assert "internal error" not in lines[0] and "Traceback" not in lines[0]
    return lines[0]


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
