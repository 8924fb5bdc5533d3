"""The CLI a user meets first, through the real command: also run against the oldest dependency
versions pyproject.toml allows (`make test-floor`), so it needs nothing beyond pytest."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, Agent

from sciontool_py import __version__
from sciontool_py.harness import INSTALLABLE
from sciontool_py.vocabulary import STATUS_TYPES

TOOL_START = {"hook_event_name": "tool-start", "tool_name": "read_file", "tool_input": {"path": "/etc/hosts"}}


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(agent: Agent, flag: str) -> None:
    result = agent.run(flag)
    assert (result.returncode, result.stdout.decode()) == (0, f"sciontool {__version__}\n")


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["-h"],
        ["emit", "--help"],
        ["dialect", "--help"],
        ["dialect", "test", "-h"],
        ["hook", "-h"],
    ],
)
def test_help_is_printed_without_error(agent: Agent, args: list[str]) -> None:
    result = agent.run(*args)
    assert result.returncode == 0 and result.stdout and result.stderr == b""
    assert b"Traceback" not in result.stdout


def test_hook_status_normalize_round_trip(agent: Agent) -> None:
    assert agent.hook(TOOL_START, "--dialect=core-agent").returncode == 0
    assert agent.info == {"activity": "executing", "toolName": "read_file"}
    assert agent.run("status", "task_completed", "done").returncode == 0
    assert agent.info["activity"] == "completed"
    normalized = agent.run("normalize", "--dialect=core-agent", "-", stdin=TOOL_START)
    assert json.loads(normalized.stdout)["data"]["tool_input"] == '{"path":"/etc/hosts"}'


def test_dialect_commands(agent: Agent) -> None:
    listed = agent.run("dialect", "list").stdout.decode().splitlines()
    assert any(line.startswith("core-agent\t") and line.endswith("\tok") for line in listed)
    checked = agent.run("dialect", "check", str(FIXTURES / "nested-paths"))
    assert checked.returncode == 0 and checked.stdout.decode().endswith("1 checked, 0 errors, 0 warnings\n")
    tested = agent.run("dialect", "test", str(FIXTURES / "core-agent"))
    assert tested.returncode == 0 and b" passed, 0 failed" in tested.stdout
    assert json.loads(agent.run("dialect", "schema").stdout)["title"] == "sciontool dialect.yaml"


def test_dialect_check_dash_reads_the_dialect_on_stdin(agent: Agent, tmp_path: Path) -> None:
    """`-` is stdin, as for normalize and scaffold, even beside a folder named `-`."""
    (tmp_path / "-").mkdir()
    good = (FIXTURES / "nested-paths" / "dialect.yaml").read_bytes()
    beside = subprocess.run(
        [sys.executable, "-m", "sciontool_py", "dialect", "check", "-"],
        input=good,
        capture_output=True,
        cwd=tmp_path,
        env=agent.env,
        timeout=60,
    )
    assert (beside.returncode, beside.stdout) == (0, b"1 checked, 0 errors, 0 warnings\n")
    bad = b"dialect: mine\nevent_name_field: e\nmapings: {}\n"
    checked = agent.run("dialect", "check", "-", str(FIXTURES / "nested-paths"), stdin=bad)
    assert checked.returncode == 1
    assert checked.stdout.decode().splitlines() == [
        "<stdin>:3:1: dialect file: unknown key 'mapings' (did you mean 'mappings'?)",
        "2 checked, 1 error, 0 warnings",
    ]
    for data, problem in (
        (b"dialect: \xff\n", b"not UTF-8"),
        (b"#" * (1 << 20) + b"\n", b"larger than 1048576 bytes"),
    ):
        checked = agent.run("dialect", "check", "-", stdin=data)
        assert (checked.returncode, checked.stdout.splitlines()[0]) == (
            1,
            b"<stdin>: dialect file is " + problem,
        )


def test_emit_prints_core_agents_envelope(agent: Agent) -> None:
    result = agent.run("emit", "tool-start", "--tool-name", "ls", "--tool-input", '{"d":"."}')
    assert result.stdout == b'{"hook_event_name":"tool-start","tool_input":{"d":"."},"tool_name":"ls"}\n'


def test_errors_are_one_line_prefixed_with_the_command(agent: Agent) -> None:
    result = agent.run("dialect", "show", "nope")
    assert result.returncode == 1
    assert result.stderr.decode().startswith("sciontool dialect show: unknown dialect 'nope'")
    assert len(result.stderr.splitlines()) == 1


def test_shell_completion_script_and_completions(agent: Agent) -> None:
    # Run from bash, as a user would: typer detects the shell from its parent process
    # (`; true` keeps bash from exec-ing the command, which would hide it).
    script = subprocess.run(
        ["bash", "-c", f"{shlex.quote(sys.executable)} -m sciontool_py --show-completion; true"],
        capture_output=True,
        env=agent.env,
        timeout=60,
    )
    assert b"_SCIONTOOL_COMPLETE" in script.stdout and b"complete " in script.stdout
    completed = agent.run(_SCIONTOOL_COMPLETE="complete_bash", COMP_WORDS="sciontool dia", COMP_CWORD="1")
    assert completed.stdout.split() == [b"dialect"]


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        ("sciontool harness install ", list(INSTALLABLE)),
        ("sciontool harness uninstall a", ["antigravity", "auggie"]),
        ("sciontool harness show ag", ["agentino"]),
        ("sciontool dialect show cod", ["codex"]),
        ("sciontool dialect test --dialect q", ["qwen-code"]),
        ("sciontool hook --dialect core", ["core-agent"]),
        ("sciontool normalize --dialect gem", ["gemini"]),
        ("sciontool emit model", ["model-start"]),
        ("sciontool emit ", ["tool-start", "tool-end", "model-start", "agent-end"]),
        ("sciontool status ", list(STATUS_TYPES)),
        ("sciontool status blocked ", []),
    ],
)
def test_completion_offers_the_names_a_word_takes(agent: Agent, words: str, offered: list[str]) -> None:
    """Harness names (install: those it wires), dialect names, emit's events and status types."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    completed = agent.run(_SCIONTOOL_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(cword))
    assert (completed.returncode, completed.stderr) == (0, b"")
    assert completed.stdout.decode().split() == offered


def test_completion_for_a_named_shell_is_that_shells(agent: Agent) -> None:
    # Typer's own option ignored the name: `--install-completion zsh` from bash installed bash's.
    home = agent.home
    script = agent.run("--show-completion", "fish")
    assert script.returncode == 0 and script.stdout.startswith(b"complete --command sciontool ")
    installed = subprocess.run(
        ["bash", "-c", f"{shlex.quote(sys.executable)} -m sciontool_py --install-completion zsh; true"],
        capture_output=True,
        env=agent.env,
        timeout=60,
    )
    assert installed.stdout.decode().startswith(
        f"zsh completion installed in {home / '.zfunc' / '_sciontool'}\n"
    )
    assert (home / ".zfunc" / "_sciontool").read_text().startswith("#compdef sciontool")
    assert not (home / ".bashrc").exists()


@pytest.mark.parametrize("shell_args", [["sh"], ["pwsh"], ["bash", "zsh"]])
def test_completion_for_an_unsupported_shell_is_one_error_line(agent: Agent, shell_args: list[str]) -> None:
    for option in ("--show-completion", "--install-completion"):
        result = agent.run(option, *shell_args)
        assert (result.returncode, result.stdout) == (1, b"")
        [line] = result.stderr.decode().splitlines()
        assert line.startswith(f"sciontool {option}: ")


def test_completion_detected_under_sh_is_one_error_line(agent: Agent) -> None:
    # Run from sh, whose completion neither typer nor click provides.
    result = subprocess.run(
        ["sh", "-c", f"{shlex.quote(sys.executable)} -m sciontool_py --show-completion; true"],
        capture_output=True,
        env=agent.env,
        timeout=60,
    )
    assert result.stdout == b""
    assert result.stderr.decode() == (
        "sciontool --show-completion: shell 'sh' is not supported (supported: bash, zsh, fish)\n"
    )


def test_a_tool_call_reaches_an_otlp_receiver_as_one_paired_span(agent: Agent) -> None:
    """The telemetry worker through the oldest OpenTelemetry SDK and exporters allowed."""
    from otlp import GrpcReceiver

    receiver = GrpcReceiver()
    try:
        for name in ("tool-start", "tool-end"):
            envelope = {"hook_event_name": name, "tool_name": "ls"}
            result = agent.hook(envelope, "--dialect=core-agent", SCION_OTEL_GRPC_PORT=str(receiver.port))
            assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
        receiver.wait_for(lambda: len(receiver.logs()) == 2 and len(receiver.points("agent.tool.calls")) == 1)
    finally:
        receiver.close()
    [span] = receiver.spans()
    assert span.item.name == "agent.tool.call" and "duration_ms" in span.attributes  # type: ignore[attr-defined]


# A sitecustomize that makes Python look like Windows's to the package: no fcntl module.
_NO_FCNTL = """\
import sys


class NoFcntl:
    def find_spec(self, name, path=None, target=None):
        if name == "fcntl":
            raise ModuleNotFoundError("No module named 'fcntl'", name=name)
        return None


sys.meta_path.insert(0, NoFcntl())
"""


@pytest.mark.parametrize(
    "args",
    [
        ["hook", "--dialect=core-agent"],
        ["status", "blocked"],
        ["normalize", "--dialect=core-agent"],
        ["dialect", "list"],
        ["harness", "install", "claude", "--project", "PROJECT"],
        ["--version"],
    ],
    ids=lambda args: args[0] if args[0] != "dialect" else "dialect list",
)
def test_without_fcntl_as_on_windows_a_command_says_so_in_one_line(
    agent: Agent, tmp_path: Path, args: list[str]
) -> None:
    """The package is POSIX only (the hook locks its files with fcntl): a Python without fcntl
    gets one line and exit 1 from every command, and nothing is written, not a traceback."""
    site, project = tmp_path / "no-fcntl", tmp_path / "project"
    site.mkdir()
    project.mkdir()
    (site / "sitecustomize.py").write_text(_NO_FCNTL)
    path = os.pathsep.join(p for p in (str(site), agent.env.get("PYTHONPATH", "")) if p)
    args = [str(project) if a == "PROJECT" else a for a in args]
    result = agent.run(*args, stdin=TOOL_START, PYTHONPATH=path)
    assert (result.returncode, result.stdout) == (1, b"")
    assert result.stderr == (
        b"sciontool: runs on POSIX systems only (Linux, macOS): this Python has no fcntl module\n"
    )
    assert list(agent.home.iterdir()) == [] and list(project.iterdir()) == []
