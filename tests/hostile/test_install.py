"""Issue 28 point 3: `harness install`'s record (harness-installs.json) is as careful as the files it
describes, with the real `sciontool`: a FIFO, folder, symlink, garbage or huge file at its path, a
planted record, its folder or `~/.cache` linked out of HOME, concurrent installs."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import HANG_BOUND, REPO, Agent
from hostile_machine import one_error

from sciontool_py.harness.record import LOCK_WAIT_SECONDS

RECORD = Path(".local", "state", "sciontool-py", "harness-installs.json")


def environment(agent: Agent) -> dict[str, str]:
    """The agent's environment with every folder the record and the cache would honour unset."""
    env = dict(agent.env)
    for name in (
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "SCIONTOOL_CACHE_DIR",
        "CODEX_HOME",
        "VIBE_HOME",
        "HERMES_HOME",
    ):
        env.pop(name, None)
    return env


def sciontool(agent: Agent, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (30, 30))

    return subprocess.run(
        [sys.executable, "-m", "sciontool_py", *args],
        capture_output=True,
        env={**environment(agent), "SCION_TELEMETRY_ENABLED": "false", **env},
        timeout=HANG_BOUND + LOCK_WAIT_SECONDS,  # a hang fails here; every answer comes far sooner
        preexec_fn=limits,
    )


def tree(*roots: Path) -> dict[str, str]:
    """Every path under roots, with a file's bytes or a link's target: what a test compares."""
    found = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_symlink():
                found[str(path)] = "-> " + os.readlink(path)
            elif stat.S_ISFIFO(path.lstat().st_mode):
                found[str(path)] = "fifo"
            elif path.is_file() and path.stat().st_size > 1 << 20:
                found[str(path)] = f"{path.stat().st_size} bytes"
            elif path.is_file():
                found[str(path)] = path.read_text(errors="replace")
            else:
                found[str(path)] = "dir"
    return found


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.mkdir()


def _link(path: Path) -> None:
    target = path.parent / "elsewhere.json"
    target.write_text('{"installs": {}}\n')
    path.symlink_to(target)


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00\xffnot json at all")


def _not_a_record(path: Path) -> None:
    path.write_text('["installs"]\n')


def _huge(path: Path) -> None:
    with path.open("wb") as out:
        out.truncate(64 << 20)  # sparse: 64 MiB the command must not read


def _deep(path: Path) -> None:
    path.write_text('{"installs": ' + "[" * 100_000 + "]" * 100_000 + "}")


PLANTED: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (_fifo, "not a single-link regular file (refused)"),
    "folder": (_folder, "not a single-link regular file (refused)"),
    "symlink": (_link, "a symbolic link on the path (never followed)"),
    "garbage": (_garbage, "not JSON"),
    "not a record": (_not_a_record, "not an install record"),
    "huge": (_huge, "larger than 1048576 bytes (refused)"),
    "100,000 deep": (_deep, "not JSON"),
}


@pytest.mark.parametrize("kind", PLANTED)
def test_a_record_that_is_no_record_is_one_line_and_nothing_changes(
    agent: Agent, tmp_path: Path, kind: str
) -> None:
    plant, why = PLANTED[kind]
    record = agent.home / RECORD
    record.parent.mkdir(parents=True, mode=0o700)
    plant(record)
    project = tmp_path / "project"
    project.mkdir()
    before = tree(agent.home, project)
    for command in ("install", "uninstall"):
        ran = sciontool(agent, "harness", command, "mistral-vibe", "--project", str(project))
        line = one_error(ran, command)
        assert line == (
            f"sciontool harness {command}: {record}: {why}: the install record of sciontool harness; "
            "move it away to start afresh (uninstall then keeps what it cannot prove install made); "
            "nothing changed"
        )
        assert tree(agent.home, project) == before  # no settings file, no temp file, the FIFO kept


def test_a_planted_record_cannot_make_uninstall_remove_a_folder_install_did_not_make(
    agent: Agent, tmp_path: Path
) -> None:
    project = tmp_path / "work" / "project"
    project.mkdir(parents=True)
    outside = [tmp_path / "outside", tmp_path / "work", project, agent.home / "mine"]
    ran = sciontool(agent, "harness", "install", "claude", "--project", str(project))
    assert ran.returncode == 0, ran.stderr
    # The agent rewrites the record: every folder it can name, in every place a record names one.
    record = agent.home / RECORD
    data = json.loads(record.read_text())
    named = [str(p) for p in outside]
    for folder in outside[:1] + outside[3:]:
        folder.mkdir()
    for entry in data["installs"].values():
        entry["dirs"] = named  # where the version before kept them
    data["folders"] += named
    data["made"] += [str(tmp_path / "outside"), str(agent.home / "mine")]
    record.write_text(json.dumps(data))
    ran = sciontool(agent, "harness", "uninstall", "claude", "--project", str(project))
    assert ran.returncode == 0, ran.stderr
    assert [p for p in outside if not p.is_dir()] == []  # each one stays, empty as it is
    assert not (project / ".claude").exists()  # what install made is gone
    assert not (agent.home / ".local").exists()  # and the record with its folders


@pytest.mark.parametrize("linked", [".local", ".local/state", ".local/state/sciontool-py"])
def test_a_state_folder_linked_out_of_home_gets_nothing_written_outside(
    agent: Agent, tmp_path: Path, linked: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    link = agent.home / linked
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    project = tmp_path / "project"
    project.mkdir()
    for command in ("install", "uninstall"):
        line = one_error(sciontool(agent, "harness", command, "claude", "--project", str(project)), command)
        assert "a symbolic link on the path (never followed)" in line
    assert list(outside.iterdir()) == [] and list(project.iterdir()) == []


def test_a_cache_folder_linked_out_of_home_gets_no_entry_written_outside(
    agent: Agent, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dialect = agent.home / "mine.yaml"  # a dialect the user can rewrite: the kind that is cached
    dialect.write_bytes((REPO / "dialects" / "claude" / "dialect.yaml").read_bytes())
    (agent.home / ".cache").symlink_to(outside)
    envelope = b'{"hook_event_name": "PreToolUse", "tool_name": "Bash"}'
    for _ in range(2):  # a cold start, then one that would read what the first wrote
        ran = subprocess.run(
            [sys.executable, "-m", "sciontool_py", "hook", "--dialect-file", str(dialect)],
            input=envelope,
            capture_output=True,
            env={**environment(agent), "SCION_TELEMETRY_ENABLED": "false"},
            timeout=HANG_BOUND,
        )
        assert ran.returncode == 0, ran.stderr
        assert json.loads((agent.home / "agent-info.json").read_text())["toolName"] == "Bash"
    assert list(outside.iterdir()) == []
    (agent.home / ".cache").unlink()  # a real folder in HOME: the cache is written there again
    subprocess.run(
        [sys.executable, "-m", "sciontool_py", "hook", "--dialect-file", str(dialect)],
        input=envelope,
        env={**environment(agent), "SCION_TELEMETRY_ENABLED": "false"},
        timeout=HANG_BOUND,
        check=True,
    )
    assert [p.name[:8] for p in (agent.home / ".cache" / "sciontool-py").iterdir()] == ["dialect-"]


# The harnesses whose files live in HOME, plus two that share a project's `.agents/`.
CONCURRENT = [
    ("mistral-vibe", "--user"),
    ("hermes", "--user"),
    ("auggie", "--user"),
    ("copilot", "--user"),
    ("grok-build", "--user"),
    ("droid", "--user"),
    ("core-agent", "--project"),
    ("antigravity", "--project"),
]


def test_concurrent_installs_then_uninstalls_leave_the_starting_tree(agent: Agent, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (agent.home / "notes.txt").write_text("mine\n")
    start = tree(agent.home, project)
    env = {**environment(agent), "SCION_TELEMETRY_ENABLED": "false"}

    def all_at_once(command: str) -> None:
        started = [
            subprocess.Popen(
                [sys.executable, "-m", "sciontool_py", "harness", command, name, scope]
                + ([str(project)] if scope == "--project" else []),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
            )
            for name, scope in CONCURRENT
        ]
        for process in started:
            _, err = process.communicate(timeout=HANG_BOUND * 3)
            assert process.returncode == 0, err

    for _ in range(3):  # before the lock, 2 to 5 rounds of 6 left something behind
        all_at_once("install")
        record = json.loads((agent.home / RECORD).read_text())
        assert len(record["installs"]) == len(CONCURRENT)  # no install lost another's entry
        all_at_once("uninstall")
        assert tree(agent.home, project) == start


def test_a_lock_holder_that_never_lets_go_costs_a_bounded_wait_and_one_line(
    agent: Agent, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    holder = os.open(agent.home, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        started = time.monotonic()
        ran = sciontool(agent, "harness", "install", "claude", "--project", str(project))
        waited = time.monotonic() - started
    finally:
        os.close(holder)
    assert one_error(ran, "install") == (
        f"sciontool harness install: {agent.home}: still locked by another process after "
        f"{LOCK_WAIT_SECONDS:g}s (another sciontool harness command?); nothing changed"
    )
    assert waited >= LOCK_WAIT_SECONDS  # the promise is the wait; the hang bound is the timeout
    assert list(project.iterdir()) == []
